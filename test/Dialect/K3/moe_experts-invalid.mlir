// RUN: k3-opt %s --split-input-file --verify-diagnostics

// The order scratch holds 3 words per expert and one per slot.
func.func @order(%z: memref<4x32xf32>, %i: memref<4x2xi32>, %w: memref<4x2xf32>, %c1: memref<3x64x16xi8>, %c3: memref<3x64x16xi8>, %c2: memref<3x32x32xi8>, %s1: memref<3x64x1xf8E8M0FNU>, %s3: memref<3x64x1xf8E8M0FNU>, %s2: memref<3x32x2xf8E8M0FNU>, %y: memref<8x32xf32>, %h: memref<8x64xf32>, %o: memref<16xi32>) {
  // expected-error @+1 {{order dim 0 (3E + T·k) is 16, expected 17 from E = 3 experts and 8 slots}}
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (memref<4x32xf32>, memref<4x2xi32>, memref<4x2xf32>, memref<3x64x16xi8>, memref<3x64x16xi8>, memref<3x32x32xi8>, memref<3x64x1xf8E8M0FNU>, memref<3x64x1xf8E8M0FNU>, memref<3x32x2xf8E8M0FNU>, memref<8x32xf32>, memref<8x64xf32>, memref<16xi32>) -> ()
  return
}

// -----

// y has a row per routing slot.
func.func @slots(%z: memref<4x32xf32>, %i: memref<4x2xi32>, %w: memref<4x2xf32>, %c1: memref<3x64x16xi8>, %c3: memref<3x64x16xi8>, %c2: memref<3x32x32xi8>, %s1: memref<3x64x1xf8E8M0FNU>, %s3: memref<3x64x1xf8E8M0FNU>, %s2: memref<3x32x2xf8E8M0FNU>, %y: memref<4x32xf32>, %h: memref<8x64xf32>, %o: memref<17xi32>) {
  // expected-error @+1 {{y dim 0 (T·k) is 4, expected 8 from T = 4 tokens of k = 2 slots}}
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (memref<4x32xf32>, memref<4x2xi32>, memref<4x2xf32>, memref<3x64x16xi8>, memref<3x64x16xi8>, memref<3x32x32xi8>, memref<3x64x1xf8E8M0FNU>, memref<3x64x1xf8E8M0FNU>, memref<3x32x2xf8E8M0FNU>, memref<4x32xf32>, memref<8x64xf32>, memref<17xi32>) -> ()
  return
}

// -----

// Two codes a byte along the input channels.
func.func @codes(%z: memref<4x32xf32>, %i: memref<4x2xi32>, %w: memref<4x2xf32>, %c1: memref<3x64x32xi8>, %c3: memref<3x64x16xi8>, %c2: memref<3x32x32xi8>, %s1: memref<3x64x1xf8E8M0FNU>, %s3: memref<3x64x1xf8E8M0FNU>, %s2: memref<3x32x2xf8E8M0FNU>, %y: memref<8x32xf32>, %h: memref<8x64xf32>, %o: memref<17xi32>) {
  // expected-error @+1 {{w1 dim 2 (Dl/2) is 32, expected 16 from Dl = 32 two codes a byte}}
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (memref<4x32xf32>, memref<4x2xi32>, memref<4x2xf32>, memref<3x64x32xi8>, memref<3x64x16xi8>, memref<3x32x32xi8>, memref<3x64x1xf8E8M0FNU>, memref<3x64x1xf8E8M0FNU>, memref<3x32x2xf8E8M0FNU>, memref<8x32xf32>, memref<8x64xf32>, memref<17xi32>) -> ()
  return
}

// -----

// A scale per 32 input channels.
func.func @scales(%z: memref<4x32xf32>, %i: memref<4x2xi32>, %w: memref<4x2xf32>, %c1: memref<3x64x16xi8>, %c3: memref<3x64x16xi8>, %c2: memref<3x32x32xi8>, %s1: memref<3x64x1xf8E8M0FNU>, %s3: memref<3x64x1xf8E8M0FNU>, %s2: memref<3x32x1xf8E8M0FNU>, %y: memref<8x32xf32>, %h: memref<8x64xf32>, %o: memref<17xi32>) {
  // expected-error @+1 {{s2 dim 2 (Ie/32) is 1, expected 2 from Ie = 64 in blocks of 32}}
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (memref<4x32xf32>, memref<4x2xi32>, memref<4x2xf32>, memref<3x64x16xi8>, memref<3x64x16xi8>, memref<3x32x32xi8>, memref<3x64x1xf8E8M0FNU>, memref<3x64x1xf8E8M0FNU>, memref<3x32x1xf8E8M0FNU>, memref<8x32xf32>, memref<8x64xf32>, memref<17xi32>) -> ()
  return
}

