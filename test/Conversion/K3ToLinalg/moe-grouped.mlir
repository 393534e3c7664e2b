// RUN: k3-opt %s --convert-k3-to-linalg | FileCheck %s
// RUN: k3-opt %s --convert-k3-to-linalg=moe-dispatch=per-token | FileCheck %s --check-prefix=TOKEN
// RUN: not k3-opt %s --convert-k3-to-linalg=moe-dispatch=sorted 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: k3-opt %s --convert-k3-to-linalg=panel-columns=32 | FileCheck %s --check-prefix=WIDE

// k3.moe as grouped expert GEMMs (MOE_MXFP4.md §7): one pass over the T·k
// (token, expert) pairs counts each expert's tokens; offsets round each
// count up to the 4-row register tile; a second pass places the pair ids by
// expert. Then per expert with tokens (scf.if): its latent rows gathered
// once (row p / k), GEMM1 per 16-column panel of w1 and w3, each panel
// decoded once from the packed bytes (high nibble by shift, the codebook by
// table, times the block scale) into [64, 16], register tiles of 4 rows
// marked for k3-tile-contractions, SiTU-GLU on the tile; GEMM2 per panel of
// w2 ([96, 16]), each tile row weighted into its token's f32 row.
// CHECK-LABEL: func.func @moe_mx
// The token count is dynamic: the form is chosen at run time, with fewer
// (token, pick) pairs than one 4-row tile per expert (T·2 < 4·8) the
// per-token form (a loop over tokens, then picks), else the grouped GEMMs
// below.
//       CHECK:   %[[PAIRS:.+]] = arith.muli %{{.+}}, %c2 : index
//       CHECK:   %[[FEW:.+]] = arith.cmpi ult, %[[PAIRS]], %c32 : index
//       CHECK:   scf.if %[[FEW]] -> (tensor<?x64xf32>) {
//       CHECK:     scf.for
//       CHECK:       scf.for
//       CHECK:   } else {
//       CHECK:   tensor.collapse_shape %{{.+}} {{\[\[}}0, 1]] : tensor<?x2xi32> into tensor<?xi32>
//       CHECK:   scf.for %{{.+}} -> (tensor<8xindex>)
//       CHECK:     tensor.insert %{{.+}} : tensor<8xindex>
//       CHECK:   scf.for %{{.+}} -> (tensor<9xindex>)
//       CHECK:     arith.andi %{{.+}}, %c-4 : index
//       CHECK:   scf.for %{{.+}} -> (tensor<?xindex>, tensor<8xindex>)
//       CHECK:   scf.for %{{.+}} = %c0 to %c8 step %c1 iter_args(%{{.+}}) -> (tensor<?x64xf32>)
//       CHECK:     arith.cmpi ugt
//       CHECK:     scf.if
//       CHECK:       arith.divui %{{.+}}, %c2 : index
//       CHECK:       tensor.extract_slice %{{.+}} [1, 64] [1, 1] : tensor<?x64xf32> to tensor<1x64xf32>
// Each GEMM's 16-column panels side by side (an scf.forall: the CPU's
// threads), each panel's column block written once.
//       CHECK:       scf.forall (%{{.+}}) in (6) shared_outs(%{{.+}}) -> (tensor<?x96xf32>)
//       CHECK:         tensor.extract_slice %{{.+}} [%{{.+}}, 16] [1, 1] : tensor<?x96xf32> to tensor<?x16xf32>
//       CHECK:         linalg.generic {{.+}} ins(%{{.+}} : tensor<16x2x16xi8>, tensor<16x2xf8E8M0FNU>) outs(%{{.+}} : tensor<2x16x2x16xf32>)
// The E2M1 value from the code's bits, not a table read (a gather).
//       CHECK:           arith.extui %{{.+}} : i8 to i32
//       CHECK:           arith.shrui %{{.+}}, %c4_i32 : i32
//       CHECK:           arith.andi %{{.+}}, %c7_i32 : i32
//   CHECK-NOT:           tensor.extract
//       CHECK:           arith.bitcast %{{.+}} : i32 to f32
//       CHECK:         tensor.collapse_shape %{{.+}} : tensor<2x16x2x16xf32> into tensor<64x16xf32>
//       CHECK:         scf.for %{{.+}} step %c4 iter_args(%{{.+}}) -> (tensor<?x16xf32>)
//       CHECK:           linalg.generic {{.+}} ins(%{{.+}} : tensor<4x64xf32>, tensor<64x16xf32>) outs(%{{.+}} : tensor<4x16xf32>) attrs = {k3.tile = array<i64: 4, 16, 1>}
//       CHECK:           linalg.generic {{.+}} ins(%{{.+}} : tensor<4x64xf32>, tensor<64x16xf32>) outs(%{{.+}} : tensor<4x16xf32>) attrs = {k3.tile = array<i64: 4, 16, 1>}
//       CHECK:           math.tanh
//       CHECK:           tensor.insert_slice %{{.+}} [4, 16] [1, 1] : tensor<4x16xf32> into tensor<?x16xf32>
//       CHECK:         scf.forall.in_parallel
//       CHECK:           tensor.parallel_insert_slice %{{.+}} [%{{.+}}, 16] [1, 1] : tensor<?x16xf32> into tensor<?x96xf32>
//       CHECK:       scf.forall (%{{.+}}) in (4) shared_outs(%{{.+}}) -> (tensor<?x64xf32>)
//       CHECK:         tensor.collapse_shape %{{.+}} : tensor<3x16x2x16xf32> into tensor<96x16xf32>
//       CHECK:         linalg.generic {{.+}} ins(%{{.+}} : tensor<4x96xf32>, tensor<96x16xf32>) outs(%{{.+}} : tensor<4x16xf32>) attrs = {k3.tile = array<i64: 4, 16, 1>}
//       CHECK:           tensor.insert_slice %{{.+}} [1, 16] [1, 1] : tensor<1x16xf32> into tensor<?x16xf32>
//       CHECK:         tensor.parallel_insert_slice %{{.+}} [%{{.+}}, 16] [1, 1] : tensor<?x16xf32> into tensor<?x64xf32>
//   CHECK-NOT:   k3.moe
// The per-token baseline decodes inside each dot product's reduction.
// panel-columns=32 (AVX-512): GEMM1's 96 columns in three 32-column panels,
// 4 × 32 tiles; GEMM2's 64 in two.
// WIDE-LABEL: func.func @moe_mx
//       WIDE:   scf.forall (%{{.+}}) in (3) shared_outs(%{{.+}}) -> (tensor<?x96xf32>)
//       WIDE:     linalg.generic {{.+}} ins(%{{.+}} : tensor<4x64xf32>, tensor<64x32xf32>) outs(%{{.+}} : tensor<4x32xf32>) attrs = {k3.tile = array<i64: 4, 32, 1>}
//       WIDE:   scf.forall (%{{.+}}) in (2) shared_outs(%{{.+}}) -> (tensor<?x64xf32>)
//       WIDE:     linalg.generic {{.+}} ins(%{{.+}} : tensor<4x96xf32>, tensor<96x32xf32>) outs(%{{.+}} : tensor<4x32xf32>) attrs = {k3.tile = array<i64: 4, 32, 1>}
// TOKEN-LABEL: func.func @moe_mx
//       TOKEN:   scf.for
//       TOKEN:     scf.for
//       TOKEN:       linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%{{.+}} : tensor<1x2x16x2xf32>, tensor<96x2x16xi8>, tensor<96x2xf8E8M0FNU>)
//       TOKEN:         arith.shrui
//       TOKEN:         arith.mulf %{{.+}} fastmath<reassoc,contract> : f32
// BAD: convert-k3-to-linalg: moe-dispatch must be grouped, slots, mma or per-token, got 'sorted'
func.func @moe_mx(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>, %bias: tensor<8xf32>,
    %wd: tensor<64x64xf32>, %wu: tensor<64x64xf32>, %n: tensor<64xf32>,
    %c1: tensor<8x96x32xi8>, %c3: tensor<8x96x32xi8>, %c2: tensor<8x64x48xi8>,
    %e1: tensor<8x96x2xf8E8M0FNU>, %e3: tensor<8x96x2xf8E8M0FNU>, %e2: tensor<8x64x3xf8E8M0FNU>,
    %sg: tensor<32x64xf32>, %su: tensor<32x64xf32>, %sd: tensor<64x32xf32>) -> tensor<?x64xf32> {
  %i, %p = k3.router %x, %wr bias(%bias) top_k = 2 renormalize scaling = 1.0
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
  %w1 = k3.unpack_e2m1 %c1 : tensor<8x96x32xi8> -> tensor<8x96x64xf4E2M1FN>
  %w3 = k3.unpack_e2m1 %c3 : tensor<8x96x32xi8> -> tensor<8x96x64xf4E2M1FN>
  %w2 = k3.unpack_e2m1 %c2 : tensor<8x64x48xi8> -> tensor<8x64x96xf4E2M1FN>
  %y = k3.moe %x routed(%i, %p) latent(%wd, %wu) norm(%n) experts(%w1, %w3, %w2) scales(%e1, %e3, %e2)
      shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32, eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<64x64xf32>, tensor<64x64xf32>,
         tensor<64xf32>, tensor<8x96x64xf4E2M1FN>, tensor<8x96x64xf4E2M1FN>, tensor<8x64x96xf4E2M1FN>,
         tensor<8x96x2xf8E8M0FNU>, tensor<8x96x2xf8E8M0FNU>, tensor<8x64x3xf8E8M0FNU>,
         tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// Float experts that k3-pack-weight-panels stored as panels [E, N/P, K, P]
// (behind an unpack to [E, N, K]): each expert's panel is a slice of the
// stored weight, read by the 4-row tiles in place, bf16 widened in the
// tiles (no per-call transposing copy); the unpacks are left dead.
// CHECK-LABEL: func.func @moe_panels
//       CHECK:   tensor.extract_slice %arg3[%{{.+}}, 0, 0, 0] [1, 6, 64, 16] [1, 1, 1, 1] : tensor<8x6x64x16xbf16> to tensor<6x64x16xbf16>
//       CHECK:   tensor.extract_slice %arg5[%{{.+}}, 0, 0, 0] [1, 4, 96, 16] [1, 1, 1, 1] : tensor<8x4x96x16xbf16> to tensor<4x96x16xbf16>
//       CHECK:   scf.forall (%{{.+}}) in (6) shared_outs(%{{.+}}) -> (tensor<?x96xf32>)
//   CHECK-NOT:     linalg.generic {{.+}} outs(%{{.+}} : tensor<64x16xf32>)
//       CHECK:     linalg.generic {{.+}} ins(%{{.+}} : tensor<4x64xf32>, tensor<64x16xbf16>) outs(%{{.+}} : tensor<4x16xf32>) attrs = {k3.tile = array<i64: 4, 16, 1>}
//       CHECK:   scf.forall (%{{.+}}) in (4) shared_outs(%{{.+}}) -> (tensor<?x64xf32>)
//       CHECK:     linalg.generic {{.+}} ins(%{{.+}} : tensor<4x96xf32>, tensor<96x16xbf16>) outs(%{{.+}} : tensor<4x16xf32>) attrs = {k3.tile = array<i64: 4, 16, 1>}
// The panels' own width wins over panel-columns.
// WIDE-LABEL: func.func @moe_panels
//       WIDE:   scf.forall (%{{.+}}) in (6) shared_outs(%{{.+}}) -> (tensor<?x96xf32>)
// The per-token form reads the panels too (1-row tiles over panel groups).
// TOKEN-LABEL: func.func @moe_panels
//       TOKEN:   scf.forall (%{{.+}}) in (6) shared_outs(%{{.+}}) -> (tensor<1x96xf32>)
//       TOKEN:     linalg.generic {{.+}} ins(%{{.+}} : tensor<1x64xf32>, tensor<1x64x16xbf16>) outs(%{{.+}} : tensor<1x1x16xf32>) attrs = {k3.tile = array<i64: 1, 1, 16, 1>}
func.func @moe_panels(%x: tensor<?x64xf32>, %i: tensor<?x2xi32>, %p: tensor<?x2xf32>,
    %c1: tensor<8x6x64x16xbf16>, %c3: tensor<8x6x64x16xbf16>, %c2: tensor<8x4x96x16xbf16>) -> tensor<?x64xf32> {
  %e1 = tensor.empty() : tensor<8x96x64xbf16>
  %w1 = linalg.unpack %c1 inner_dims_pos = [1] inner_tiles = [16] into %e1 : tensor<8x6x64x16xbf16> -> tensor<8x96x64xbf16>
  %e3 = tensor.empty() : tensor<8x96x64xbf16>
  %w3 = linalg.unpack %c3 inner_dims_pos = [1] inner_tiles = [16] into %e3 : tensor<8x6x64x16xbf16> -> tensor<8x96x64xbf16>
  %e2 = tensor.empty() : tensor<8x64x96xbf16>
  %w2 = linalg.unpack %c2 inner_dims_pos = [1] inner_tiles = [16] into %e2 : tensor<8x4x96x16xbf16> -> tensor<8x64x96xbf16>
  %y = k3.moe %x routed(%i, %p) experts(%w1, %w3, %w2) {beta1 = 4.0 : f32}
      : (tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<8x96x64xbf16>,
         tensor<8x96x64xbf16>, tensor<8x64x96xbf16>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// w1 and w3 in panels of different widths (hand-written: the pass gives
// both the same) cannot share GEMM1's tiles: the per-token form takes it.
// (The grouped form would count the pairs per expert first, tensor<8xindex>.)
// CHECK-LABEL: func.func @moe_panels_mixed
//   CHECK-NOT:   tensor<8xindex>
//       CHECK:   scf.for {{.+}} -> (tensor<?x64xf32>)
//       CHECK:     scf.for
//       CHECK:       scf.forall (%{{.+}}) in (6) shared_outs(%{{.+}}) -> (tensor<1x96xf32>)
//       CHECK:       scf.forall (%{{.+}}) in (3) shared_outs(%{{.+}}) -> (tensor<1x96xf32>)
//   CHECK-NOT:   tensor<?x96xf32>
//       CHECK:   return
// TOKEN-LABEL: func.func @moe_panels_mixed
func.func @moe_panels_mixed(%x: tensor<?x64xf32>, %i: tensor<?x2xi32>, %p: tensor<?x2xf32>,
    %c1: tensor<8x6x64x16xbf16>, %c3: tensor<8x3x64x32xbf16>, %c2: tensor<8x4x96x16xbf16>) -> tensor<?x64xf32> {
  %e1 = tensor.empty() : tensor<8x96x64xbf16>
  %w1 = linalg.unpack %c1 inner_dims_pos = [1] inner_tiles = [16] into %e1 : tensor<8x6x64x16xbf16> -> tensor<8x96x64xbf16>
  %e3 = tensor.empty() : tensor<8x96x64xbf16>
  %w3 = linalg.unpack %c3 inner_dims_pos = [1] inner_tiles = [32] into %e3 : tensor<8x3x64x32xbf16> -> tensor<8x96x64xbf16>
  %e2 = tensor.empty() : tensor<8x64x96xbf16>
  %w2 = linalg.unpack %c2 inner_dims_pos = [1] inner_tiles = [16] into %e2 : tensor<8x4x96x16xbf16> -> tensor<8x64x96xbf16>
  %y = k3.moe %x routed(%i, %p) experts(%w1, %w3, %w2) {beta1 = 4.0 : f32}
      : (tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<8x96x64xbf16>,
         tensor<8x96x64xbf16>, tensor<8x64x96xbf16>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
