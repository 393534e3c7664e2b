// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// Embedding lookup with a dynamic token count.
// CHECK-LABEL: func.func @embed
//  CHECK-SAME:   (%[[IDS:.+]]: tensor<?xi32>, %[[TAB:.+]]: tensor<256x64xbf16>)
//       CHECK:   %[[H:.+]] = k3.embed %[[IDS]], %[[TAB]] : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
//       CHECK:   return %[[H]]
func.func @embed(%ids: tensor<?xi32>, %table: tensor<256x64xbf16>) -> tensor<?x64xbf16> {
  %h = k3.embed %ids, %table : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  return %h : tensor<?x64xbf16>
}

// -----

// i64 ids and an f32 table with static sizes.
// CHECK-LABEL: func.func @embed_static
//       CHECK:   k3.embed %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : (tensor<3xi64>, tensor<10x4xf32>) -> tensor<3x4xf32>
func.func @embed_static(%ids: tensor<3xi64>, %table: tensor<10x4xf32>) -> tensor<3x4xf32> {
  %h = k3.embed %ids, %table : (tensor<3xi64>, tensor<10x4xf32>) -> tensor<3x4xf32>
  return %h : tensor<3x4xf32>
}
