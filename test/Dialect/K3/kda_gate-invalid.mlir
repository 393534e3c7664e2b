// RUN: k3-opt %s --split-input-file --verify-diagnostics

// The lower-bounded form is meaningless without its bound.
func.func @missing_lb(%x: tensor<?x4x16xf32>, %a: tensor<4xf32>, %dt: tensor<4x16xf32>) {
  // expected-error @+1 {{lower_bound gate needs an lb attribute}}
  %g = k3.kda_gate lower_bound %x, %a, %dt : (tensor<?x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
  return
}

// -----

// The softplus form has no bound; a stray lb would be silently ignored.
func.func @softplus_lb(%x: tensor<?x4x16xf32>, %a: tensor<4xf32>, %dt: tensor<4x16xf32>) {
  // expected-error @+1 {{softplus gate takes no lb, got -5}}
  %g = k3.kda_gate softplus lb = -5.0 %x, %a, %dt : (tensor<?x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
  return
}

// -----

// A log-decay bound must be negative: lb = 0 would mean no decay at all.
func.func @lb_zero(%x: tensor<?x4x16xf32>, %a: tensor<4xf32>, %dt: tensor<4x16xf32>) {
  // expected-error @+1 {{lb must be negative and finite, got 0}}
  %g = k3.kda_gate lower_bound lb = 0.0 %x, %a, %dt : (tensor<?x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
  return
}

// -----

// x is [T, H, K].
func.func @x_rank(%x: tensor<?x64xf32>, %a: tensor<4xf32>, %dt: tensor<4x16xf32>) {
  // expected-error @+1 {{x must have rank 3 [T, H, K], got rank 2}}
  %g = k3.kda_gate softplus %x, %a, %dt : (tensor<?x64xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<?x64xf32>
  return
}

// -----

// A_log is per head, never per channel (K3_CHECKPOINT.md §9.2).
func.func @a_log_per_channel(%x: tensor<?x4x16xf32>, %a: tensor<4x16xf32>, %dt: tensor<4x16xf32>) {
  // expected-error @+1 {{a_log must have rank 1 [H], got rank 2}}
  %g = k3.kda_gate softplus %x, %a, %dt : (tensor<?x4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
  return
}

// -----

// The checkpoint pads A_log to 128 entries; the importer slices it to H.
func.func @a_log_padded(%x: tensor<?x4x16xf32>, %a: tensor<128xf32>, %dt: tensor<4x16xf32>) {
  // expected-error @+1 {{a_log dim 0 (H) is 128, expected 4 from x}}
  %g = k3.kda_gate softplus %x, %a, %dt : (tensor<?x4x16xf32>, tensor<128xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
  return
}

// -----

// dt_bias is [H, K].
func.func @dt_bias_rank(%x: tensor<?x4x16xf32>, %a: tensor<4xf32>, %dt: tensor<64xf32>) {
  // expected-error @+1 {{dt_bias must have rank 2 [H, K], got rank 1}}
  %g = k3.kda_gate softplus %x, %a, %dt : (tensor<?x4x16xf32>, tensor<4xf32>, tensor<64xf32>) -> tensor<?x4x16xf32>
  return
}

// -----

// dt_bias has one row per head.
func.func @dt_bias_heads(%x: tensor<?x4x16xf32>, %a: tensor<4xf32>, %dt: tensor<2x16xf32>) {
  // expected-error @+1 {{dt_bias dim 0 (H) is 2, expected 4 from x}}
  %g = k3.kda_gate softplus %x, %a, %dt : (tensor<?x4x16xf32>, tensor<4xf32>, tensor<2x16xf32>) -> tensor<?x4x16xf32>
  return
}

// -----

// dt_bias has one entry per channel.
func.func @dt_bias_channels(%x: tensor<?x4x16xf32>, %a: tensor<4xf32>, %dt: tensor<4x8xf32>) {
  // expected-error @+1 {{dt_bias dim 1 (K) is 8, expected 16 from x}}
  %g = k3.kda_gate softplus %x, %a, %dt : (tensor<?x4x16xf32>, tensor<4xf32>, tensor<4x8xf32>) -> tensor<?x4x16xf32>
  return
}

// -----

// The gate has x's shape.
func.func @g_shape(%x: tensor<5x4x16xf32>, %a: tensor<4xf32>, %dt: tensor<4x16xf32>) {
  // expected-error @+1 {{g shape [6, 4, 16] does not match x shape [5, 4, 16]}}
  %g = k3.kda_gate softplus %x, %a, %dt : (tensor<5x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<6x4x16xf32>
  return
}

// -----

// Gates are computed and kept in f32 (KDA.md §8).
func.func @g_bf16(%x: tensor<5x4x16xbf16>, %a: tensor<4xf32>, %dt: tensor<4x16xf32>) {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit float values}}
  %g = k3.kda_gate softplus %x, %a, %dt : (tensor<5x4x16xbf16>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<5x4x16xbf16>
  return
}

// -----

// A scalar input is rejected, not read past its rank.
func.func @scalar_x(%x: tensor<f32>, %a: tensor<4xf32>, %dt: tensor<4x16xf32>) {
  // expected-error @+1 {{x must have rank 3 [T, H, K], got rank 0}}
  %g = k3.kda_gate softplus %x, %a, %dt : (tensor<f32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<f32>
  return
}

// -----

// With dynamic heads in x, a_log and dt_bias must still agree.
func.func @dyn_heads(%x: tensor<?x?x16xf32>, %a: tensor<4xf32>, %dt: tensor<2x16xf32>) {
  // expected-error @+1 {{dt_bias dim 0 (H) is 2, expected 4 from a_log}}
  %g = k3.kda_gate softplus %x, %a, %dt : (tensor<?x?x16xf32>, tensor<4xf32>, tensor<2x16xf32>) -> tensor<?x?x16xf32>
  return
}
