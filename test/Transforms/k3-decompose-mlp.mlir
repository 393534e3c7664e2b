// RUN: k3-opt %s --split-input-file --k3-decompose-mlp | FileCheck %s

// The dense MLP becomes gate and up projections, SiTU-GLU with the same betas,
// and the down projection; the intermediate keeps x's element type.
// CHECK-LABEL: func.func @mlp
//  CHECK-SAME:   (%[[X:[^:]+]]: tensor<?x64xbf16>, %[[G:[^:]+]]: tensor<96x64xbf16>, %[[U:[^:]+]]: tensor<96x64xbf16>, %[[D:[^:]+]]: tensor<64x96xbf16>)
//       CHECK:   %[[HG:.+]] = k3.linear %[[X]], %[[G]] : (tensor<?x64xbf16>, tensor<96x64xbf16>) -> tensor<?x96xbf16>
//       CHECK:   %[[HU:.+]] = k3.linear %[[X]], %[[U]] : (tensor<?x64xbf16>, tensor<96x64xbf16>) -> tensor<?x96xbf16>
//       CHECK:   %[[H:.+]] = k3.situ_glu %[[HG]], %[[HU]] {beta1 = 4.000000e+00 : f32, beta2 = 2.500000e+01 : f32} : tensor<?x96xbf16>
//       CHECK:   %[[Y:.+]] = k3.linear %[[H]], %[[D]] : (tensor<?x96xbf16>, tensor<64x96xbf16>) -> tensor<?x64xbf16>
//   CHECK-NOT:   k3.mlp
//       CHECK:   return %[[Y]]
func.func @mlp(%x: tensor<?x64xbf16>, %g: tensor<96x64xbf16>, %u: tensor<96x64xbf16>, %d: tensor<64x96xbf16>) -> tensor<?x64xbf16> {
  %y = k3.mlp %x, %g, %u, %d {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<?x64xbf16>, tensor<96x64xbf16>, tensor<96x64xbf16>, tensor<64x96xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// Without beta2 the activation keeps a linear up branch; f32 in, f32 out.
// CHECK-LABEL: func.func @no_beta2
//       CHECK:   k3.situ_glu %{{.+}}, %{{.+}} {beta1 = 1.000000e+00 : f32} : tensor<3x8xf32>
//   CHECK-NOT:   beta2
func.func @no_beta2(%x: tensor<3x4xf32>, %g: tensor<8x4xf32>, %u: tensor<8x4xf32>, %d: tensor<4x8xf32>) -> tensor<3x4xf32> {
  %y = k3.mlp %x, %g, %u, %d {beta1 = 1.0 : f32} : (tensor<3x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----

// Other k3 ops are left alone.
// CHECK-LABEL: func.func @other
//       CHECK:   k3.linear
//   CHECK-NOT:   k3.situ_glu
func.func @other(%x: tensor<3x4xf32>, %w: tensor<8x4xf32>) -> tensor<3x8xf32> {
  %y = k3.linear %x, %w : (tensor<3x4xf32>, tensor<8x4xf32>) -> tensor<3x8xf32>
  return %y : tensor<3x8xf32>
}
