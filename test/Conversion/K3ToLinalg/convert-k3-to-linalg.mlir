// RUN: k3-opt %s --split-input-file --convert-k3-to-linalg | FileCheck %s

// A bf16-weight linear becomes one contraction over k, accumulated in f32
// from a zero fill; the weight is widened inside the body.
// CHECK-LABEL: func.func @linear
//       CHECK:   %[[ACC:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<?x8xf32>)
//       CHECK:   linalg.generic
//  CHECK-SAME:     iterator_types = ["parallel", "parallel", "reduction"]
//  CHECK-SAME:     ins(%{{.+}}, %{{.+}} : tensor<?x4xf32>, tensor<8x4xbf16>) outs(%[[ACC]] : tensor<?x8xf32>)
//       CHECK:     arith.extf %{{.+}} : bf16 to f32
//       CHECK:     arith.mulf
//       CHECK:     arith.addf
//   CHECK-NOT:   k3.linear
func.func @linear(%x: tensor<?x4xf32>, %w: tensor<8x4xbf16>) -> tensor<?x8xf32> {
  %y = k3.linear %x, %w : (tensor<?x4xf32>, tensor<8x4xbf16>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// RMSNorm: a sum-of-squares reduction over the last dim, then one parallel
// pass with rsqrt(mean + eps), the weight and the sigmoid gate.
// CHECK-LABEL: func.func @rms_norm_gated
//       CHECK:   %[[SS:.+]] = linalg.generic
//  CHECK-SAME:     iterator_types = ["parallel", "parallel", "reduction"]
//       CHECK:   linalg.generic
//  CHECK-SAME:     iterator_types = ["parallel", "parallel", "parallel"]
//  CHECK-SAME:     ins(%{{.+}}, %[[SS]], %{{.+}}, %{{.+}} :
//       CHECK:     math.rsqrt
//       CHECK:     math.exp
//   CHECK-NOT:   k3.rms_norm
func.func @rms_norm_gated(%x: tensor<?x2x16xf32>, %w: tensor<16xf32>, %g: tensor<?x2x16xf32>) -> tensor<?x2x16xf32> {
  %y = k3.rms_norm %x, %w gate(%g) {eps = 1.0e-05 : f32}
      : (tensor<?x2x16xf32>, tensor<16xf32>, tensor<?x2x16xf32>) -> tensor<?x2x16xf32>
  return %y : tensor<?x2x16xf32>
}

// -----

// The embedding gathers with tensor.extract, the id clamped into the table.
// CHECK-LABEL: func.func @embed
//       CHECK:   linalg.generic
//       CHECK:     arith.index_cast
//       CHECK:     arith.maxsi
//       CHECK:     arith.minsi
//       CHECK:     tensor.extract
func.func @embed(%ids: tensor<?xi32>, %t: tensor<16x4xbf16>) -> tensor<?x4xf32> {
  %h = k3.embed %ids, %t : (tensor<?xi32>, tensor<16x4xbf16>) -> tensor<?x4xf32>
  return %h : tensor<?x4xf32>
}

// -----

// The softplus gate selects the identity above 20 (FLA's rule).
// CHECK-LABEL: func.func @softplus_gate
//       CHECK:   math.log1p
//       CHECK:   arith.cmpf ogt
//       CHECK:   arith.select
func.func @softplus_gate(%x: tensor<?x2x4xf32>, %a: tensor<2xf32>, %dt: tensor<2x4xf32>) -> tensor<?x2x4xf32> {
  %g = k3.kda_gate softplus %x, %a, %dt : (tensor<?x2x4xf32>, tensor<2xf32>, tensor<2x4xf32>) -> tensor<?x2x4xf32>
  return %g : tensor<?x2x4xf32>
}

// -----

// MXFP4 linears are dequantized before this pass on the CPU path; one that
// reaches it stays, for a later stage to report.
// CHECK-LABEL: func.func @packed_linear
//       CHECK:   k3.linear %{{.+}}, %{{.+}} scales(
func.func @packed_linear(%x: tensor<?x64xf32>, %w: tensor<8x64xf4E2M1FN>, %s: tensor<8x2xf8E8M0FNU>) -> tensor<?x8xf32> {
  %y = k3.linear %x, %w scales(%s) : (tensor<?x64xf32>, tensor<8x64xf4E2M1FN>, tensor<8x2xf8E8M0FNU>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// KDA becomes an scf.for over tokens whose state is updated in place; the
// decay takes one exponential per key row, then scales the state rows.
// CHECK-LABEL: func.func @kda
//       CHECK:   scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[S:.+]] = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<1x4x4xf32>, tensor<?x1x4xf32>)
//       CHECK:     linalg.generic {{.*}} outs(%{{.+}} : tensor<1x4xf32>)
//       CHECK:       math.exp
//       CHECK:     linalg.generic {{.*}} outs(%[[S]] : tensor<1x4x4xf32>)
//       CHECK:       arith.mulf
//       CHECK:     scf.yield
//   CHECK-NOT:   k3.kda
func.func @kda(%q: tensor<?x1x4xf32>, %k: tensor<?x1x4xf32>, %v: tensor<?x1x4xf32>, %g: tensor<?x1x4xf32>,
               %b: tensor<?x1xf32>, %s: tensor<1x4x4xf32>) -> tensor<?x1x4xf32> {
  %o, %s1 = k3.kda %q, %k, %v, %g, %b, state(%s) scale = 0.5
      : (tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x1xf32>, tensor<1x4x4xf32>)
      -> (tensor<?x1x4xf32>, tensor<1x4x4xf32>)
  return %o : tensor<?x1x4xf32>
}
