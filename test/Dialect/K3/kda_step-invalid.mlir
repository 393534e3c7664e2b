// RUN: k3-opt %s --split-input-file --verify-diagnostics

// One form: all buffers or all tensors.
func.func @f(%xq: memref<1x4xf32>, %xk: memref<1x4xf32>, %xv: memref<1x4xf32>, %wq: memref<4x4xf32>, %wk: memref<4x4xf32>, %wv: memref<4x4xf32>, %cq: memref<3x4xf32>, %ck: memref<3x4xf32>, %cv: memref<3x4xf32>, %f: memref<1x1x4xf32>, %a: memref<1xf32>, %dt: memref<1x4xf32>, %b: memref<1x1xf32>, %nw: memref<4xf32>, %og: memref<1x1x4xf32>, %o: memref<1x1x4xf32>, %nq: memref<3x4xf32>, %nk: memref<3x4xf32>, %nv: memref<3x4xf32>, %s: tensor<1x4x4xf32>) {
  // expected-error @+1 {{operands must be all ranked tensors or all memrefs}}
  k3.kda_step x(%xq, %xk, %xv) filters(%wq, %wk, %wv) windows(%cq, %ck, %cv)
      gate(%f, %a, %dt) beta(%b) norm(%nw) out_gate(%og) outs(%o, %nq, %nk, %nv, %s)
      lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
      : (memref<1x4xf32>, memref<1x4xf32>, memref<1x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<1x1x4xf32>, memref<1xf32>, memref<1x4xf32>, memref<1x1xf32>, memref<4xf32>, memref<1x1x4xf32>, memref<1x1x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<3x4xf32>, tensor<1x4x4xf32>) -> ()
  return
}

// -----

// The kernel copies the old window's rows into the new one: same element type.
func.func @f(%xq: memref<1x4xf32>, %xk: memref<1x4xf32>, %xv: memref<1x4xf32>, %wq: memref<4x4xf32>, %wk: memref<4x4xf32>, %wv: memref<4x4xf32>, %cq: memref<3x4xf32>, %ck: memref<3x4xf32>, %cv: memref<3x4xf32>, %f: memref<1x1x4xf32>, %a: memref<1xf32>, %dt: memref<1x4xf32>, %b: memref<1x1xf32>, %nw: memref<4xf32>, %og: memref<1x1x4xf32>, %o: memref<1x1x4xf32>, %nq: memref<3x4xf32>, %nk: memref<3x4xf32>, %nv: memref<3x4xbf16>, %s: memref<1x4x4xf32>) {
  // expected-error @+1 {{new_cv has elements 'bf16', expected its window's 'f32'}}
  k3.kda_step x(%xq, %xk, %xv) filters(%wq, %wk, %wv) windows(%cq, %ck, %cv)
      gate(%f, %a, %dt) beta(%b) norm(%nw) out_gate(%og) outs(%o, %nq, %nk, %nv, %s)
      lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
      : (memref<1x4xf32>, memref<1x4xf32>, memref<1x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<1x1x4xf32>, memref<1xf32>, memref<1x4xf32>, memref<1x1xf32>, memref<4xf32>, memref<1x1x4xf32>, memref<1x1x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<3x4xbf16>, memref<1x4x4xf32>) -> ()
  return
}

// -----

