// The KDA core of a layer at op level, for the chunked-vs-reference tests:
// L2-normalised q and k, the gate (lower-bounded or softplus), β = sigmoid,
// 2 q/k heads shared by 4 value heads (GVA), K = V = 16.
func.func @kda_lb(%q: tensor<?x2x16xf32>, %k: tensor<?x2x16xf32>,
                  %v: tensor<?x4x16xf32>, %graw: tensor<?x4x16xf32>,
                  %alog: tensor<4xf32>, %dt: tensor<4x16xf32>,
                  %braw: tensor<?x4xf32>, %s0: tensor<4x16x16xf32>)
    -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>) {
  %qn = k3.l2_norm %q {eps = 1.0e-06 : f32} : tensor<?x2x16xf32>
  %kn = k3.l2_norm %k {eps = 1.0e-06 : f32} : tensor<?x2x16xf32>
  %g = k3.kda_gate lower_bound lb = -5.0 %graw, %alog, %dt
      : (tensor<?x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
  %beta = k3.sigmoid %braw : tensor<?x4xf32>
  %o, %s1 = k3.kda %qn, %kn, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?x4x16xf32>,
         tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<4x16x16xf32>)
      -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>)
  return %o, %s1 : tensor<?x4x16xf32>, tensor<4x16x16xf32>
}

func.func @kda_softplus(%q: tensor<?x2x16xf32>, %k: tensor<?x2x16xf32>,
                        %v: tensor<?x4x16xf32>, %graw: tensor<?x4x16xf32>,
                        %alog: tensor<4xf32>, %dt: tensor<4x16xf32>,
                        %braw: tensor<?x4xf32>, %s0: tensor<4x16x16xf32>)
    -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>) {
  %qn = k3.l2_norm %q {eps = 1.0e-06 : f32} : tensor<?x2x16xf32>
  %kn = k3.l2_norm %k {eps = 1.0e-06 : f32} : tensor<?x2x16xf32>
  %g = k3.kda_gate softplus %graw, %alog, %dt
      : (tensor<?x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
  %beta = k3.sigmoid %braw : tensor<?x4xf32>
  %o, %s1 = k3.kda %qn, %kn, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?x4x16xf32>,
         tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<4x16x16xf32>)
      -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>)
  return %o, %s1 : tensor<?x4x16xf32>, tensor<4x16x16xf32>
}

// The chunked op itself (chunks of 16, factored), returning the state after
// every chunk.
func.func @kda_boundaries(%q: tensor<?x2x16xf32>, %k: tensor<?x2x16xf32>,
                          %v: tensor<?x4x16xf32>, %graw: tensor<?x4x16xf32>,
                          %alog: tensor<4xf32>, %dt: tensor<4x16xf32>,
                          %braw: tensor<?x4xf32>, %s0: tensor<4x16x16xf32>)
    -> tensor<?x4x16x16xf32> {
  %qn = k3.l2_norm %q {eps = 1.0e-06 : f32} : tensor<?x2x16xf32>
  %kn = k3.l2_norm %k {eps = 1.0e-06 : f32} : tensor<?x2x16xf32>
  %g = k3.kda_gate lower_bound lb = -5.0 %graw, %alog, %dt
      : (tensor<?x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
  %beta = k3.sigmoid %braw : tensor<?x4xf32>
  %o, %s1, %b = k3.kda_chunked %qn, %kn, %v, %g, %beta, state(%s0) scale = 0.25
      chunk = 16 sub_chunk = 16 factored
      : (tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?x4x16xf32>,
         tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<4x16x16xf32>)
      -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>, tensor<?x4x16x16xf32>)
  return %b : tensor<?x4x16x16xf32>
}

// The state after every 16 tokens as k3.kda snapshots (from the chunk
// boundaries once chunked; from the token loop in the recurrent form).
func.func @kda_snapshots(%q: tensor<?x2x16xf32>, %k: tensor<?x2x16xf32>,
                         %v: tensor<?x4x16xf32>, %graw: tensor<?x4x16xf32>,
                         %alog: tensor<4xf32>, %dt: tensor<4x16xf32>,
                         %braw: tensor<?x4xf32>, %s0: tensor<4x16x16xf32>)
    -> tensor<?x4x16x16xf32> {
  %qn = k3.l2_norm %q {eps = 1.0e-06 : f32} : tensor<?x2x16xf32>
  %kn = k3.l2_norm %k {eps = 1.0e-06 : f32} : tensor<?x2x16xf32>
  %g = k3.kda_gate lower_bound lb = -5.0 %graw, %alog, %dt
      : (tensor<?x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
  %beta = k3.sigmoid %braw : tensor<?x4xf32>
  %o, %s1, %snap = k3.kda %qn, %kn, %v, %g, %beta, state(%s0) scale = 0.25
      snapshots every 16
      : (tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?x4x16xf32>,
         tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<4x16x16xf32>)
      -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>, tensor<?x4x16x16xf32>)
  return %snap : tensor<?x4x16x16xf32>
}
