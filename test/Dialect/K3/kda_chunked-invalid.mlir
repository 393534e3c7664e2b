// RUN: k3-opt %s --split-input-file --verify-diagnostics

// The sub-chunk must divide the chunk.
func.func @case0(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{chunk 64 must be a positive multiple of sub_chunk 24}}
  %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.25 chunk = 64 sub_chunk = 24 factored
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>, tensor<1x4x16x8xf32>)
  return
}

// -----

// Sizes must be positive.
func.func @case1(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{chunk 0 must be a positive multiple of sub_chunk 16}}
  %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.25 chunk = 0 sub_chunk = 16 factored
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>, tensor<1x4x16x8xf32>)
  return
}

// -----

// One boundary state per chunk: T = 5 in chunks of 2 is 3.
func.func @case2(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{boundary_states dim 0 (ceil(T/chunk)) is 2, expected 3 from T = 5 in chunks of 2}}
  %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.25 chunk = 2 sub_chunk = 1 safe
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>, tensor<2x4x16x8xf32>)
  return
}

// -----

// Boundary states have the state's shape.
func.func @case3(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{boundary_states dim 3 (V) is 16, expected 8 from initial_state}}
  %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.25 chunk = 64 sub_chunk = 16 factored
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>, tensor<1x4x16x16xf32>)
  return
}

// -----

// ... and rank 4.
func.func @case4(%q: tensor<5x4x16xf32>, %k: tensor<5x4x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{boundary_states must have rank 4 [ceil(T/chunk), HV, K, V], got rank 3}}
  %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.25 chunk = 64 sub_chunk = 16 factored
      : (tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>)
  return
}

// -----

// The k3.kda rules apply as well.
func.func @case5(%q: tensor<5x3x16xf32>, %k: tensor<5x3x16xf32>, %v: tensor<5x4x8xf32>, %g: tensor<5x4x16xf32>, %beta: tensor<5x4xf32>, %s0: tensor<4x16x8xf32>) {
  // expected-error @+1 {{value heads 4 are not a multiple of the q/k heads 3}}
  %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.25 chunk = 64 sub_chunk = 16 factored
      : (tensor<5x3x16xf32>, tensor<5x3x16xf32>, tensor<5x4x8xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x8xf32>) -> (tensor<5x4x8xf32>, tensor<4x16x8xf32>, tensor<1x4x16x8xf32>)
  return
}
