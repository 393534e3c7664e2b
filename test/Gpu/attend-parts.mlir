// RUN: k3-opt %s --k3-gpu-attend-parts | FileCheck %s

// K3's MLA decode parts (64 heads, rows of 576 = 512 latent + 64 rope,
// bf16): one launch of ⌈N/256⌉ x ⌈64/64⌉ blocks of 256 threads and
// 101120 bytes of dynamic shared memory: Q as 64 rows of 292 words (288
// padded to ≡ 4 mod 32), the key tile as 16 such rows (also viewed as
// bf16), P as 64 x 12 words, S as 64 x 17 floats, the 64 rescale factors.
// The tile's rows are 16-byte vector loads, 5 per thread (1152 units over
// 256 threads), the first tile's before the loop and the next tile's inside
// it; per 16-key tile: 4 barriers, the 36 k16 steps of the scores (one
// mma.sync per step and warp), 17 exponentials (16 probabilities and the
// rescale), then 4 m16 x 8 n8 mma.sync of P · V per warp. After the loop the
// part's 128 accumulators per thread, its max and its sum are stored.
// CHECK-LABEL: func.func @k3
//       CHECK:   %[[P:.+]] = memref.dim %arg2, %c1
//       CHECK:   %[[GY:.+]] = arith.ceildivui %{{.+}}, %c64
//       CHECK:   gpu.launch blocks({{.+}}) in ({{.+}} = %[[P]], {{.+}} = %[[GY]], {{.+}}) threads({{.+}}) in ({{.+}} = %c256, {{.+}}) dynamic_shared_memory_size %c101120_i32
//       CHECK:   gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
//       CHECK:   memref.view %{{.+}}[%c0{{.*}}][] : {{.+}} to memref<18688xi32, #gpu.address_space<workgroup>>
//       CHECK:   memref.view %{{.+}}[%c74752{{.*}}][] : {{.+}} to memref<4672xi32, #gpu.address_space<workgroup>>
//       CHECK:   memref.view %{{.+}}[%c74752{{.*}}][] : {{.+}} to memref<9344xbf16, #gpu.address_space<workgroup>>
//       CHECK:   memref.view %{{.+}}[%c93440{{.*}}][] : {{.+}} to memref<768xi32, #gpu.address_space<workgroup>>
//       CHECK:   memref.view %{{.+}}[%c96512{{.*}}][] : {{.+}} to memref<1088xf32, #gpu.address_space<workgroup>>
//       CHECK:   memref.view %{{.+}}[%c100864{{.*}}][] : {{.+}} to memref<64xf32, #gpu.address_space<workgroup>>
//       CHECK:   scf.for %{{.+}} = %{{.+}} to %c18688{{.*}} step %c256
//       CHECK:   arith.truncf %{{.+}} : f32 to bf16
// CHECK-COUNT-5:   vector.load %arg1[%{{.+}}, %{{.+}}] {alignment = 16 : i64} : memref<?x576xbf16>, vector<8xbf16>
//       CHECK:   scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c16 iter_args({{.+}}) -> (f32, f32, {{(f32, )+}}f32, vector<8xbf16>, vector<8xbf16>, vector<8xbf16>, vector<8xbf16>, vector<8xbf16>)
//  CHECK-NEXT:     gpu.barrier
// CHECK-COUNT-4:   vector.store %{{.+}}, %{{.+}}[%{{.+}}] {alignment = 16 : i64} : memref<9344xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
//       CHECK:     scf.if
//       CHECK:       vector.store
//       CHECK:     gpu.barrier
// CHECK-COUNT-5:   vector.load %arg1
//       CHECK:     scf.for %{{.+}} = %c0{{.*}} to %c288{{.*}} step %c8
//       CHECK:       nvvm.mma.sync {{.+}} {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
//       CHECK:     gpu.barrier
//       CHECK:     scf.if %{{.+}} -> (f32, f32)
// CHECK-COUNT-17:    math.exp
//       CHECK:     gpu.barrier
// CHECK-COUNT-32:  nvvm.mma.sync
//   CHECK-NOT:     gpu.barrier
//       CHECK:     scf.yield
// CHECK-COUNT-128: memref.store %{{.+}}, %arg4[%{{.+}}, %{{.+}}, %{{.+}}] : memref<64x?x512xf32>
//       CHECK:   memref.store %{{.+}}#0, %arg2
//       CHECK:   memref.store %{{.+}}#1, %arg3
//       CHECK:   gpu.terminator
//   CHECK-NOT:   k3.attend_parts
func.func @k3(%q: memref<64x576xf32>, %rows: memref<?x576xbf16>, %m: memref<64x?xf32>,
              %l: memref<64x?xf32>, %u: memref<64x?x512xf32>) {
  k3.attend_parts %q, %rows outs(%m, %l, %u) part_keys = 256
      : (memref<64x576xf32>, memref<?x576xbf16>, memref<64x?xf32>, memref<64x?xf32>,
         memref<64x?x512xf32>) -> ()
  return
}

