// RUN: k3-opt %s --split-input-file --convert-k3-to-linalg="norm=kernel" | FileCheck %s --check-prefix=ROW
// RUN: k3-opt %s --split-input-file --k3-gpu-row-norm | FileCheck %s
// RUN: not k3-opt %s --split-input-file --convert-k3-to-linalg="norm=rows" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: convert-k3-to-linalg: norm must be linalg or kernel, got 'rows'

// [T, 64] rows (k3-tiny's width), gated or not: one k3.row_norm into a
// fresh [T, 64] each.
// ROW-LABEL: func.func @rows
//       ROW:   %[[O:.+]] = tensor.empty(%{{.+}}) : tensor<?x64xf32>
//       ROW:   %[[Y:.+]] = k3.row_norm %arg0, %arg1 outs(%[[O]]) {eps = 9.99999974E-6 : f32}
//       ROW:   k3.row_norm %[[Y]], %arg1 gate(%arg2) outs(%{{.+}}) {eps = 9.99999974E-6 : f32}
//   ROW-NOT:   linalg.generic
func.func @rows(%x: tensor<?x64xf32>, %w: tensor<64xbf16>, %g: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = k3.rms_norm %x, %w {eps = 1.0e-05 : f32} : (tensor<?x64xf32>, tensor<64xbf16>) -> tensor<?x64xf32>
  %z = k3.rms_norm %y, %w gate(%g) {eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<64xbf16>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %z : tensor<?x64xf32>
}

// -----

// The destination takes y's static sizes where x's are dynamic: the team's
// width, a decode step's one row.
// ROW-LABEL: func.func @static_result
//       ROW:   %[[O:.+]] = tensor.empty() : tensor<1x64xf32>
//       ROW:   k3.row_norm %arg0, %arg1 outs(%[[O]]) {{.+}} -> tensor<1x64xf32>
func.func @static_result(%x: tensor<?x?xf32>, %w: tensor<64xf32>) -> tensor<1x64xf32> {
  %y = k3.rms_norm %x, %w {eps = 1.0e-05 : f32} : (tensor<?x?xf32>, tensor<64xf32>) -> tensor<1x64xf32>
  return %y : tensor<1x64xf32>
}

// -----

// What no team covers stays loop nests: per-head rows [T, H, D] (the KDA
// output norm's), 48 values (a power-of-two team dividing 48 has at most 16
// threads) and 2880 (64 threads, 45 channels each: over the 32 a thread
// keeps in registers).
// ROW-LABEL: func.func @heads
//   ROW-NOT:   k3.row_norm
//       ROW:   linalg.generic
// ROW-LABEL: func.func @narrow
//   ROW-NOT:   k3.row_norm
//       ROW:   linalg.generic
// ROW-LABEL: func.func @wide
//   ROW-NOT:   k3.row_norm
//       ROW:   linalg.generic
func.func @heads(%x: tensor<?x4x64xf32>, %w: tensor<64xf32>) -> tensor<?x4x64xf32> {
  %y = k3.rms_norm %x, %w {eps = 1.0e-05 : f32} : (tensor<?x4x64xf32>, tensor<64xf32>) -> tensor<?x4x64xf32>
  return %y : tensor<?x4x64xf32>
}
func.func @narrow(%x: tensor<?x48xf32>, %w: tensor<48xf32>) -> tensor<?x48xf32> {
  %y = k3.rms_norm %x, %w {eps = 1.0e-05 : f32} : (tensor<?x48xf32>, tensor<48xf32>) -> tensor<?x48xf32>
  return %y : tensor<?x48xf32>
}
func.func @wide(%x: tensor<?x2880xf32>, %w: tensor<2880xf32>) -> tensor<?x2880xf32> {
  %y = k3.rms_norm %x, %w {eps = 1.0e-05 : f32} : (tensor<?x2880xf32>, tensor<2880xf32>) -> tensor<?x2880xf32>
  return %y : tensor<?x2880xf32>
}

// -----

// The kernel for rows of 7168 (K3's width): no launch for no rows; a block
// per row of 256 threads (28 channels each: the last 6912 past the
// thread's), one reduction tree of 256 words (1024 bytes), summed in 8
// barriered steps; the channels stored as (x · inv) · weight, in place.
// CHECK-LABEL: func.func @kernel
//       CHECK:   %[[R:.+]] = memref.dim %arg0, %c0
//       CHECK:   %[[ANY:.+]] = arith.cmpi ult, %c0{{.*}}, %[[R]]
//       CHECK:   scf.if %[[ANY]]
//       CHECK:     gpu.launch blocks(%[[BLK:[^,]+]], {{.+}}) in ({{.+}} = %[[R]], {{.+}} = %c1{{.*}}, {{.+}} = %c1{{.*}}) threads(%[[TID:[^,]+]], {{.+}}) in ({{.+}} = %c256{{.*}}, {{.+}}) dynamic_shared_memory_size %c1024_i32
//       CHECK:       memref.view {{.+}} to memref<256xf32, #gpu.address_space<workgroup>>
//       CHECK:       %[[LAST:.+]] = arith.addi %[[TID]], %c6912
//       CHECK:       memref.load %arg0[%[[BLK]], %[[LAST]]] : memref<?x7168xbf16>
//   CHECK-COUNT-9:   gpu.barrier
//       CHECK:       %[[SUM:.+]] = memref.load {{.+}}[%c0{{.*}}] : memref<256xf32, #gpu.address_space<workgroup>>
//       CHECK:       %[[MEAN:.+]] = arith.divf %[[SUM]], %cst
//       CHECK:       %[[EPS:.+]] = arith.addf %[[MEAN]]
//       CHECK:       %[[INV:.+]] = math.rsqrt %[[EPS]]
//       CHECK:       %[[XI:.+]] = arith.mulf %{{.+}}, %[[INV]]
//       CHECK:       arith.mulf %[[XI]]
//  CHECK-COUNT-28:   memref.store {{.+}} : memref<?x7168xbf16>
//       CHECK:       gpu.terminator
//   CHECK-NOT:   k3.row_norm
func.func @kernel(%x: memref<?x7168xbf16>, %w: memref<7168xbf16>) {
  k3.row_norm %x, %w outs(%x) {eps = 1.0e-05 : f32}
      : (memref<?x7168xbf16>, memref<7168xbf16>, memref<?x7168xbf16>) -> ()
  return
}

// -----

// A static row count needs no guard (k3-gpu-merge-launches then sees the
// launch beside the others): four blocks; no rows, no launch.
// CHECK-LABEL: func.func @four_rows
//   CHECK-NOT:   scf.if
//       CHECK:   gpu.launch blocks({{.+}}) in ({{.+}} = %c4{{.*}}, {{.+}} = %c1{{.*}}, {{.+}} = %c1{{.*}}) threads({{.+}}) in ({{.+}} = %c64{{.*}},
// CHECK-LABEL: func.func @no_rows
//   CHECK-NOT:   gpu.launch
//   CHECK-NOT:   k3.row_norm
//       CHECK:   return
func.func @four_rows(%x: memref<4x64xf32>, %w: memref<64xf32>, %o: memref<4x64xf32>) {
  k3.row_norm %x, %w outs(%o) {eps = 1.0e-05 : f32} : (memref<4x64xf32>, memref<64xf32>, memref<4x64xf32>) -> ()
  return
}
func.func @no_rows(%x: memref<0x64xf32>, %w: memref<64xf32>, %o: memref<0x64xf32>) {
  k3.row_norm %x, %w outs(%o) {eps = 1.0e-05 : f32} : (memref<0x64xf32>, memref<64xf32>, memref<0x64xf32>) -> ()
  return
}

// -----

// Gated: each channel also times sigmoid(gate) = 1 / (1 + e^-g).
// CHECK-LABEL: func.func @gated
//       CHECK:   gpu.launch
//       CHECK:     math.rsqrt
//       CHECK:     memref.load %arg2
//       CHECK:     arith.negf
//       CHECK:     math.exp
//       CHECK:     memref.store {{.+}} : memref<?x32xf32>
//       CHECK:     gpu.terminator
func.func @gated(%x: memref<?x32xf32>, %w: memref<32xf32>, %g: memref<?x32xf32>, %o: memref<?x32xf32>) {
  k3.row_norm %x, %w gate(%g) outs(%o) {eps = 1.0e-05 : f32}
      : (memref<?x32xf32>, memref<32xf32>, memref<?x32xf32>, memref<?x32xf32>) -> ()
  return
}

// -----

// Rows summed over picks ([R, K, D], the MoE's combine folded in by
// k3-gpu-fuse-row-norms): each thread's channels start at 0.0 and add the
// K rows in order (one loop over memref.dim 1), then the norm as above.
// CHECK-LABEL: func.func @picks
//       CHECK:   gpu.launch blocks(%[[BLK:[^,]+]], {{.+}}) in ({{.+}} = %c4{{.*}}, {{.+}}) threads(%[[TID:[^,]+]], {{.+}}) in ({{.+}} = %c32{{.*}},
//       CHECK:     %[[K:.+]] = memref.dim %arg0, %c1
//       CHECK:     scf.for %[[P:.+]] = %c0{{.*}} to %[[K]] step %c1{{.*}} iter_args(%[[ACC:.+]] = %cst{{.*}}) -> (f32)
//       CHECK:       %[[V:.+]] = memref.load %arg0[%[[BLK]], %[[P]], %[[TID]]] : memref<4x?x32xf32>
//       CHECK:       %[[S:.+]] = arith.addf %[[ACC]], %[[V]]
//       CHECK:       scf.yield %[[S]]
//       CHECK:     math.rsqrt
//       CHECK:     memref.store {{.+}} : memref<4x32xf32>
func.func @picks(%x: memref<4x?x32xf32>, %w: memref<32xf32>, %o: memref<4x32xf32>) {
  k3.row_norm %x, %w outs(%o) {eps = 1.0e-05 : f32} : (memref<4x?x32xf32>, memref<32xf32>, memref<4x32xf32>) -> ()
  return
}
