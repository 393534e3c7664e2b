// RUN: k3-opt %s --split-input-file --k3-gpu-moe-experts | FileCheck %s
// RUN: k3-opt %s --split-input-file --k3-gpu-moe-experts="split-operands=true" | FileCheck %s --check-prefix=SPLIT

// K3's routed experts (E = 896, top-16, Dl = 3584, Ie = 3072, bf16 latent
// input): three launches of 128 threads. The sort over 896 experts: each
// block counts every expert's slots (896 words of shared memory, zeroed,
// then one shared-memory atomic add per slot routed inside [0, E)), then
// the offsets and the run counts (3 x 128 words; 5120 bytes in all; four
// barriers), and zeroes the y rows of dropped slots; GEMM1 over min(S, ⌈S/16⌉ + E)
// tiles x 24 column blocks (3072 / 128), the tile's expert by a binary
// search of 10 steps (2^10 ≥ 896), the codes read as 32-bit words, a loop
// over the 112 blocks of 32 channels carrying 4 n8 tiles x (gate, up) = 32
// accumulators, 16 mma.sync per block (8 tiles x 2 k-steps), each B
// register a byte decoded by two bf16x2 multiplies, SiTU-GLU (two tanh) in
// the epilogue; GEMM2 over the same tiles x 28 column blocks (3584 / 128),
// 96 blocks of Ie, 16 accumulators, 8 mma.sync, y stored by slot times its
// routing weight. No launch reads back to the host: the grids depend on T
// alone.
// CHECK-LABEL: func.func @k3
//       CHECK:   gpu.launch blocks({{.+}}) in ({{.+}} = %c896, {{.+}} = %c1, {{.+}} = %c1) threads({{.+}}) in ({{.+}} = %c128, {{.+}}) dynamic_shared_memory_size %c5120_i32
//       CHECK:     %[[COUNTS:.+]] = memref.view {{.+}} to memref<896xi32, #gpu.address_space<workgroup>>
//   CHECK-COUNT-3: memref.view {{.+}} to memref<128xi32, #gpu.address_space<workgroup>>
//       CHECK:     gpu.barrier
//       CHECK:     memref.atomic_rmw addi %{{.+}}, %[[COUNTS]][%{{.+}}] : (i32, memref<896xi32, #gpu.address_space<workgroup>>) -> i32
//   CHECK-COUNT-3: gpu.barrier
//   CHECK-NOT:     gpu.barrier
//       CHECK:     memref.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}] : memref<?x3584xf32>
//       CHECK:     gpu.terminator
//       CHECK:   %[[SLOTS:.+]] = arith.muli %{{.+}}, %c16 : index
//       CHECK:   %[[PER:.+]] = arith.ceildivui %[[SLOTS]], %c16{{.*}} : index
//       CHECK:   %[[BOUND:.+]] = arith.addi %[[PER]], %c896 : index
//       CHECK:   %[[TILES:.+]] = arith.minui %[[SLOTS]], %[[BOUND]] : index
//       CHECK:   gpu.launch blocks({{.+}}) in ({{.+}} = %[[TILES]], {{.+}} = %c24, {{.+}} = %c1) threads({{.+}}) in ({{.+}} = %c128{{.*}}, {{.+}}) {
//   CHECK-COUNT-10: arith.cmpi ule, %{{.+}}, %{{.+}} : index
//       CHECK:     memref.view {{.+}} : memref<4932501504xi8> to memref<1233125376xi32>
//       CHECK:     scf.for %{{.+}} = %{{.+}} to %c112 step %{{.+}} iter_args({{.+}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
//   CHECK-COUNT-2: arith.mulf %{{.+}}, %{{.+}} : vector<2xbf16>
//       CHECK:       nvvm.mma.sync
//   CHECK-COUNT-15:  nvvm.mma.sync
//   CHECK-NOT:       nvvm.mma.sync
//       CHECK:       scf.yield
//       CHECK:     math.tanh
//       CHECK:     math.tanh
//       CHECK:     memref.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}] : memref<?x3072xf32>
//       CHECK:     gpu.terminator
//       CHECK:   gpu.launch blocks({{.+}}) in ({{.+}} = %[[TILES]], {{.+}} = %c28, {{.+}} = %c1) threads({{.+}}) in ({{.+}} = %c128{{.*}}, {{.+}}) {
//       CHECK:     scf.for %{{.+}} = %{{.+}} to %c96 step %{{.+}} iter_args({{.+}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
//   CHECK-COUNT-8:   nvvm.mma.sync
//   CHECK-NOT:       nvvm.mma.sync
//       CHECK:     memref.load %{{.+}}[%{{.+}}, %{{.+}}] : memref<?x16xf32>
//       CHECK:     arith.mulf
//       CHECK:     memref.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}] : memref<?x3584xf32>
//       CHECK:     gpu.terminator
//   CHECK-NOT:   k3.moe_experts
// Split activations: hi and lo terms, twice the MMAs.
// SPLIT-LABEL: func.func @k3
//   SPLIT-COUNT-32: nvvm.mma.sync
//   SPLIT:          scf.yield
//   SPLIT-COUNT-16: nvvm.mma.sync
//   SPLIT-NOT:      nvvm.mma.sync
// SPLIT-LABEL: func.func @one
func.func @k3(%z: memref<?x3584xbf16>, %i: memref<?x16xi32>, %w: memref<?x16xf32>,
              %c1: memref<896x3072x1792xi8>, %c3: memref<896x3072x1792xi8>, %c2: memref<896x3584x1536xi8>,
              %s1: memref<896x3072x112xf8E8M0FNU>, %s3: memref<896x3072x112xf8E8M0FNU>,
              %s2: memref<896x3584x96xf8E8M0FNU>, %y: memref<?x3584xf32>, %h: memref<?x3072xf32>,
              %o: memref<?xi32>) {
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (memref<?x3584xbf16>, memref<?x16xi32>, memref<?x16xf32>, memref<896x3072x1792xi8>,
         memref<896x3072x1792xi8>, memref<896x3584x1536xi8>, memref<896x3072x112xf8E8M0FNU>,
         memref<896x3072x112xf8E8M0FNU>, memref<896x3584x96xf8E8M0FNU>, memref<?x3584xf32>,
         memref<?x3072xf32>, memref<?xi32>) -> ()
  return
}

