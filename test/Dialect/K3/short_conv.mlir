// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// Width-4 conv with SiLU: the state carries the last 3 inputs.
// CHECK-LABEL: func.func @short_conv
//  CHECK-SAME:   (%[[X:.+]]: tensor<?x64xbf16>, %[[W:.+]]: tensor<64x4xf32>, %[[S:.+]]: tensor<3x64xf32>)
//       CHECK:   %[[Y:.+]], %[[S1:.+]] = k3.short_conv %[[X]], %[[W]], state(%[[S]]) silu
//  CHECK-SAME:     -> (tensor<?x64xbf16>, tensor<3x64xf32>)
//       CHECK:   return %[[Y]], %[[S1]]
func.func @short_conv(%x: tensor<?x64xbf16>, %w: tensor<64x4xf32>, %s: tensor<3x64xf32>) -> (tensor<?x64xbf16>, tensor<3x64xf32>) {
  %y, %s1 = k3.short_conv %x, %w, state(%s) silu : (tensor<?x64xbf16>, tensor<64x4xf32>, tensor<3x64xf32>) -> (tensor<?x64xbf16>, tensor<3x64xf32>)
  return %y, %s1 : tensor<?x64xbf16>, tensor<3x64xf32>
}

// -----

// Without silu the keyword is absent; one decode token.
// CHECK-LABEL: func.func @no_silu
//       CHECK:   k3.short_conv %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, state(%{{[a-z0-9_]+}}) :
//   CHECK-NOT:   silu
func.func @no_silu(%x: tensor<1x8xf32>, %w: tensor<8x4xf32>, %s: tensor<3x8xf32>) -> (tensor<1x8xf32>, tensor<3x8xf32>) {
  %y, %s1 = k3.short_conv %x, %w, state(%s) : (tensor<1x8xf32>, tensor<8x4xf32>, tensor<3x8xf32>) -> (tensor<1x8xf32>, tensor<3x8xf32>)
  return %y, %s1 : tensor<1x8xf32>, tensor<3x8xf32>
}
