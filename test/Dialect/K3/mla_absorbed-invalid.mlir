// RUN: k3-opt %s --split-input-file --verify-diagnostics

// At least one split.
func.func @case0(%q: tensor<1x2x48xf32>, %c: tensor<1x32xf32>, %kr: tensor<1x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<?x48xf32>) {
  // expected-error @+1 {{splits 0 must be at least 1}}
  %o, %c1 = k3.mla_absorbed %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144337565 splits = 0
      : (tensor<1x2x48xf32>, tensor<1x32xf32>, tensor<1x16xf32>, tensor<128x32xf32>, tensor<?x48xf32>) -> (tensor<1x2x32xf32>, tensor<?x48xf32>)
  return
}

// -----

// The k3.mla rules apply: the cache rows are [latent | k_rope].
func.func @case1(%q: tensor<1x2x48xf32>, %c: tensor<1x32xf32>, %kr: tensor<1x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<?x40xf32>) {
  // expected-error @+1 {{cache dim 1 (L+R) is 40, expected 48 from latent + k_rope dims}}
  %o, %c1 = k3.mla_absorbed %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144337565 splits = 1
      : (tensor<1x2x48xf32>, tensor<1x32xf32>, tensor<1x16xf32>, tensor<128x32xf32>, tensor<?x40xf32>) -> (tensor<1x2x32xf32>, tensor<?x40xf32>)
  return
}