// -----

// Whole MXFP4 blocks only.
func.func @block(%z: memref<4x40xf32>, %i: memref<4x2xi32>, %w: memref<4x2xf32>, %c1: memref<3x64x16xi8>, %c3: memref<3x64x16xi8>, %c2: memref<3x40x32xi8>, %s1: memref<3x64x1xf8E8M0FNU>, %s3: memref<3x64x1xf8E8M0FNU>, %s2: memref<3x40x2xf8E8M0FNU>, %y: memref<8x40xf32>, %h: memref<8x64xf32>, %o: memref<17xi32>) {
  // expected-error @+1 {{Dl = 40 must be a positive multiple of the MXFP4 block of 32}}
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (memref<4x40xf32>, memref<4x2xi32>, memref<4x2xf32>, memref<3x64x16xi8>, memref<3x64x16xi8>, memref<3x40x32xi8>, memref<3x64x1xf8E8M0FNU>, memref<3x64x1xf8E8M0FNU>, memref<3x40x2xf8E8M0FNU>, memref<8x40xf32>, memref<8x64xf32>, memref<17xi32>) -> ()
  return
}

// -----

// The three expert stacks agree on E.
func.func @experts(%z: memref<4x32xf32>, %i: memref<4x2xi32>, %w: memref<4x2xf32>, %c1: memref<3x64x16xi8>, %c3: memref<3x64x16xi8>, %c2: memref<4x32x32xi8>, %s1: memref<3x64x1xf8E8M0FNU>, %s3: memref<3x64x1xf8E8M0FNU>, %s2: memref<3x32x2xf8E8M0FNU>, %y: memref<8x32xf32>, %h: memref<8x64xf32>, %o: memref<17xi32>) {
  // expected-error @+1 {{w2 dim 0 (E) is 4, expected 3 from w1}}
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (memref<4x32xf32>, memref<4x2xi32>, memref<4x2xf32>, memref<3x64x16xi8>, memref<3x64x16xi8>, memref<4x32x32xi8>, memref<3x64x1xf8E8M0FNU>, memref<3x64x1xf8E8M0FNU>, memref<3x32x2xf8E8M0FNU>, memref<8x32xf32>, memref<8x64xf32>, memref<17xi32>) -> ()
  return
}

// -----

// Scales are E8M0.
func.func @element(%z: memref<4x32xf32>, %i: memref<4x2xi32>, %w: memref<4x2xf32>, %c1: memref<3x64x16xi8>, %c3: memref<3x64x16xi8>, %c2: memref<3x32x32xi8>, %s1: memref<3x64x1xi8>, %s3: memref<3x64x1xi8>, %s2: memref<3x32x2xf8E8M0FNU>, %y: memref<8x32xf32>, %h: memref<8x64xf32>, %o: memref<17xi32>) {
  // expected-error @+1 {{s1, s3 and s2 must be f8E8M0FNU}}
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (memref<4x32xf32>, memref<4x2xi32>, memref<4x2xf32>, memref<3x64x16xi8>, memref<3x64x16xi8>, memref<3x32x32xi8>, memref<3x64x1xi8>, memref<3x64x1xi8>, memref<3x32x2xf8E8M0FNU>, memref<8x32xf32>, memref<8x64xf32>, memref<17xi32>) -> ()
  return
}

// -----

// Codes are bytes.
func.func @codetype(%z: memref<4x32xf32>, %i: memref<4x2xi32>, %w: memref<4x2xf32>, %c1: memref<3x64x16xi32>, %c3: memref<3x64x16xi32>, %c2: memref<3x32x32xi8>, %s1: memref<3x64x1xf8E8M0FNU>, %s3: memref<3x64x1xf8E8M0FNU>, %s2: memref<3x32x2xf8E8M0FNU>, %y: memref<8x32xf32>, %h: memref<8x64xf32>, %o: memref<17xi32>) {
  // expected-error @+1 {{w1, w3 and w2 must be i8 (two E2M1 codes a byte), got 'i32', 'i32' and 'i8'}}
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (memref<4x32xf32>, memref<4x2xi32>, memref<4x2xf32>, memref<3x64x16xi32>, memref<3x64x16xi32>, memref<3x32x32xi8>, memref<3x64x1xf8E8M0FNU>, memref<3x64x1xf8E8M0FNU>, memref<3x32x2xf8E8M0FNU>, memref<8x32xf32>, memref<8x64xf32>, memref<17xi32>) -> ()
  return
}