// The state is f32.
func.func @f(%xq: memref<1x4xf32>, %xk: memref<1x4xf32>, %xv: memref<1x4xf32>, %wq: memref<4x4xf32>, %wk: memref<4x4xf32>, %wv: memref<4x4xf32>, %cq: memref<3x4xf32>, %ck: memref<3x4xf32>, %cv: memref<3x4xf32>, %f: memref<1x1x4xf32>, %a: memref<1xf32>, %dt: memref<1x4xf32>, %b: memref<1x1xf32>, %nw: memref<4xf32>, %og: memref<1x1x4xf32>, %o: memref<1x1x4xf32>, %nq: memref<3x4xf32>, %nk: memref<3x4xf32>, %nv: memref<3x4xf32>, %s: memref<1x4x4xbf16>) {
  // expected-error @+1 {{a_log, dt_bias and state must be f32}}
  k3.kda_step x(%xq, %xk, %xv) filters(%wq, %wk, %wv) windows(%cq, %ck, %cv)
      gate(%f, %a, %dt) beta(%b) norm(%nw) out_gate(%og) outs(%o, %nq, %nk, %nv, %s)
      lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
      : (memref<1x4xf32>, memref<1x4xf32>, memref<1x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<1x1x4xf32>, memref<1xf32>, memref<1x4xf32>, memref<1x1xf32>, memref<4xf32>, memref<1x1x4xf32>, memref<1x1x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<1x4x4xbf16>) -> ()
  return
}

// -----

// Activations are floats.
func.func @f(%xq: memref<1x4xf32>, %xk: memref<1x4xf32>, %xv: memref<1x4xi8>, %wq: memref<4x4xf32>, %wk: memref<4x4xf32>, %wv: memref<4x4xf32>, %cq: memref<3x4xf32>, %ck: memref<3x4xf32>, %cv: memref<3x4xf32>, %f: memref<1x1x4xf32>, %a: memref<1xf32>, %dt: memref<1x4xf32>, %b: memref<1x1xf32>, %nw: memref<4xf32>, %og: memref<1x1x4xf32>, %o: memref<1x1x4xf32>, %nq: memref<3x4xf32>, %nk: memref<3x4xf32>, %nv: memref<3x4xf32>, %s: memref<1x4x4xf32>) {
  // expected-error @+1 {{operands must be bf16, f16 or f32}}
  k3.kda_step x(%xq, %xk, %xv) filters(%wq, %wk, %wv) windows(%cq, %ck, %cv)
      gate(%f, %a, %dt) beta(%b) norm(%nw) out_gate(%og) outs(%o, %nq, %nk, %nv, %s)
      lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
      : (memref<1x4xf32>, memref<1x4xf32>, memref<1x4xi8>, memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<1x1x4xf32>, memref<1xf32>, memref<1x4xf32>, memref<1x1xf32>, memref<4xf32>, memref<1x1x4xf32>, memref<1x1x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<1x4x4xf32>) -> ()
  return
}

// -----

// The shared rules of the step (k3.kda_decode's): the new windows keep the windows' shapes.
func.func @f(%xq: memref<1x4xf32>, %xk: memref<1x4xf32>, %xv: memref<1x4xf32>, %wq: memref<4x4xf32>, %wk: memref<4x4xf32>, %wv: memref<4x4xf32>, %cq: memref<3x4xf32>, %ck: memref<3x4xf32>, %cv: memref<3x4xf32>, %f: memref<1x1x4xf32>, %a: memref<1xf32>, %dt: memref<1x4xf32>, %b: memref<1x1xf32>, %nw: memref<4xf32>, %og: memref<1x1x4xf32>, %o: memref<1x1x4xf32>, %nq: memref<2x4xf32>, %nk: memref<3x4xf32>, %nv: memref<3x4xf32>, %s: memref<1x4x4xf32>) {
  // expected-error @+1 {{new_cq shape [2, 4] does not match cq shape [3, 4]}}
  k3.kda_step x(%xq, %xk, %xv) filters(%wq, %wk, %wv) windows(%cq, %ck, %cv)
      gate(%f, %a, %dt) beta(%b) norm(%nw) out_gate(%og) outs(%o, %nq, %nk, %nv, %s)
      lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
      : (memref<1x4xf32>, memref<1x4xf32>, memref<1x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<1x1x4xf32>, memref<1xf32>, memref<1x4xf32>, memref<1x1xf32>, memref<4xf32>, memref<1x1x4xf32>, memref<1x1x4xf32>, memref<2x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<1x4x4xf32>) -> ()
  return
}

// -----

