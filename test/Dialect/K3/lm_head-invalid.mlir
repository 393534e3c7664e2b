// RUN: k3-opt %s --split-input-file --verify-diagnostics

// The LM head takes [T, D] hidden states.
func.func @x_rank(%x: tensor<8xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{x must have rank 2 [T, D], got rank 1}}
  %l = k3.lm_head %x, %w : (tensor<8xf32>, tensor<16x8xf32>) -> tensor<1x16xf32>
  return
}

// -----

// The weight is [V, D].
func.func @weight_rank(%x: tensor<2x8xf32>, %w: tensor<16x8x1xf32>) {
  // expected-error @+1 {{weight must have rank 2 [V, D], got rank 3}}
  %l = k3.lm_head %x, %w : (tensor<2x8xf32>, tensor<16x8x1xf32>) -> tensor<2x16xf32>
  return
}

// -----

// Logits are [T, V].
func.func @logits_rank(%x: tensor<2x8xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{logits must have rank 2 [T, V], got rank 1}}
  %l = k3.lm_head %x, %w : (tensor<2x8xf32>, tensor<16x8xf32>) -> tensor<32xf32>
  return
}

// -----

// The weight's hidden size is x's.
func.func @hidden(%x: tensor<2x8xf32>, %w: tensor<16x4xf32>) {
  // expected-error @+1 {{weight dim 1 (D) is 4, expected 8 from x}}
  %l = k3.lm_head %x, %w : (tensor<2x8xf32>, tensor<16x4xf32>) -> tensor<2x16xf32>
  return
}

// -----

// One row of logits per token.
func.func @tokens(%x: tensor<2x8xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{logits dim 0 (T) is 3, expected 2 from x}}
  %l = k3.lm_head %x, %w : (tensor<2x8xf32>, tensor<16x8xf32>) -> tensor<3x16xf32>
  return
}

// -----

// One logit per vocabulary entry.
func.func @vocab(%x: tensor<?x8xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{logits dim 1 (V) is 15, expected 16 from weight}}
  %l = k3.lm_head %x, %w : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x15xf32>
  return
}

// -----

// Logits are f32 so that sampling never sees bf16 rounding.
func.func @bf16_logits(%x: tensor<2x8xbf16>, %w: tensor<16x8xbf16>) {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit float values}}
  %l = k3.lm_head %x, %w : (tensor<2x8xbf16>, tensor<16x8xbf16>) -> tensor<2x16xbf16>
  return
}

// -----

// A scalar weight is rejected, not read past its rank.
func.func @scalar_weight(%x: tensor<2x8xbf16>, %w: tensor<bf16>) {
  // expected-error @+1 {{weight must have rank 2 [V, D], got rank 0}}
  %l = k3.lm_head %x, %w : (tensor<2x8xbf16>, tensor<bf16>) -> tensor<2x16xf32>
  return
}
