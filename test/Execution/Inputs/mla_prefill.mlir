// MLA prefill at op level: T new tokens over S cached ones (2 heads, P = 16,
// R = 8, L = 32, Vd = 16, f32 cache, the output gate, causal).
func.func @mla(%q: tensor<?x2x24xf32>, %c: tensor<?x32xf32>, %kr: tensor<?x8xf32>,
               %kvb: tensor<64x32xf32>, %c0: tensor<?x40xf32>, %g: tensor<?x2x16xf32>)
    -> (tensor<?x2x16xf32>, tensor<?x40xf32>) {
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) gate(%g) scale = 0.204124153 causal
      : (tensor<?x2x24xf32>, tensor<?x32xf32>, tensor<?x8xf32>, tensor<64x32xf32>,
         tensor<?x40xf32>, tensor<?x2x16xf32>) -> (tensor<?x2x16xf32>, tensor<?x40xf32>)
  return %o, %c1 : tensor<?x2x16xf32>, tensor<?x40xf32>
}
