// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// A dense bf16 projection.
// CHECK-LABEL: func.func @linear
//       CHECK:   k3.linear %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
func.func @linear(%x: tensor<?x64xbf16>, %w: tensor<128x64xbf16>) -> tensor<?x128xbf16> {
  %y = k3.linear %x, %w : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// -----

// An MXFP4 weight with one scale per 32 input channels.
// CHECK-LABEL: func.func @mxfp4
//  CHECK-SAME:   %[[S:[^:]+]]: tensor<128x2xf8E8M0FNU>
//       CHECK:   k3.linear %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} scales(%[[S]]) : (tensor<?x64xbf16>, tensor<128x64xf4E2M1FN>, tensor<128x2xf8E8M0FNU>) -> tensor<?x128xbf16>
func.func @mxfp4(%x: tensor<?x64xbf16>, %w: tensor<128x64xf4E2M1FN>, %s: tensor<128x2xf8E8M0FNU>) -> tensor<?x128xbf16> {
  %y = k3.linear %x, %w scales(%s) : (tensor<?x64xbf16>, tensor<128x64xf4E2M1FN>, tensor<128x2xf8E8M0FNU>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// -----

// Leading dimensions pass through: [T, H, K] x [N, K] -> [T, H, N].
// CHECK-LABEL: func.func @batched
//       CHECK:   k3.linear {{.+}} -> tensor<?x4x8xf32>
func.func @batched(%x: tensor<?x4x16xf32>, %w: tensor<8x16xf32>) -> tensor<?x4x8xf32> {
  %y = k3.linear %x, %w : (tensor<?x4x16xf32>, tensor<8x16xf32>) -> tensor<?x4x8xf32>
  return %y : tensor<?x4x8xf32>
}
