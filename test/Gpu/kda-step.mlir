// RUN: k3-opt %s --split-input-file --k3-gpu-kda-step | FileCheck %s

// K3's KDA heads (K = V = 128, bf16 activations), 2 value heads: one launch,
// a block per head of 128 threads, 5120 bytes of shared memory (q, k, α, v,
// o, three reduction trees of 128 words, q̂ and k̂). The convs and the new
// windows (no group: every block writes its own q/k channels, no
// condition), then a barrier; the two L2 norms reduced together in 7 steps
// (8 more barriers); q̂ and k̂ and a barrier; the column loop loads the
// column's 128 rows at once, predicts, then stores the 128 updated rows in
// place (the state read once); the output norm's tree (8 barriers); the
// output stored as bf16.
// CHECK-LABEL: func.func @k3
//       CHECK:   gpu.launch blocks({{.+}}) in ({{.+}} = %c2{{.*}}, {{.+}} = %c1{{.*}}, {{.+}} = %c1{{.*}}) threads(%[[T:[^,]+]], {{.+}}) in ({{.+}} = %c128{{.*}}, {{.+}}) dynamic_shared_memory_size %c5120_i32
//   CHECK-COUNT-10:   memref.view {{.+}} to memref<128xf32, #gpu.address_space<workgroup>>
//   CHECK-NOT:   scf.if
//       CHECK:   scf.for %{{.+}} = %[[T]] to %c128{{.*}} step %c128
//       CHECK:     math.exp
//       CHECK:     memref.store {{.+}} : memref<3x256xf32>
//       CHECK:   scf.for %{{.+}} = %[[T]] to %c128{{.*}} step %c128
//       CHECK:     memref.store {{.+}} : memref<3x256xf32>
//   CHECK-COUNT-9:   gpu.barrier
//   CHECK-NOT:   gpu.barrier
//       CHECK:   math.sqrt
//       CHECK:   math.sqrt
//       CHECK:   gpu.barrier
//   CHECK-NOT:   gpu.barrier
//       CHECK:   scf.for %[[J:.+]] = %[[T]] to %c128{{.*}} step %c128{{.*}} iter_args
//   CHECK-NOT:     scf.for
//   CHECK-COUNT-128:     memref.load %{{.+}}[%{{.+}}, %{{.+}}, %[[J]]] : memref<2x128x128xf32>
//   CHECK-NOT:     memref.load %{{.+}} : memref<2x128x128xf32>
//   CHECK-COUNT-128:     memref.store %{{.+}}[%{{.+}}, %{{.+}}, %[[J]]] : memref<2x128x128xf32>
//   CHECK-NOT:     memref.load %{{.+}} : memref<2x128x128xf32>
//   CHECK-COUNT-8:   gpu.barrier
//   CHECK-NOT:   gpu.barrier
//       CHECK:   math.rsqrt
//       CHECK:   arith.truncf {{.+}} : f32 to bf16
//       CHECK:   memref.store {{.+}} : memref<1x2x128xbf16>
//       CHECK:   gpu.terminator
func.func @k3(%xq: memref<1x256xbf16>, %xk: memref<1x256xbf16>, %xv: memref<1x256xbf16>, %wq: memref<256x4xf32>, %wk: memref<256x4xf32>, %wv: memref<256x4xf32>, %cq: memref<3x256xf32>, %ck: memref<3x256xf32>, %cv: memref<3x256xf32>, %f: memref<1x2x128xbf16>, %a: memref<2xf32>, %dt: memref<2x128xf32>, %b: memref<1x2xbf16>, %nw: memref<128xbf16>, %og: memref<1x2x128xbf16>, %o: memref<1x2x128xbf16>, %nq: memref<3x256xf32>, %nk: memref<3x256xf32>, %nv: memref<3x256xf32>, %s: memref<2x128x128xf32>) {
  k3.kda_step x(%xq, %xk, %xv) filters(%wq, %wk, %wv) windows(%cq, %ck, %cv)
      gate(%f, %a, %dt) beta(%b) norm(%nw) out_gate(%og) outs(%o, %nq, %nk, %nv, %s)
      lower_bound lb = -5.0 scale = 0.0883883476 eps = 1.0e-05
      : (memref<1x256xbf16>, memref<1x256xbf16>, memref<1x256xbf16>, memref<256x4xf32>, memref<256x4xf32>, memref<256x4xf32>, memref<3x256xf32>, memref<3x256xf32>, memref<3x256xf32>, memref<1x2x128xbf16>, memref<2xf32>, memref<2x128xf32>, memref<1x2xbf16>, memref<128xbf16>, memref<1x2x128xbf16>, memref<1x2x128xbf16>, memref<3x256xf32>, memref<3x256xf32>, memref<3x256xf32>, memref<2x128x128xf32>) -> ()
  return
}

// -----