// The output is one token's [1, HV, V].
func.func @f(%xq: memref<1x4xf32>, %xk: memref<1x4xf32>, %xv: memref<1x4xf32>, %wq: memref<4x4xf32>, %wk: memref<4x4xf32>, %wv: memref<4x4xf32>, %cq: memref<3x4xf32>, %ck: memref<3x4xf32>, %cv: memref<3x4xf32>, %f: memref<1x1x4xf32>, %a: memref<1xf32>, %dt: memref<1x4xf32>, %b: memref<1x1xf32>, %nw: memref<4xf32>, %og: memref<1x1x4xf32>, %o: memref<1x1x3xf32>, %nq: memref<3x4xf32>, %nk: memref<3x4xf32>, %nv: memref<3x4xf32>, %s: memref<1x4x4xf32>) {
  // expected-error @+1 {{out dim 2 (V) is 3, expected 4}}
  k3.kda_step x(%xq, %xk, %xv) filters(%wq, %wk, %wv) windows(%cq, %ck, %cv)
      gate(%f, %a, %dt) beta(%b) norm(%nw) out_gate(%og) outs(%o, %nq, %nk, %nv, %s)
      lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
      : (memref<1x4xf32>, memref<1x4xf32>, memref<1x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<1x1x4xf32>, memref<1xf32>, memref<1x4xf32>, memref<1x1xf32>, memref<4xf32>, memref<1x1x4xf32>, memref<1x1x3xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<1x4x4xf32>) -> ()
  return
}

// -----

// Batched (a state of rank 4): the windows carry the request dimension too.
func.func @f(%xq: memref<2x4xf32>, %w: memref<4x4xf32>, %c: memref<3x4xf32>, %f: memref<2x1x4xf32>, %a: memref<1xf32>, %dt: memref<1x4xf32>, %b: memref<2x1xf32>, %nw: memref<4xf32>, %og: memref<2x1x4xf32>, %o: memref<2x1x4xf32>, %s: memref<2x1x4x4xf32>) {
  // expected-error @+1 {{cq must have rank 3 [B, W-1, H*K], got rank 2}}
  k3.kda_step x(%xq, %xq, %xq) filters(%w, %w, %w) windows(%c, %c, %c)
      gate(%f, %a, %dt) beta(%b) norm(%nw) out_gate(%og) outs(%o, %c, %c, %c, %s)
      lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
      : (memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<2x1x4xf32>, memref<1xf32>, memref<1x4xf32>, memref<2x1xf32>, memref<4xf32>, memref<2x1x4xf32>, memref<2x1x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<3x4xf32>, memref<2x1x4x4xf32>) -> ()
  return
}

// -----

// Batched: every request dimension is the same B.
func.func @f(%xq: memref<2x4xf32>, %w: memref<4x4xf32>, %c: memref<2x3x4xf32>, %f: memref<2x1x4xf32>, %a: memref<1xf32>, %dt: memref<1x4xf32>, %b: memref<2x1xf32>, %nw: memref<4xf32>, %og: memref<2x1x4xf32>, %o: memref<2x1x4xf32>, %s: memref<3x1x4x4xf32>) {
  // expected-error @+1 {{state dim 0 (B) is 3, expected 2 from xq}}
  k3.kda_step x(%xq, %xq, %xq) filters(%w, %w, %w) windows(%c, %c, %c)
      gate(%f, %a, %dt) beta(%b) norm(%nw) out_gate(%og) outs(%o, %c, %c, %c, %s)
      lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
      : (memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<2x3x4xf32>, memref<2x3x4xf32>, memref<2x3x4xf32>, memref<2x1x4xf32>, memref<1xf32>, memref<1x4xf32>, memref<2x1xf32>, memref<4xf32>, memref<2x1x4xf32>, memref<2x1x4xf32>, memref<2x3x4xf32>, memref<2x3x4xf32>, memref<2x3x4xf32>, memref<3x1x4x4xf32>) -> ()
  return
}
