// RUN: k3-opt %s --split-input-file --verify-diagnostics

// beta1 scales a tanh: it must be positive.
func.func @case0(%g: tensor<2x8xf32>, %u: tensor<2x8xf32>) {
  // expected-error @+1 {{beta1 must be positive and finite, got 0}}
  %h = k3.situ_glu %g, %u {beta1 = 0.0 : f32} : tensor<2x8xf32>
  return
}

// -----

// beta2 likewise, when present.
func.func @case1(%g: tensor<2x8xf32>, %u: tensor<2x8xf32>) {
  // expected-error @+1 {{beta2 must be positive and finite, got -25}}
  %h = k3.situ_glu %g, %u {beta1 = 4.0 : f32, beta2 = -25.0 : f32} : tensor<2x8xf32>
  return
}

// -----

// gate and up have one shape (generic form; the custom form has one type).
func.func @case2(%g: tensor<2x8xf32>, %u: tensor<2x4xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %h = "k3.situ_glu"(%g, %u) <{beta1 = 4.0 : f32}> : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}
