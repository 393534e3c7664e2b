// RUN: k3-opt %s | FileCheck %s
// RUN: k3-opt %s | k3-opt | FileCheck %s
// RUN: k3-opt %s --mlir-print-op-generic | k3-opt | FileCheck %s

// The fused one-token step; GVA (q/k of 1 head of 4 channels, 2 value heads of
// 4), bf16 activations, the softplus gate.
// CHECK-LABEL: func.func @decode
//       CHECK:   k3.kda_decode x(%{{.+}}, %{{.+}}, %{{.+}}) filters({{.+}}) windows({{.+}}) gate({{.+}}) beta(%{{.+}}) state(%{{.+}}) norm(%{{.+}}) out_gate(%{{.+}}) softplus scale = 5.000000e-01 eps = 9.99999974E-6
//  CHECK-SAME:     -> (tensor<1x2x4xbf16>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x8xf32>, tensor<2x4x4xf32>)
func.func @decode(%xq: tensor<1x4xbf16>, %xk: tensor<1x4xbf16>, %xv: tensor<1x8xbf16>,
                  %wq: tensor<4x4xf32>, %wk: tensor<4x4xf32>, %wv: tensor<8x4xf32>,
                  %cq: tensor<3x4xf32>, %ck: tensor<3x4xf32>, %cv: tensor<3x8xf32>,
                  %f: tensor<1x2x4xbf16>, %a: tensor<2xf32>, %dt: tensor<2x4xf32>, %b: tensor<1x2xbf16>,
                  %s0: tensor<2x4x4xf32>, %nw: tensor<4xbf16>, %og: tensor<1x2x4xbf16>) -> tensor<1x2x4xbf16> {
  %o, %nq, %nk, %nv, %s1 = k3.kda_decode x(%xq, %xk, %xv) filters(%wq, %wk, %wv) windows(%cq, %ck, %cv)
      gate(%f, %a, %dt) beta(%b) state(%s0) norm(%nw) out_gate(%og) softplus scale = 0.5 eps = 1.0e-05
      : (tensor<1x4xbf16>, tensor<1x4xbf16>, tensor<1x8xbf16>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8x4xf32>,
         tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x8xf32>, tensor<1x2x4xbf16>, tensor<2xf32>, tensor<2x4xf32>,
         tensor<1x2xbf16>, tensor<2x4x4xf32>, tensor<4xbf16>, tensor<1x2x4xbf16>)
      -> (tensor<1x2x4xbf16>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x8xf32>, tensor<2x4x4xf32>)
  return %o : tensor<1x2x4xbf16>
}
