// RUN: k3-opt %s --split-input-file --verify-diagnostics

// x is [T, D].
func.func @case0(%x: tensor<80xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{x must have rank 2 [T, D], got rank 1}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<80xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<80xf32>
  return
}

// -----

// indices are [T, k].
func.func @case1(%x: tensor<5x16xf32>, %i: tensor<10xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{indices must have rank 2 [T, k], got rank 1}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<10xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// weights are [T, k].
func.func @case2(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<10xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{weights must have rank 2 [T, k], got rank 1}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<10xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// The latent needs both projections (generic form).
func.func @case3(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{latent needs both latent_down and latent_up}}
  %y = "k3.moe"(%x, %i, %w, %ld, %w1, %w3, %w2, %s1, %s3, %s2, %sg, %su, %sd) <{beta1 = 4.0 : f32, eps = 1.0e-05 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1>}>
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// The routed norm acts on the latent combine (generic form).
func.func @case4(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf32>, %w3: tensor<4x64x32xf32>, %w2: tensor<4x16x64xf32>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{norm applies to the latent combine and needs latent(...)}}
  %y = "k3.moe"(%x, %i, %w, %n, %w1, %w3, %w2, %sg, %su, %sd) <{beta1 = 4.0 : f32, eps = 1.0e-05 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1>}>
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32xf32>, tensor<4x64x32xf32>, tensor<4x64x32xf32>, tensor<4x16x64xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// Shared experts come as a full MLP (generic form).
func.func @case5(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>) {
  // expected-error @+1 {{shared experts need shared_gate, shared_up and shared_down together}}
  %y = "k3.moe"(%x, %i, %w, %ld, %lu, %n, %w1, %w3, %w2, %s1, %s3, %s2, %sg, %su) <{beta1 = 4.0 : f32, eps = 1.0e-05 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0>}>
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>) -> tensor<5x16xf32>
  return
}

// -----

// w1 is [E, Ie, Dl].
func.func @case6(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{w1 must have rank 3 [E, Ie, Dl], got rank 2}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// w3 is [E, Ie, Dl].
func.func @case7(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{w3 must have rank 3 [E, Ie, Dl], got rank 2}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// w2 is [E, Dl, Ie].
func.func @case8(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{w2 must have rank 3 [E, Dl, Ie], got rank 2}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// One index row per token.
func.func @case9(%x: tensor<5x16xf32>, %i: tensor<4x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{indices dim 0 (T) is 4, expected 5 from x}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<4x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// One weight row per token.
func.func @case10(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<4x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{weights dim 0 (T) is 4, expected 5 from x}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<4x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// One weight per selected expert.
func.func @case11(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x3xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{weights dim 1 (k) is 3, expected 2 from indices}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x3xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// latent_down is [Dl, D].
func.func @case12(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<512xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{latent_down must have rank 2 [Dl, D], got rank 1}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<512xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// latent_down reads x.
func.func @case13(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x8xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{latent_down dim 1 (D) is 8, expected 16 from x}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x8xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// latent_up writes the hidden size.
func.func @case14(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<8x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{latent_up dim 0 (D) is 8, expected 16 from x}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<8x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// latent_up reads the latent.
func.func @case15(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x16xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{latent_up dim 1 (Dl) is 16, expected 32 from latent_down}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x16xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// The routed norm is [Dl].
func.func @case16(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<16xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{norm dim 0 (Dl) is 16, expected 32 from latent_down}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<16xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// Experts read the latent, not the hidden state.
func.func @case17(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x16xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{w1 dim 2 (Dl) is 16, expected 32 from latent_down}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x16xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// Without a latent, experts read x.
func.func @case18(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %w1: tensor<4x64x32xf32>, %w3: tensor<4x64x32xf32>, %w2: tensor<4x32x64xf32>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{w1 dim 2 (Dl) is 32, expected 16 from x}}
  %y = k3.moe %x routed(%i, %w) experts(%w1, %w3, %w2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<4x64x32xf32>, tensor<4x64x32xf32>, tensor<4x32x64xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// w1 and w3 have one shape.
func.func @case19(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x32x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x32x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{w3 dim 1 (Ie) is 32, expected 64 from w1}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// w2 has one matrix per expert.
func.func @case20(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<3x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<3x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{w2 dim 0 (E) is 3, expected 4 from w1}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<3x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<3x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// w2 writes the latent.
func.func @case21(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x16x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x16x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{w2 dim 1 (Dl) is 16, expected 32 from latent_down}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x16x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x16x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// w2 reads the expert intermediate.
func.func @case22(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x32xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x1xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{w2 dim 2 (Ie) is 32, expected 64 from w1}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x32xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x1xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// top-k cannot exceed the experts.
func.func @case23(%x: tensor<5x16xf32>, %i: tensor<5x5xi32>, %w: tensor<5x5xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{top-k 5 exceeds the 4 experts}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x5xi32>, tensor<5x5xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// Experts share one format.
func.func @case24(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xbf16>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{experts must share one element type, got w1 'f4E2M1FN', w3 'bf16', w2 'f4E2M1FN'}}
  %y = "k3.moe"(%x, %i, %w, %ld, %lu, %n, %w1, %w3, %w2, %s1, %s2, %sg, %su, %sd) <{beta1 = 4.0 : f32, eps = 1.0e-05 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1>}>
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xbf16>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// MXFP4 experts need their scales.
func.func @case25(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{f4E2M1FN w1 needs w1_scale}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// Scales only apply to MXFP4 experts.
func.func @case26(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf32>, %w3: tensor<4x64x32xf32>, %w2: tensor<4x32x64xf32>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{w1_scale given for w1 of type 'f32'; only f4E2M1FN weights take scales}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf32>, tensor<4x64x32xf32>, tensor<4x32x64xf32>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// Block scales follow the expert shape: [E, Ie, Dl/32].
func.func @case27(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x32x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{w1_scale dim 1 is 32, expected 64 from w1}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x32x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// w2's blocks run along Ie: 64 / 32 = 2.
func.func @case28(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x1xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{w2_scale dim 2 is 1, expected 2 from w2 input dim / 32}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x1xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// shared_gate is [Is, D].
func.func @case29(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{shared_gate must have rank 2 [Is, D], got rank 1}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// Shared experts read the original x.
func.func @case30(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x32xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{shared_gate dim 1 (D) is 32, expected 16 from x}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x32xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// shared_up matches shared_gate.
func.func @case31(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<12x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{shared_up dim 0 (Is) is 12, expected 24 from shared_gate}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<12x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// shared_down writes the hidden size.
func.func @case32(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<32x24xf32>) {
  // expected-error @+1 {{shared_down dim 0 (D) is 32, expected 16 from x}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<32x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// shared_down reads the shared intermediate.
func.func @case33(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x12xf32>) {
  // expected-error @+1 {{shared_down dim 1 (Is) is 12, expected 24 from shared_gate}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x12xf32>) -> tensor<5x16xf32>
  return
}

// -----

// The result has x's shape.
func.func @case34(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{y shape [5, 32] does not match x shape [5, 16]}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x32xf32>
  return
}

// -----

// The routed norm's eps must be positive.
func.func @case35(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{eps must be positive and finite, got 0}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, eps = 0.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// SiTU needs a positive beta2.
func.func @case36(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf4E2M1FN>, %w3: tensor<4x64x32xf4E2M1FN>, %w2: tensor<4x32x64xf4E2M1FN>, %s1: tensor<4x64x1xf8E8M0FNU>, %s3: tensor<4x64x1xf8E8M0FNU>, %s2: tensor<4x32x2xf8E8M0FNU>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{beta2 must be positive and finite, got 0}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 0.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>, tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// latent_up is [D, Dl].
func.func @case37(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<512xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf32>, %w3: tensor<4x64x32xf32>, %w2: tensor<4x32x64xf32>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{latent_up must have rank 2 [D, Dl], got rank 1}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<512xf32>, tensor<32xf32>, tensor<4x64x32xf32>, tensor<4x64x32xf32>, tensor<4x32x64xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// The routed norm weight is one vector.
func.func @case38(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<1x32xf32>, %w1: tensor<4x64x32xf32>, %w3: tensor<4x64x32xf32>, %w2: tensor<4x32x64xf32>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{norm must have rank 1 [Dl], got rank 2}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<1x32xf32>, tensor<4x64x32xf32>, tensor<4x64x32xf32>, tensor<4x32x64xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// shared_up is [Is, D].
func.func @case39(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf32>, %w3: tensor<4x64x32xf32>, %w2: tensor<4x32x64xf32>, %sg: tensor<24x16xf32>, %su: tensor<384xf32>, %sd: tensor<16x24xf32>) {
  // expected-error @+1 {{shared_up must have rank 2 [Is, D], got rank 1}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf32>, tensor<4x64x32xf32>, tensor<4x32x64xf32>, tensor<24x16xf32>, tensor<384xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// shared_down is [D, Is].
func.func @case40(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %ld: tensor<32x16xf32>, %lu: tensor<16x32xf32>, %n: tensor<32xf32>, %w1: tensor<4x64x32xf32>, %w3: tensor<4x64x32xf32>, %w2: tensor<4x32x64xf32>, %sg: tensor<24x16xf32>, %su: tensor<24x16xf32>, %sd: tensor<384xf32>) {
  // expected-error @+1 {{shared_down must have rank 2 [D, Is], got rank 1}}
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) shared(%sg, %su, %sd) {beta1 = 4.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<4x64x32xf32>, tensor<4x64x32xf32>, tensor<4x32x64xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<384xf32>) -> tensor<5x16xf32>
  return
}

// -----

// A dynamic E in w1 does not hide a mismatch between w3 and w2.
func.func @dyn_experts(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %w1: tensor<?x24x16xf32>, %w3: tensor<3x24x16xf32>, %w2: tensor<4x16x24xf32>) {
  // expected-error @+1 {{w2 dim 0 (E) is 4, expected 3 from w3}}
  %y = k3.moe %x routed(%i, %w) experts(%w1, %w3, %w2) {beta1 = 4.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<?x24x16xf32>, tensor<3x24x16xf32>, tensor<4x16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

// top-k comes from weights when indices are dynamic: 5 of 4 experts.
func.func @dyn_topk(%x: tensor<5x16xf32>, %i: tensor<?x?xi32>, %w: tensor<5x5xf32>, %w1: tensor<4x24x16xf32>, %w3: tensor<4x24x16xf32>, %w2: tensor<4x16x24xf32>) {
  // expected-error @+1 {{top-k 5 exceeds the 4 experts}}
  %y = k3.moe %x routed(%i, %w) experts(%w1, %w3, %w2) {beta1 = 4.0 : f32}
      : (tensor<5x16xf32>, tensor<?x?xi32>, tensor<5x5xf32>, tensor<4x24x16xf32>, tensor<4x24x16xf32>, tensor<4x16x24xf32>) -> tensor<5x16xf32>
  return
}

// -----

func.func @mxfp8_blocks(%x: tensor<?x48xf32>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>,
                        %w1: tensor<4x64x48xf32>, %w3: tensor<4x64x48xf32>, %w2: tensor<4x48x64xf32>)
    -> tensor<?x48xf32> {
  // expected-error @+1 {{'k3.moe' op mxfp8_inputs rounds blocks of 32 along each expert input, got Dl 48 and Ie 64}}
  %y = k3.moe %x routed(%i, %w) experts(%w1, %w3, %w2) {beta1 = 4.0 : f32, mxfp8_inputs}
      : (tensor<?x48xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x64x48xf32>, tensor<4x64x48xf32>,
         tensor<4x48x64xf32>) -> tensor<?x48xf32>
  return %y : tensor<?x48xf32>
}

// -----

// SiTU-GLU experts need beta1.
func.func @situ_no_beta(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %w1: tensor<4x24x16xbf16>,
                        %w3: tensor<4x24x16xbf16>, %w2: tensor<4x16x24xbf16>) {
  // expected-error @+1 {{activation situ (SiTU-GLU) needs beta1}}
  %y = k3.moe %x routed(%i, %w) experts(%w1, %w3, %w2)
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<4x24x16xbf16>, tensor<4x24x16xbf16>, tensor<4x16x24xbf16>)
      -> tensor<5x16xf32>
  return
}
