// RUN: k3-opt %s --k3-pack-weight-panels=columns=32 --split-input-file | FileCheck %s --check-prefixes=CHECK,NOEXP
// RUN: k3-opt %s --k3-pack-weight-panels="columns=32 experts=true" --split-input-file | FileCheck %s --check-prefixes=CHECK,EXP
// RUN: k3-opt %s --k3-pack-weight-panels=columns=16 --split-input-file | FileCheck %s --check-prefix=P16
// RUN: k3-opt %s --k3-pack-weight-panels="columns=16 experts=true" --split-input-file | FileCheck %s --check-prefix=P16E
// RUN: not k3-opt %s --k3-pack-weight-panels=columns=8 --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: k3-pack-weight-panels: columns must be 16 or 32, got 8

// The weights only GEMMs read (a linear in prefill and decode, the lm_head)
// become panels [N/P, K, P], one stored weight per name, each user reading
// it through an unpack to [N, K] of its own, in front of it. 48 rows take
// 16-column panels at columns=32 (32 does not divide 48).
// CHECK-LABEL: func.func @gemms
//       CHECK:   %[[P:.+]] = k3.weight "q.weight#panels32" : tensor<2x96x32xbf16>
//       CHECK:   %[[E:.+]] = tensor.empty() : tensor<64x96xbf16>
//       CHECK:   %[[U:.+]] = linalg.unpack %[[P]] inner_dims_pos = [0] inner_tiles = [32] into %[[E]] : tensor<2x96x32xbf16> -> tensor<64x96xbf16>
//       CHECK:   k3.linear %{{.+}}, %[[U]] :
//       CHECK:   %[[U2:.+]] = linalg.unpack %[[P]]
//       CHECK:   k3.linear %{{.+}}, %[[U2]] :
//       CHECK:   %[[H:.+]] = k3.weight "head.weight#panels16" : tensor<3x96x16xf32>
//       CHECK:   %[[HU:.+]] = linalg.unpack %[[H]] inner_dims_pos = [0] inner_tiles = [16]
//       CHECK:   k3.lm_head %{{.+}}, %[[HU]] :
//   CHECK-NOT:   k3.weight "q.weight" :
// P16-LABEL: func.func @gemms
//       P16:   k3.weight "q.weight#panels16" : tensor<4x96x16xbf16>
//       P16:   k3.weight "head.weight#panels16" : tensor<3x96x16xf32>
func.func @gemms(%x: tensor<?x96xbf16>, %d: tensor<1x96xbf16>, %h: tensor<?x96xf32>)
    -> (tensor<?x64xbf16>, tensor<1x64xbf16>, tensor<?x48xf32>) {
  %w = k3.weight "q.weight" : tensor<64x96xbf16>
  %y = k3.linear %x, %w : (tensor<?x96xbf16>, tensor<64x96xbf16>) -> tensor<?x64xbf16>
  %z = k3.linear %d, %w : (tensor<1x96xbf16>, tensor<64x96xbf16>) -> tensor<1x64xbf16>
  %hw = k3.weight "head.weight" : tensor<48x96xf32>
  %l = k3.lm_head %h, %hw : (tensor<?x96xf32>, tensor<48x96xf32>) -> tensor<?x48xf32>
  return %y, %z, %l : tensor<?x64xbf16>, tensor<1x64xbf16>, tensor<?x48xf32>
}

// -----

// A split weight keeps its split: its block packs to the same block (the
// rank's block of N, split_dim 0, is whole panels of its own N).
// CHECK-LABEL: func.func @split
//       CHECK:   k3.weight "o.weight#panels32" {split_axes = array<i64: 0>, split_dim = 1 : i64} : tensor<2x32x32xbf16>
//       CHECK:   k3.weight "q.weight#panels16" {split_axes = array<i64: 1>, split_dim = 0 : i64} : tensor<3x32x16xbf16>
func.func @split(%x: tensor<?x32xbf16>) -> (tensor<?x64xbf16>, tensor<?x48xbf16>) {
  %w = k3.weight "o.weight" {split_dim = 1 : i64, split_axes = array<i64: 0>} : tensor<64x32xbf16>
  %y = k3.linear %x, %w : (tensor<?x32xbf16>, tensor<64x32xbf16>) -> tensor<?x64xbf16>
  %q = k3.weight "q.weight" {split_dim = 0 : i64, split_axes = array<i64: 1>} : tensor<48x32xbf16>
  %z = k3.linear %x, %q : (tensor<?x32xbf16>, tensor<48x32xbf16>) -> tensor<?x48xbf16>
  return %y, %z : tensor<?x64xbf16>, tensor<?x48xbf16>
}

// -----