// GVA (1 q/k head of 16 channels, 2 value heads of 8), the softplus gate: a
// team of 32 (the narrowest), 5 steps a reduction (6 + 2 barriers before the
// column loop, 6 after); block h reads q/k head
// h / 2, and only the group's first block (h % 2 = 0) writes the q/k
// windows.
// CHECK-LABEL: func.func @gva
//       CHECK:   gpu.launch blocks(%[[H:[^,]+]], {{.+}}) in ({{.+}} = %c2{{.*}}, {{.+}}) threads({{.+}}) in ({{.+}} = %c32{{.*}}, {{.+}}) dynamic_shared_memory_size %c768_i32
//       CHECK:   arith.divui %[[H]], %c2
//       CHECK:   %[[R:.+]] = arith.remui %[[H]], %c2
//       CHECK:   %[[FIRST:.+]] = arith.cmpi eq, %[[R]], %c0
//       CHECK:   math.log1p
//       CHECK:   scf.if %[[FIRST]] {
//   CHECK-COUNT-6:   memref.store {{.+}} : memref<3x16xf32>
//       CHECK:   }
//       CHECK:   memref.store {{.+}} : memref<3x16xf32>
//   CHECK-COUNT-8:   gpu.barrier
//   CHECK-NOT:   gpu.barrier
//       CHECK:   scf.for
//   CHECK-COUNT-6:   gpu.barrier
//   CHECK-NOT:   gpu.barrier
//       CHECK:   gpu.terminator
func.func @gva(%xq: memref<1x16xf32>, %xk: memref<1x16xf32>, %xv: memref<1x16xf32>, %wq: memref<16x4xf32>, %wk: memref<16x4xf32>, %wv: memref<16x4xf32>, %cq: memref<3x16xf32>, %ck: memref<3x16xf32>, %cv: memref<3x16xf32>, %f: memref<1x2x16xf32>, %a: memref<2xf32>, %dt: memref<2x16xf32>, %b: memref<1x2xf32>, %nw: memref<8xf32>, %og: memref<1x2x8xf32>, %o: memref<1x2x8xf32>, %nq: memref<3x16xf32>, %nk: memref<3x16xf32>, %nv: memref<3x16xf32>, %s: memref<2x16x8xf32>) {
  k3.kda_step x(%xq, %xk, %xv) filters(%wq, %wk, %wv) windows(%cq, %ck, %cv)
      gate(%f, %a, %dt) beta(%b) norm(%nw) out_gate(%og) outs(%o, %nq, %nk, %nv, %s)
      softplus scale = 0.0883883476 eps = 1.0e-05
      : (memref<1x16xf32>, memref<1x16xf32>, memref<1x16xf32>, memref<16x4xf32>, memref<16x4xf32>, memref<16x4xf32>, memref<3x16xf32>, memref<3x16xf32>, memref<3x16xf32>, memref<1x2x16xf32>, memref<2xf32>, memref<2x16xf32>, memref<1x2xf32>, memref<8xf32>, memref<1x2x8xf32>, memref<1x2x8xf32>, memref<3x16xf32>, memref<3x16xf32>, memref<3x16xf32>, memref<2x16x8xf32>) -> ()
  return
}

// -----

// K = 136 and V = 160: a team of 128, the channel and column loops running
// past it (the threads below 8 and 32 take two). Over 128 key rows the
// column is read in runs of 128: all 136 rows for the prediction, then
// each run again for its update.
// CHECK-LABEL: func.func @wide
//       CHECK:   threads({{.+}}) in ({{.+}} = %c128{{.*}}, {{.+}})
//       CHECK:   scf.for %{{.+}} = %{{.+}} to %c136{{.*}} step %c128
//       CHECK:   scf.for %{{.+}} = %{{.+}} to %c160{{.*}} step %c128
//       CHECK:   scf.for %{{.+}} = %{{.+}} to %c160{{.*}} step %c128{{.*}} iter_args
//   CHECK-COUNT-136:   memref.load %{{.+}} : memref<1x136x160xf32>
//   CHECK-NOT:   memref.store %{{.+}} : memref<1x136x160xf32>
//   CHECK-COUNT-128:   memref.load %{{.+}} : memref<1x136x160xf32>
//   CHECK-NOT:   memref.load %{{.+}} : memref<1x136x160xf32>
//   CHECK-COUNT-128:   memref.store %{{.+}} : memref<1x136x160xf32>
//   CHECK-COUNT-8:   memref.load %{{.+}} : memref<1x136x160xf32>
//   CHECK-COUNT-8:   memref.store %{{.+}} : memref<1x136x160xf32>
//   CHECK-NOT:   memref.load %{{.+}} : memref<1x136x160xf32>
func.func @wide(%xq: memref<1x136xf32>, %xk: memref<1x136xf32>, %xv: memref<1x160xf32>, %wq: memref<136x4xf32>, %wk: memref<136x4xf32>, %wv: memref<160x4xf32>, %cq: memref<3x136xf32>, %ck: memref<3x136xf32>, %cv: memref<3x160xf32>, %f: memref<1x1x136xf32>, %a: memref<1xf32>, %dt: memref<1x136xf32>, %b: memref<1x1xf32>, %nw: memref<160xf32>, %og: memref<1x1x160xf32>, %o: memref<1x1x160xf32>, %nq: memref<3x136xf32>, %nk: memref<3x136xf32>, %nv: memref<3x160xf32>, %s: memref<1x136x160xf32>) {
  k3.kda_step x(%xq, %xk, %xv) filters(%wq, %wk, %wv) windows(%cq, %ck, %cv)
      gate(%f, %a, %dt) beta(%b) norm(%nw) out_gate(%og) outs(%o, %nq, %nk, %nv, %s)
      softplus scale = 0.0883883476 eps = 1.0e-05
      : (memref<1x136xf32>, memref<1x136xf32>, memref<1x160xf32>, memref<136x4xf32>, memref<136x4xf32>, memref<160x4xf32>, memref<3x136xf32>, memref<3x136xf32>, memref<3x160xf32>, memref<1x1x136xf32>, memref<1xf32>, memref<1x136xf32>, memref<1x1xf32>, memref<160xf32>, memref<1x1x160xf32>, memref<1x1x160xf32>, memref<3x136xf32>, memref<3x136xf32>, memref<3x160xf32>, memref<1x136x160xf32>) -> ()
  return
}
