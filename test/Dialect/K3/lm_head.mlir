// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// Logits come out in f32 whatever the hidden dtype.
// CHECK-LABEL: func.func @lm_head
//       CHECK:   %[[L:.+]] = k3.lm_head %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : (tensor<?x64xbf16>, tensor<256x64xbf16>) -> tensor<?x256xf32>
//       CHECK:   return %[[L]]
func.func @lm_head(%h: tensor<?x64xbf16>, %w: tensor<256x64xbf16>) -> tensor<?x256xf32> {
  %l = k3.lm_head %h, %w : (tensor<?x64xbf16>, tensor<256x64xbf16>) -> tensor<?x256xf32>
  return %l : tensor<?x256xf32>
}
