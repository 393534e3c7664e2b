// RUN: k3-opt %s --split-input-file --verify-diagnostics

func.func @f(%q: tensor<?x2x40xf32>, %pool: tensor<?x16x48xbf16>, %bt: tensor<?x?xi32>, %len: tensor<?xi32>, %rows: tensor<?x40xbf16>, %o: tensor<?x2x32xf32>) {
  // expected-error @+1 {{pages dim 2 (L+R) is 48, expected 40 from q}}
  %r = k3.paged_attend %q pages(%pool) table(%bt) lengths(%len) rows(%rows) outs(%o)
      : (tensor<?x2x40xf32>, tensor<?x16x48xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?x40xbf16>, tensor<?x2x32xf32>) -> tensor<?x2x32xf32>
  return
}

// -----

func.func @f(%q: tensor<3x2x40xf32>, %pool: tensor<?x16x40xbf16>, %bt: tensor<4x?xi32>, %len: tensor<?xi32>, %rows: tensor<?x40xbf16>, %o: tensor<?x2x32xf32>) {
  // expected-error @+1 {{block_table dim 0 (B) is 4, expected 3 from q}}
  %r = k3.paged_attend %q pages(%pool) table(%bt) lengths(%len) rows(%rows) outs(%o)
      : (tensor<3x2x40xf32>, tensor<?x16x40xbf16>, tensor<4x?xi32>, tensor<?xi32>, tensor<?x40xbf16>, tensor<?x2x32xf32>) -> tensor<?x2x32xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x40xf32>, %pool: tensor<?x16x40xbf16>, %bt: tensor<?x?xi32>, %len: tensor<?xi32>, %rows: tensor<?x40xbf16>, %o: tensor<?x2x48xf32>) {
  // expected-error @+1 {{out's latent width 48 is more than the rows' 40}}
  %r = k3.paged_attend %q pages(%pool) table(%bt) lengths(%len) rows(%rows) outs(%o)
      : (tensor<?x2x40xf32>, tensor<?x16x40xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?x40xbf16>, tensor<?x2x48xf32>) -> tensor<?x2x48xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x40xf32>, %pool: tensor<?x16x40xbf16>, %bt: tensor<?x?xi32>, %len: tensor<?xi32>, %rows: tensor<?x40xf32>, %o: tensor<?x2x32xf32>) {
  // expected-error @+1 {{pages must be bf16, f16 or f32 and rows the same, got 'bf16' and 'f32'}}
  %r = k3.paged_attend %q pages(%pool) table(%bt) lengths(%len) rows(%rows) outs(%o)
      : (tensor<?x2x40xf32>, tensor<?x16x40xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?x40xf32>, tensor<?x2x32xf32>) -> tensor<?x2x32xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x40xf32>, %pool: tensor<?x16x40xbf16>, %bt: tensor<?x?xi64>, %len: tensor<?xi32>, %rows: tensor<?x40xbf16>, %o: tensor<?x2x32xf32>) {
  // expected-error @+1 {{block_table and lengths must be i32}}
  %r = k3.paged_attend %q pages(%pool) table(%bt) lengths(%len) rows(%rows) outs(%o)
      : (tensor<?x2x40xf32>, tensor<?x16x40xbf16>, tensor<?x?xi64>, tensor<?xi32>, tensor<?x40xbf16>, tensor<?x2x32xf32>) -> tensor<?x2x32xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x40xf32>, %pool: tensor<?x16x40xbf16>, %bt: tensor<?x?xi32>, %len: tensor<?xi32>, %rows: tensor<?x40xbf16>, %o: tensor<?x2x32xf32>) {
  // expected-error @+1 {{q_scale must be finite, got inf}}
  %r = k3.paged_attend %q pages(%pool) table(%bt) lengths(%len) rows(%rows) outs(%o) {q_scale = 0x7F800000 : f32}
      : (tensor<?x2x40xf32>, tensor<?x16x40xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?x40xbf16>, tensor<?x2x32xf32>) -> tensor<?x2x32xf32>
  return
}
