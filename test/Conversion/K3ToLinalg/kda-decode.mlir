// RUN: k3-opt %s --convert-k3-to-linalg | FileCheck %s
// RUN: k3-opt %s --convert-k3-to-linalg="kda-decode=heads" | FileCheck %s --check-prefix=HEADS

// kda-decode=heads (the CPU default): the same steps per head, the heads an
// scf.forall (the CPU's threads) writing their state slice and output row.
// HEADS-LABEL: func.func @decode
//       HEADS:   scf.forall (%[[H:.+]]) in (2) shared_outs(%[[S:.+]] = %arg9, %[[O:.+]] = %{{.+}}) -> (tensor<2x4x4xf32>, tensor<1x2x4xf32>)
//       HEADS:     tensor.extract_slice %[[S]][%[[H]], 0, 0] [1, 4, 4] [1, 1, 1]
//       HEADS:     scf.forall.in_parallel
//  HEADS-NEXT:       tensor.parallel_insert_slice %{{.+}} into %[[S]][%[[H]], 0, 0] [1, 4, 4] [1, 1, 1]
//  HEADS-NEXT:       tensor.parallel_insert_slice %{{.+}} into %[[O]][0, %[[H]], 0] [1, 1, 4] [1, 1, 1]

// The fused decode step: windows shifted once, then one scf.for over the
// value heads carrying the state (updated in place, one [K, V] slice per
// head) and the output; per head the conv taps, the L2 norms, e^g, β, the
// predict/update/read, and the gated RMSNorm. Each stream's window shifts
// as one generic (row r + 1 of the window, x for the last row; no
// [window | x] tensor, fill or copies: kernels on the GPU), and the taps
// read the window and x where they are (the window's W-1 as a reduction,
// then x's with the SiLU).
// CHECK-LABEL: func.func @decode
//   CHECK-NOT:   linalg.fill
//   CHECK-NOT:   tensor.insert_slice
//       CHECK:   linalg.generic {{.+}} outs(%{{.+}} : tensor<3x8xf32>)
//       CHECK:     %[[R:.+]] = linalg.index 0
//       CHECK:     %[[C:.+]] = linalg.index 1
//       CHECK:     %[[N:.+]] = arith.addi %[[R]], %c1
//       CHECK:     %[[CL:.+]] = arith.minui %[[N]], %c2
//       CHECK:     %[[OLD:.+]] = tensor.extract %arg4[%[[CL]], %[[C]]]
//       CHECK:     %[[NEW:.+]] = tensor.extract %arg0[%c0, %[[C]]]
//       CHECK:     %[[IS:.+]] = arith.cmpi ult, %[[R]], %c2
//       CHECK:     arith.select %[[IS]], %[[OLD]], %[[NEW]]
//   CHECK-NOT:   tensor.insert_slice {{.+}} tensor<4x8xf32>
//       CHECK:   %[[LOOP:.+]]:2 = scf.for %[[H:.+]] = %c0 to %c2 step %c1 iter_args(%[[S:.+]] = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<2x4x4xf32>, tensor<1x2x4xf32>)
//       CHECK:     tensor.extract_slice %arg4[0, %{{.+}}] [3, 4] [1, 1] : tensor<3x8xf32> to tensor<3x4xf32>
//       CHECK:     tensor.extract_slice %arg3[%{{.+}}, 0] [4, 3] [1, 1] : tensor<8x4xf32> to tensor<4x3xf32>
//       CHECK:     tensor.extract_slice %arg3[%{{.+}}, 3] [4, 1] [1, 1] : tensor<8x4xf32> to tensor<4xf32>
//       CHECK:     tensor.extract_slice %arg0[0, %{{.+}}] [1, 4] [1, 1] : tensor<1x8xf32> to tensor<4xf32>
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

// An f16 x into bf16 windows: the new row converts through f32 (f16 and
// bf16 do not convert into each other).
// CHECK-LABEL: func.func @mixed
//       CHECK:   %[[X:.+]] = tensor.extract %arg0[%c0, %{{.+}}] : tensor<1x8xf16>
//       CHECK:   %[[F:.+]] = arith.extf %[[X]] : f16 to f32
//       CHECK:   arith.truncf %[[F]] : f32 to bf16
func.func @mixed(%xq: tensor<1x8xf16>, %xk: tensor<1x8xf16>, %xv: tensor<1x8xf16>, %w: tensor<8x4xf32>,
                  %c: tensor<3x8xbf16>, %f: tensor<1x2x4xf32>, %a: tensor<2xf32>, %dt: tensor<2x4xf32>,
                  %b: tensor<1x2xf32>, %s0: tensor<2x4x4xf32>, %nw: tensor<4xf32>, %og: tensor<1x2x4xf32>)
    -> (tensor<1x2x4xf32>, tensor<3x8xbf16>, tensor<3x8xbf16>, tensor<3x8xbf16>, tensor<2x4x4xf32>) {
  %o, %nq, %nk, %nv, %s1 = k3.kda_decode x(%xq, %xk, %xv) filters(%w, %w, %w) windows(%c, %c, %c)
      gate(%f, %a, %dt) beta(%b) state(%s0) norm(%nw) out_gate(%og) lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
      : (tensor<1x8xf16>, tensor<1x8xf16>, tensor<1x8xf16>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>,
         tensor<3x8xbf16>, tensor<3x8xbf16>, tensor<3x8xbf16>, tensor<1x2x4xf32>, tensor<2xf32>, tensor<2x4xf32>,
         tensor<1x2xf32>, tensor<2x4x4xf32>, tensor<4xf32>, tensor<1x2x4xf32>)
      -> (tensor<1x2x4xf32>, tensor<3x8xbf16>, tensor<3x8xbf16>, tensor<3x8xbf16>, tensor<2x4x4xf32>)
  return %o, %nq, %nk, %nv, %s1 : tensor<1x2x4xf32>, tensor<3x8xbf16>, tensor<3x8xbf16>, tensor<3x8xbf16>, tensor<2x4x4xf32>
}
