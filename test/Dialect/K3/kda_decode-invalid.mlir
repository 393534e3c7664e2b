// RUN: k3-opt %s --split-input-file --verify-diagnostics

// One token.
func.func @case0(%xq: tensor<2x4xf32>, %xk: tensor<2x4xf32>, %xv: tensor<2x8xf32>, %w: tensor<4x4xf32>, %wv: tensor<8x4xf32>,
                 %c: tensor<3x4xf32>, %cv: tensor<3x8xf32>, %f: tensor<1x2x4xf32>, %a: tensor<2xf32>, %dt: tensor<2x4xf32>,
                 %b: tensor<1x2xf32>, %s0: tensor<2x4x4xf32>, %nw: tensor<4xf32>, %og: tensor<1x2x4xf32>) {
  // expected-error @+1 {{xq dim 0 (1) is 2, expected 1 from one decode token}}
  %o, %nq, %nk, %nv, %s1 = k3.kda_decode x(%xq, %xk, %xv) filters(%w, %w, %wv) windows(%c, %c, %cv)
      gate(%f, %a, %dt) beta(%b) state(%s0) norm(%nw) out_gate(%og) lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
      : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8x4xf32>,
         tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x8xf32>, tensor<1x2x4xf32>, tensor<2xf32>, tensor<2x4xf32>,
         tensor<1x2xf32>, tensor<2x4x4xf32>, tensor<4xf32>, tensor<1x2x4xf32>)
      -> (tensor<1x2x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x8xf32>, tensor<2x4x4xf32>)
  return
}

// -----

// Windows hold W−1 rows.
func.func @case1(%xq: tensor<1x4xf32>, %xk: tensor<1x4xf32>, %xv: tensor<1x8xf32>, %w: tensor<4x4xf32>, %wv: tensor<8x4xf32>,
                 %c: tensor<2x4xf32>, %cv: tensor<3x8xf32>, %f: tensor<1x2x4xf32>, %a: tensor<2xf32>, %dt: tensor<2x4xf32>,
                 %b: tensor<1x2xf32>, %s0: tensor<2x4x4xf32>, %nw: tensor<4xf32>, %og: tensor<1x2x4xf32>) {
  // expected-error @+1 {{cq dim 0 (W-1) is 2, expected 3 from the filters}}
  %o, %nq, %nk, %nv, %s1 = k3.kda_decode x(%xq, %xk, %xv) filters(%w, %w, %wv) windows(%c, %c, %cv)
      gate(%f, %a, %dt) beta(%b) state(%s0) norm(%nw) out_gate(%og) lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
      : (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8x4xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<3x8xf32>, tensor<1x2x4xf32>, tensor<2xf32>, tensor<2x4xf32>,
         tensor<1x2xf32>, tensor<2x4x4xf32>, tensor<4xf32>, tensor<1x2x4xf32>)
      -> (tensor<1x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<3x8xf32>, tensor<2x4x4xf32>)
  return
}

// -----

// v is HV·V wide.
func.func @case2(%xq: tensor<1x4xf32>, %xk: tensor<1x4xf32>, %xv: tensor<1x12xf32>, %w: tensor<4x4xf32>, %wv: tensor<12x4xf32>,
                 %c: tensor<3x4xf32>, %cv: tensor<3x12xf32>, %f: tensor<1x2x4xf32>, %a: tensor<2xf32>, %dt: tensor<2x4xf32>,
                 %b: tensor<1x2xf32>, %s0: tensor<2x4x4xf32>, %nw: tensor<4xf32>, %og: tensor<1x2x4xf32>) {
  // expected-error @+1 {{xv dim 1 (HV*V) is 12, expected 8 from HV·V of the state}}
  %o, %nq, %nk, %nv, %s1 = k3.kda_decode x(%xq, %xk, %xv) filters(%w, %w, %wv) windows(%c, %c, %cv)
      gate(%f, %a, %dt) beta(%b) state(%s0) norm(%nw) out_gate(%og) lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
      : (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x12xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<12x4xf32>,
         tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x12xf32>, tensor<1x2x4xf32>, tensor<2xf32>, tensor<2x4xf32>,
         tensor<1x2xf32>, tensor<2x4x4xf32>, tensor<4xf32>, tensor<1x2x4xf32>)
      -> (tensor<1x2x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x12xf32>, tensor<2x4x4xf32>)
  return
}

