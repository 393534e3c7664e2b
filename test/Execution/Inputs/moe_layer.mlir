// The LatentMoE at op level, for the MoE-vs-reference tests (MoeCase.cpp
// writes the inputs): D = 64, E = 8 experts, latent Dl = 64, expert
// intermediate Ie = 96, one shared expert of 32, SiTU-GLU (4, 25), the
// sigmoid router with a selection-only bias, renormalised. `_mx` functions
// take MXFP4 experts as packed bytes and E8M0 scale bytes, `_f32` ones the
// same values in f32; `_all` routes every token to all 8 experts; `_mx8`
// rounds the expert GEMMs' inputs to MXFP8.

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

func.func @moe_mx_all(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>, %bias: tensor<8xf32>,
    %wd: tensor<64x64xf32>, %wu: tensor<64x64xf32>, %n: tensor<64xf32>,
    %c1: tensor<8x96x32xi8>, %c3: tensor<8x96x32xi8>, %c2: tensor<8x64x48xi8>,
    %e1: tensor<8x96x2xf8E8M0FNU>, %e3: tensor<8x96x2xf8E8M0FNU>, %e2: tensor<8x64x3xf8E8M0FNU>,
    %sg: tensor<32x64xf32>, %su: tensor<32x64xf32>, %sd: tensor<64x32xf32>) -> tensor<?x64xf32> {
  %i, %p = k3.router %x, %wr bias(%bias) top_k = 8 renormalize scaling = 1.0
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>) -> (tensor<?x8xi32>, tensor<?x8xf32>)
  %w1 = k3.unpack_e2m1 %c1 : tensor<8x96x32xi8> -> tensor<8x96x64xf4E2M1FN>
  %w3 = k3.unpack_e2m1 %c3 : tensor<8x96x32xi8> -> tensor<8x96x64xf4E2M1FN>
  %w2 = k3.unpack_e2m1 %c2 : tensor<8x64x48xi8> -> tensor<8x64x96xf4E2M1FN>
  %y = k3.moe %x routed(%i, %p) latent(%wd, %wu) norm(%n) experts(%w1, %w3, %w2) scales(%e1, %e3, %e2)
      shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32, eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<?x8xi32>, tensor<?x8xf32>, tensor<64x64xf32>, tensor<64x64xf32>,
         tensor<64xf32>, tensor<8x96x64xf4E2M1FN>, tensor<8x96x64xf4E2M1FN>, tensor<8x64x96xf4E2M1FN>,
         tensor<8x96x2xf8E8M0FNU>, tensor<8x96x2xf8E8M0FNU>, tensor<8x64x3xf8E8M0FNU>,
         tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

func.func @moe_f32(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>, %bias: tensor<8xf32>,
    %wd: tensor<64x64xf32>, %wu: tensor<64x64xf32>, %n: tensor<64xf32>,
    %w1: tensor<8x96x64xf32>, %w3: tensor<8x96x64xf32>, %w2: tensor<8x64x96xf32>,
    %sg: tensor<32x64xf32>, %su: tensor<32x64xf32>, %sd: tensor<64x32xf32>) -> tensor<?x64xf32> {
  %i, %p = k3.router %x, %wr bias(%bias) top_k = 2 renormalize scaling = 1.0
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
  %y = k3.moe %x routed(%i, %p) latent(%wd, %wu) norm(%n) experts(%w1, %w3, %w2)
      shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32, eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<64x64xf32>, tensor<64x64xf32>,
         tensor<64xf32>, tensor<8x96x64xf32>, tensor<8x96x64xf32>, tensor<8x64x96xf32>,
         tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

func.func @moe_f32_all(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>, %bias: tensor<8xf32>,
    %wd: tensor<64x64xf32>, %wu: tensor<64x64xf32>, %n: tensor<64xf32>,
    %w1: tensor<8x96x64xf32>, %w3: tensor<8x96x64xf32>, %w2: tensor<8x64x96xf32>,
    %sg: tensor<32x64xf32>, %su: tensor<32x64xf32>, %sd: tensor<64x32xf32>) -> tensor<?x64xf32> {
  %i, %p = k3.router %x, %wr bias(%bias) top_k = 8 renormalize scaling = 1.0
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>) -> (tensor<?x8xi32>, tensor<?x8xf32>)
  %y = k3.moe %x routed(%i, %p) latent(%wd, %wu) norm(%n) experts(%w1, %w3, %w2)
      shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32, eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<?x8xi32>, tensor<?x8xf32>, tensor<64x64xf32>, tensor<64x64xf32>,
         tensor<64xf32>, tensor<8x96x64xf32>, tensor<8x96x64xf32>, tensor<8x64x96xf32>,
         tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

func.func @moe_mx8(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>, %bias: tensor<8xf32>,
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
      shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32, eps = 1.0e-05 : f32, mxfp8_inputs}
      : (tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<64x64xf32>, tensor<64x64xf32>,
         tensor<64xf32>, tensor<8x96x64xf4E2M1FN>, tensor<8x96x64xf4E2M1FN>, tensor<8x64x96xf4E2M1FN>,
         tensor<8x96x2xf8E8M0FNU>, tensor<8x96x2xf8E8M0FNU>, tensor<8x64x3xf8E8M0FNU>,
         tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