// -----

// One expert: no search steps; without beta2 the up branch stays linear
// (one tanh in GEMM1's epilogue).
// CHECK-LABEL: func.func @one
//       CHECK:   gpu.launch blocks({{.+}}) in ({{.+}} = %c1{{.*}}, {{.+}}) threads
//       CHECK:   gpu.launch
//   CHECK-NOT:     arith.cmpi ule, %{{.+}}, %{{.+}} : index
//       CHECK:     scf.for
//       CHECK:     math.tanh
//   CHECK-NOT:     math.tanh
//       CHECK:     memref.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}] : memref<?x32xf32>
func.func @one(%z: memref<?x32xf32>, %i: memref<?x1xi64>, %w: memref<?x1xf32>,
               %c1: memref<1x32x16xi8>, %c3: memref<1x32x16xi8>, %c2: memref<1x32x16xi8>,
               %s1: memref<1x32x1xf8E8M0FNU>, %s3: memref<1x32x1xf8E8M0FNU>,
               %s2: memref<1x32x1xf8E8M0FNU>, %y: memref<?x32xf32>, %h: memref<?x32xf32>,
               %o: memref<?xi32>) {
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (memref<?x32xf32>, memref<?x1xi64>, memref<?x1xf32>, memref<1x32x16xi8>,
         memref<1x32x16xi8>, memref<1x32x16xi8>, memref<1x32x1xf8E8M0FNU>,
         memref<1x32x1xf8E8M0FNU>, memref<1x32x1xf8E8M0FNU>, memref<?x32xf32>,
         memref<?x32xf32>, memref<?xi32>) -> ()
  return
}
