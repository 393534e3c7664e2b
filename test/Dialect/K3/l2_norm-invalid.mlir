// RUN: k3-opt %s --split-input-file --verify-diagnostics

// A scalar has nothing to normalise.
func.func @scalar(%x: tensor<f32>) {
  // expected-error @+1 {{x must have rank >= 1 [..., D], got rank 0}}
  %y = k3.l2_norm %x {eps = 1.0e-06 : f32} : tensor<f32>
  return
}

// -----

// eps must be positive.
func.func @eps(%x: tensor<3x8xf32>) {
  // expected-error @+1 {{eps must be positive and finite, got -1}}
  %y = k3.l2_norm %x {eps = -1.0 : f32} : tensor<3x8xf32>
  return
}

// -----

// Input and result share one type (checked on the generic form).
func.func @type_mismatch(%x: tensor<3x8xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %y = "k3.l2_norm"(%x) <{eps = 1.0e-06 : f32}> : (tensor<3x8xf32>) -> tensor<3x8xbf16>
  return
}
