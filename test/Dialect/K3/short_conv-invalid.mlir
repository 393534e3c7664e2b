// RUN: k3-opt %s --split-input-file --verify-diagnostics

// x is [T, C].
func.func @x_rank(%x: tensor<2x3x8xf32>, %w: tensor<8x4xf32>, %s: tensor<3x8xf32>) {
  // expected-error @+1 {{x must have rank 2 [T, C], got rank 3}}
  %y, %s1 = k3.short_conv %x, %w, state(%s) : (tensor<2x3x8xf32>, tensor<8x4xf32>, tensor<3x8xf32>) -> (tensor<2x3x8xf32>, tensor<3x8xf32>)
  return
}

// -----

// The checkpoint's [C, 1, W] weight is reshaped to [C, W] by the importer.
func.func @weight_rank(%x: tensor<2x8xf32>, %w: tensor<8x1x4xf32>, %s: tensor<3x8xf32>) {
  // expected-error @+1 {{weight must have rank 2 [C, W], got rank 3}}
  %y, %s1 = k3.short_conv %x, %w, state(%s) : (tensor<2x8xf32>, tensor<8x1x4xf32>, tensor<3x8xf32>) -> (tensor<2x8xf32>, tensor<3x8xf32>)
  return
}

// -----

// The state is [W-1, C].
func.func @state_rank(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>, %s: tensor<24xf32>) {
  // expected-error @+1 {{state must have rank 2 [W-1, C], got rank 1}}
  %y, %s1 = k3.short_conv %x, %w, state(%s) : (tensor<2x8xf32>, tensor<8x4xf32>, tensor<24xf32>) -> (tensor<2x8xf32>, tensor<24xf32>)
  return
}

// -----

// Depthwise: one filter per channel.
func.func @channels(%x: tensor<2x8xf32>, %w: tensor<6x4xf32>, %s: tensor<3x8xf32>) {
  // expected-error @+1 {{weight dim 0 (C) is 6, expected 8 from x}}
  %y, %s1 = k3.short_conv %x, %w, state(%s) : (tensor<2x8xf32>, tensor<6x4xf32>, tensor<3x8xf32>) -> (tensor<2x8xf32>, tensor<3x8xf32>)
  return
}

// -----

// A width-0 kernel convolves nothing.
func.func @zero_width(%x: tensor<2x8xf32>, %w: tensor<8x0xf32>, %s: tensor<0x8xf32>) {
  // expected-error @+1 {{kernel width 0 must be at least 1}}
  %y, %s1 = k3.short_conv %x, %w, state(%s) : (tensor<2x8xf32>, tensor<8x0xf32>, tensor<0x8xf32>) -> (tensor<2x8xf32>, tensor<0x8xf32>)
  return
}

// -----

// The window holds W-1 = 3 past inputs (FLA's [C, 4] window with the
// current token is a different layout).
func.func @window(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>, %s: tensor<4x8xf32>) {
  // expected-error @+1 {{state dim 0 (W-1) is 4, expected 3 from weight width - 1}}
  %y, %s1 = k3.short_conv %x, %w, state(%s) : (tensor<2x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>) -> (tensor<2x8xf32>, tensor<4x8xf32>)
  return
}

// -----

// The state is token-major: [W-1, C], not [C, W-1].
func.func @state_transposed(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>, %s: tensor<3x6xf32>) {
  // expected-error @+1 {{state dim 1 (C) is 6, expected 8 from x}}
  %y, %s1 = k3.short_conv %x, %w, state(%s) : (tensor<2x8xf32>, tensor<8x4xf32>, tensor<3x6xf32>) -> (tensor<2x8xf32>, tensor<3x6xf32>)
  return
}

// -----

// The output has x's shape.
func.func @y_shape(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>, %s: tensor<3x8xf32>) {
  // expected-error @+1 {{y shape [3, 8] does not match x shape [2, 8]}}
  %y, %s1 = k3.short_conv %x, %w, state(%s) : (tensor<2x8xf32>, tensor<8x4xf32>, tensor<3x8xf32>) -> (tensor<3x8xf32>, tensor<3x8xf32>)
  return
}

// -----

// The new window has the old window's shape.
func.func @new_state_shape(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>, %s: tensor<3x8xf32>) {
  // expected-error @+1 {{new_state shape [4, 8] does not match state shape [3, 8]}}
  %y, %s1 = k3.short_conv %x, %w, state(%s) : (tensor<2x8xf32>, tensor<8x4xf32>, tensor<3x8xf32>) -> (tensor<2x8xf32>, tensor<4x8xf32>)
  return
}