// k3-tiny's shapes: f32 rows of 40 (32 latent): pairs of elements rounded
// to bf16 and packed in a word, 2 per thread (16 rows of 24 words), loaded
// when the tile is needed (no prefetch: pairs would spill next to K3's
// accumulators); rows padded to 36 words; 4 n8 tiles of values, so each
// warp has one (warps 4-7 compute clamped columns they never store): 4
// mma.sync of P · V per warp, 16 stores.
// CHECK-LABEL: func.func @tiny
//       CHECK:   gpu.launch {{.+}} dynamic_shared_memory_size %c19200_i32
//       CHECK:   memref.view %{{.+}}[%c9216{{.*}}][] : {{.+}} to memref<576xi32, #gpu.address_space<workgroup>>
//       CHECK:   memref.view %{{.+}}[%c18944{{.*}}][] : {{.+}} to memref<64xf32, #gpu.address_space<workgroup>>
//   CHECK-NOT:   memref.load %arg1
//       CHECK:   scf.for %{{.+}} step %c16{{.*}} iter_args({{.+}}) -> (f32, f32, {{(f32, )+}}f32) {
//  CHECK-NEXT:     gpu.barrier
// CHECK-COUNT-4:   memref.load %arg1[%{{.+}}, %{{.+}}] : memref<?x40xf32>
//   CHECK-NOT:     vector.load
//       CHECK:     memref.store %{{.+}}, %{{.+}}[%{{.+}}] : memref<576xi32, #gpu.address_space<workgroup>>
//       CHECK:     scf.if
//       CHECK:       memref.store %{{.+}}, %{{.+}}[%{{.+}}] : memref<576xi32, #gpu.address_space<workgroup>>
//       CHECK:     gpu.barrier
//   CHECK-NOT:     memref.load %arg1
//       CHECK:     scf.for %{{.+}} = %c0{{.*}} to %c24{{.*}} step %c8
//       CHECK:       nvvm.mma.sync
//       CHECK:     scf.if %{{.+}} -> (f32, f32)
//       CHECK:     gpu.barrier
// CHECK-COUNT-4:   nvvm.mma.sync
//   CHECK-NOT:     nvvm.mma.sync
//       CHECK:     scf.yield
// CHECK-COUNT-16: memref.store %{{.+}}, %arg4[%{{.+}}, %{{.+}}, %{{.+}}] : memref<2x?x32xf32>
//   CHECK-NOT:   memref.store %{{.+}}, %arg4
//       CHECK:   gpu.terminator
func.func @tiny(%q: memref<2x40xf32>, %rows: memref<?x40xf32>, %m: memref<2x?xf32>,
                %l: memref<2x?xf32>, %u: memref<2x?x32xf32>) {
  k3.attend_parts %q, %rows outs(%m, %l, %u) part_keys = 16
      : (memref<2x40xf32>, memref<?x40xf32>, memref<2x?xf32>, memref<2x?xf32>,
         memref<2x?x32xf32>) -> ()
  return
}

// q_scale: each query value times the scale as it is loaded, before its
// bf16 rounding (the product the scaling kernel made).
// CHECK-LABEL: func.func @scaled
//       CHECK:   gpu.launch
//       CHECK:   %[[V:.+]] = memref.load %arg0[%{{.+}}, %{{.+}}] : memref<2x40xf32>
//  CHECK-NEXT:   %[[C:.+]] = arith.constant 1.250000e-01 : f32
//  CHECK-NEXT:   %[[S:.+]] = arith.mulf %[[V]], %[[C]] : f32
//       CHECK:   arith.select %{{.+}}, %[[S]], %{{.+}} : f32
//       CHECK:   arith.truncf
func.func @scaled(%q: memref<2x40xf32>, %rows: memref<?x40xf32>, %m: memref<2x?xf32>,
                  %l: memref<2x?xf32>, %u: memref<2x?x32xf32>) {
  k3.attend_parts %q, %rows outs(%m, %l, %u) part_keys = 16 {q_scale = 0.125 : f32}
      : (memref<2x40xf32>, memref<?x40xf32>, memref<2x?xf32>, memref<2x?xf32>,
         memref<2x?x32xf32>) -> ()
  return
}

// A strided row view whose stride is not a multiple of 8 keeps element loads.
// CHECK-LABEL: func.func @strided
//   CHECK-NOT:   vector.load
//       CHECK:   gpu.terminator
func.func @strided(%q: memref<64x576xf32>, %rows: memref<?x576xbf16, strided<[580, 1]>>,
                   %m: memref<64x?xf32>, %l: memref<64x?xf32>, %u: memref<64x?x512xf32>) {
  k3.attend_parts %q, %rows outs(%m, %l, %u) part_keys = 256
      : (memref<64x576xf32>, memref<?x576xbf16, strided<[580, 1]>>, memref<64x?xf32>,
         memref<64x?xf32>, memref<64x?x512xf32>) -> ()
  return
}
