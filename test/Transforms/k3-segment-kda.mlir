// RUN: k3-opt %s --split-input-file --k3-segment-kda | FileCheck %s
// RUN: k3-opt %s --split-input-file --k3-segment-kda=segments=1 | FileCheck %s --check-prefix=ONE
// RUN: not k3-opt %s --split-input-file --k3-segment-kda=segments=0 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: k3-segment-kda: segments 0 must be in [1, 1024]

// Two segments: each runs from the zero state (outputs and B) and, with zero
// values, from the identity (outputs Q̃ and P), on its own slice of the
// tokens; then the scan corrects the outputs and composes the states.
// CHECK-LABEL: func.func @two
//       CHECK:   %[[T:.+]] = tensor.dim %{{.+}}, %c0
//       CHECK:   %[[I:.+]] = linalg.generic
//       CHECK:     arith.cmpi eq
//       CHECK:   tensor.extract_slice %{{.+}}[%{{.+}}, 0, 0] [%{{.+}}, 2, 8] [1, 1, 1]
//       CHECK:   %{{.+}}, %[[B0:.+]] = k3.kda {{.+}} -> (tensor<?x2x8xf32>, tensor<2x8x8xf32>)
//       CHECK:   %{{.+}}, %[[P0:.+]] = k3.kda {{.+}}, state(%[[I]]) {{.+}} -> (tensor<?x2x8xf32>, tensor<2x8x8xf32>)
//       CHECK:   k3.kda
//       CHECK:   k3.kda
//       CHECK:   linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction", "parallel"]
//       CHECK:   tensor.insert_slice
//       CHECK:   %[[S1:.+]] = linalg.generic {{.+}} ins(%[[P0]], %{{.+}} : tensor<2x8x8xf32>, tensor<2x8x8xf32>) outs(%[[B0]] : tensor<2x8x8xf32>)
//       CHECK:   tensor.insert_slice
//       CHECK:   %[[S2:.+]] = linalg.generic
//       CHECK:   return %{{.+}}, %[[S2]]
// ONE-LABEL: func.func @two
//       ONE:   k3.kda
//   ONE-NOT:   k3.kda
func.func @two(%q: tensor<?x2x8xf32>, %k: tensor<?x2x8xf32>, %v: tensor<?x2x8xf32>, %g: tensor<?x2x8xf32>,
               %beta: tensor<?x2xf32>, %s0: tensor<2x8x8xf32>) -> (tensor<?x2x8xf32>, tensor<2x8x8xf32>) {
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x2xf32>, tensor<2x8x8xf32>)
      -> (tensor<?x2x8xf32>, tensor<2x8x8xf32>)
  return %o, %s1 : tensor<?x2x8xf32>, tensor<2x8x8xf32>
}

// -----

// Decode keeps its one recurrent step.
// CHECK-LABEL: func.func @decode
//       CHECK:   k3.kda
//   CHECK-NOT:   k3.kda
// ONE-LABEL: func.func @decode
func.func @decode(%q: tensor<1x2x8xf32>, %k: tensor<1x2x8xf32>, %v: tensor<1x2x8xf32>, %g: tensor<1x2x8xf32>,
                  %beta: tensor<1x2xf32>, %s0: tensor<2x8x8xf32>) -> (tensor<1x2x8xf32>, tensor<2x8x8xf32>) {
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2xf32>, tensor<2x8x8xf32>)
      -> (tensor<1x2x8xf32>, tensor<2x8x8xf32>)
  return %o, %s1 : tensor<1x2x8xf32>, tensor<2x8x8xf32>
}

// -----

// A static token count keeps its static result type (through a cast).
// CHECK-LABEL: func.func @static
//       CHECK:   %[[O:.+]] = tensor.cast %{{.+}} : tensor<?x2x8xf32> to tensor<40x2x8xf32>
//       CHECK:   return %[[O]]
// ONE-LABEL: func.func @static
func.func @static(%q: tensor<40x2x8xf32>, %k: tensor<40x2x8xf32>, %v: tensor<40x2x8xf32>, %g: tensor<40x2x8xf32>,
                  %beta: tensor<40x2xf32>, %s0: tensor<2x8x8xf32>) -> (tensor<40x2x8xf32>, tensor<2x8x8xf32>) {
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<40x2x8xf32>, tensor<40x2x8xf32>, tensor<40x2x8xf32>, tensor<40x2x8xf32>, tensor<40x2xf32>, tensor<2x8x8xf32>)
      -> (tensor<40x2x8xf32>, tensor<2x8x8xf32>)
  return %o, %s1 : tensor<40x2x8xf32>, tensor<2x8x8xf32>
}
