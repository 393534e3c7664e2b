// The device script's KDA prefill benchmark (issue sizes: B = 1, T from
// --dim, H = 64 heads, dk = dv = 128): L2-normalised q and k, the
// lower-bounded gate (@kda) or Kimi Linear's softplus gate (@kda_softplus),
// β = sigmoid, chunked KDA from a zero state.
func.func @kda(%q: tensor<?x64x128xf32>, %k: tensor<?x64x128xf32>,
               %v: tensor<?x64x128xf32>, %graw: tensor<?x64x128xf32>,
               %alog: tensor<64xf32>, %dt: tensor<64x128xf32>,
               %braw: tensor<?x64xf32>, %s0: tensor<64x128x128xf32>)
    -> (tensor<?x64x128xf32>, tensor<64x128x128xf32>) {
  %qn = k3.l2_norm %q {eps = 1.0e-06 : f32} : tensor<?x64x128xf32>
  %kn = k3.l2_norm %k {eps = 1.0e-06 : f32} : tensor<?x64x128xf32>
  %g = k3.kda_gate lower_bound lb = -5.0 %graw, %alog, %dt
      : (tensor<?x64x128xf32>, tensor<64xf32>, tensor<64x128xf32>) -> tensor<?x64x128xf32>
  %beta = k3.sigmoid %braw : tensor<?x64xf32>
  %o, %s1 = k3.kda %qn, %kn, %v, %g, %beta, state(%s0) scale = 0.0883883476
      : (tensor<?x64x128xf32>, tensor<?x64x128xf32>, tensor<?x64x128xf32>,
         tensor<?x64x128xf32>, tensor<?x64xf32>, tensor<64x128x128xf32>)
      -> (tensor<?x64x128xf32>, tensor<64x128x128xf32>)
  return %o, %s1 : tensor<?x64x128xf32>, tensor<64x128x128xf32>
}

func.func @kda_softplus(%q: tensor<?x64x128xf32>, %k: tensor<?x64x128xf32>,
                        %v: tensor<?x64x128xf32>, %graw: tensor<?x64x128xf32>,
                        %alog: tensor<64xf32>, %dt: tensor<64x128xf32>,
                        %braw: tensor<?x64xf32>, %s0: tensor<64x128x128xf32>)
    -> (tensor<?x64x128xf32>, tensor<64x128x128xf32>) {
  %qn = k3.l2_norm %q {eps = 1.0e-06 : f32} : tensor<?x64x128xf32>
  %kn = k3.l2_norm %k {eps = 1.0e-06 : f32} : tensor<?x64x128xf32>
  %g = k3.kda_gate softplus %graw, %alog, %dt
      : (tensor<?x64x128xf32>, tensor<64xf32>, tensor<64x128xf32>) -> tensor<?x64x128xf32>
  %beta = k3.sigmoid %braw : tensor<?x64xf32>
  %o, %s1 = k3.kda %qn, %kn, %v, %g, %beta, state(%s0) scale = 0.0883883476
      : (tensor<?x64x128xf32>, tensor<?x64x128xf32>, tensor<?x64x128xf32>,
         tensor<?x64x128xf32>, tensor<?x64xf32>, tensor<64x128x128xf32>)
      -> (tensor<?x64x128xf32>, tensor<64x128x128xf32>)
  return %o, %s1 : tensor<?x64x128xf32>, tensor<64x128x128xf32>
}
