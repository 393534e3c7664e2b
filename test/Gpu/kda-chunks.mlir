// RUN: k3-opt %s --split-input-file --k3-gpu-kda-chunks | FileCheck %s
// RUN: k3-opt %s --split-input-file --k3-gpu-kda-chunks="split-operands=false" | FileCheck %s --check-prefix=ONE

// K3's KDA heads (K = V = 128, bf16 activations), boundary states every 64
// tokens: two launches. The first, ⌈T/16⌉ chunks x 2 heads of 128 threads,
// prepares each chunk in 70080 bytes of dynamic shared memory: six
// [16][132] f32 arrays (G, the two factors of L and Aqk, the right factor,
// Q e^G, K e^G then W), KD as [128][17], U as [16][132], L and Aqk as
// [16][17], β; 4 barriers and no tensor-core instruction; it stores the
// chunk's record. The second, 2 heads x 2 slices of 64 value channels, 4
// warps (128 threads) each, no shared memory and no barrier: the loop over
// 16-token chunks carries the lane's 64 state accumulators; per chunk,
// with split operands, 116 mma.sync per warp: 8 key steps x 2 token tiles
// x ((W, Q e^G) x (hi, lo) + Sᵀ_hi (Q e^G)ᵀ_lo) = 80 and Δ Aqkᵀ 2 x 2
// before the output goes back as bf16, then the state update, 16 n8 tiles
// x 2; the boundary store sits behind the chunk's test of `every`.
// CHECK-LABEL: func.func @k3
//       CHECK:   %[[CHUNKS:.+]] = arith.ceildivui %{{.+}}, %c16
//       CHECK:   gpu.launch blocks({{.+}}) in ({{.+}} = %[[CHUNKS]], {{.+}} = %c2{{.*}}, {{.+}} = %c1{{.*}}) threads({{.+}}) in ({{.+}} = %c128{{.*}}, {{.+}}) dynamic_shared_memory_size %c70080_i32
//       CHECK:   memref.view {{.+}} to memref<2112xf32, #gpu.address_space<workgroup>>
//       CHECK:   memref.view {{.+}} to memref<2176xf32, #gpu.address_space<workgroup>>
//       CHECK:   memref.view {{.+}} to memref<272xf32, #gpu.address_space<workgroup>>
//   CHECK-COUNT-4: gpu.barrier
//   CHECK-NOT:   nvvm.mma.sync
//       CHECK:   memref.store {{.+}} : memref<?x2x6400xf32>
//       CHECK:   gpu.terminator
//       CHECK:   gpu.launch blocks({{.+}}) in ({{.+}} = %c2{{.*}}, {{.+}} = %c2{{.*}}, {{.+}} = %c1{{.*}}) threads({{.+}}) in ({{.+}} = %c128{{.*}}, {{.+}}) {
//       CHECK:   %{{[0-9]+}}:64 = scf.for {{.+}} -> (f32,
//   CHECK-NOT:     gpu.barrier
//   CHECK-COUNT-84: nvvm.mma.sync
//   CHECK-NOT:       nvvm.mma.sync
//       CHECK:       arith.truncf {{.+}} : f32 to bf16
//       CHECK:       memref.store {{.+}} : memref<?x2x128xbf16>
//   CHECK-COUNT-32: nvvm.mma.sync
//   CHECK-NOT:       nvvm.mma.sync
//       CHECK:       scf.if
//       CHECK:         memref.store {{.+}} : memref<?x2x128x128xf32>
//       CHECK:     scf.yield
//       CHECK:   memref.store {{.+}} : memref<2x128x128xf32>
//       CHECK:   gpu.terminator
// One bf16 term per operand: 8 x 2 x 2 + 2 + 16 = 50 MMAs.
// ONE-LABEL: func.func @k3
//   ONE-COUNT-50: nvvm.mma.sync
//   ONE-NOT:       nvvm.mma.sync
func.func @k3(%q: memref<?x2x128xbf16>, %k: memref<?x2x128xbf16>, %v: memref<?x2x128xbf16>,
              %g: memref<?x2x128xf32>, %beta: memref<?x2xf32>, %o: memref<?x2x128xbf16>,
              %s: memref<2x128x128xf32>, %ws: memref<?x2x6400xf32>, %b: memref<?x2x128x128xf32>) {
  k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s, %ws, %b) scale = 0.0883883476 every = 64
      : (memref<?x2x128xbf16>, memref<?x2x128xbf16>, memref<?x2x128xbf16>, memref<?x2x128xf32>,
         memref<?x2xf32>, memref<?x2x128xbf16>, memref<2x128x128xf32>, memref<?x2x6400xf32>, memref<?x2x128x128xf32>) -> ()
  return
}

