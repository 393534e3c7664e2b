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
// read the window and x where they are: one elementwise generic over the
// channels, each tap's filter column and window row an input of its own
// (constant maps), x's tap last, then the SiLU.
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
//       CHECK:     %[[FILT:.+]] = tensor.extract_slice %arg3[%{{.+}}, 0] [4, 4] [1, 1] : tensor<8x4xf32> to tensor<4x4xf32>
//       CHECK:     %[[TAPS:.+]] = tensor.extract_slice %arg4[0, %{{.+}}] [3, 4] [1, 1] : tensor<3x8xf32> to tensor<3x4xf32>
//       CHECK:     %[[X:.+]] = tensor.extract_slice %arg0[0, %{{.+}}] [1, 4] [1, 1] : tensor<1x8xf32> to tensor<4xf32>
//       CHECK:     linalg.generic {indexing_maps = [#[[W0:.+]], #[[W1:.+]], #[[W2:.+]], #[[W3:.+]], #[[T0:.+]], #[[T1:.+]], #[[T2:.+]], #[[ID:.+]], #[[ID]]], iterator_types = ["parallel"]} ins(%[[FILT]], %[[FILT]], %[[FILT]], %[[FILT]], %[[TAPS]], %[[TAPS]], %[[TAPS]], %[[X]] :
//  CHECK-NEXT:     ^bb0(%[[A0:.+]]: f32, %[[A1:.+]]: f32, %[[A2:.+]]: f32, %[[A3:.+]]: f32, %[[B0:.+]]: f32, %[[B1:.+]]: f32, %[[B2:.+]]: f32, %[[XV:.+]]: f32, %{{.+}}: f32):
//  CHECK-NEXT:       %[[P0:.+]] = arith.mulf %[[A0]], %[[B0]]
//  CHECK-NEXT:       %[[P1:.+]] = arith.mulf %[[A1]], %[[B1]]
//  CHECK-NEXT:       %[[S1:.+]] = arith.addf %[[P0]], %[[P1]]
//  CHECK-NEXT:       %[[P2:.+]] = arith.mulf %[[A2]], %[[B2]]
//  CHECK-NEXT:       %[[S2:.+]] = arith.addf %[[S1]], %[[P2]]
//  CHECK-NEXT:       %[[P3:.+]] = arith.mulf %[[A3]], %[[XV]]
//  CHECK-NEXT:       arith.addf %[[S2]], %[[P3]]
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
