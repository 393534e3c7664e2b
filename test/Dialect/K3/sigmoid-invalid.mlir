// RUN: k3-opt %s --split-input-file --verify-diagnostics

// The result has the input's type (generic form; the custom form has one type).
func.func @type_mismatch(%x: tensor<3x8xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %y = "k3.sigmoid"(%x) : (tensor<3x8xf32>) -> tensor<3x4xf32>
  return
}

// -----

// Integers have no sigmoid.
func.func @integer(%x: tensor<3x8xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or bfloat16 type or 16-bit float values}}
  %y = k3.sigmoid %x : tensor<3x8xi32>
  return
}
