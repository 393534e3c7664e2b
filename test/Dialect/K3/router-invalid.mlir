// RUN: k3-opt %s --split-input-file --verify-diagnostics

// x is [T, D].
func.func @case0(%x: tensor<16xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{x must have rank 2 [T, D], got rank 1}}
  %i, %p = k3.router %x, %w bias(%b) top_k = 2 renormalize scaling = 1.0
      : (tensor<16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> (tensor<5x2xi32>, tensor<5x2xf32>)
  return
}

// -----

// The router weight is [E, D].
func.func @case1(%x: tensor<5x16xf32>, %w: tensor<8x16x1xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{weight must have rank 2 [E, D], got rank 3}}
  %i, %p = k3.router %x, %w bias(%b) top_k = 2 renormalize scaling = 1.0
      : (tensor<5x16xf32>, tensor<8x16x1xf32>, tensor<8xf32>) -> (tensor<5x2xi32>, tensor<5x2xf32>)
  return
}

// -----

// indices are [T, k].
func.func @case2(%x: tensor<5x16xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{indices must have rank 2 [T, k], got rank 1}}
  %i, %p = k3.router %x, %w bias(%b) top_k = 2 renormalize scaling = 1.0
      : (tensor<5x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> (tensor<10xi32>, tensor<5x2xf32>)
  return
}

// -----

// weights are [T, k].
func.func @case3(%x: tensor<5x16xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{weights must have rank 2 [T, k], got rank 1}}
  %i, %p = k3.router %x, %w bias(%b) top_k = 2 renormalize scaling = 1.0
      : (tensor<5x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> (tensor<5x2xi32>, tensor<10xf32>)
  return
}

// -----

// The weight's hidden size is x's.
func.func @case4(%x: tensor<5x16xf32>, %w: tensor<8x12xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{weight dim 1 (D) is 12, expected 16 from x}}
  %i, %p = k3.router %x, %w bias(%b) top_k = 2 renormalize scaling = 1.0
      : (tensor<5x16xf32>, tensor<8x12xf32>, tensor<8xf32>) -> (tensor<5x2xi32>, tensor<5x2xf32>)
  return
}

// -----

// The selection bias is one value per expert.
func.func @case5(%x: tensor<5x16xf32>, %w: tensor<8x16xf32>, %b: tensor<1x8xf32>) {
  // expected-error @+1 {{bias must have rank 1 [E], got rank 2}}
  %i, %p = k3.router %x, %w bias(%b) top_k = 2 renormalize scaling = 1.0
      : (tensor<5x16xf32>, tensor<8x16xf32>, tensor<1x8xf32>) -> (tensor<5x2xi32>, tensor<5x2xf32>)
  return
}

// -----

// The selection bias covers every expert.
func.func @case6(%x: tensor<5x16xf32>, %w: tensor<8x16xf32>, %b: tensor<7xf32>) {
  // expected-error @+1 {{bias dim 0 (E) is 7, expected 8 from weight}}
  %i, %p = k3.router %x, %w bias(%b) top_k = 2 renormalize scaling = 1.0
      : (tensor<5x16xf32>, tensor<8x16xf32>, tensor<7xf32>) -> (tensor<5x2xi32>, tensor<5x2xf32>)
  return
}

// -----

// Routing to no expert is meaningless.
func.func @case7(%x: tensor<5x16xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{top_k must be at least 1, got 0}}
  %i, %p = k3.router %x, %w bias(%b) top_k = 0 renormalize scaling = 1.0
      : (tensor<5x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> (tensor<5x0xi32>, tensor<5x0xf32>)
  return
}

// -----

// top_k cannot exceed the experts.
func.func @case8(%x: tensor<5x16xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{top_k 9 exceeds the 8 experts}}
  %i, %p = k3.router %x, %w bias(%b) top_k = 9 renormalize scaling = 1.0
      : (tensor<5x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> (tensor<5x9xi32>, tensor<5x9xf32>)
  return
}

// -----

// One index row per token.
func.func @case9(%x: tensor<5x16xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{indices dim 0 (T) is 4, expected 5 from x}}
  %i, %p = k3.router %x, %w bias(%b) top_k = 2 renormalize scaling = 1.0
      : (tensor<5x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> (tensor<4x2xi32>, tensor<5x2xf32>)
  return
}

// -----

// k indices per token.
func.func @case10(%x: tensor<5x16xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{indices dim 1 (k) is 3, expected 2 from top_k}}
  %i, %p = k3.router %x, %w bias(%b) top_k = 2 renormalize scaling = 1.0
      : (tensor<5x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> (tensor<5x3xi32>, tensor<5x2xf32>)
  return
}

// -----

// One weight row per token.
func.func @case11(%x: tensor<5x16xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{weights dim 0 (T) is 4, expected 5 from x}}
  %i, %p = k3.router %x, %w bias(%b) top_k = 2 renormalize scaling = 1.0
      : (tensor<5x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> (tensor<5x2xi32>, tensor<4x2xf32>)
  return
}

// -----

// k weights per token.
func.func @case12(%x: tensor<5x16xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{weights dim 1 (k) is 3, expected 2 from top_k}}
  %i, %p = k3.router %x, %w bias(%b) top_k = 2 renormalize scaling = 1.0
      : (tensor<5x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> (tensor<5x2xi32>, tensor<5x3xf32>)
  return
}

// -----

// A negative scaling would flip the expert outputs.
func.func @case13(%x: tensor<5x16xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{scaling must be positive and finite, got -1}}
  %i, %p = k3.router %x, %w bias(%b) top_k = 2 renormalize scaling = -1.0
      : (tensor<5x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> (tensor<5x2xi32>, tensor<5x2xf32>)
  return
}

// -----

// Routing weights are f32.
func.func @case14(%x: tensor<5x16xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{result #1 must be ranked tensor of 32-bit float values}}
  %i, %p = k3.router %x, %w bias(%b) top_k = 2 renormalize scaling = 1.0
      : (tensor<5x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> (tensor<5x2xi32>, tensor<5x2xbf16>)
  return
}