// Left as stored: a weight another op reads too (an embedding tied to the
// lm_head), MXFP4 codes, stacked experts, a derived weight, a row count of
// no whole 16-column panel, a weight read as x, a linear of 3-D x.
// CHECK-LABEL: func.func @kept
//   CHECK-NOT:   linalg.unpack
//   CHECK-NOT:   #panels
func.func @kept(%x: tensor<?x64xbf16>, %ids: tensor<?xi32>, %x3: tensor<2x?x64xbf16>)
    -> (tensor<?x64xbf16>, tensor<?x32xf32>, tensor<?x8xbf16>, tensor<?x40xbf16>,
        tensor<?x32xbf16>, tensor<64x64xbf16>, tensor<2x?x32xbf16>, tensor<4x32x64xbf16>) {
  %tied = k3.weight "embed.weight" : tensor<32x64xbf16>
  %e = k3.embed %ids, %tied : (tensor<?xi32>, tensor<32x64xbf16>) -> tensor<?x64xbf16>
  %l = k3.lm_head %x, %tied : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xf32>
  %q = k3.weight "lin.weight_packed" : tensor<8x64xf4E2M1FN>
  %s = k3.weight "lin.weight_scale" : tensor<8x2xf8E8M0FNU>
  %y = k3.linear %x, %q scales(%s)
      : (tensor<?x64xbf16>, tensor<8x64xf4E2M1FN>, tensor<8x2xf8E8M0FNU>) -> tensor<?x8xbf16>
  %odd = k3.weight "odd.weight" : tensor<40x64xbf16>
  %yo = k3.linear %x, %odd : (tensor<?x64xbf16>, tensor<40x64xbf16>) -> tensor<?x40xbf16>
  %dq = k3.weight "mlp.weight_packed#bf16" : tensor<32x64xbf16>
  %yd = k3.linear %x, %dq : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  %asx = k3.weight "asx.weight" : tensor<64x32xbf16>
  %ya = k3.linear %asx, %asx : (tensor<64x32xbf16>, tensor<64x32xbf16>) -> tensor<64x64xbf16>
  %y3w = k3.weight "three.weight" : tensor<32x64xbf16>
  %y3 = k3.linear %x3, %y3w : (tensor<2x?x64xbf16>, tensor<32x64xbf16>) -> tensor<2x?x32xbf16>
  %st = k3.weight "experts.{e}.w1.weight" : tensor<4x32x64xbf16>
  return %e, %l, %y, %yo, %yd, %ya, %y3, %st : tensor<?x64xbf16>, tensor<?x32xf32>, tensor<?x8xbf16>,
      tensor<?x40xbf16>, tensor<?x32xbf16>, tensor<64x64xbf16>, tensor<2x?x32xbf16>, tensor<4x32x64xbf16>
}

// -----

