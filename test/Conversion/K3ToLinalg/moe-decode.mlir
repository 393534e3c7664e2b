// RUN: k3-opt %s --split-input-file --convert-k3-to-linalg | FileCheck %s

// Under the grouped dispatch (the CPU default), a decode step's k3.moe (a
// static token count below the 4-row tile) takes the per-token form: each
// picked expert's packed weight read in its dot products (no [K, 16]
// panels, no scf.forall); a static count of 4 is grouped.
// CHECK-LABEL: func.func @moe_mx
//   CHECK-NOT:   scf.forall
//       CHECK:   scf.for
//       CHECK:     scf.for
//       CHECK:       linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%{{.+}} : tensor<1x2x16x2xf32>, tensor<96x2x16xi8>, tensor<96x2xf8E8M0FNU>)
//   CHECK-NOT:   scf.forall
//       CHECK:   return
func.func @moe_mx(%x: tensor<1x64xf32>, %wr: tensor<8x64xf32>, %bias: tensor<8xf32>,
    %wd: tensor<64x64xf32>, %wu: tensor<64x64xf32>, %n: tensor<64xf32>,
    %c1: tensor<8x96x32xi8>, %c3: tensor<8x96x32xi8>, %c2: tensor<8x64x48xi8>,
    %e1: tensor<8x96x2xf8E8M0FNU>, %e3: tensor<8x96x2xf8E8M0FNU>, %e2: tensor<8x64x3xf8E8M0FNU>,
    %sg: tensor<32x64xf32>, %su: tensor<32x64xf32>, %sd: tensor<64x32xf32>) -> tensor<1x64xf32> {
  %i, %p = k3.router %x, %wr bias(%bias) top_k = 2 renormalize scaling = 1.0
      : (tensor<1x64xf32>, tensor<8x64xf32>, tensor<8xf32>) -> (tensor<1x2xi32>, tensor<1x2xf32>)
  %w1 = k3.unpack_e2m1 %c1 : tensor<8x96x32xi8> -> tensor<8x96x64xf4E2M1FN>
  %w3 = k3.unpack_e2m1 %c3 : tensor<8x96x32xi8> -> tensor<8x96x64xf4E2M1FN>
  %w2 = k3.unpack_e2m1 %c2 : tensor<8x64x48xi8> -> tensor<8x64x96xf4E2M1FN>
  %y = k3.moe %x routed(%i, %p) latent(%wd, %wu) norm(%n) experts(%w1, %w3, %w2) scales(%e1, %e3, %e2)
      shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32, eps = 1.0e-05 : f32}
      : (tensor<1x64xf32>, tensor<1x2xi32>, tensor<1x2xf32>, tensor<64x64xf32>, tensor<64x64xf32>,
         tensor<64xf32>, tensor<8x96x64xf4E2M1FN>, tensor<8x96x64xf4E2M1FN>, tensor<8x64x96xf4E2M1FN>,
         tensor<8x96x2xf8E8M0FNU>, tensor<8x96x2xf8E8M0FNU>, tensor<8x64x3xf8E8M0FNU>,
         tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x32xf32>) -> tensor<1x64xf32>
  return %y : tensor<1x64xf32>
}

// -----

