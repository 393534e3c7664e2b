// The device script's KDA decode benchmark: one fused step of a KDA layer
// (KDA.md §7) at K3's head shape, H = HV = 64 heads of dk = dv = 128, bf16
// activations, f32 windows and state, the lower-bounded gate. The state
// (4 MiB) dominates the traffic.
func.func @decode(%xq: tensor<1x8192xbf16>,
                  %xk: tensor<1x8192xbf16>,
                  %xv: tensor<1x8192xbf16>,
                  %wq: tensor<8192x4xf32>,
                  %wk: tensor<8192x4xf32>,
                  %wv: tensor<8192x4xf32>,
                  %cq: tensor<3x8192xf32>,
                  %ck: tensor<3x8192xf32>,
                  %cv: tensor<3x8192xf32>,
                  %f: tensor<1x64x128xbf16>,
                  %a: tensor<64xf32>,
                  %dt: tensor<64x128xf32>,
                  %b: tensor<1x64xbf16>,
                  %s0: tensor<64x128x128xf32>,
                  %nw: tensor<128xbf16>,
                  %og: tensor<1x64x128xbf16>)
    -> (tensor<1x64x128xbf16>, tensor<3x8192xf32>, tensor<3x8192xf32>, tensor<3x8192xf32>, tensor<64x128x128xf32>) {
  %o, %nq, %nk, %nv, %s1 = k3.kda_decode x(%xq, %xk, %xv) filters(%wq, %wk, %wv) windows(%cq, %ck, %cv)
      gate(%f, %a, %dt) beta(%b) state(%s0) norm(%nw) out_gate(%og) lower_bound lb = -5.0 scale = 0.0883883476 eps = 1.0e-05
      : (tensor<1x8192xbf16>, tensor<1x8192xbf16>, tensor<1x8192xbf16>, tensor<8192x4xf32>, tensor<8192x4xf32>, tensor<8192x4xf32>, tensor<3x8192xf32>, tensor<3x8192xf32>, tensor<3x8192xf32>, tensor<1x64x128xbf16>, tensor<64xf32>, tensor<64x128xf32>, tensor<1x64xbf16>, tensor<64x128x128xf32>, tensor<128xbf16>, tensor<1x64x128xbf16>)
      -> (tensor<1x64x128xbf16>, tensor<3x8192xf32>, tensor<3x8192xf32>, tensor<3x8192xf32>, tensor<64x128x128xf32>)
  return %o, %nq, %nk, %nv, %s1 : tensor<1x64x128xbf16>, tensor<3x8192xf32>, tensor<3x8192xf32>, tensor<3x8192xf32>, tensor<64x128x128xf32>
}
