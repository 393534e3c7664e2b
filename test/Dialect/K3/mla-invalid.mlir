// RUN: k3-opt %s --split-input-file --verify-diagnostics

// q is [T, H, P+R].
func.func @case0(%q: tensor<5x96xf32>, %c: tensor<5x32xf32>, %kr: tensor<5x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<7x48xf32>) {
  // expected-error @+1 {{q must have rank 3 [T, H, P+R], got rank 2}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<5x96xf32>, tensor<5x32xf32>, tensor<5x16xf32>, tensor<128x32xf32>, tensor<7x48xf32>) -> (tensor<5x2x32xf32>, tensor<12x48xf32>)
  return
}

// -----

// The latent is one vector per token.
func.func @case1(%q: tensor<5x2x48xf32>, %c: tensor<5x1x32xf32>, %kr: tensor<5x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<7x48xf32>) {
  // expected-error @+1 {{latent must have rank 2 [T, L], got rank 3}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<5x2x48xf32>, tensor<5x1x32xf32>, tensor<5x16xf32>, tensor<128x32xf32>, tensor<7x48xf32>) -> (tensor<5x2x32xf32>, tensor<12x48xf32>)
  return
}

// -----

// The shared key is one vector per token, not per head.
func.func @case2(%q: tensor<5x2x48xf32>, %c: tensor<5x32xf32>, %kr: tensor<5x2x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<7x48xf32>) {
  // expected-error @+1 {{k_rope must have rank 2 [T, R], got rank 3}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<5x2x48xf32>, tensor<5x32xf32>, tensor<5x2x16xf32>, tensor<128x32xf32>, tensor<7x48xf32>) -> (tensor<5x2x32xf32>, tensor<12x48xf32>)
  return
}

// -----

// kv_b is the checkpoint's 2-D kv_b_proj.
func.func @case3(%q: tensor<5x2x48xf32>, %c: tensor<5x32xf32>, %kr: tensor<5x16xf32>, %kvb: tensor<2x64x32xf32>, %c0: tensor<7x48xf32>) {
  // expected-error @+1 {{kv_b must have rank 2 [H*(P+Vd), L], got rank 3}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<5x2x48xf32>, tensor<5x32xf32>, tensor<5x16xf32>, tensor<2x64x32xf32>, tensor<7x48xf32>) -> (tensor<5x2x32xf32>, tensor<12x48xf32>)
  return
}

// -----

// The cache holds rows, not per-head keys.
func.func @case4(%q: tensor<5x2x48xf32>, %c: tensor<5x32xf32>, %kr: tensor<5x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<7x2x48xf32>) {
  // expected-error @+1 {{cache must have rank 2 [S, L+R], got rank 3}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<5x2x48xf32>, tensor<5x32xf32>, tensor<5x16xf32>, tensor<128x32xf32>, tensor<7x2x48xf32>) -> (tensor<5x2x32xf32>, tensor<12x48xf32>)
  return
}

// -----

// The output is per head.
func.func @case5(%q: tensor<5x2x48xf32>, %c: tensor<5x32xf32>, %kr: tensor<5x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<7x48xf32>) {
  // expected-error @+1 {{out must have rank 3 [T, H, Vd], got rank 2}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<5x2x48xf32>, tensor<5x32xf32>, tensor<5x16xf32>, tensor<128x32xf32>, tensor<7x48xf32>) -> (tensor<5x64xf32>, tensor<12x48xf32>)
  return
}

// -----

// One latent per query token.
func.func @case6(%q: tensor<5x2x48xf32>, %c: tensor<4x32xf32>, %kr: tensor<5x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<7x48xf32>) {
  // expected-error @+1 {{latent dim 0 (T) is 4, expected 5 from q}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<5x2x48xf32>, tensor<4x32xf32>, tensor<5x16xf32>, tensor<128x32xf32>, tensor<7x48xf32>) -> (tensor<5x2x32xf32>, tensor<12x48xf32>)
  return
}

// -----

// One shared key per query token.
func.func @case7(%q: tensor<5x2x48xf32>, %c: tensor<5x32xf32>, %kr: tensor<4x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<7x48xf32>) {
  // expected-error @+1 {{k_rope dim 0 (T) is 4, expected 5 from q}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<5x2x48xf32>, tensor<5x32xf32>, tensor<4x16xf32>, tensor<128x32xf32>, tensor<7x48xf32>) -> (tensor<5x2x32xf32>, tensor<12x48xf32>)
  return
}

