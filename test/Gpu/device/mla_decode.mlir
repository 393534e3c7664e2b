// The device script's MLA decode benchmark: one step of K3's absorbed MLA
// over a cache of --dim tokens (64 heads, nope 128, rope 64, latent 512,
// value 128), bf16 cache rows of 576 and bf16 kv_b, the output gate.
func.func @mla(%q: tensor<1x64x192xf32>, %c: tensor<1x512xf32>, %kr: tensor<1x64xf32>,
               %kvb: tensor<16384x512xbf16>, %c0: tensor<?x576xbf16>, %g: tensor<1x64x128xf32>)
    -> (tensor<1x64x128xf32>, tensor<?x576xbf16>) {
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) gate(%g) scale = 0.0721687836 causal
      : (tensor<1x64x192xf32>, tensor<1x512xf32>, tensor<1x64xf32>, tensor<16384x512xbf16>,
         tensor<?x576xbf16>, tensor<1x64x128xf32>) -> (tensor<1x64x128xf32>, tensor<?x576xbf16>)
  return %o, %c1 : tensor<1x64x128xf32>, tensor<?x576xbf16>
}