// -----

// y accumulates in f32.
func.func @ytype(%z: memref<4x32xf32>, %i: memref<4x2xi32>, %w: memref<4x2xf32>, %c1: memref<3x64x16xi8>, %c3: memref<3x64x16xi8>, %c2: memref<3x32x32xi8>, %s1: memref<3x64x1xf8E8M0FNU>, %s3: memref<3x64x1xf8E8M0FNU>, %s2: memref<3x32x2xf8E8M0FNU>, %y: memref<8x32xbf16>, %h: memref<8x64xf32>, %o: memref<17xi32>) {
  // expected-error @+1 {{weights, y and h must be f32 and order i32}}
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (memref<4x32xf32>, memref<4x2xi32>, memref<4x2xf32>, memref<3x64x16xi8>, memref<3x64x16xi8>, memref<3x32x32xi8>, memref<3x64x1xf8E8M0FNU>, memref<3x64x1xf8E8M0FNU>, memref<3x32x2xf8E8M0FNU>, memref<8x32xbf16>, memref<8x64xf32>, memref<17xi32>) -> ()
  return
}

// -----

func.func @rank(%z: memref<4x32xf32>, %i: memref<8xi32>, %w: memref<4x2xf32>, %c1: memref<3x64x16xi8>, %c3: memref<3x64x16xi8>, %c2: memref<3x32x32xi8>, %s1: memref<3x64x1xf8E8M0FNU>, %s3: memref<3x64x1xf8E8M0FNU>, %s2: memref<3x32x2xf8E8M0FNU>, %y: memref<8x32xf32>, %h: memref<8x64xf32>, %o: memref<17xi32>) {
  // expected-error @+1 {{indices must have rank 2 [T, k], got rank 1}}
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (memref<4x32xf32>, memref<8xi32>, memref<4x2xf32>, memref<3x64x16xi8>, memref<3x64x16xi8>, memref<3x32x32xi8>, memref<3x64x1xf8E8M0FNU>, memref<3x64x1xf8E8M0FNU>, memref<3x32x2xf8E8M0FNU>, memref<8x32xf32>, memref<8x64xf32>, memref<17xi32>) -> ()
  return
}

// -----

// Tensors and memrefs do not mix.
func.func @mixed(%z: memref<4x32xf32>, %i: memref<4x2xi32>, %w: memref<4x2xf32>, %c1: memref<3x64x16xi8>, %c3: memref<3x64x16xi8>, %c2: memref<3x32x32xi8>, %s1: memref<3x64x1xf8E8M0FNU>, %s3: memref<3x64x1xf8E8M0FNU>, %s2: memref<3x32x2xf8E8M0FNU>, %y: tensor<8x32xf32>, %h: memref<8x64xf32>, %o: memref<17xi32>) {
  // expected-error @+1 {{operands must be all ranked tensors or all memrefs}}
  %r = k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (memref<4x32xf32>, memref<4x2xi32>, memref<4x2xf32>, memref<3x64x16xi8>, memref<3x64x16xi8>, memref<3x32x32xi8>, memref<3x64x1xf8E8M0FNU>, memref<3x64x1xf8E8M0FNU>, memref<3x32x2xf8E8M0FNU>, tensor<8x32xf32>, memref<8x64xf32>, memref<17xi32>) -> tensor<8x32xf32>
  return
}
// -----

// With T dynamic, y and h still agree on the slots...
func.func @dynslots(%z: memref<?x32xf32>, %i: memref<?x2xi32>, %w: memref<?x2xf32>, %c1: memref<3x64x16xi8>, %c3: memref<3x64x16xi8>, %c2: memref<3x32x32xi8>, %s1: memref<3x64x1xf8E8M0FNU>, %s3: memref<3x64x1xf8E8M0FNU>, %s2: memref<3x32x2xf8E8M0FNU>, %y: memref<6x32xf32>, %h: memref<8x64xf32>, %o: memref<17xi32>) {
  // expected-error @+1 {{h dim 0 (T·k) is 8, expected 6 from y}}
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (memref<?x32xf32>, memref<?x2xi32>, memref<?x2xf32>, memref<3x64x16xi8>, memref<3x64x16xi8>, memref<3x32x32xi8>, memref<3x64x1xf8E8M0FNU>, memref<3x64x1xf8E8M0FNU>, memref<3x32x2xf8E8M0FNU>, memref<6x32xf32>, memref<8x64xf32>, memref<17xi32>) -> ()
  return
}