// -----

// One output row per query token.
func.func @case8(%q: tensor<5x2x48xf32>, %c: tensor<5x32xf32>, %kr: tensor<5x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<7x48xf32>) {
  // expected-error @+1 {{out dim 0 (T) is 4, expected 5 from q}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<5x2x48xf32>, tensor<5x32xf32>, tensor<5x16xf32>, tensor<128x32xf32>, tensor<7x48xf32>) -> (tensor<4x2x32xf32>, tensor<12x48xf32>)
  return
}

// -----

// The output has q's heads.
func.func @case9(%q: tensor<5x2x48xf32>, %c: tensor<5x32xf32>, %kr: tensor<5x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<7x48xf32>) {
  // expected-error @+1 {{out dim 1 (H) is 4, expected 2 from q}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<5x2x48xf32>, tensor<5x32xf32>, tensor<5x16xf32>, tensor<128x32xf32>, tensor<7x48xf32>) -> (tensor<5x4x32xf32>, tensor<12x48xf32>)
  return
}

// -----

// q rows are [nope | rope]: the rope part cannot be all of q.
func.func @case10(%q: tensor<5x2x16xf32>, %c: tensor<5x32xf32>, %kr: tensor<5x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<7x48xf32>) {
  // expected-error @+1 {{q head dim 16 must exceed the shared key dim 16 (q rows are [nope | rope])}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<5x2x16xf32>, tensor<5x32xf32>, tensor<5x16xf32>, tensor<128x32xf32>, tensor<7x48xf32>) -> (tensor<5x2x32xf32>, tensor<12x48xf32>)
  return
}

// -----

// kv_b projects from the latent.
func.func @case11(%q: tensor<5x2x48xf32>, %c: tensor<5x32xf32>, %kr: tensor<5x16xf32>, %kvb: tensor<128x16xf32>, %c0: tensor<7x48xf32>) {
  // expected-error @+1 {{kv_b dim 1 (L) is 16, expected 32 from latent}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<5x2x48xf32>, tensor<5x32xf32>, tensor<5x16xf32>, tensor<128x16xf32>, tensor<7x48xf32>) -> (tensor<5x2x32xf32>, tensor<12x48xf32>)
  return
}

// -----

// kv_b has H*(P+Vd) = 2*(32+32) rows.
func.func @case12(%q: tensor<5x2x48xf32>, %c: tensor<5x32xf32>, %kr: tensor<5x16xf32>, %kvb: tensor<96x32xf32>, %c0: tensor<7x48xf32>) {
  // expected-error @+1 {{kv_b dim 0 (H*(P+Vd)) is 96, expected 128 from heads * (nope + value dims)}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<5x2x48xf32>, tensor<5x32xf32>, tensor<5x16xf32>, tensor<96x32xf32>, tensor<7x48xf32>) -> (tensor<5x2x32xf32>, tensor<12x48xf32>)
  return
}

// -----

// Cache rows are [latent | k_rope] = 48 wide; 576 for K3.
func.func @case13(%q: tensor<5x2x48xf32>, %c: tensor<5x32xf32>, %kr: tensor<5x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<7x32xf32>) {
  // expected-error @+1 {{cache dim 1 (L+R) is 32, expected 48 from latent + k_rope dims}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<5x2x48xf32>, tensor<5x32xf32>, tensor<5x16xf32>, tensor<128x32xf32>, tensor<7x32xf32>) -> (tensor<5x2x32xf32>, tensor<12x48xf32>)
  return
}

// -----

// The new cache keeps the row width.
func.func @case14(%q: tensor<5x2x48xf32>, %c: tensor<5x32xf32>, %kr: tensor<5x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<7x48xf32>) {
  // expected-error @+1 {{new_cache dim 1 (L+R) is 32, expected 48 from latent + k_rope dims}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<5x2x48xf32>, tensor<5x32xf32>, tensor<5x16xf32>, tensor<128x32xf32>, tensor<7x48xf32>) -> (tensor<5x2x32xf32>, tensor<12x32xf32>)
  return
}

