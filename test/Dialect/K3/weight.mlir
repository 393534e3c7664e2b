// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// A named weight keeps its checkpoint name and its use type.
// CHECK-LABEL: func.func @weight
//       CHECK:   %[[W:.+]] = k3.weight "language_model.model.embed_tokens.weight" : tensor<256x64xbf16>
//       CHECK:   return %[[W]]
func.func @weight() -> tensor<256x64xbf16> {
  %w = k3.weight "language_model.model.embed_tokens.weight" : tensor<256x64xbf16>
  return %w : tensor<256x64xbf16>
}

// -----

// MXFP4 expert weights are stored with builtin f4E2M1FN / f8E8M0FNU types.
// CHECK-LABEL: func.func @packed
//       CHECK:   k3.weight "experts.w1.weight_packed" : tensor<8x64x32xf4E2M1FN>
//       CHECK:   k3.weight "experts.w1.weight_scale" : tensor<8x64x1xf8E8M0FNU>
func.func @packed() -> (tensor<8x64x32xf4E2M1FN>, tensor<8x64x1xf8E8M0FNU>) {
  %w = k3.weight "experts.w1.weight_packed" : tensor<8x64x32xf4E2M1FN>
  %s = k3.weight "experts.w1.weight_scale" : tensor<8x64x1xf8E8M0FNU>
  return %w, %s : tensor<8x64x32xf4E2M1FN>, tensor<8x64x1xf8E8M0FNU>
}
