// RUN: k3-opt %s --split-input-file --verify-diagnostics

// Every per-request operand has the same B.
func.func @case0(%q: tensor<4x2x48xf32>, %c: tensor<4x32xf32>, %kr: tensor<4x16xf32>,
                 %kvb: tensor<128x32xf32>, %pages: tensor<8x16x48xf32>, %table: tensor<3x3xi32>,
                 %len: tensor<4xi32>) {
  // expected-error @+1 {{block_table dim 0 (B) is 3, expected 4 from q}}
  %o, %rows = k3.mla_paged %q, %c, %kr, kv_b(%kvb), pages(%pages) table(%table) lengths(%len) scale = 0.25
      : (tensor<4x2x48xf32>, tensor<4x32xf32>, tensor<4x16xf32>, tensor<128x32xf32>,
         tensor<8x16x48xf32>, tensor<3x3xi32>, tensor<4xi32>) -> (tensor<4x2x32xf32>, tensor<4x48xf32>)
  return
}

// -----

// A page row is [latent | k_rope].
func.func @case1(%q: tensor<4x2x48xf32>, %c: tensor<4x32xf32>, %kr: tensor<4x16xf32>,
                 %kvb: tensor<128x32xf32>, %pages: tensor<8x16x40xf32>, %table: tensor<4x3xi32>,
                 %len: tensor<4xi32>) {
  // expected-error @+1 {{pages dim 2 (L+R) is 40, expected 48 from latent + k_rope dims}}
  %o, %rows = k3.mla_paged %q, %c, %kr, kv_b(%kvb), pages(%pages) table(%table) lengths(%len) scale = 0.25
      : (tensor<4x2x48xf32>, tensor<4x32xf32>, tensor<4x16xf32>, tensor<128x32xf32>,
         tensor<8x16x40xf32>, tensor<4x3xi32>, tensor<4xi32>) -> (tensor<4x2x32xf32>, tensor<4x48xf32>)
  return
}

// -----

// The new rows are stored as the pages are.
func.func @case2(%q: tensor<4x2x48xf32>, %c: tensor<4x32xf32>, %kr: tensor<4x16xf32>,
                 %kvb: tensor<128x32xf32>, %pages: tensor<8x16x48xbf16>, %table: tensor<4x3xi32>,
                 %len: tensor<4xi32>) {
  // expected-error @+1 {{rows are 'f32', the pages hold 'bf16'}}
  %o, %rows = k3.mla_paged %q, %c, %kr, kv_b(%kvb), pages(%pages) table(%table) lengths(%len) scale = 0.25
      : (tensor<4x2x48xf32>, tensor<4x32xf32>, tensor<4x16xf32>, tensor<128x32xf32>,
         tensor<8x16x48xbf16>, tensor<4x3xi32>, tensor<4xi32>) -> (tensor<4x2x32xf32>, tensor<4x48xf32>)
  return
}

// -----

// The head dims must be known (the lowering's per-head tiles).
func.func @case3(%q: tensor<4x?x48xf32>, %c: tensor<4x32xf32>, %kr: tensor<4x16xf32>,
                 %kvb: tensor<128x32xf32>, %pages: tensor<8x16x48xf32>, %table: tensor<4x3xi32>,
                 %len: tensor<4xi32>) {
  // expected-error @+1 {{q dim 1 must be static}}
  %o, %rows = k3.mla_paged %q, %c, %kr, kv_b(%kvb), pages(%pages) table(%table) lengths(%len) scale = 0.25
      : (tensor<4x?x48xf32>, tensor<4x32xf32>, tensor<4x16xf32>, tensor<128x32xf32>,
         tensor<8x16x48xf32>, tensor<4x3xi32>, tensor<4xi32>) -> (tensor<4x2x32xf32>, tensor<4x48xf32>)
  return
}

// -----

// The block table holds i32 page ids.
func.func @case4(%q: tensor<4x2x48xf32>, %c: tensor<4x32xf32>, %kr: tensor<4x16xf32>,
                 %kvb: tensor<128x32xf32>, %pages: tensor<8x16x48xf32>, %table: tensor<4x3xi64>,
                 %len: tensor<4xi32>) {
  // expected-error @+1 {{operand #5 must be ranked tensor of 32-bit signless integer values}}
  %o, %rows = k3.mla_paged %q, %c, %kr, kv_b(%kvb), pages(%pages) table(%table) lengths(%len) scale = 0.25
      : (tensor<4x2x48xf32>, tensor<4x32xf32>, tensor<4x16xf32>, tensor<128x32xf32>,
         tensor<8x16x48xf32>, tensor<4x3xi64>, tensor<4xi32>) -> (tensor<4x2x32xf32>, tensor<4x48xf32>)
  return
}

// -----

