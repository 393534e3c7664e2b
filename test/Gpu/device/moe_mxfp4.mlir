// The device script's MXFP4 MoE benchmark: --dim tokens of width 1024
// through a sigmoid top-8 router over 64 experts, the latent down/up
// projections (latent 1024), MXFP4 experts (intermediate 1024; codes as
// packed bytes, E8M0 scales per 32) and one shared expert of 1024.
func.func @moe(%x: tensor<?x1024xf32>, %wr: tensor<64x1024xf32>, %bias: tensor<64xf32>,
    %wd: tensor<1024x1024xf32>, %wu: tensor<1024x1024xf32>, %n: tensor<1024xf32>,
    %c1: tensor<64x1024x512xi8>, %c3: tensor<64x1024x512xi8>, %c2: tensor<64x1024x512xi8>,
    %e1: tensor<64x1024x32xf8E8M0FNU>, %e3: tensor<64x1024x32xf8E8M0FNU>,
    %e2: tensor<64x1024x32xf8E8M0FNU>,
    %sg: tensor<1024x1024xf32>, %su: tensor<1024x1024xf32>, %sd: tensor<1024x1024xf32>)
    -> tensor<?x1024xf32> {
  %i, %p = k3.router %x, %wr bias(%bias) top_k = 8 renormalize scaling = 1.0
      : (tensor<?x1024xf32>, tensor<64x1024xf32>, tensor<64xf32>) -> (tensor<?x8xi32>, tensor<?x8xf32>)
  %w1 = k3.unpack_e2m1 %c1 : tensor<64x1024x512xi8> -> tensor<64x1024x1024xf4E2M1FN>
  %w3 = k3.unpack_e2m1 %c3 : tensor<64x1024x512xi8> -> tensor<64x1024x1024xf4E2M1FN>
  %w2 = k3.unpack_e2m1 %c2 : tensor<64x1024x512xi8> -> tensor<64x1024x1024xf4E2M1FN>
  %y = k3.moe %x routed(%i, %p) latent(%wd, %wu) norm(%n) experts(%w1, %w3, %w2) scales(%e1, %e3, %e2)
      shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32, eps = 1.0e-05 : f32}
      : (tensor<?x1024xf32>, tensor<?x8xi32>, tensor<?x8xf32>, tensor<1024x1024xf32>,
         tensor<1024x1024xf32>, tensor<1024xf32>, tensor<64x1024x1024xf4E2M1FN>,
         tensor<64x1024x1024xf4E2M1FN>, tensor<64x1024x1024xf4E2M1FN>,
         tensor<64x1024x32xf8E8M0FNU>, tensor<64x1024x32xf8E8M0FNU>, tensor<64x1024x32xf8E8M0FNU>,
         tensor<1024x1024xf32>, tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<?x1024xf32>
  return %y : tensor<?x1024xf32>
}
