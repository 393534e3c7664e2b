// k3-small's MoE layer at op level (device debug section, run.sh): D = 1024,
// E = 32 experts top-4, latent Dl = 512 with its norm, expert intermediate
// Ie = 256, one shared expert of 256, SiTU-GLU (4, 25), the sigmoid router
// with a selection-only bias, renormalised; weights in bf16 as the model
// has them. @router returns the picks and their weights (a pick that
// differs shows in the indices' RMSE); @moe the layer's output.
func.func @router(%x: tensor<?x1024xf32>, %wr: tensor<32x1024xbf16>, %bias: tensor<32xf32>)
    -> (tensor<?x4xi32>, tensor<?x4xf32>) {
  %i, %p = k3.router %x, %wr bias(%bias) top_k = 4 renormalize scaling = 1.0
      : (tensor<?x1024xf32>, tensor<32x1024xbf16>, tensor<32xf32>) -> (tensor<?x4xi32>, tensor<?x4xf32>)
  return %i, %p : tensor<?x4xi32>, tensor<?x4xf32>
}

func.func @moe(%x: tensor<?x1024xf32>, %wr: tensor<32x1024xbf16>, %bias: tensor<32xf32>,
    %wd: tensor<512x1024xbf16>, %wu: tensor<1024x512xbf16>, %n: tensor<512xbf16>,
    %c1: tensor<32x256x256xi8>, %c3: tensor<32x256x256xi8>, %c2: tensor<32x512x128xi8>,
    %e1: tensor<32x256x16xf8E8M0FNU>, %e3: tensor<32x256x16xf8E8M0FNU>, %e2: tensor<32x512x8xf8E8M0FNU>,
    %sg: tensor<256x1024xbf16>, %su: tensor<256x1024xbf16>, %sd: tensor<1024x256xbf16>) -> tensor<?x1024xf32> {
  %i, %p = k3.router %x, %wr bias(%bias) top_k = 4 renormalize scaling = 1.0
      : (tensor<?x1024xf32>, tensor<32x1024xbf16>, tensor<32xf32>) -> (tensor<?x4xi32>, tensor<?x4xf32>)
  %w1 = k3.unpack_e2m1 %c1 : tensor<32x256x256xi8> -> tensor<32x256x512xf4E2M1FN>
  %w3 = k3.unpack_e2m1 %c3 : tensor<32x256x256xi8> -> tensor<32x256x512xf4E2M1FN>
  %w2 = k3.unpack_e2m1 %c2 : tensor<32x512x128xi8> -> tensor<32x512x256xf4E2M1FN>
  %y = k3.moe %x routed(%i, %p) latent(%wd, %wu) norm(%n) experts(%w1, %w3, %w2) scales(%e1, %e3, %e2)
      shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<?x1024xf32>, tensor<?x4xi32>, tensor<?x4xf32>, tensor<512x1024xbf16>, tensor<1024x512xbf16>,
         tensor<512xbf16>, tensor<32x256x512xf4E2M1FN>, tensor<32x256x512xf4E2M1FN>, tensor<32x512x256xf4E2M1FN>,
         tensor<32x256x16xf8E8M0FNU>, tensor<32x256x16xf8E8M0FNU>, tensor<32x512x8xf8E8M0FNU>,
         tensor<256x1024xbf16>, tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<?x1024xf32>
  return %y : tensor<?x1024xf32>
}
