// RUN: k3-opt %s --split-input-file --verify-diagnostics

// x needs a contracted last dimension.
func.func @scalar(%x: tensor<f32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{x must have rank >= 1 [..., D], got rank 0}}
  %y = k3.linear %x, %w : (tensor<f32>, tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

// Weights are [N, K].
func.func @weight_rank(%x: tensor<2x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{weight must have rank 2 [N, K], got rank 1}}
  %y = k3.linear %x, %w : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x4xf32>
  return
}

// -----

// The weight's input dimension is x's last dimension (y = x Wᵀ, not x W).
func.func @transposed(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{weight dim 1 (K) is 4, expected 8 from x}}
  %y = k3.linear %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

// The result keeps x's rank.
func.func @result_rank(%x: tensor<2x3x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{y must have rank 3 like x, got rank 2}}
  %y = k3.linear %x, %w : (tensor<2x3x8xf32>, tensor<4x8xf32>) -> tensor<6x4xf32>
  return
}

// -----

// The result's leading dimensions are x's.
func.func @result_tokens(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{y dim 0 is 3, expected 2 from x}}
  %y = k3.linear %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<3x4xf32>
  return
}

// -----

// The result's last dimension is the weight's output dimension.
func.func @result_width(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{y dim 1 is 5, expected 4 from weight}}
  %y = k3.linear %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x5xf32>
  return
}

// -----

// MXFP4 elements mean nothing without their block scales.
func.func @missing_scales(%x: tensor<2x64xf32>, %w: tensor<4x64xf4E2M1FN>) {
  // expected-error @+1 {{f4E2M1FN weight needs scales}}
  %y = k3.linear %x, %w : (tensor<2x64xf32>, tensor<4x64xf4E2M1FN>) -> tensor<2x4xf32>
  return
}

// -----

// Scales only apply to f4E2M1FN weights.
func.func @stray_scales(%x: tensor<2x64xf32>, %w: tensor<4x64xbf16>, %s: tensor<4x2xf8E8M0FNU>) {
  // expected-error @+1 {{scales given for weight of type 'bf16'; only f4E2M1FN weights take scales}}
  %y = k3.linear %x, %w scales(%s) : (tensor<2x64xf32>, tensor<4x64xbf16>, tensor<4x2xf8E8M0FNU>) -> tensor<2x4xf32>
  return
}

// -----

// MXFP4 blocks are 32 input channels wide.
func.func @ragged_block(%x: tensor<2x48xf32>, %w: tensor<4x48xf4E2M1FN>, %s: tensor<4x2xf8E8M0FNU>) {
  // expected-error @+1 {{weight input dim 48 is not a multiple of the MXFP4 block size 32}}
  %y = k3.linear %x, %w scales(%s) : (tensor<2x48xf32>, tensor<4x48xf4E2M1FN>, tensor<4x2xf8E8M0FNU>) -> tensor<2x4xf32>
  return
}

// -----

// Scales have the weight's rank.
func.func @scales_rank(%x: tensor<2x64xf32>, %w: tensor<4x64xf4E2M1FN>, %s: tensor<8xf8E8M0FNU>) {
  // expected-error @+1 {{scales must have rank 2 like weight, got rank 1}}
  %y = k3.linear %x, %w scales(%s) : (tensor<2x64xf32>, tensor<4x64xf4E2M1FN>, tensor<8xf8E8M0FNU>) -> tensor<2x4xf32>
  return
}

// -----

// One row of scales per output channel.
func.func @scales_rows(%x: tensor<2x64xf32>, %w: tensor<4x64xf4E2M1FN>, %s: tensor<2x2xf8E8M0FNU>) {
  // expected-error @+1 {{scales dim 0 is 2, expected 4 from weight}}
  %y = k3.linear %x, %w scales(%s) : (tensor<2x64xf32>, tensor<4x64xf4E2M1FN>, tensor<2x2xf8E8M0FNU>) -> tensor<2x4xf32>
  return
}

// -----

// One scale per 32 input channels: 64 / 32 = 2, not 4.
func.func @scales_blocks(%x: tensor<2x64xf32>, %w: tensor<4x64xf4E2M1FN>, %s: tensor<4x4xf8E8M0FNU>) {
  // expected-error @+1 {{scales dim 1 is 4, expected 2 from weight input dim / 32}}
  %y = k3.linear %x, %w scales(%s) : (tensor<2x64xf32>, tensor<4x64xf4E2M1FN>, tensor<4x4xf8E8M0FNU>) -> tensor<2x4xf32>
  return
}

// -----

// Scales are E8M0, not an ordinary float.
func.func @scales_type(%x: tensor<2x64xf32>, %w: tensor<4x64xf4E2M1FN>, %s: tensor<4x2xf32>) {
  // expected-error @+1 {{operand #2 must be ranked tensor of f8E8M0FNU type values}}
  %y = k3.linear %x, %w scales(%s) : (tensor<2x64xf32>, tensor<4x64xf4E2M1FN>, tensor<4x2xf32>) -> tensor<2x4xf32>
  return
}
