// RUN: k3-opt %s --split-input-file --k3-gpu-paged-attend="split-keys=0" --verify-diagnostics | FileCheck %s
// RUN: k3-opt %s --split-input-file --k3-gpu-paged-attend="split-keys=64" --verify-diagnostics | FileCheck %s --check-prefix=SPLIT
// RUN: not k3-opt %s --split-input-file --k3-gpu-paged-attend="split-keys=-1" 2>&1 | FileCheck %s --check-prefix=NEG
// NEG: error: 'k3.paged_attend' op k3-gpu-paged-attend needs split-keys >= 0 and sms >= 1, got -1 and 132

// k3-tiny's shapes: 2 heads, latent 32, rope 8. One launch of (heads,
// requests) blocks of pagedAttendTeam(32) = 32 threads, none for zero
// requests; shared memory for the query row (40 words) and three arrays
// of 32 (probabilities and two reduction trees): 544 bytes. The length and
// the table are read in the kernel; the length is clamped to the table's
// rows; a key's row is found once per key (one branch: its own row or a
// page), then read column by column.
// CHECK-LABEL: func.func @attend
//       CHECK:   %[[B:.+]] = memref.dim %arg5, %c0
//       CHECK:   scf.if
//       CHECK:     %[[SMEM:.+]] = arith.constant 544 : i32
//       CHECK:     gpu.launch blocks(%[[H:.+]], %[[R:.+]], %{{.+}}) in (%{{.+}} = %c2, %{{.+}} = %[[B]], %{{.+}} = %c1) threads(%[[T:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %c32, {{.+}} dynamic_shared_memory_size %[[SMEM]]
//       CHECK:       memref.load %arg0[%[[R]], %[[H]], %{{.+}}] : memref<?x2x40xf32>
//       CHECK:       gpu.barrier
//       CHECK:       %[[LEN:.+]] = memref.load %arg3[%[[R]]] : memref<?xi32>
//       CHECK:       arith.minui
//       CHECK:       scf.for
//       CHECK:         scf.if
//       CHECK:           scf.for
//       CHECK:             memref.load %arg4[%[[R]], %{{.+}}] : memref<?x40xbf16>
//       CHECK:         } else {
//       CHECK:           memref.load %arg2[%[[R]], %{{.+}}] : memref<?x?xi32>
//       CHECK:           scf.for
//       CHECK:             memref.load %arg1[%{{.+}}, %{{.+}}, %{{.+}}] : memref<?x?x40xbf16>
//       CHECK:         arith.maximumf
//       CHECK:         math.exp
//       CHECK:       memref.store %{{.+}}, %arg5[%[[R]], %[[H]], %{{.+}}] : memref<?x2x32xf32>
//   CHECK-NOT:   k3.paged_attend
// Split keys (split-keys=64, sms=132): S = min(⌈MB·PT / 64⌉, ⌈264 /
// (B·2)⌉) from the table's and the pages' widths and the batch on the
// host; S > 1 runs the split kernel over (requests·S, heads) blocks, each
// keys [s·C, s·C + C) of its request, C = ⌈(MB·PT + 1) / S⌉, its (max,
// sum) and 32 weighted columns to two workspaces, then the merge over
// (heads, requests) (no shared memory, no barrier: a loop over the S
// splits for the maximum, one for the weighted sums); S = 1, the one
// kernel.
// SPLIT-LABEL: func.func @attend
//       SPLIT:   %[[B:.+]] = memref.dim %arg5, %c0
//       SPLIT:   %[[MB:.+]] = memref.dim %arg2, %c1
//       SPLIT:   %[[PT:.+]] = memref.dim %arg1, %c1
//       SPLIT:   %[[ROWS:.+]] = arith.muli %[[MB]], %[[PT]]
//       SPLIT:   %[[BLOCKS:.+]] = arith.muli %[[B]], %c2
//       SPLIT:   %[[FILL:.+]] = arith.ceildivui %c264, %[[BLOCKS]]
//       SPLIT:   %[[WANT:.+]] = arith.ceildivui %[[ROWS]], %c64
//       SPLIT:   %[[S:.+]] = arith.minui %[[WANT]], %[[FILL]]
//       SPLIT:   %[[MANY:.+]] = arith.cmpi ult, %c1{{.*}}, %[[S]]
//       SPLIT:   scf.if %[[MANY]] {
//       SPLIT:     %[[KEYS:.+]] = arith.addi %[[ROWS]], %c1
//       SPLIT:     %[[C:.+]] = arith.ceildivui %[[KEYS]], %[[S]]
//       SPLIT:     %[[STATS:.+]] = memref.alloc(%{{.+}}) : memref<?xf32>
//       SPLIT:     %[[SUMS:.+]] = memref.alloc(%{{.+}}) : memref<?xf32>
//       SPLIT:     %[[X:.+]] = arith.muli %[[B]], %[[S]]
//       SPLIT:     gpu.launch blocks({{.+}}) in (%{{.+}} = %[[X]], %{{.+}} = %c2{{.*}}, %{{.+}} = %c1{{.*}}) threads({{.+}}) in (%{{.+}} = %c32{{.*}}, {{.+}} dynamic_shared_memory_size %c544
//       SPLIT:       arith.divui %{{.+}}, %[[S]]
//       SPLIT:       arith.remui %{{.+}}, %[[S]]
//       SPLIT:       arith.muli %{{.+}}, %[[C]]
//       SPLIT:       memref.store %{{.+}}, %[[STATS]]
//       SPLIT:       memref.store %{{.+}}, %[[SUMS]]
//       SPLIT:       gpu.terminator
//       SPLIT:     gpu.launch blocks({{.+}}) in (%{{.+}} = %c2{{.*}}, %{{.+}} = %[[B]], %{{.+}} = %c1{{.*}}) threads({{.+}}) in (%{{.+}} = %c32{{.*}}, {{.+}} dynamic_shared_memory_size %c0
//   SPLIT-NOT:       gpu.barrier
//       SPLIT:       scf.for {{.+}} to %[[S]]
//       SPLIT:         arith.maximumf
//       SPLIT:       scf.for {{.+}} to %[[S]]
//       SPLIT:         math.exp
//       SPLIT:       memref.store %{{.+}}, %arg5
//       SPLIT:       gpu.terminator
//       SPLIT:     memref.dealloc %[[STATS]]
//       SPLIT:     memref.dealloc %[[SUMS]]
//       SPLIT:   } else {
//       SPLIT:     gpu.launch blocks({{.+}}) in (%{{.+}} = %c2{{.*}}, %{{.+}} = %[[B]], %{{.+}} = %c1{{.*}})
// SPLIT-LABEL: func.func @wide
func.func @attend(%q: memref<?x2x40xf32>, %pool: memref<?x?x40xbf16>, %bt: memref<?x?xi32>,
                  %len: memref<?xi32>, %rows: memref<?x40xbf16>, %o: memref<?x2x32xf32>) {
  k3.paged_attend %q pages(%pool) table(%bt) lengths(%len) rows(%rows) outs(%o)
      : (memref<?x2x40xf32>, memref<?x?x40xbf16>, memref<?x?xi32>, memref<?xi32>,
         memref<?x40xbf16>, memref<?x2x32xf32>) -> ()
  return
}