// CHECK-LABEL: func.func @moe_mx
//       CHECK:   scf.forall
func.func @moe_mx(%x: tensor<4x64xf32>, %wr: tensor<8x64xf32>, %bias: tensor<8xf32>,
    %wd: tensor<64x64xf32>, %wu: tensor<64x64xf32>, %n: tensor<64xf32>,
    %c1: tensor<8x96x32xi8>, %c3: tensor<8x96x32xi8>, %c2: tensor<8x64x48xi8>,
    %e1: tensor<8x96x2xf8E8M0FNU>, %e3: tensor<8x96x2xf8E8M0FNU>, %e2: tensor<8x64x3xf8E8M0FNU>,
    %sg: tensor<32x64xf32>, %su: tensor<32x64xf32>, %sd: tensor<64x32xf32>) -> tensor<4x64xf32> {
  %i, %p = k3.router %x, %wr bias(%bias) top_k = 2 renormalize scaling = 1.0
      : (tensor<4x64xf32>, tensor<8x64xf32>, tensor<8xf32>) -> (tensor<4x2xi32>, tensor<4x2xf32>)
  %w1 = k3.unpack_e2m1 %c1 : tensor<8x96x32xi8> -> tensor<8x96x64xf4E2M1FN>
  %w3 = k3.unpack_e2m1 %c3 : tensor<8x96x32xi8> -> tensor<8x96x64xf4E2M1FN>
  %w2 = k3.unpack_e2m1 %c2 : tensor<8x64x48xi8> -> tensor<8x64x96xf4E2M1FN>
  %y = k3.moe %x routed(%i, %p) latent(%wd, %wu) norm(%n) experts(%w1, %w3, %w2) scales(%e1, %e3, %e2)
      shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32, eps = 1.0e-05 : f32}
      : (tensor<4x64xf32>, tensor<4x2xi32>, tensor<4x2xf32>, tensor<64x64xf32>, tensor<64x64xf32>,
         tensor<64xf32>, tensor<8x96x64xf4E2M1FN>, tensor<8x96x64xf4E2M1FN>, tensor<8x64x96xf4E2M1FN>,
         tensor<8x96x2xf8E8M0FNU>, tensor<8x96x2xf8E8M0FNU>, tensor<8x64x3xf8E8M0FNU>,
         tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x32xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Float experts stored as panels (k3-pack-weight-panels) in a decode step:
// each picked expert's matrices as panel groups side by side (an
// scf.forall: the CPU's threads), read in place by 1-row tiles.
// CHECK-LABEL: func.func @moe_panels
//   CHECK-NOT:   linalg.unpack
//       CHECK:   scf.for
//       CHECK:     scf.for
//       CHECK:       scf.forall (%{{.+}}) in (6) shared_outs(%{{.+}}) -> (tensor<1x96xf32>)
//       CHECK:         linalg.generic {{.+}} ins(%{{.+}} : tensor<1x64xf32>, tensor<1x64x16xbf16>) outs(%{{.+}} : tensor<1x1x16xf32>) attrs = {k3.tile = array<i64: 1, 1, 16, 1>}
//       CHECK:       scf.forall (%{{.+}}) in (6) shared_outs(%{{.+}}) -> (tensor<1x96xf32>)
//       CHECK:       scf.forall (%{{.+}}) in (4) shared_outs(%{{.+}}) -> (tensor<1x64xf32>)
//       CHECK:         linalg.generic {{.+}} ins(%{{.+}} : tensor<1x96xf32>, tensor<1x96x16xbf16>) outs(%{{.+}} : tensor<1x1x16xf32>) attrs = {k3.tile = array<i64: 1, 1, 16, 1>}
func.func @moe_panels(%x: tensor<1x64xf32>, %i: tensor<1x2xi32>, %p: tensor<1x2xf32>,
    %c1: tensor<8x6x64x16xbf16>, %c3: tensor<8x6x64x16xbf16>, %c2: tensor<8x4x96x16xbf16>) -> tensor<1x64xf32> {
  %e1 = tensor.empty() : tensor<8x96x64xbf16>
  %w1 = linalg.unpack %c1 inner_dims_pos = [1] inner_tiles = [16] into %e1 : tensor<8x6x64x16xbf16> -> tensor<8x96x64xbf16>
  %e3 = tensor.empty() : tensor<8x96x64xbf16>
  %w3 = linalg.unpack %c3 inner_dims_pos = [1] inner_tiles = [16] into %e3 : tensor<8x6x64x16xbf16> -> tensor<8x96x64xbf16>
  %e2 = tensor.empty() : tensor<8x64x96xbf16>
  %w2 = linalg.unpack %c2 inner_dims_pos = [1] inner_tiles = [16] into %e2 : tensor<8x4x96x16xbf16> -> tensor<8x64x96xbf16>
  %y = k3.moe %x routed(%i, %p) experts(%w1, %w3, %w2) {beta1 = 4.0 : f32}
      : (tensor<1x64xf32>, tensor<1x2xi32>, tensor<1x2xf32>, tensor<8x96x64xbf16>,
         tensor<8x96x64xbf16>, tensor<8x64x96xbf16>) -> tensor<1x64xf32>
  return %y : tensor<1x64xf32>
}
