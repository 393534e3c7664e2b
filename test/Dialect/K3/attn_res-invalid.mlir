// RUN: k3-opt %s --split-input-file --verify-diagnostics

// Even the first read has the running sum.
func.func @case0(%n: tensor<16xf32>, %p: tensor<16xf32>) {
  // expected-error @+1 {{needs at least one source (the running sum)}}
  %h = k3.attn_res [] norm(%n) query(%p) {eps = 1.0e-05 : f32}
      : (tensor<16xf32>, tensor<16xf32>) -> tensor<5x16xf32>
  return
}

// -----

// The result is [T, D].
func.func @case1(%s0: tensor<5x16xf32>, %s1: tensor<5x16xf32>, %n: tensor<16xf32>, %p: tensor<16xf32>) {
  // expected-error @+1 {{out must have rank 2 [T, D], got rank 1}}
  %h = k3.attn_res [%s0, %s1] norm(%n) query(%p) {eps = 1.0e-05 : f32}
      : (tensor<5x16xf32>, tensor<5x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<80xf32>
  return
}

// -----

// The norm weight is [D].
func.func @case2(%s0: tensor<5x16xf32>, %s1: tensor<5x16xf32>, %n: tensor<1x16xf32>, %p: tensor<16xf32>) {
  // expected-error @+1 {{norm must have rank 1 [D], got rank 2}}
  %h = k3.attn_res [%s0, %s1] norm(%n) query(%p) {eps = 1.0e-05 : f32}
      : (tensor<5x16xf32>, tensor<5x16xf32>, tensor<1x16xf32>, tensor<16xf32>) -> tensor<5x16xf32>
  return
}

// -----

// The pseudo-query is the rank-1 projection flattened to [D].
func.func @case3(%s0: tensor<5x16xf32>, %s1: tensor<5x16xf32>, %n: tensor<16xf32>, %p: tensor<1x16xf32>) {
  // expected-error @+1 {{query must have rank 1 [D], got rank 2}}
  %h = k3.attn_res [%s0, %s1] norm(%n) query(%p) {eps = 1.0e-05 : f32}
      : (tensor<5x16xf32>, tensor<5x16xf32>, tensor<16xf32>, tensor<1x16xf32>) -> tensor<5x16xf32>
  return
}

// -----

// Every candidate is [T, D] like the result.
func.func @case4(%s0: tensor<5x16xf32>, %s1: tensor<5x8xf32>, %n: tensor<16xf32>, %p: tensor<16xf32>) {
  // expected-error @+1 {{source 1 shape [5, 8] does not match out shape [5, 16]}}
  %h = k3.attn_res [%s0, %s1] norm(%n) query(%p) {eps = 1.0e-05 : f32}
      : (tensor<5x16xf32>, tensor<5x8xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<5x16xf32>
  return
}

// -----

// The norm weight spans the hidden size.
func.func @case5(%s0: tensor<5x16xf32>, %s1: tensor<5x16xf32>, %n: tensor<8xf32>, %p: tensor<16xf32>) {
  // expected-error @+1 {{norm dim 0 (D) is 8, expected 16 from out}}
  %h = k3.attn_res [%s0, %s1] norm(%n) query(%p) {eps = 1.0e-05 : f32}
      : (tensor<5x16xf32>, tensor<5x16xf32>, tensor<8xf32>, tensor<16xf32>) -> tensor<5x16xf32>
  return
}

// -----

// The pseudo-query spans the hidden size.
func.func @case6(%s0: tensor<5x16xf32>, %s1: tensor<5x16xf32>, %n: tensor<16xf32>, %p: tensor<8xf32>) {
  // expected-error @+1 {{query dim 0 (D) is 8, expected 16 from out}}
  %h = k3.attn_res [%s0, %s1] norm(%n) query(%p) {eps = 1.0e-05 : f32}
      : (tensor<5x16xf32>, tensor<5x16xf32>, tensor<16xf32>, tensor<8xf32>) -> tensor<5x16xf32>
  return
}

// -----

// eps must be positive.
func.func @case7(%s0: tensor<5x16xf32>, %s1: tensor<5x16xf32>, %n: tensor<16xf32>, %p: tensor<16xf32>) {
  // expected-error @+1 {{eps must be positive and finite, got 0}}
  %h = k3.attn_res [%s0, %s1] norm(%n) query(%p) {eps = 0.0 : f32}
      : (tensor<5x16xf32>, tensor<5x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<5x16xf32>
  return
}

// -----

// With a dynamic result the candidates must still agree with each other.
func.func @dyn_out(%s0: tensor<5x64xf32>, %s1: tensor<6x64xf32>, %n: tensor<64xf32>, %p: tensor<64xf32>) {
  // expected-error @+1 {{source 1 shape [6, 64] does not match source 0 shape [5, 64]}}
  %h = k3.attn_res [%s0, %s1] norm(%n) query(%p) {eps = 1.0e-05 : f32}
      : (tensor<5x64xf32>, tensor<6x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  return
}