// -----

// k3-tiny's heads (K = V = 16, GVA 1 : 2): records of 912 words; the
// recurrence one warp per head, 2 blocks, the state's 8 accumulators per
// lane; no boundary stores.
// CHECK-LABEL: func.func @tiny
//   ONE-LABEL: func.func @tiny
//       CHECK:   gpu.launch blocks({{.+}}) in ({{.+}}, {{.+}} = %c2{{.*}}, {{.+}} = %c1{{.*}}) threads({{.+}}) in ({{.+}} = %c128{{.*}}, {{.+}})
//       CHECK:   memref.store {{.+}} : memref<?x2x912xf32>
//       CHECK:   gpu.launch blocks({{.+}}) in ({{.+}} = %c2{{.*}}, {{.+}} = %c1{{.*}}, {{.+}} = %c1{{.*}}) threads({{.+}}) in ({{.+}} = %c32{{.*}}, {{.+}})
//       CHECK:   %{{[0-9]+}}:8 = scf.for {{.+}} -> (f32,
//   CHECK-NOT:   memref<?x2x16x16xf32>
//       CHECK:   gpu.terminator
func.func @tiny(%q: memref<?x1x16xf32>, %k: memref<?x1x16xf32>, %v: memref<?x2x16xf32>,
                %g: memref<?x2x16xf32>, %beta: memref<?x2xf32>, %o: memref<?x2x16xf32>,
                %s: memref<2x16x16xf32>, %ws: memref<?x2x912xf32>) {
  k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s, %ws) scale = 0.25 every = 0
      : (memref<?x1x16xf32>, memref<?x1x16xf32>, memref<?x2x16xf32>, memref<?x2x16xf32>,
         memref<?x2xf32>, memref<?x2x16xf32>, memref<2x16x16xf32>, memref<?x2x912xf32>) -> ()
  return
}

// -----

// `pairwise` (the unbounded gate): the preparation kernel's entry loop over
// the key channels runs only for entries on and below the diagonal and
// takes one exponential of G_r − G_s per channel (the factored form takes
// none there); the recurrence is the same.
// CHECK-LABEL: func.func @pairwise
//       CHECK:   gpu.launch
//       CHECK:   gpu.barrier
//       CHECK:   gpu.barrier
//       CHECK:   scf.if {{.+}} -> (f32, f32) {
//       CHECK:     scf.for {{.+}} iter_args({{.+}}) -> (f32, f32) {
//       CHECK:       arith.subf
//       CHECK:       math.exp
//       CHECK:       scf.yield
//       CHECK:   } else {
//       CHECK:   gpu.barrier
//       CHECK:   gpu.launch
//       CHECK:   %{{[0-9]+}}:8 = scf.for {{.+}} -> (f32,
// The factored form's entry loop has no exponential.
// CHECK-LABEL: func.func @factored
//       CHECK:   gpu.barrier
//       CHECK:   gpu.barrier
//       CHECK:   scf.for {{.+}} iter_args({{.+}}) -> (f32, f32) {
//   CHECK-NOT:     math.exp
//       CHECK:     scf.yield
func.func @pairwise(%q: memref<?x1x16xf32>, %k: memref<?x1x16xf32>, %v: memref<?x2x16xf32>,
                    %g: memref<?x2x16xf32>, %beta: memref<?x2xf32>, %o: memref<?x2x16xf32>,
                    %s: memref<2x16x16xf32>, %ws: memref<?x2x912xf32>) {
  k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s, %ws) scale = 0.25 every = 0 pairwise
      : (memref<?x1x16xf32>, memref<?x1x16xf32>, memref<?x2x16xf32>, memref<?x2x16xf32>,
         memref<?x2xf32>, memref<?x2x16xf32>, memref<2x16x16xf32>, memref<?x2x912xf32>) -> ()
  return
}

func.func @factored(%q: memref<?x1x16xf32>, %k: memref<?x1x16xf32>, %v: memref<?x2x16xf32>,
                    %g: memref<?x2x16xf32>, %beta: memref<?x2xf32>, %o: memref<?x2x16xf32>,
                    %s: memref<2x16x16xf32>, %ws: memref<?x2x912xf32>) {
  k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s, %ws) scale = 0.25 every = 0
      : (memref<?x1x16xf32>, memref<?x1x16xf32>, memref<?x2x16xf32>, memref<?x2x16xf32>,
         memref<?x2xf32>, memref<?x2x16xf32>, memref<2x16x16xf32>, memref<?x2x912xf32>) -> ()
  return
}
