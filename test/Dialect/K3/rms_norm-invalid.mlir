// RUN: k3-opt %s --split-input-file --verify-diagnostics

// A scalar has nothing to normalise.
func.func @scalar(%x: tensor<f32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{x must have rank >= 1 [..., D], got rank 0}}
  %y = k3.rms_norm %x, %w {eps = 1.0e-05 : f32} : (tensor<f32>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

// The weight is one vector [D].
func.func @weight_rank(%x: tensor<?x8xf32>, %w: tensor<1x8xf32>) {
  // expected-error @+1 {{weight must have rank 1 [D], got rank 2}}
  %y = k3.rms_norm %x, %w {eps = 1.0e-05 : f32} : (tensor<?x8xf32>, tensor<1x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

// The weight matches the last dimension of x.
func.func @weight_size(%x: tensor<?x8xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{weight dim 0 (D) is 16, expected 8 from x}}
  %y = k3.rms_norm %x, %w {eps = 1.0e-05 : f32} : (tensor<?x8xf32>, tensor<16xf32>) -> tensor<?x8xf32>
  return
}

// -----

// A gate has the shape of x.
func.func @gate_shape(%x: tensor<?x4x8xf32>, %w: tensor<8xf32>, %g: tensor<?x32xf32>) {
  // expected-error @+1 {{gate shape [?, 32] does not match x shape [?, 4, 8]}}
  %y = k3.rms_norm %x, %w gate(%g) {eps = 1.0e-05 : f32} : (tensor<?x4x8xf32>, tensor<8xf32>, tensor<?x32xf32>) -> tensor<?x4x8xf32>
  return
}

// -----

// The result has the shape of x.
func.func @result_shape(%x: tensor<3x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{y shape [4, 8] does not match x shape [3, 8]}}
  %y = k3.rms_norm %x, %w {eps = 1.0e-05 : f32} : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// eps must be positive.
func.func @eps(%x: tensor<3x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{eps must be positive and finite, got 0}}
  %y = k3.rms_norm %x, %w {eps = 0.0 : f32} : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  return
}