// -----

// K3's and Kimi Linear's latent width, 512: 128 threads of 4 columns each.
// CHECK-LABEL: func.func @wide
//       CHECK:   gpu.launch {{.+}} threads({{.+}}) in (%{{.+}} = %c128,
func.func @wide(%q: memref<?x4x576xf32>, %pool: memref<?x?x576xbf16>, %bt: memref<?x?xi32>,
                %len: memref<?xi32>, %rows: memref<?x576xbf16>, %o: memref<?x4x512xf32>) {
  k3.paged_attend %q pages(%pool) table(%bt) lengths(%len) rows(%rows) outs(%o)
      : (memref<?x4x576xf32>, memref<?x?x576xbf16>, memref<?x?xi32>, memref<?xi32>,
         memref<?x576xbf16>, memref<?x4x512xf32>) -> ()
  return
}

// -----

// A latent width no team covers (24: no power of two from 32 divides it).
func.func @narrow(%q: memref<?x2x32xf32>, %pool: memref<?x?x32xf32>, %bt: memref<?x?xi32>,
                  %len: memref<?xi32>, %rows: memref<?x32xf32>, %o: memref<?x2x24xf32>) {
  // expected-error @+1 {{k3-gpu-paged-attend needs static heads and row widths, and a latent width that a team of 32 to 128 threads (a power of two dividing it, at most 16 columns each) covers, got out 'memref<?x2x24xf32>' and q 'memref<?x2x32xf32>'}}
  k3.paged_attend %q pages(%pool) table(%bt) lengths(%len) rows(%rows) outs(%o)
      : (memref<?x2x32xf32>, memref<?x?x32xf32>, memref<?x?xi32>, memref<?xi32>,
         memref<?x32xf32>, memref<?x2x24xf32>) -> ()
  return
}

// -----

// q_scale (the softmax scale left to the kernel by the GPU's lowering of
// k3.mla_paged): each query value times the scale as it goes to shared
// memory, the product the scaling kernel made.
// CHECK-LABEL: func.func @scaled
//       CHECK:     gpu.launch
//       CHECK:       %[[Q:.+]] = memref.load %arg0[{{.+}}] : memref<?x2x40xf32>
//       CHECK:       %[[S:.+]] = arith.mulf %[[Q]], %cst{{.*}} : f32
//       CHECK:       memref.store %[[S]], %{{.+}}[%{{.+}}] : memref<40xf32, #gpu.address_space<workgroup>>
func.func @scaled(%q: memref<?x2x40xf32>, %pool: memref<?x?x40xbf16>, %bt: memref<?x?xi32>,
                  %len: memref<?xi32>, %rows: memref<?x40xbf16>, %o: memref<?x2x32xf32>) {
  k3.paged_attend %q pages(%pool) table(%bt) lengths(%len) rows(%rows) outs(%o) {q_scale = 0.125 : f32}
      : (memref<?x2x40xf32>, memref<?x?x40xbf16>, memref<?x?xi32>, memref<?xi32>,
         memref<?x40xbf16>, memref<?x2x32xf32>) -> ()
  return
}