// -----

// The lower-bounded gate needs its bound.
func.func @case3(%xq: tensor<1x4xf32>, %xk: tensor<1x4xf32>, %xv: tensor<1x8xf32>, %w: tensor<4x4xf32>, %wv: tensor<8x4xf32>,
                 %c: tensor<3x4xf32>, %cv: tensor<3x8xf32>, %f: tensor<1x2x4xf32>, %a: tensor<2xf32>, %dt: tensor<2x4xf32>,
                 %b: tensor<1x2xf32>, %s0: tensor<2x4x4xf32>, %nw: tensor<4xf32>, %og: tensor<1x2x4xf32>) {
  // expected-error @+1 {{the lower_bound gate needs lb}}
  %o, %nq, %nk, %nv, %s1 = k3.kda_decode x(%xq, %xk, %xv) filters(%w, %w, %wv) windows(%c, %c, %cv)
      gate(%f, %a, %dt) beta(%b) state(%s0) norm(%nw) out_gate(%og) lower_bound scale = 0.5 eps = 1.0e-05
      : (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8x4xf32>,
         tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x8xf32>, tensor<1x2x4xf32>, tensor<2xf32>, tensor<2x4xf32>,
         tensor<1x2xf32>, tensor<2x4x4xf32>, tensor<4xf32>, tensor<1x2x4xf32>)
      -> (tensor<1x2x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x8xf32>, tensor<2x4x4xf32>)
  return
}

// -----

// A state with no key channels.
func.func @case4(%xq: tensor<1x0xf32>, %xk: tensor<1x0xf32>, %xv: tensor<1x8xf32>, %w: tensor<0x4xf32>, %wv: tensor<8x4xf32>,
                 %c: tensor<3x0xf32>, %cv: tensor<3x8xf32>, %f: tensor<1x2x0xf32>, %a: tensor<2xf32>, %dt: tensor<2x0xf32>,
                 %b: tensor<1x2xf32>, %s0: tensor<2x0x4xf32>, %nw: tensor<4xf32>, %og: tensor<1x2x4xf32>) {
  // expected-error @+1 {{the state has no key channels}}
  %o, %nq, %nk, %nv, %s1 = k3.kda_decode x(%xq, %xk, %xv) filters(%w, %w, %wv) windows(%c, %c, %cv)
      gate(%f, %a, %dt) beta(%b) state(%s0) norm(%nw) out_gate(%og) lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
      : (tensor<1x0xf32>, tensor<1x0xf32>, tensor<1x8xf32>, tensor<0x4xf32>, tensor<0x4xf32>, tensor<8x4xf32>,
         tensor<3x0xf32>, tensor<3x0xf32>, tensor<3x8xf32>, tensor<1x2x0xf32>, tensor<2xf32>, tensor<2x0xf32>,
         tensor<1x2xf32>, tensor<2x0x4xf32>, tensor<4xf32>, tensor<1x2x4xf32>)
      -> (tensor<1x2x4xf32>, tensor<3x0xf32>, tensor<3x0xf32>, tensor<3x8xf32>, tensor<2x0x4xf32>)
  return
}

// -----

