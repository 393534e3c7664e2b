// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// The K3 lower-bounded gate keeps its bound as an attribute.
// CHECK-LABEL: func.func @lower_bound
//       CHECK:   k3.kda_gate lower_bound lb = -5.000000e+00 %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : (tensor<?x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
func.func @lower_bound(%x: tensor<?x4x16xf32>, %a: tensor<4xf32>, %dt: tensor<4x16xf32>) -> tensor<?x4x16xf32> {
  %g = k3.kda_gate lower_bound lb = -5.0 %x, %a, %dt : (tensor<?x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
  return %g : tensor<?x4x16xf32>
}

// -----

// The Kimi Linear softplus gate has no bound; bf16 input, f32 gate.
// CHECK-LABEL: func.func @softplus
//       CHECK:   k3.kda_gate softplus %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : (tensor<?x4x16xbf16>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
//   CHECK-NOT:   lb =
func.func @softplus(%x: tensor<?x4x16xbf16>, %a: tensor<4xf32>, %dt: tensor<4x16xf32>) -> tensor<?x4x16xf32> {
  %g = k3.kda_gate softplus %x, %a, %dt : (tensor<?x4x16xbf16>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
  return %g : tensor<?x4x16xf32>
}
