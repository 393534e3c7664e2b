// RUN: k3-opt %s --split-input-file --convert-k3-to-linalg="kda-decode=kernel" | FileCheck %s

// The GPU's decode form: k3.kda_decode becomes one k3.kda_step with the
// same inputs and attributes, fresh destinations for the output and the
// three new windows, and the state as its own destination (updated in
// place); nothing else of the step is lowered.
// CHECK-LABEL: func.func @decode
//  CHECK-SAME:   (%[[XQ:[^:]+]]: tensor<1x8xbf16>, %[[XK:[^:]+]]: tensor<1x8xbf16>, %[[XV:[^:]+]]: tensor<1x16xbf16>, %[[W:[^:]+]]: tensor<8x4xf32>, %[[WV:[^:]+]]: tensor<16x4xf32>, %[[C:[^:]+]]: tensor<3x8xf32>, %[[CV:[^:]+]]: tensor<3x16xf32>, %[[F:[^:]+]]: tensor<1x4x4xbf16>, %[[A:[^:]+]]: tensor<4xf32>, %[[DT:[^:]+]]: tensor<4x4xf32>, %[[B:[^:]+]]: tensor<1x4xbf16>, %[[S:[^:]+]]: tensor<4x4x4xf32>, %[[NW:[^:]+]]: tensor<4xbf16>, %[[OG:[^:]+]]: tensor<1x4x4xbf16>)
//   CHECK-DAG:   %[[O0:.+]] = tensor.empty() : tensor<1x4x4xbf16>
//   CHECK-DAG:   %[[Q0:.+]] = tensor.empty() : tensor<3x8xf32>
//   CHECK-DAG:   %[[V0:.+]] = tensor.empty() : tensor<3x16xf32>
//       CHECK:   %[[R:.+]]:5 = k3.kda_step x(%[[XQ]], %[[XK]], %[[XV]]) filters(%[[W]], %[[W]], %[[WV]]) windows(%[[C]], %[[C]], %[[CV]]) gate(%[[F]], %[[A]], %[[DT]]) beta(%[[B]]) norm(%[[NW]]) out_gate(%[[OG]]) outs(%[[O0]], %{{.+}}, %{{.+}}, %[[V0]], %[[S]]) lower_bound lb = -5.000000e+00 scale = 2.500000e-01 eps = 9.99999974E-6
//   CHECK-NOT:   linalg.generic
//       CHECK:   return %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[R]]#3, %[[R]]#4
func.func @decode(%xq: tensor<1x8xbf16>, %xk: tensor<1x8xbf16>, %xv: tensor<1x16xbf16>, %w: tensor<8x4xf32>,
                  %wv: tensor<16x4xf32>, %c: tensor<3x8xf32>, %cv: tensor<3x16xf32>, %f: tensor<1x4x4xbf16>,
                  %a: tensor<4xf32>, %dt: tensor<4x4xf32>, %b: tensor<1x4xbf16>, %s0: tensor<4x4x4xf32>,
                  %nw: tensor<4xbf16>, %og: tensor<1x4x4xbf16>)
    -> (tensor<1x4x4xbf16>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x16xf32>, tensor<4x4x4xf32>) {
  %o, %nq, %nk, %nv, %s1 = k3.kda_decode x(%xq, %xk, %xv) filters(%w, %w, %wv) windows(%c, %c, %cv)
      gate(%f, %a, %dt) beta(%b) state(%s0) norm(%nw) out_gate(%og) lower_bound lb = -5.0 scale = 0.25 eps = 1.0e-05
      : (tensor<1x8xbf16>, tensor<1x8xbf16>, tensor<1x16xbf16>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<16x4xf32>,
         tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x16xf32>, tensor<1x4x4xbf16>, tensor<4xf32>, tensor<4x4xf32>,
         tensor<1x4xbf16>, tensor<4x4x4xf32>, tensor<4xbf16>, tensor<1x4x4xbf16>)
      -> (tensor<1x4x4xbf16>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x16xf32>, tensor<4x4x4xf32>)
  return %o, %nq, %nk, %nv, %s1 : tensor<1x4x4xbf16>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x16xf32>, tensor<4x4x4xf32>
}

// -----

// Dynamic head shapes fit no decode form: the op stays (a later stage
// reports it).
// CHECK-LABEL: func.func @dynamic
//   CHECK-NOT:   k3.kda_step
//       CHECK:   k3.kda_decode
func.func @dynamic(%xq: tensor<1x8xf32>, %w: tensor<8x4xf32>, %c: tensor<3x8xf32>, %f: tensor<1x?x4xf32>,
                   %a: tensor<?xf32>, %dt: tensor<?x4xf32>, %b: tensor<1x?xf32>, %s0: tensor<?x4x4xf32>,
                   %nw: tensor<4xf32>, %og: tensor<1x?x4xf32>) -> tensor<?x4x4xf32> {
  %o, %nq, %nk, %nv, %s1 = k3.kda_decode x(%xq, %xq, %xq) filters(%w, %w, %w) windows(%c, %c, %c)
      gate(%f, %a, %dt) beta(%b) state(%s0) norm(%nw) out_gate(%og) softplus scale = 0.25 eps = 1.0e-05
      : (tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>,
         tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<1x?x4xf32>, tensor<?xf32>, tensor<?x4xf32>,
         tensor<1x?xf32>, tensor<?x4x4xf32>, tensor<4xf32>, tensor<1x?x4xf32>)
      -> (tensor<1x?x4xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<?x4x4xf32>)
  return %s1 : tensor<?x4x4xf32>
}
