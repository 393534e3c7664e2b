// RUN: k3-opt %s --split-input-file --convert-k3-to-linalg=linear=blocked | FileCheck %s
// RUN: k3-opt %s --split-input-file --convert-k3-to-linalg | FileCheck %s --check-prefix=DOT
// RUN: not k3-opt %s --split-input-file --convert-k3-to-linalg=linear=tiled 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: k3-opt %s --split-input-file --convert-k3-to-linalg="linear=blocked panel-columns=32" | FileCheck %s --check-prefix=WIDE
// RUN: not k3-opt %s --split-input-file --convert-k3-to-linalg="linear=blocked panel-columns=24" 2>&1 | FileCheck %s --check-prefix=BADP

// k3.linear as a cache-blocked GEMM (BlockedGemm.cpp): fewer rows than a
// 6-row tile take the dot products (scf.if); otherwise blocks of 240 rows,
// K in blocks (here 96 = 3 × 32, the largest power of two up to 256 that
// divides it), the 16-column panels side by side (scf.forall), each panel
// packed from the K block of W into [32, 16] f32, then register tiles of
// 6 × 16 over the rows in whole tiles and 1 × 16 over the rest, each
// accumulating into its slice of the output (not from zero).
// CHECK-LABEL: func.func @prompt
//       CHECK:   %[[M:.+]] = tensor.dim %arg0, %c0 : tensor<?x96xf32>
//       CHECK:   %[[FEW:.+]] = arith.cmpi ult, %[[M]], %c6 : index
//       CHECK:   scf.if %[[FEW]] -> (tensor<?x64xf32>) {
//       CHECK:     linalg.generic {{.+}} ins(%arg0, %arg1 : tensor<?x96xf32>, tensor<64x96xbf16>)
//       CHECK:   } else {
//       CHECK:     linalg.fill
//       CHECK:     scf.for %[[R0:.+]] = %c0 to %[[M]] step %c240 iter_args
//       CHECK:       %[[ROWS:.+]] = arith.minui %{{.+}}, %c240 : index
//       CHECK:       %[[REM:.+]] = arith.remui %[[ROWS]], %c6 : index
//       CHECK:       %[[MAIN:.+]] = arith.subi %[[ROWS]], %[[REM]] : index
//       CHECK:       scf.for %[[K0:.+]] = %c0 to %c96 step %c32 iter_args
//       CHECK:         tensor.extract_slice %arg1[0, %[[K0]]] [64, 32] [1, 1] : tensor<64x96xbf16> to tensor<64x32xbf16>
//       CHECK:         scf.forall (%{{.+}}) in (4) shared_outs(%{{.+}}) -> (tensor<?x64xf32>)
//       CHECK:           linalg.generic {{.+}} ins(%{{.+}} : tensor<16x32xbf16>) outs(%{{.+}} : tensor<32x16xf32>)
//       CHECK:           scf.for %{{.+}} = %c0 to %[[MAIN]] step %c6 iter_args
//       CHECK:             %[[ACC:.+]] = tensor.extract_slice %{{.+}} [6, 16] [1, 1] : tensor<?x16xf32> to tensor<6x16xf32>
//       CHECK:             linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<6x32xf32>, tensor<32x16xf32>) outs(%[[ACC]] : tensor<6x16xf32>) attrs = {k3.tile = array<i64: 6, 16, 1>}
//       CHECK:           scf.for %{{.+}} = %[[MAIN]] to %[[ROWS]] step %c1 iter_args
//       CHECK:             linalg.generic {{.+}} outs(%{{.+}} : tensor<1x16xf32>) attrs = {k3.tile = array<i64: 1, 16, 1>}
//       CHECK:           tensor.parallel_insert_slice
// DOT-LABEL: func.func @prompt
//   DOT-NOT:   scf.forall
//       DOT:   linalg.generic {{.+}} ins(%arg0, %arg1 : tensor<?x96xf32>, tensor<64x96xbf16>)
//   DOT-NOT:   scf.forall
// BAD: convert-k3-to-linalg: linear must be dot or blocked, got 'tiled'
// BADP: convert-k3-to-linalg: panel-columns must be 16 or 32, got 24
// With AVX-512's panel-columns=32: two 32-column panels, 6 × 32 tiles.
// WIDE-LABEL: func.func @prompt
//       WIDE:   scf.forall (%{{.+}}) in (2) shared_outs(%{{.+}}) -> (tensor<?x64xf32>)
//       WIDE:     linalg.generic {{.+}} ins(%{{.+}} : tensor<32x32xbf16>) outs(%{{.+}} : tensor<32x32xf32>)
//       WIDE:     linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<6x32xf32>, tensor<32x32xf32>) outs(%{{.+}} : tensor<6x32xf32>) attrs = {k3.tile = array<i64: 6, 32, 1>}
//       WIDE:     linalg.generic {{.+}} outs(%{{.+}} : tensor<1x32xf32>) attrs = {k3.tile = array<i64: 1, 32, 1>}
func.func @prompt(%x: tensor<?x96xf32>, %w: tensor<64x96xbf16>) -> tensor<?x64xf32> {
  %y = k3.linear %x, %w : (tensor<?x96xf32>, tensor<64x96xbf16>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// MXFP4: K blocks of 256 (K = 512 here), each a slice of the packed bytes
// (128 columns) and of the scales (8 columns); panels decoded from them.
// CHECK-LABEL: func.func @packed
//       CHECK:   scf.for %[[K0:.+]] = %c0 to %c512 step %c256 iter_args
//       CHECK:     %[[B0:.+]] = arith.divui %[[K0]], %c2 : index
//       CHECK:     tensor.extract_slice %arg1[0, %[[B0]]] [32, 128] [1, 1] : tensor<32x256xi8> to tensor<32x128xi8>
//       CHECK:     %[[S0:.+]] = arith.divui %[[K0]], %c32 : index
//       CHECK:     tensor.extract_slice %arg2[0, %[[S0]]] [32, 8] [1, 1] : tensor<32x16xf8E8M0FNU> to tensor<32x8xf8E8M0FNU>
//       CHECK:     scf.forall (%{{.+}}) in (2)
//       CHECK:       linalg.generic {{.+}} outs(%{{.+}} : tensor<8x16x2x16xf32>)
func.func @packed(%x: tensor<?x512xf32>, %c: tensor<32x256xi8>, %s: tensor<32x16xf8E8M0FNU>) -> tensor<?x32xf32> {
  %w = k3.unpack_e2m1 %c : tensor<32x256xi8> -> tensor<32x512xf4E2M1FN>
  %y = k3.linear %x, %w scales(%s)
      : (tensor<?x512xf32>, tensor<32x512xf4E2M1FN>, tensor<32x16xf8E8M0FNU>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// Not blocked: a static row count below a tile (a decode step), and N not a
// multiple of the 16-column panel.
// CHECK-LABEL: func.func @decode
//   CHECK-NOT:   scf.forall
//       CHECK:   linalg.generic
//   CHECK-NOT:   scf.forall
// CHECK-LABEL: func.func @narrow
//   CHECK-NOT:   scf.forall
//       CHECK:   linalg.generic
//   CHECK-NOT:   scf.forall
func.func @decode(%x: tensor<1x96xf32>, %w: tensor<64x96xbf16>) -> tensor<1x64xf32> {
  %y = k3.linear %x, %w : (tensor<1x96xf32>, tensor<64x96xbf16>) -> tensor<1x64xf32>
  return %y : tensor<1x64xf32>
}
func.func @narrow(%x: tensor<?x96xf32>, %w: tensor<24x96xbf16>) -> tensor<?x24xf32> {
  %y = k3.linear %x, %w : (tensor<?x96xf32>, tensor<24x96xbf16>) -> tensor<?x24xf32>
  return %y : tensor<?x24xf32>
}

// -----

// A static row count of a tile or more is blocked and keeps its static
// result type; so is a prompt's lm_head. K = 24 has no block of 16 or more
// (fit gives 8): the dot products.
// CHECK-LABEL: func.func @static_rows
//       CHECK:   linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<8x64xf32>)
//       CHECK:   scf.for {{.+}} -> (tensor<8x64xf32>)
//       CHECK:     scf.forall
//       CHECK:   return %{{.+}} : tensor<8x64xf32>
// CHECK-LABEL: func.func @logits
//       CHECK:   scf.if
//       CHECK:     scf.forall (%{{.+}}) in (2)
// CHECK-LABEL: func.func @shallow
//   CHECK-NOT:   scf.forall
//       CHECK:   return
func.func @static_rows(%x: tensor<8x96xf32>, %w: tensor<64x96xbf16>) -> tensor<8x64xf32> {
  %y = k3.linear %x, %w : (tensor<8x96xf32>, tensor<64x96xbf16>) -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}
func.func @logits(%x: tensor<?x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<?x32xf32> {
  %l = k3.lm_head %x, %w : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xf32>
  return %l : tensor<?x32xf32>
}
func.func @shallow(%x: tensor<?x24xf32>, %w: tensor<64x24xbf16>) -> tensor<?x64xf32> {
  %y = k3.linear %x, %w : (tensor<?x24xf32>, tensor<64x24xbf16>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// N = 48 is no multiple of 32: 16-column panels even with panel-columns=32.
// WIDE-LABEL: func.func @half
//       WIDE:   scf.forall (%{{.+}}) in (3)
//       WIDE:     attrs = {k3.tile = array<i64: 6, 16, 1>}
func.func @half(%x: tensor<?x96xf32>, %w: tensor<48x96xbf16>) -> tensor<?x48xf32> {
  %y = k3.linear %x, %w : (tensor<?x96xf32>, tensor<48x96xbf16>) -> tensor<?x48xf32>
  return %y : tensor<?x48xf32>
}

// -----

// A weight stored as panels (k3-pack-weight-panels): the unpack is looked
// through and never lowered. A prompt's panels are slices of the stored
// [4, 96, 16] read in place (no packing generic), bf16 into the 6 × 16
// tiles; fewer rows than a tile read them in place too, in groups of
// panels that leave at least 16 groups for the threads (else one panel a
// group): here 4 groups of one, [1, 1, 16, 1] tiles. The dot form has no
// [N, K] weight to read, so it reads the panels so too.
// CHECK-LABEL: func.func @panels
//   CHECK-NOT:   linalg.unpack
//       CHECK:   scf.if
//       CHECK:     scf.forall (%{{.+}}) in (4) shared_outs
//       CHECK:       tensor.extract_slice %arg1[%{{.+}}, 0, 0] [1, 96, 16] [1, 1, 1] : tensor<4x96x16xbf16> to tensor<1x96x16xbf16>
//       CHECK:       linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x96xf32>, tensor<1x96x16xbf16>) outs(%{{.+}} : tensor<1x1x16xf32>) attrs = {k3.tile = array<i64: 1, 1, 16, 1>}
//       CHECK:   } else {
//       CHECK:         tensor.extract_slice %arg1[0, %{{.+}}, 0] [4, 32, 16] [1, 1, 1] : tensor<4x96x16xbf16> to tensor<4x32x16xbf16>
//       CHECK:         scf.forall (%{{.+}}) in (4) shared_outs
//   CHECK-NOT:           outs(%{{.+}} : tensor<32x16xf32>)
//       CHECK:           tensor.extract_slice %{{.+}}[%{{.+}}, 0, 0] [1, 32, 16] [1, 1, 1] : tensor<4x32x16xbf16> to tensor<32x16xbf16>
//       CHECK:           linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<6x32xf32>, tensor<32x16xbf16>) outs(%{{.+}} : tensor<6x16xf32>) attrs = {k3.tile = array<i64: 6, 16, 1>}
//   CHECK-NOT:   linalg.unpack
// A one-token step of a 64 × 96 weight as panels of 16 but 512 rows: 32
// panels in 16 groups of 2.
// CHECK-LABEL: func.func @panels_decode
//       CHECK:   scf.forall (%{{.+}}) in (16) shared_outs
//       CHECK:     tensor.extract_slice %arg1[%{{.+}}, 0, 0] [2, 96, 16] [1, 1, 1] : tensor<32x96x16xbf16> to tensor<2x96x16xbf16>
//       CHECK:     linalg.generic {{.+}} outs(%{{.+}} : tensor<1x2x16xf32>) attrs = {k3.tile = array<i64: 1, 2, 16, 1>}
// DOT-LABEL: func.func @panels
//   DOT-NOT:   linalg.unpack
//       DOT:   attrs = {k3.tile = array<i64: 1, 1, 16, 1>}
func.func @panels(%x: tensor<?x96xf32>, %p: tensor<4x96x16xbf16>) -> tensor<?x64xf32> {
  %e = tensor.empty() : tensor<64x96xbf16>
  %w = linalg.unpack %p inner_dims_pos = [0] inner_tiles = [16] into %e : tensor<4x96x16xbf16> -> tensor<64x96xbf16>
  %y = k3.linear %x, %w : (tensor<?x96xf32>, tensor<64x96xbf16>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
func.func @panels_decode(%x: tensor<1x96xf32>, %p: tensor<32x96x16xbf16>) -> tensor<1x512xf32> {
  %e = tensor.empty() : tensor<512x96xbf16>
  %w = linalg.unpack %p inner_dims_pos = [0] inner_tiles = [16] into %e : tensor<32x96x16xbf16> -> tensor<512x96xbf16>
  %y = k3.linear %x, %w : (tensor<1x96xf32>, tensor<512x96xbf16>) -> tensor<1x512xf32>
  return %y : tensor<1x512xf32>
}

// -----

// An unpack that drops the last panel's tail rows is not whole panels: the
// GEMM reads its [60, 96] result as stored, not the 64 rows of panels.
// CHECK-LABEL: func.func @truncated
//       CHECK:   %[[U:.+]] = linalg.unpack
//       CHECK:   ins(%arg0, %[[U]] : tensor<?x96xf32>, tensor<60x96xbf16>)
func.func @truncated(%x: tensor<?x96xf32>, %p: tensor<4x96x16xbf16>) -> tensor<?x60xf32> {
  %e = tensor.empty() : tensor<60x96xbf16>
  %w = linalg.unpack %p inner_dims_pos = [0] inner_tiles = [16] into %e : tensor<4x96x16xbf16> -> tensor<60x96xbf16>
  %y = k3.linear %x, %w : (tensor<?x96xf32>, tensor<60x96xbf16>) -> tensor<?x60xf32>
  return %y : tensor<?x60xf32>
}
