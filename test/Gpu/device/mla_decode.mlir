// The device script's MLA decode benchmark: one step of K3's absorbed MLA
// over a cache of --dim - 1 tokens (64 heads, nope 128, rope 64, latent 512,
// value 128), bf16 cache rows of 576 and bf16 kv_b, the output gate. As in
// a model's entry points, the cache argument has room for the new row
// (--dim rows, the last one written): the step appends in place.
func.func @mla(%q: tensor<1x64x192xf32>, %c: tensor<1x512xf32>, %kr: tensor<1x64xf32>,
               %kvb: tensor<16384x512xbf16>, %room: tensor<?x576xbf16>, %g: tensor<1x64x128xf32>)
    -> (tensor<1x64x128xf32>, tensor<?x576xbf16>) {
  %i0 = arith.constant 0 : index
  %i1 = arith.constant 1 : index
  %n = tensor.dim %room, %i0 : tensor<?x576xbf16>
  %s = arith.subi %n, %i1 : index
  %c0 = tensor.extract_slice %room[0, 0] [%s, 576] [1, 1] : tensor<?x576xbf16> to tensor<?x576xbf16>
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) gate(%g) scale = 0.0721687836 causal
      : (tensor<1x64x192xf32>, tensor<1x512xf32>, tensor<1x64xf32>, tensor<16384x512xbf16>,
         tensor<?x576xbf16>, tensor<1x64x128xf32>) -> (tensor<1x64x128xf32>, tensor<?x576xbf16>)
  return %o, %c1 : tensor<1x64x128xf32>, tensor<?x576xbf16>
}
