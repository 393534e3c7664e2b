// RUN: k3-opt %s --split-input-file --k3-fuse-kda-decode | FileCheck %s

// The importer's one-token chain (2 heads, K = V = 4, conv width 4) becomes
// one k3.kda_decode; its windows and state replace the chain's.
// CHECK-LABEL: func.func @decode
//  CHECK-SAME:   (%[[XQ:[^:]+]]: tensor<1x8xf32>, %[[XK:[^:]+]]: tensor<1x8xf32>, %[[XV:[^:]+]]: tensor<1x8xf32>, %[[W:[^:]+]]: tensor<8x4xf32>, %[[C:[^:]+]]: tensor<3x8xf32>, %[[F:[^:]+]]: tensor<1x2x4xf32>, %[[A:[^:]+]]: tensor<2xf32>, %[[DT:[^:]+]]: tensor<2x4xf32>, %[[B:[^:]+]]: tensor<1x2xf32>, %[[S:[^:]+]]: tensor<2x4x4xf32>, %[[NW:[^:]+]]: tensor<4xf32>, %[[OG:[^:]+]]: tensor<1x2x4xf32>)
//       CHECK:   %[[O:.+]], %[[NQ:.+]], %[[NK:.+]], %[[NV:.+]], %[[NS:.+]] = k3.kda_decode x(%[[XQ]], %[[XK]], %[[XV]]) filters(%[[W]], %[[W]], %[[W]]) windows(%[[C]], %[[C]], %[[C]]) gate(%[[F]], %[[A]], %[[DT]]) beta(%[[B]]) state(%[[S]]) norm(%[[NW]]) out_gate(%[[OG]]) lower_bound lb = -5.000000e+00 scale = 5.000000e-01 eps = 9.99999974E-6
//   CHECK-NOT:   k3.short_conv
//   CHECK-NOT:   k3.kda %
//       CHECK:   return %[[O]], %[[NQ]], %[[NK]], %[[NV]], %[[NS]]
func.func @decode(%xq: tensor<1x8xf32>, %xk: tensor<1x8xf32>, %xv: tensor<1x8xf32>, %w: tensor<8x4xf32>,
                  %c: tensor<3x8xf32>, %f: tensor<1x2x4xf32>, %a: tensor<2xf32>, %dt: tensor<2x4xf32>,
                  %b: tensor<1x2xf32>, %s0: tensor<2x4x4xf32>, %nw: tensor<4xf32>, %og: tensor<1x2x4xf32>)
    -> (tensor<1x2x4xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<2x4x4xf32>) {
  %yq, %nq = k3.short_conv %xq, %w, state(%c) silu : (tensor<1x8xf32>, tensor<8x4xf32>, tensor<3x8xf32>) -> (tensor<1x8xf32>, tensor<3x8xf32>)
  %yk, %nk = k3.short_conv %xk, %w, state(%c) silu : (tensor<1x8xf32>, tensor<8x4xf32>, tensor<3x8xf32>) -> (tensor<1x8xf32>, tensor<3x8xf32>)
  %yv, %nv = k3.short_conv %xv, %w, state(%c) silu : (tensor<1x8xf32>, tensor<8x4xf32>, tensor<3x8xf32>) -> (tensor<1x8xf32>, tensor<3x8xf32>)
  %q = tensor.expand_shape %yq [[0], [1, 2]] output_shape [1, 2, 4] : tensor<1x8xf32> into tensor<1x2x4xf32>
  %k = tensor.expand_shape %yk [[0], [1, 2]] output_shape [1, 2, 4] : tensor<1x8xf32> into tensor<1x2x4xf32>
  %v = tensor.expand_shape %yv [[0], [1, 2]] output_shape [1, 2, 4] : tensor<1x8xf32> into tensor<1x2x4xf32>
  %qn = k3.l2_norm %q {eps = 1.0e-06 : f32} : tensor<1x2x4xf32>
  %kn = k3.l2_norm %k {eps = 1.0e-06 : f32} : tensor<1x2x4xf32>
  %g = k3.kda_gate lower_bound lb = -5.0 %f, %a, %dt : (tensor<1x2x4xf32>, tensor<2xf32>, tensor<2x4xf32>) -> tensor<1x2x4xf32>
  %beta = k3.sigmoid %b : tensor<1x2xf32>
  %o, %s1 = k3.kda %qn, %kn, %v, %g, %beta, state(%s0) scale = 0.5
      : (tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2xf32>, tensor<2x4x4xf32>)
      -> (tensor<1x2x4xf32>, tensor<2x4x4xf32>)
  %y = k3.rms_norm %o, %nw gate(%og) {eps = 1.0e-05 : f32} : (tensor<1x2x4xf32>, tensor<4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  return %y, %nq, %nk, %nv, %s1 : tensor<1x2x4xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<2x4x4xf32>
}

// -----

// A chain value used elsewhere (here the normalised q) keeps the chain.
// CHECK-LABEL: func.func @shared
//   CHECK-NOT:   k3.kda_decode
//       CHECK:   k3.kda %
func.func @shared(%xq: tensor<1x8xf32>, %xk: tensor<1x8xf32>, %xv: tensor<1x8xf32>, %w: tensor<8x4xf32>,
                  %c: tensor<3x8xf32>, %f: tensor<1x2x4xf32>, %a: tensor<2xf32>, %dt: tensor<2x4xf32>,
                  %b: tensor<1x2xf32>, %s0: tensor<2x4x4xf32>, %nw: tensor<4xf32>, %og: tensor<1x2x4xf32>)
    -> (tensor<1x2x4xf32>, tensor<1x2x4xf32>) {
  %yq, %nq = k3.short_conv %xq, %w, state(%c) silu : (tensor<1x8xf32>, tensor<8x4xf32>, tensor<3x8xf32>) -> (tensor<1x8xf32>, tensor<3x8xf32>)
  %yk, %nk = k3.short_conv %xk, %w, state(%c) silu : (tensor<1x8xf32>, tensor<8x4xf32>, tensor<3x8xf32>) -> (tensor<1x8xf32>, tensor<3x8xf32>)
  %yv, %nv = k3.short_conv %xv, %w, state(%c) silu : (tensor<1x8xf32>, tensor<8x4xf32>, tensor<3x8xf32>) -> (tensor<1x8xf32>, tensor<3x8xf32>)
  %q = tensor.expand_shape %yq [[0], [1, 2]] output_shape [1, 2, 4] : tensor<1x8xf32> into tensor<1x2x4xf32>
  %k = tensor.expand_shape %yk [[0], [1, 2]] output_shape [1, 2, 4] : tensor<1x8xf32> into tensor<1x2x4xf32>
  %v = tensor.expand_shape %yv [[0], [1, 2]] output_shape [1, 2, 4] : tensor<1x8xf32> into tensor<1x2x4xf32>
  %qn = k3.l2_norm %q {eps = 1.0e-06 : f32} : tensor<1x2x4xf32>
  %kn = k3.l2_norm %k {eps = 1.0e-06 : f32} : tensor<1x2x4xf32>
  %g = k3.kda_gate lower_bound lb = -5.0 %f, %a, %dt : (tensor<1x2x4xf32>, tensor<2xf32>, tensor<2x4xf32>) -> tensor<1x2x4xf32>
  %beta = k3.sigmoid %b : tensor<1x2xf32>
  %o, %s1 = k3.kda %qn, %kn, %v, %g, %beta, state(%s0) scale = 0.5
      : (tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2xf32>, tensor<2x4x4xf32>)
      -> (tensor<1x2x4xf32>, tensor<2x4x4xf32>)
  %y = k3.rms_norm %o, %nw gate(%og) {eps = 1.0e-05 : f32} : (tensor<1x2x4xf32>, tensor<4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  return %y, %qn : tensor<1x2x4xf32>, tensor<1x2x4xf32>
}

// -----

// Convs of different widths (v: 3 taps) do not fit the fused op: no fusion.
// CHECK-LABEL: func.func @widths
//   CHECK-NOT:   k3.kda_decode
//       CHECK:   k3.kda %
func.func @widths(%xq: tensor<1x8xf32>, %xk: tensor<1x8xf32>, %xv: tensor<1x8xf32>, %w: tensor<8x4xf32>, %w3: tensor<8x3xf32>,
                  %c: tensor<3x8xf32>, %c2: tensor<2x8xf32>, %f: tensor<1x2x4xf32>, %a: tensor<2xf32>, %dt: tensor<2x4xf32>,
                  %b: tensor<1x2xf32>, %s0: tensor<2x4x4xf32>, %nw: tensor<4xf32>, %og: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  %yq, %nq = k3.short_conv %xq, %w, state(%c) silu : (tensor<1x8xf32>, tensor<8x4xf32>, tensor<3x8xf32>) -> (tensor<1x8xf32>, tensor<3x8xf32>)
  %yk, %nk = k3.short_conv %xk, %w, state(%c) silu : (tensor<1x8xf32>, tensor<8x4xf32>, tensor<3x8xf32>) -> (tensor<1x8xf32>, tensor<3x8xf32>)
  %yv, %nv = k3.short_conv %xv, %w3, state(%c2) silu : (tensor<1x8xf32>, tensor<8x3xf32>, tensor<2x8xf32>) -> (tensor<1x8xf32>, tensor<2x8xf32>)
  %q = tensor.expand_shape %yq [[0], [1, 2]] output_shape [1, 2, 4] : tensor<1x8xf32> into tensor<1x2x4xf32>
  %k = tensor.expand_shape %yk [[0], [1, 2]] output_shape [1, 2, 4] : tensor<1x8xf32> into tensor<1x2x4xf32>
  %v = tensor.expand_shape %yv [[0], [1, 2]] output_shape [1, 2, 4] : tensor<1x8xf32> into tensor<1x2x4xf32>
  %qn = k3.l2_norm %q {eps = 1.0e-06 : f32} : tensor<1x2x4xf32>
  %kn = k3.l2_norm %k {eps = 1.0e-06 : f32} : tensor<1x2x4xf32>
  %g = k3.kda_gate lower_bound lb = -5.0 %f, %a, %dt : (tensor<1x2x4xf32>, tensor<2xf32>, tensor<2x4xf32>) -> tensor<1x2x4xf32>
  %beta = k3.sigmoid %b : tensor<1x2xf32>
  %o, %s1 = k3.kda %qn, %kn, %v, %g, %beta, state(%s0) scale = 0.5
      : (tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2xf32>, tensor<2x4x4xf32>)
      -> (tensor<1x2x4xf32>, tensor<2x4x4xf32>)
  %y = k3.rms_norm %o, %nw gate(%og) {eps = 1.0e-05 : f32} : (tensor<1x2x4xf32>, tensor<4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  return %y : tensor<1x2x4xf32>
}
