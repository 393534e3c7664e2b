// RUN: k3-opt %s --split-input-file --verify-diagnostics

// x is [T, D].
func.func @case0(%x: tensor<5x2x8xf32>, %wg: tensor<24x16xf32>, %wu: tensor<24x16xf32>, %wd: tensor<16x24xf32>) {
  // expected-error @+1 {{x must have rank 2 [T, D], got rank 3}}
  %y = k3.mlp %x, %wg, %wu, %wd {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x2x8xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x2x8xf32>
  return
}

// -----

// gate_proj is [I, D].
func.func @case1(%x: tensor<5x16xf32>, %wg: tensor<384xf32>, %wu: tensor<24x16xf32>, %wd: tensor<16x24xf32>) {
  // expected-error @+1 {{gate_proj must have rank 2 [I, D], got rank 1}}
  %y = k3.mlp %x, %wg, %wu, %wd {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<384xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// up_proj is [I, D].
func.func @case2(%x: tensor<5x16xf32>, %wg: tensor<24x16xf32>, %wu: tensor<384xf32>, %wd: tensor<16x24xf32>) {
  // expected-error @+1 {{up_proj must have rank 2 [I, D], got rank 1}}
  %y = k3.mlp %x, %wg, %wu, %wd {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<24x16xf32>, tensor<384xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// down_proj is [D, I].
func.func @case3(%x: tensor<5x16xf32>, %wg: tensor<24x16xf32>, %wu: tensor<24x16xf32>, %wd: tensor<384xf32>) {
  // expected-error @+1 {{down_proj must have rank 2 [D, I], got rank 1}}
  %y = k3.mlp %x, %wg, %wu, %wd {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<384xf32>) -> tensor<5x16xf32>
  return
}

// -----

// gate_proj reads x.
func.func @case4(%x: tensor<5x16xf32>, %wg: tensor<24x8xf32>, %wu: tensor<24x16xf32>, %wd: tensor<16x24xf32>) {
  // expected-error @+1 {{gate_proj dim 1 (D) is 8, expected 16 from x}}
  %y = k3.mlp %x, %wg, %wu, %wd {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<24x8xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// gate and up have one intermediate size.
func.func @case5(%x: tensor<5x16xf32>, %wg: tensor<24x16xf32>, %wu: tensor<12x16xf32>, %wd: tensor<16x24xf32>) {
  // expected-error @+1 {{up_proj dim 0 (I) is 12, expected 24 from gate_proj}}
  %y = k3.mlp %x, %wg, %wu, %wd {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<24x16xf32>, tensor<12x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// up_proj reads x.
func.func @case6(%x: tensor<5x16xf32>, %wg: tensor<24x16xf32>, %wu: tensor<24x8xf32>, %wd: tensor<16x24xf32>) {
  // expected-error @+1 {{up_proj dim 1 (D) is 8, expected 16 from x}}
  %y = k3.mlp %x, %wg, %wu, %wd {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<24x16xf32>, tensor<24x8xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// down_proj writes the hidden size.
func.func @case7(%x: tensor<5x16xf32>, %wg: tensor<24x16xf32>, %wu: tensor<24x16xf32>, %wd: tensor<8x24xf32>) {
  // expected-error @+1 {{down_proj dim 0 (D) is 8, expected 16 from x}}
  %y = k3.mlp %x, %wg, %wu, %wd {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<8x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// down_proj reads the intermediate (a [I, D] down_proj is transposed).
func.func @case8(%x: tensor<5x16xf32>, %wg: tensor<24x16xf32>, %wu: tensor<24x16xf32>, %wd: tensor<16x16xf32>) {
  // expected-error @+1 {{down_proj dim 1 (I) is 16, expected 24 from gate_proj}}
  %y = k3.mlp %x, %wg, %wu, %wd {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x16xf32>) -> tensor<5x16xf32>
  return
}

// -----

// The result has x's shape.
func.func @case9(%x: tensor<5x16xf32>, %wg: tensor<24x16xf32>, %wu: tensor<24x16xf32>, %wd: tensor<16x24xf32>) {
  // expected-error @+1 {{y shape [6, 16] does not match x shape [5, 16]}}
  %y = k3.mlp %x, %wg, %wu, %wd {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<6x16xf32>
  return
}

// -----

// SiTU needs a positive beta1.
func.func @case10(%x: tensor<5x16xf32>, %wg: tensor<24x16xf32>, %wu: tensor<24x16xf32>, %wd: tensor<16x24xf32>) {
  // expected-error @+1 {{beta1 must be positive and finite, got -1}}
  %y = k3.mlp %x, %wg, %wu, %wd {beta1 = -1.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// SwiGLU has no parameters: a beta beside it would be silently ignored.
func.func @swiglu_beta(%x: tensor<5x16xf32>, %wg: tensor<24x16xf32>, %wu: tensor<24x16xf32>, %wd: tensor<16x24xf32>) {
  // expected-error @+1 {{activation silu (SwiGLU) takes no beta1/beta2}}
  %y = k3.mlp %x, %wg, %wu, %wd activation silu {beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// SiTU-GLU (the default) needs its beta1.
func.func @situ_no_beta(%x: tensor<5x16xf32>, %wg: tensor<24x16xf32>, %wu: tensor<24x16xf32>, %wd: tensor<16x24xf32>) {
  // expected-error @+1 {{activation situ (SiTU-GLU) needs beta1}}
  %y = k3.mlp %x, %wg, %wu, %wd : (tensor<5x16xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// An activation k3 does not know.
func.func @gelu(%x: tensor<5x16xf32>, %wg: tensor<24x16xf32>, %wu: tensor<24x16xf32>, %wd: tensor<16x24xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'activation' [situ, silu]}}
  %y = k3.mlp %x, %wg, %wu, %wd activation gelu : (tensor<5x16xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}