// With the filters' width dynamic, the windows still share their rows.
func.func @window_rows(%xq: tensor<1x4xf32>, %xk: tensor<1x4xf32>, %xv: tensor<1x8xf32>, %w: tensor<4x?xf32>, %wv: tensor<8x?xf32>, %c: tensor<3x4xf32>, %cv: tensor<2x8xf32>, %f: tensor<1x2x4xf32>, %a: tensor<2xf32>, %dt: tensor<2x4xf32>, %b: tensor<1x2xf32>, %s0: tensor<2x4x4xf32>, %nw: tensor<4xf32>, %og: tensor<1x2x4xf32>) {
  // expected-error @+1 {{cv dim 0 (W-1) is 2, expected 3 from cq}}
  %o, %nq, %nk, %nv, %s1 = k3.kda_decode x(%xq, %xk, %xv) filters(%w, %w, %wv) windows(%c, %c, %cv)
      gate(%f, %a, %dt) beta(%b) state(%s0) norm(%nw) out_gate(%og) lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
      : (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x8xf32>, tensor<4x?xf32>, tensor<4x?xf32>, tensor<8x?xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<2x8xf32>, tensor<1x2x4xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<1x2xf32>, tensor<2x4x4xf32>, tensor<4xf32>, tensor<1x2x4xf32>)
      -> (tensor<1x2x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<2x8xf32>, tensor<2x4x4xf32>)
  return
}

// -----

// A dynamic xv leaves the v filters and window to the state's HV·V.
func.func @v_width(%xq: tensor<1x4xf32>, %xk: tensor<1x4xf32>, %xv: tensor<1x?xf32>, %w: tensor<4x4xf32>, %wv: tensor<6x4xf32>, %c: tensor<3x4xf32>, %cv: tensor<3x6xf32>, %f: tensor<1x2x4xf32>, %a: tensor<2xf32>, %dt: tensor<2x4xf32>, %b: tensor<1x2xf32>, %s0: tensor<2x4x4xf32>, %nw: tensor<4xf32>, %og: tensor<1x2x4xf32>) {
  // expected-error @+1 {{wv dim 0 (HV*V) is 6, expected 8 from HV·V of the state}}
  %o, %nq, %nk, %nv, %s1 = k3.kda_decode x(%xq, %xk, %xv) filters(%w, %w, %wv) windows(%c, %c, %cv)
      gate(%f, %a, %dt) beta(%b) state(%s0) norm(%nw) out_gate(%og) lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
      : (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x?xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<6x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x6xf32>, tensor<1x2x4xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<1x2xf32>, tensor<2x4x4xf32>, tensor<4xf32>, tensor<1x2x4xf32>)
      -> (tensor<1x2x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x6xf32>, tensor<2x4x4xf32>)
  return
}

// -----

// A new window holds the old one's rows: the same element type.
func.func @window_type(%xq: tensor<1x4xf32>, %xk: tensor<1x4xf32>, %xv: tensor<1x8xf32>, %w: tensor<4x4xf32>, %wv: tensor<8x4xf32>, %c: tensor<3x4xf32>, %cv: tensor<3x8xf32>, %f: tensor<1x2x4xf32>, %a: tensor<2xf32>, %dt: tensor<2x4xf32>, %b: tensor<1x2xf32>, %s0: tensor<2x4x4xf32>, %nw: tensor<4xf32>, %og: tensor<1x2x4xf32>) {
  // expected-error @+1 {{new_cq has elements 'bf16', expected its window's 'f32'}}
  %o, %nq, %nk, %nv, %s1 = k3.kda_decode x(%xq, %xk, %xv) filters(%w, %w, %wv) windows(%c, %c, %cv)
      gate(%f, %a, %dt) beta(%b) state(%s0) norm(%nw) out_gate(%og) lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
      : (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x8xf32>, tensor<1x2x4xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<1x2xf32>, tensor<2x4x4xf32>, tensor<4xf32>, tensor<1x2x4xf32>)
      -> (tensor<1x2x4xf32>, tensor<3x4xbf16>, tensor<3x4xbf16>, tensor<3x8xf32>, tensor<2x4x4xf32>)
  return
}