// kv_b's rows are the heads' [k_nope | v] blocks.
func.func @case5(%q: tensor<4x2x48xf32>, %c: tensor<4x32xf32>, %kr: tensor<4x16xf32>,
                 %kvb: tensor<100x32xf32>, %pages: tensor<8x16x48xf32>, %table: tensor<4x3xi32>,
                 %len: tensor<4xi32>) {
  // expected-error @+1 {{kv_b dim 0 (H*(P+Vd)) is 100, expected 128 from heads * (nope + value dims)}}
  %o, %rows = k3.mla_paged %q, %c, %kr, kv_b(%kvb), pages(%pages) table(%table) lengths(%len) scale = 0.25
      : (tensor<4x2x48xf32>, tensor<4x32xf32>, tensor<4x16xf32>, tensor<100x32xf32>,
         tensor<8x16x48xf32>, tensor<4x3xi32>, tensor<4xi32>) -> (tensor<4x2x32xf32>, tensor<4x48xf32>)
  return
}

// -----

// kv_b's rows must be known (the lowering's [H, P+Vd, L] view).
func.func @case6(%q: tensor<4x2x48xf32>, %c: tensor<4x32xf32>, %kr: tensor<4x16xf32>,
                 %kvb: tensor<?x32xf32>, %pages: tensor<8x16x48xf32>, %table: tensor<4x3xi32>,
                 %len: tensor<4xi32>) {
  // expected-error @+1 {{kv_b dim 0 must be static}}
  %o, %rows = k3.mla_paged %q, %c, %kr, kv_b(%kvb), pages(%pages) table(%table) lengths(%len) scale = 0.25
      : (tensor<4x2x48xf32>, tensor<4x32xf32>, tensor<4x16xf32>, tensor<?x32xf32>,
         tensor<8x16x48xf32>, tensor<4x3xi32>, tensor<4xi32>) -> (tensor<4x2x32xf32>, tensor<4x48xf32>)
  return
}

// -----

// A page of no rows.
func.func @case7(%q: tensor<4x2x48xf32>, %c: tensor<4x32xf32>, %kr: tensor<4x16xf32>,
                 %kvb: tensor<128x32xf32>, %pages: tensor<8x0x48xf32>, %table: tensor<4x3xi32>,
                 %len: tensor<4xi32>) {
  // expected-error @+1 {{pages hold no row (PT is 0)}}
  %o, %rows = k3.mla_paged %q, %c, %kr, kv_b(%kvb), pages(%pages) table(%table) lengths(%len) scale = 0.25
      : (tensor<4x2x48xf32>, tensor<4x32xf32>, tensor<4x16xf32>, tensor<128x32xf32>,
         tensor<8x0x48xf32>, tensor<4x3xi32>, tensor<4xi32>) -> (tensor<4x2x32xf32>, tensor<4x48xf32>)
  return
}

// -----

// The new rows are one per request.
func.func @case8(%q: tensor<4x2x48xf32>, %c: tensor<4x32xf32>, %kr: tensor<4x16xf32>,
                 %kvb: tensor<128x32xf32>, %pages: tensor<8x16x48xf32>, %table: tensor<4x3xi32>,
                 %len: tensor<4xi32>) {
  // expected-error @+1 {{rows dim 0 (B) is 3, expected 4 from q}}
  %o, %rows = k3.mla_paged %q, %c, %kr, kv_b(%kvb), pages(%pages) table(%table) lengths(%len) scale = 0.25
      : (tensor<4x2x48xf32>, tensor<4x32xf32>, tensor<4x16xf32>, tensor<128x32xf32>,
         tensor<8x16x48xf32>, tensor<4x3xi32>, tensor<4xi32>) -> (tensor<4x2x32xf32>, tensor<3x48xf32>)
  return
}

// -----

// The scale is positive.
func.func @case9(%q: tensor<4x2x48xf32>, %c: tensor<4x32xf32>, %kr: tensor<4x16xf32>,
                 %kvb: tensor<128x32xf32>, %pages: tensor<8x16x48xf32>, %table: tensor<4x3xi32>,
                 %len: tensor<4xi32>) {
  // expected-error @+1 {{scale must be positive and finite, got 0}}
  %o, %rows = k3.mla_paged %q, %c, %kr, kv_b(%kvb), pages(%pages) table(%table) lengths(%len) scale = 0.0
      : (tensor<4x2x48xf32>, tensor<4x32xf32>, tensor<4x16xf32>, tensor<128x32xf32>,
         tensor<8x16x48xf32>, tensor<4x3xi32>, tensor<4xi32>) -> (tensor<4x2x32xf32>, tensor<4x48xf32>)
  return
}

// -----

// The block table is [B, max pages].
func.func @case10(%q: tensor<4x2x48xf32>, %c: tensor<4x32xf32>, %kr: tensor<4x16xf32>,
                  %kvb: tensor<128x32xf32>, %pages: tensor<8x16x48xf32>, %table: tensor<12xi32>,
                  %len: tensor<4xi32>) {
  // expected-error @+1 {{block_table must have rank 2 [B, MB], got rank 1}}
  %o, %rows = k3.mla_paged %q, %c, %kr, kv_b(%kvb), pages(%pages) table(%table) lengths(%len) scale = 0.25
      : (tensor<4x2x48xf32>, tensor<4x32xf32>, tensor<4x16xf32>, tensor<128x32xf32>,
         tensor<8x16x48xf32>, tensor<12xi32>, tensor<4xi32>) -> (tensor<4x2x32xf32>, tensor<4x48xf32>)
  return
}
