// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// The dense layer-0 MLP.
// CHECK-LABEL: func.func @mlp
//  CHECK-SAME:   (%[[X:[^:]+]]: tensor<?x64xbf16>, %[[G:[^:]+]]: tensor<96x64xbf16>, %[[U:[^:]+]]: tensor<96x64xbf16>, %[[D:[^:]+]]: tensor<64x96xbf16>)
//       CHECK:   %[[Y:.+]] = k3.mlp %[[X]], %[[G]], %[[U]], %[[D]] {beta1 = 4.000000e+00 : f32, beta2 = 2.500000e+01 : f32}
//       CHECK:   return %[[Y]]
func.func @mlp(%x: tensor<?x64xbf16>, %g: tensor<96x64xbf16>, %u: tensor<96x64xbf16>, %d: tensor<64x96xbf16>) -> tensor<?x64xbf16> {
  %y = k3.mlp %x, %g, %u, %d {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<?x64xbf16>, tensor<96x64xbf16>, tensor<96x64xbf16>, tensor<64x96xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// Kimi Linear's dense MLP: SwiGLU, no betas.
// CHECK-LABEL: func.func @swiglu
//       CHECK:   k3.mlp %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} activation silu : (tensor<?x64xf32>
func.func @swiglu(%x: tensor<?x64xf32>, %g: tensor<96x64xbf16>, %u: tensor<96x64xbf16>, %d: tensor<64x96xbf16>) -> tensor<?x64xf32> {
  %y = k3.mlp %x, %g, %u, %d activation silu
      : (tensor<?x64xf32>, tensor<96x64xbf16>, tensor<96x64xbf16>, tensor<64x96xbf16>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// SiTU spelled out is the default, kept as written.
// CHECK-LABEL: func.func @situ
//       CHECK:   k3.mlp %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} activation situ {beta1 = 4.000000e+00 : f32}
func.func @situ(%x: tensor<?x64xf32>, %g: tensor<96x64xbf16>, %u: tensor<96x64xbf16>, %d: tensor<64x96xbf16>) -> tensor<?x64xf32> {
  %y = k3.mlp %x, %g, %u, %d activation situ {beta1 = 4.0 : f32}
      : (tensor<?x64xf32>, tensor<96x64xbf16>, tensor<96x64xbf16>, tensor<64x96xbf16>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
