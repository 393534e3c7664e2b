// RUN: k3-opt %s --k3-dequantize-weights | FileCheck %s
// RUN: k3-opt %s --k3-dequantize-weights=all=true | FileCheck %s --check-prefix=ALL

// The GEMMs read MXFP4 weights packed; only the importer's widening of a
// packed weight for an op without MXFP4 support (arith.scaling_extf) becomes
// a bf16 weight decoded at bundle time. With `all`, every packed weight does
// (k3-compile --quantize-experts=none).
// CHECK-LABEL: func.func @mixed
//   CHECK-DAG:   %[[Q:.+]] = k3.weight "lin.weight_packed" : tensor<8x64xf4E2M1FN>
//   CHECK-DAG:   %[[S:.+]] = k3.weight "lin.weight_scale" : tensor<8x2xf8E8M0FNU>
//       CHECK:   k3.linear %{{.+}}, %[[Q]] scales(%[[S]])
//       CHECK:   %[[B:.+]] = k3.weight "mlp.weight_packed#bf16" : tensor<8x64xbf16>
//       CHECK:   arith.extf %[[B]] : tensor<8x64xbf16> to tensor<8x64xf32>
//   CHECK-NOT:   arith.scaling_extf
// ALL-LABEL: func.func @mixed
//       ALL:   %[[L:.+]] = k3.weight "lin.weight_packed#bf16" : tensor<8x64xbf16>
//       ALL:   k3.linear %{{.+}}, %[[L]] :
//   ALL-NOT:   f4E2M1FN
func.func @mixed(%x: tensor<?x64xf32>) -> (tensor<?x8xf32>, tensor<8x64xf32>) {
  %q = k3.weight "lin.weight_packed" : tensor<8x64xf4E2M1FN>
  %s = k3.weight "lin.weight_scale" : tensor<8x2xf8E8M0FNU>
  %y = k3.linear %x, %q scales(%s)
      : (tensor<?x64xf32>, tensor<8x64xf4E2M1FN>, tensor<8x2xf8E8M0FNU>) -> tensor<?x8xf32>
  %mq = k3.weight "mlp.weight_packed" : tensor<8x64xf4E2M1FN>
  %ms = k3.weight "mlp.weight_scale" : tensor<8x2xf8E8M0FNU>
  %e = tensor.empty() : tensor<8x2x32xf8E8M0FNU>
  %b = linalg.broadcast ins(%ms : tensor<8x2xf8E8M0FNU>) outs(%e : tensor<8x2x32xf8E8M0FNU>) dimensions = [2]
  %f = tensor.collapse_shape %b [[0], [1, 2]] : tensor<8x2x32xf8E8M0FNU> into tensor<8x64xf8E8M0FNU>
  %w = arith.scaling_extf %mq, %f : tensor<8x64xf4E2M1FN>, tensor<8x64xf8E8M0FNU> to tensor<8x64xf32>
  return %y, %w : tensor<?x8xf32>, tensor<8x64xf32>
}