// -----

// The new cache appends the 5 new rows to the 7 old ones.
func.func @case15(%q: tensor<5x2x48xf32>, %c: tensor<5x32xf32>, %kr: tensor<5x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<7x48xf32>) {
  // expected-error @+1 {{new_cache dim 0 (S+T) is 7, expected 12 from cached + new tokens}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<5x2x48xf32>, tensor<5x32xf32>, tensor<5x16xf32>, tensor<128x32xf32>, tensor<7x48xf32>) -> (tensor<5x2x32xf32>, tensor<7x48xf32>)
  return
}

// -----

// The output gate is elementwise on the per-head output.
func.func @case16(%q: tensor<5x2x48xf32>, %c: tensor<5x32xf32>, %kr: tensor<5x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<7x48xf32>, %gate: tensor<5x64xf32>) {
  // expected-error @+1 {{gate must have rank 3 [T, H, Vd], got rank 2}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) gate(%gate) scale = 0.144 causal
      : (tensor<5x2x48xf32>, tensor<5x32xf32>, tensor<5x16xf32>, tensor<128x32xf32>, tensor<7x48xf32>, tensor<5x64xf32>) -> (tensor<5x2x32xf32>, tensor<12x48xf32>)
  return
}

// -----

// A zero scale would flatten attention to uniform.
func.func @case17(%q: tensor<5x2x48xf32>, %c: tensor<5x32xf32>, %kr: tensor<5x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<7x48xf32>) {
  // expected-error @+1 {{scale must be positive and finite, got 0}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.0 causal
      : (tensor<5x2x48xf32>, tensor<5x32xf32>, tensor<5x16xf32>, tensor<128x32xf32>, tensor<7x48xf32>) -> (tensor<5x2x32xf32>, tensor<12x48xf32>)
  return
}

// -----

// The new cache holds rows like the old one.
func.func @case18(%q: tensor<5x2x48xf32>, %c: tensor<5x32xf32>, %kr: tensor<5x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<7x48xf32>) {
  // expected-error @+1 {{new_cache must have rank 2 [S+T, L+R], got rank 3}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<5x2x48xf32>, tensor<5x32xf32>, tensor<5x16xf32>, tensor<128x32xf32>, tensor<7x48xf32>) -> (tensor<5x2x32xf32>, tensor<12x1x48xf32>)
  return
}

// -----

// A dynamic T in q does not hide a mismatch between latent and k_rope.
func.func @dyn_q_tokens(%q: tensor<?x2x48xf32>, %c: tensor<5x32xf32>, %kr: tensor<6x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<7x48xf32>) {
  // expected-error @+1 {{k_rope dim 0 (T) is 6, expected 5 from latent}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<?x2x48xf32>, tensor<5x32xf32>, tensor<6x16xf32>, tensor<128x32xf32>, tensor<7x48xf32>) -> (tensor<?x2x32xf32>, tensor<?x48xf32>)
  return
}

// -----

// With dynamic T the new cache still keeps every cached row.
func.func @short_cache(%q: tensor<?x2x48xf32>, %c: tensor<?x32xf32>, %kr: tensor<?x16xf32>, %kvb: tensor<128x32xf32>, %c0: tensor<7x48xf32>) {
  // expected-error @+1 {{new_cache has 2 rows, fewer than the 7 cached tokens}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<?x2x48xf32>, tensor<?x32xf32>, tensor<?x16xf32>, tensor<128x32xf32>, tensor<7x48xf32>) -> (tensor<?x2x32xf32>, tensor<2x48xf32>)
  return
}

// -----

// kv_b rows split into heads of [nope | value]: 7 rows cannot.
func.func @kv_b_rows(%q: tensor<?x2x?xf32>, %c: tensor<?x32xf32>, %kr: tensor<?x16xf32>, %kvb: tensor<7x32xf32>, %c0: tensor<?x48xf32>) {
  // expected-error @+1 {{kv_b has 7 rows, which is not 2 heads * (nope dim + value dim 32)}}
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.144 causal
      : (tensor<?x2x?xf32>, tensor<?x32xf32>, tensor<?x16xf32>, tensor<7x32xf32>, tensor<?x48xf32>) -> (tensor<?x2x32xf32>, tensor<?x48xf32>)
  return
}
