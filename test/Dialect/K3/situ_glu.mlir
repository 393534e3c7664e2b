// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// K3 SiTU-GLU: beta1 = 4, beta2 = 25.
// CHECK-LABEL: func.func @situ_glu
//       CHECK:   %[[H:.+]] = k3.situ_glu %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} {beta1 = 4.000000e+00 : f32, beta2 = 2.500000e+01 : f32} : tensor<?x96xbf16>
//       CHECK:   return %[[H]]
func.func @situ_glu(%g: tensor<?x96xbf16>, %u: tensor<?x96xbf16>) -> tensor<?x96xbf16> {
  %h = k3.situ_glu %g, %u {beta1 = 4.0 : f32, beta2 = 25.0 : f32} : tensor<?x96xbf16>
  return %h : tensor<?x96xbf16>
}

// -----

// Without beta2 the up branch is linear.
// CHECK-LABEL: func.func @linear_up
//       CHECK:   k3.situ_glu %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} {beta1 = 1.000000e+00 : f32} : tensor<2x8xf32>
func.func @linear_up(%g: tensor<2x8xf32>, %u: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %h = k3.situ_glu %g, %u {beta1 = 1.0 : f32} : tensor<2x8xf32>
  return %h : tensor<2x8xf32>
}