// -----

// ... and order has 3E + T·k words.
func.func @dynorder(%z: memref<?x32xf32>, %i: memref<?x2xi32>, %w: memref<?x2xf32>, %c1: memref<3x64x16xi8>, %c3: memref<3x64x16xi8>, %c2: memref<3x32x32xi8>, %s1: memref<3x64x1xf8E8M0FNU>, %s3: memref<3x64x1xf8E8M0FNU>, %s2: memref<3x32x2xf8E8M0FNU>, %y: memref<8x32xf32>, %h: memref<8x64xf32>, %o: memref<18xi32>) {
  // expected-error @+1 {{order dim 0 (3E + T·k) is 18, expected 17 from E = 3 experts and 8 slots}}
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (memref<?x32xf32>, memref<?x2xi32>, memref<?x2xf32>, memref<3x64x16xi8>, memref<3x64x16xi8>, memref<3x32x32xi8>, memref<3x64x1xf8E8M0FNU>, memref<3x64x1xf8E8M0FNU>, memref<3x32x2xf8E8M0FNU>, memref<8x32xf32>, memref<8x64xf32>, memref<18xi32>) -> ()
  return
}

// -----

// Signless integers only.
func.func @signed(%z: memref<4x32xf32>, %i: memref<4x2xui32>, %w: memref<4x2xf32>, %c1: memref<3x64x16xi8>, %c3: memref<3x64x16xi8>, %c2: memref<3x32x32xi8>, %s1: memref<3x64x1xf8E8M0FNU>, %s3: memref<3x64x1xf8E8M0FNU>, %s2: memref<3x32x2xf8E8M0FNU>, %y: memref<8x32xf32>, %h: memref<8x64xf32>, %o: memref<17xi32>) {
  // expected-error @+1 {{indices must be i32 or i64, got 'ui32'}}
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (memref<4x32xf32>, memref<4x2xui32>, memref<4x2xf32>, memref<3x64x16xi8>, memref<3x64x16xi8>, memref<3x32x32xi8>, memref<3x64x1xf8E8M0FNU>, memref<3x64x1xf8E8M0FNU>, memref<3x32x2xf8E8M0FNU>, memref<8x32xf32>, memref<8x64xf32>, memref<17xi32>) -> ()
  return
}

// -----

func.func @none(%z: memref<4x32xf32>, %i: memref<4x2xi32>, %w: memref<4x2xf32>, %c1: memref<0x64x16xi8>, %c3: memref<0x64x16xi8>, %c2: memref<0x32x32xi8>, %s1: memref<0x64x1xf8E8M0FNU>, %s3: memref<0x64x1xf8E8M0FNU>, %s2: memref<0x32x2xf8E8M0FNU>, %y: memref<8x32xf32>, %h: memref<8x64xf32>, %o: memref<8xi32>) {
  // expected-error @+1 {{needs at least one expert, got E = 0}}
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (memref<4x32xf32>, memref<4x2xi32>, memref<4x2xf32>, memref<0x64x16xi8>, memref<0x64x16xi8>, memref<0x32x32xi8>, memref<0x64x1xf8E8M0FNU>, memref<0x64x1xf8E8M0FNU>, memref<0x32x2xf8E8M0FNU>, memref<8x32xf32>, memref<8x64xf32>, memref<8xi32>) -> ()
  return
}

// -----

// SwiGLU takes no betas.
func.func @swiglu_beta(%z: memref<4x32xf32>, %i: memref<4x2xi32>, %w: memref<4x2xf32>, %c1: memref<3x64x16xi8>, %c3: memref<3x64x16xi8>, %c2: memref<3x32x32xi8>, %s1: memref<3x64x1xf8E8M0FNU>, %s3: memref<3x64x1xf8E8M0FNU>, %s2: memref<3x32x2xf8E8M0FNU>, %y: memref<8x32xf32>, %h: memref<8x64xf32>, %o: memref<17xi32>) {
  // expected-error @+1 {{activation silu (SwiGLU) takes no beta1/beta2}}
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) activation silu {beta1 = 4.0 : f32}
      : (memref<4x32xf32>, memref<4x2xi32>, memref<4x2xf32>, memref<3x64x16xi8>, memref<3x64x16xi8>, memref<3x32x32xi8>, memref<3x64x1xf8E8M0FNU>, memref<3x64x1xf8E8M0FNU>, memref<3x32x2xf8E8M0FNU>, memref<8x32xf32>, memref<8x64xf32>, memref<17xi32>) -> ()
  return
}
