// One MLA decode step at op level (2 heads, P = 16, R = 8, L = 32, Vd = 16,
// f32 cache, the output gate; scale 1/sqrt(P+R)).
func.func @mla(%q: tensor<1x2x24xf32>, %c: tensor<1x32xf32>, %kr: tensor<1x8xf32>,
               %kvb: tensor<64x32xf32>, %c0: tensor<?x40xf32>, %g: tensor<1x2x16xf32>)
    -> (tensor<1x2x16xf32>, tensor<?x40xf32>) {
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) gate(%g) scale = 0.204124153 causal
      : (tensor<1x2x24xf32>, tensor<1x32xf32>, tensor<1x8xf32>, tensor<64x32xf32>,
         tensor<?x40xf32>, tensor<1x2x16xf32>) -> (tensor<1x2x16xf32>, tensor<?x40xf32>)
  return %o, %c1 : tensor<1x2x16xf32>, tensor<?x40xf32>
}
