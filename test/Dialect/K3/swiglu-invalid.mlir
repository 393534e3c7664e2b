// RUN: k3-opt %s --split-input-file --verify-diagnostics

// gate, up and the result share one type.
func.func @case0(%g: tensor<2x8xf32>, %u: tensor<2x4xf32>) {
  // expected-error @+1 {{'k3.swiglu' op requires the same type for all operands and results}}
  %h = "k3.swiglu"(%g, %u) : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

// Float tensors only.
func.func @case1(%g: tensor<2x8xi32>, %u: tensor<2x8xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or bfloat16 type or 16-bit float values}}
  %h = k3.swiglu %g, %u : tensor<2x8xi32>
  return
}
