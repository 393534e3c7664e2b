// One fused KDA decode step with GVA (2 q/k heads of 8 channels, 4 value
// heads of 8): value head h reads q/k head h / 2. The softplus gate with
// bf16 activations, and the lower-bounded gate (lb = -5) in f32.
func.func @decode_softplus(%xq: tensor<1x16xbf16>, %xk: tensor<1x16xbf16>, %xv: tensor<1x32xbf16>,
                  %wq: tensor<16x4xf32>, %wk: tensor<16x4xf32>, %wv: tensor<32x4xf32>,
                  %cq: tensor<3x16xf32>, %ck: tensor<3x16xf32>, %cv: tensor<3x32xf32>,
                  %f: tensor<1x4x8xbf16>, %a: tensor<4xf32>, %dt: tensor<4x8xf32>, %b: tensor<1x4xbf16>,
                  %s0: tensor<4x8x8xf32>, %nw: tensor<8xbf16>, %og: tensor<1x4x8xbf16>)
    -> (tensor<1x4x8xbf16>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<3x32xf32>, tensor<4x8x8xf32>) {
  %o, %nq, %nk, %nv, %s1 = k3.kda_decode x(%xq, %xk, %xv) filters(%wq, %wk, %wv) windows(%cq, %ck, %cv)
      gate(%f, %a, %dt) beta(%b) state(%s0) norm(%nw) out_gate(%og) softplus scale = 0.35 eps = 1.0e-05
      : (tensor<1x16xbf16>, tensor<1x16xbf16>, tensor<1x32xbf16>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<32x4xf32>,
         tensor<3x16xf32>, tensor<3x16xf32>, tensor<3x32xf32>, tensor<1x4x8xbf16>, tensor<4xf32>, tensor<4x8xf32>,
         tensor<1x4xbf16>, tensor<4x8x8xf32>, tensor<8xbf16>, tensor<1x4x8xbf16>)
      -> (tensor<1x4x8xbf16>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<3x32xf32>, tensor<4x8x8xf32>)
  return %o, %nq, %nk, %nv, %s1 : tensor<1x4x8xbf16>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<3x32xf32>, tensor<4x8x8xf32>
}

func.func @decode_lb(%xq: tensor<1x16xf32>, %xk: tensor<1x16xf32>, %xv: tensor<1x32xf32>,
                  %wq: tensor<16x4xf32>, %wk: tensor<16x4xf32>, %wv: tensor<32x4xf32>,
                  %cq: tensor<3x16xf32>, %ck: tensor<3x16xf32>, %cv: tensor<3x32xf32>,
                  %f: tensor<1x4x8xf32>, %a: tensor<4xf32>, %dt: tensor<4x8xf32>, %b: tensor<1x4xf32>,
                  %s0: tensor<4x8x8xf32>, %nw: tensor<8xf32>, %og: tensor<1x4x8xf32>)
    -> (tensor<1x4x8xf32>, tensor<4x8x8xf32>) {
  %o, %nq, %nk, %nv, %s1 = k3.kda_decode x(%xq, %xk, %xv) filters(%wq, %wk, %wv) windows(%cq, %ck, %cv)
      gate(%f, %a, %dt) beta(%b) state(%s0) norm(%nw) out_gate(%og) lower_bound lb = -5.0 scale = 0.35 eps = 1.0e-05
      : (tensor<1x16xf32>, tensor<1x16xf32>, tensor<1x32xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<32x4xf32>,
         tensor<3x16xf32>, tensor<3x16xf32>, tensor<3x32xf32>, tensor<1x4x8xf32>, tensor<4xf32>, tensor<4x8xf32>,
         tensor<1x4xf32>, tensor<4x8x8xf32>, tensor<8xf32>, tensor<1x4x8xf32>)
      -> (tensor<1x4x8xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<3x32xf32>, tensor<4x8x8xf32>)
  return %o, %s1 : tensor<1x4x8xf32>, tensor<4x8x8xf32>
}
