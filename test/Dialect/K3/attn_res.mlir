// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// A read over two sealed snapshots and the running sum (last).
// CHECK-LABEL: func.func @attn_res
//  CHECK-SAME:   (%[[B0:[^:]+]]: tensor<?x64xf32>, %[[B1:[^:]+]]: tensor<?x64xf32>, %[[R:[^:]+]]: tensor<?x64xf32>, %[[N:[^:]+]]: tensor<64xbf16>, %[[P:[^:]+]]: tensor<64xbf16>)
//       CHECK:   %[[H:.+]] = k3.attn_res [%[[B0]], %[[B1]], %[[R]]] norm(%[[N]]) query(%[[P]]) {eps = 9.99999974E-6 : f32}
//       CHECK:   return %[[H]]
func.func @attn_res(%b0: tensor<?x64xf32>, %b1: tensor<?x64xf32>, %r: tensor<?x64xf32>, %n: tensor<64xbf16>, %p: tensor<64xbf16>) -> tensor<?x64xf32> {
  %h = k3.attn_res [%b0, %b1, %r] norm(%n) query(%p) {eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<?x64xf32>
  return %h : tensor<?x64xf32>
}

// -----

// A single candidate (only the running sum) is legal: the read returns it.
// CHECK-LABEL: func.func @single
//       CHECK:   k3.attn_res [%{{[a-z0-9_]+}}] norm(
func.func @single(%r: tensor<2x8xbf16>, %n: tensor<8xbf16>, %p: tensor<8xbf16>) -> tensor<2x8xbf16> {
  %h = k3.attn_res [%r] norm(%n) query(%p) {eps = 1.0e-05 : f32}
      : (tensor<2x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<2x8xbf16>
  return %h : tensor<2x8xbf16>
}
