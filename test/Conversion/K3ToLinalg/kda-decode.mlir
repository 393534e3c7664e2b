// RUN: k3-opt %s --convert-k3-to-linalg | FileCheck %s

// The fused decode step: windows shifted once, then one scf.for over the
// value heads carrying the state (updated in place, one [K, V] slice per
// head) and the output; per head the conv taps, the L2 norms, e^g, β, the
// predict/update/read, and the gated RMSNorm. Each stream's [window | x]
// starts empty (its two slices cover it; a zero fill would be a kernel on
// the GPU).
// CHECK-LABEL: func.func @decode
//   CHECK-NOT:   linalg.fill
//       CHECK:   %[[HAT:.+]] = tensor.empty() : tensor<4x8xf32>
//  CHECK-NEXT:   %[[W:.+]] = tensor.insert_slice %arg4 into %[[HAT]][0, 0] [3, 8] [1, 1]
//  CHECK-NEXT:   tensor.insert_slice %arg0 into %[[W]][3, 0] [1, 8] [1, 1]
//       CHECK:   %[[LOOP:.+]]:2 = scf.for %[[H:.+]] = %c0 to %c2 step %c1 iter_args(%[[S:.+]] = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<2x4x4xf32>, tensor<1x2x4xf32>)
//       CHECK:     math.sqrt
//       CHECK:     math.exp
//       CHECK:     tensor.extract_slice %[[S]][%[[H]], 0, 0] [1, 4, 4] [1, 1, 1] : tensor<2x4x4xf32> to tensor<4x4xf32>
//       CHECK:     math.rsqrt
//       CHECK:     tensor.insert_slice %{{.+}} into %[[S]][%[[H]], 0, 0] [1, 4, 4] [1, 1, 1]
//       CHECK:   return %[[LOOP]]#1, %{{.+}}, %{{.+}}, %{{.+}}, %[[LOOP]]#0
func.func @decode(%xq: tensor<1x8xf32>, %xk: tensor<1x8xf32>, %xv: tensor<1x8xf32>, %w: tensor<8x4xf32>,
                  %c: tensor<3x8xf32>, %f: tensor<1x2x4xf32>, %a: tensor<2xf32>, %dt: tensor<2x4xf32>,
                  %b: tensor<1x2xf32>, %s0: tensor<2x4x4xf32>, %nw: tensor<4xf32>, %og: tensor<1x2x4xf32>)
    -> (tensor<1x2x4xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<2x4x4xf32>) {
  %o, %nq, %nk, %nv, %s1 = k3.kda_decode x(%xq, %xk, %xv) filters(%w, %w, %w) windows(%c, %c, %c)
      gate(%f, %a, %dt) beta(%b) state(%s0) norm(%nw) out_gate(%og) lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
      : (tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>,
         tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<1x2x4xf32>, tensor<2xf32>, tensor<2x4xf32>,
         tensor<1x2xf32>, tensor<2x4x4xf32>, tensor<4xf32>, tensor<1x2x4xf32>)
      -> (tensor<1x2x4xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<2x4x4xf32>)
  return %o, %nq, %nk, %nv, %s1 : tensor<1x2x4xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<2x4x4xf32>
}
