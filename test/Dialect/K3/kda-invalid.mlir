// RUN: k3-opt %s --split-input-file --verify-diagnostics

// q is [T, H, K].
func.func @case0(%q: tensor<5x64xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{q must have rank 3 [T, H, K], got rank 2}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x64xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// beta is one scalar per token and value head.
func.func @case1(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4x1xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{beta must have rank 2 [T, HV], got rank 3}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4x1xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// The state is [HV, K, V], one matrix per value head.
func.func @case2(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<16x8xf32>) {
  // expected-error @+1 {{initial_state must have rank 3 [HV, K, V], got rank 2}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<16x8xf32>) -> (tensor<5x4x8xf32>, tensor<16x8xf32>)
  return
}

// -----

// k covers the same tokens as q.
func.func @case3(%q: tensor<5x4x16xf32>, %k: tensor<6x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{k dim 0 (T) is 6, expected 5 from q}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<6x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// v covers the same tokens as q.
func.func @case4(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<4x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{v dim 0 (T) is 4, expected 5 from q}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<4x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// One gate row per token.
func.func @case5(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<6x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{g dim 0 (T) is 6, expected 5 from q}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<6x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// One beta row per token.
func.func @case6(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<6x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{beta dim 0 (T) is 6, expected 5 from q}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<6x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// One output row per token.
func.func @case7(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{out dim 0 (T) is 6, expected 5 from q}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<6x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// q and k have the same heads.
func.func @case8(%q: tensor<5x4x16xf32>, %k: tensor<5x2x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{k dim 1 (H) is 2, expected 4 from q}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x2x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// q and k have the same head dim.
func.func @case9(%q: tensor<5x4x16xf32>, %k: tensor<5x4x8xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{k dim 2 (K) is 8, expected 16 from q}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// The gate is per key channel.
func.func @case10(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x8xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{g dim 2 (K) is 8, expected 16 from q}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x8xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// The state is K-major: [HV, K, V], not [HV, V, K].
func.func @case11(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x8x16xf32>) {
  // expected-error @+1 {{initial_state dim 1 (K) is 8, expected 16 from q}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x8x16xf32>) -> (tensor<5x4x8xf32>, tensor<4x8x16xf32>)
  return
}

// -----

// The gate is per value head.
func.func @case12(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x2x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{g dim 1 (HV) is 2, expected 4 from v}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x2x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// beta is per value head.
func.func @case13(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x2xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{beta dim 1 (HV) is 2, expected 4 from v}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x2xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// One state per value head.
func.func @case14(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<2x16x8xf32>) {
  // expected-error @+1 {{initial_state dim 0 (HV) is 2, expected 4 from v}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<2x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<2x16x8xf32>)
  return
}

// -----

// The output has v's heads.
func.func @case15(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{out dim 1 (HV) is 2, expected 4 from v}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x2x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// The state's value dim is v's.
func.func @case16(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x4xf32>) {
  // expected-error @+1 {{initial_state dim 2 (V) is 4, expected 8 from v}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x4xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x4xf32>)
  return
}

// -----

// The output's value dim is v's.
func.func @case17(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{out dim 2 (V) is 4, expected 8 from v}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x4xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// GVA needs the value heads to be a multiple of the q/k heads.
func.func @case18(%q: tensor<5x3x16xf32>, %k: tensor<5x3x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{value heads 4 are not a multiple of the q/k heads 3}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x3x16xf32>, tensor<5x3x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// The final state has the initial state's shape.
func.func @case19(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{final_state shape [4, 16, 16] does not match initial_state shape [4, 16, 8]}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x16xf32>)
  return
}

// -----

// The scale is positive (K^-1/2 for K3).
func.func @case20(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{scale must be positive and finite, got 0}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.0
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// The recurrent state is f32 in memory (KDA.md §8).
func.func @case21(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xbf16>) {
  // expected-error @+1 {{operand #5 must be ranked tensor of 32-bit float values}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xbf16>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// k is [T, H, K].
func.func @case22(%q: tensor<5x4x16xf32>, %k: tensor<5x64xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{k must have rank 3 [T, H, K], got rank 2}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x64xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// v is [T, HV, V].
func.func @case23(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x32xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{v must have rank 3 [T, HV, V], got rank 2}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x32xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// The gate is [T, HV, K], per channel.
func.func @case24(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{g must have rank 3 [T, HV, K], got rank 2}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// The output is [T, HV, V].
func.func @case25(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{out must have rank 3 [T, HV, V], got rank 2}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x32xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// A dynamic T in q does not hide a mismatch between k and v.
func.func @dyn_tokens(%q: tensor<?x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<6x4x8xf32>, %g: tensor<?x4x16xf32>, %beta: tensor<?x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{v dim 0 (T) is 6, expected 5 from k}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<?x4x16xf32>, tensor<5x4x16xf32>, tensor<6x4x8xf32>, tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>) -> (tensor<?x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// A KDA layer needs at least one head.
func.func @zero_heads(%q: tensor<5x0x16xf32>, %k: tensor<5x0x16xf32>, %v: tensor<5x0x8xf32>, %g: tensor<5x0x16xf32>, %beta: tensor<5x0xf32>, %s0: tensor<0x16x8xf32>) {
  // expected-error @+1 {{q has no heads}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x0x16xf32>, tensor<5x0x16xf32>, tensor<5x0x8xf32>, tensor<5x0x16xf32>, tensor<5x0xf32>, tensor<0x16x8xf32>) -> (tensor<5x0x8xf32>, tensor<0x16x8xf32>)
  return
}

// -----

// Snapshots need their interval, and the interval its result.
func.func @snap0(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{snapshots every 2 need a snapshots result}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25 snapshots every 2
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// T = 5 every 2 tokens is 2 snapshots.
func.func @snap1(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{snapshots dim 0 (floor(T/N)) is 3, expected 2 from T = 5 every 2 tokens}}
  %o, %s1, %sn = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25 snapshots every 2
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>, tensor<3x4x16x8xf32>)
  return
}

// -----

// A positive interval.
func.func @snap2(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{snapshot interval 0 must be positive}}
  %o, %s1, %sn = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25 snapshots every 0
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>, tensor<0x4x16x8xf32>)
  return
}

// -----

// Snapshots have the state's shape.
func.func @snap3(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{snapshots dim 2 (K) is 8, expected 16 from initial_state}}
  %o, %s1, %sn = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25 snapshots every 2
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>, tensor<2x4x8x8xf32>)
  return
}