// With `experts`, the float routed experts [E, N, K] become
// [E, N/P, K, P] (inner tile on N, dimension 1), one unpack to [E, N, K] in
// front of the k3.moe, and its latent projections and shared experts,
// which it lowers to linears of the tokens, [N/P, K, P]; the router's
// weight (a k3.router operand) and the latent norm stay as stored. Without
// `experts` (the default) nothing here changes.
// NOEXP-LABEL: func.func @experts
//   NOEXP-NOT:   linalg.unpack
//   NOEXP-NOT:   #panels
//       NOEXP:   k3.moe
//   EXP-LABEL: func.func @experts
//         EXP:   %[[R:.+]] = k3.weight "gate.weight" : tensor<8x64xf32>
//         EXP:   k3.router %{{.+}}, %[[R]]
//         EXP:   k3.weight "latent.down.weight#panels32" : tensor<2x64x32xbf16>
//         EXP:   k3.weight "latent.up.weight#panels32" : tensor<2x64x32xbf16>
//         EXP:   k3.weight "latent.norm.weight" : tensor<64xbf16>
//         EXP:   %[[W1:.+]] = k3.weight "experts.{e}.w1.weight#panels32" : tensor<8x3x64x32xbf16>
//         EXP:   %[[W3:.+]] = k3.weight "experts.{e}.w3.weight#panels32" : tensor<8x3x64x32xbf16>
//         EXP:   %[[W2:.+]] = k3.weight "experts.{e}.w2.weight#panels32" : tensor<8x2x96x32xbf16>
//         EXP:   %[[SG:.+]] = k3.weight "shared.gate.weight#panels32" : tensor<1x64x32xbf16>
//         EXP:   k3.weight "shared.up.weight#panels32" : tensor<1x64x32xbf16>
//         EXP:   %[[SD:.+]] = k3.weight "shared.down.weight#panels32" : tensor<2x32x32xbf16>
//         EXP:   linalg.unpack %[[W1]] inner_dims_pos = [1] inner_tiles = [32] into %{{.+}} : tensor<8x3x64x32xbf16> -> tensor<8x96x64xbf16>
//         EXP:   linalg.unpack %[[W3]] inner_dims_pos = [1] inner_tiles = [32]
//         EXP:   linalg.unpack %[[W2]] inner_dims_pos = [1] inner_tiles = [32] into %{{.+}} : tensor<8x2x96x32xbf16> -> tensor<8x64x96xbf16>
//         EXP:   linalg.unpack %[[SG]] inner_dims_pos = [0] inner_tiles = [32]
//         EXP:   linalg.unpack %[[SD]] inner_dims_pos = [0] inner_tiles = [32]
//         EXP:   k3.moe
// P16-LABEL: func.func @experts
//   P16-NOT:   #panels
//       P16:   k3.moe
// P16E-LABEL: func.func @experts
//       P16E:   k3.weight "experts.{e}.w1.weight#panels16" : tensor<8x6x64x16xbf16>
//       P16E:   k3.weight "experts.{e}.w2.weight#panels16" : tensor<8x4x96x16xbf16>
func.func @experts(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %wr = k3.weight "gate.weight" : tensor<8x64xf32>
  %i, %p = k3.router %x, %wr top_k = 2 renormalize scaling = 1.0
      : (tensor<?x64xf32>, tensor<8x64xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
  %wd = k3.weight "latent.down.weight" : tensor<64x64xbf16>
  %wu = k3.weight "latent.up.weight" : tensor<64x64xbf16>
  %n = k3.weight "latent.norm.weight" : tensor<64xbf16>
  %w1 = k3.weight "experts.{e}.w1.weight" : tensor<8x96x64xbf16>
  %w3 = k3.weight "experts.{e}.w3.weight" : tensor<8x96x64xbf16>
  %w2 = k3.weight "experts.{e}.w2.weight" : tensor<8x64x96xbf16>
  %sg = k3.weight "shared.gate.weight" : tensor<32x64xbf16>
  %su = k3.weight "shared.up.weight" : tensor<32x64xbf16>
  %sd = k3.weight "shared.down.weight" : tensor<64x32xbf16>
  %y = k3.moe %x routed(%i, %p) latent(%wd, %wu) norm(%n) experts(%w1, %w3, %w2)
      shared(%sg, %su, %sd) {beta1 = 4.0 : f32, eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<64x64xbf16>,
         tensor<64x64xbf16>, tensor<64xbf16>, tensor<8x96x64xbf16>, tensor<8x96x64xbf16>,
         tensor<8x64x96xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
      -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Left as stored even with `experts`: MXFP4 experts (codes and scales),
// float experts another op reads too, a stacked weight that is not named
// as one ({e}).
// CHECK-LABEL: func.func @experts_kept
//   CHECK-NOT:   linalg.unpack
//   CHECK-NOT:   #panels
func.func @experts_kept(%x: tensor<?x64xf32>, %i: tensor<?x2xi32>, %p: tensor<?x2xf32>)
    -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<8x96x64xbf16>, tensor<8x64x96xbf16>) {
  %c1 = k3.weight "mx.{e}.w1.weight_packed" : tensor<8x96x64xf4E2M1FN>
  %c3 = k3.weight "mx.{e}.w3.weight_packed" : tensor<8x96x64xf4E2M1FN>
  %c2 = k3.weight "mx.{e}.w2.weight_packed" : tensor<8x64x96xf4E2M1FN>
  %s1 = k3.weight "mx.{e}.w1.weight_scale" : tensor<8x96x2xf8E8M0FNU>
  %s3 = k3.weight "mx.{e}.w3.weight_scale" : tensor<8x96x2xf8E8M0FNU>
  %s2 = k3.weight "mx.{e}.w2.weight_scale" : tensor<8x64x3xf8E8M0FNU>
  %y = k3.moe %x routed(%i, %p) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2) {beta1 = 4.0 : f32}
      : (tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<8x96x64xf4E2M1FN>,
         tensor<8x96x64xf4E2M1FN>, tensor<8x64x96xf4E2M1FN>, tensor<8x96x2xf8E8M0FNU>,
         tensor<8x96x2xf8E8M0FNU>, tensor<8x64x3xf8E8M0FNU>) -> tensor<?x64xf32>
  %w1 = k3.weight "f.{e}.w1.weight" : tensor<8x96x64xbf16>
  %w3 = k3.weight "f.w3.weight" : tensor<8x96x64xbf16>
  %w2 = k3.weight "f.{e}.w2.weight" : tensor<8x64x96xbf16>
  %z = k3.moe %x routed(%i, %p) experts(%w1, %w3, %w2) {beta1 = 4.0 : f32}
      : (tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<8x96x64xbf16>,
         tensor<8x96x64xbf16>, tensor<8x64x96xbf16>) -> tensor<?x64xf32>
  return %y, %z, %w1, %w2
      : tensor<?x64xf32>, tensor<?x64xf32>, tensor<8x96x64xbf16>, tensor<8x64x96xbf16>
}
