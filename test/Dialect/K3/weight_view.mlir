// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// Two weights of one pack, the second at a 64-byte aligned offset; the last
// one ends exactly at the pack's end.
// CHECK-LABEL: func.func @views
//       CHECK:   k3.weight_view %{{.+}}[0] : tensor<96xi8> -> tensor<4xf32>
//       CHECK:   k3.weight_view %{{.+}}[64] : tensor<96xi8> -> tensor<4x4xbf16>
func.func @views(%p: tensor<96xi8>) -> (tensor<4xf32>, tensor<4x4xbf16>) {
  %n = k3.weight_view %p[0] : tensor<96xi8> -> tensor<4xf32>
  %w = k3.weight_view %p[64] : tensor<96xi8> -> tensor<4x4xbf16>
  return %n, %w : tensor<4xf32>, tensor<4x4xbf16>
}

// -----

// MXFP4 codes as their packed bytes and their E8M0 scales.
// CHECK-LABEL: func.func @mxfp4
//       CHECK:   k3.weight_view %{{.+}}[0] : tensor<320xi8> -> tensor<2x8x16xi8>
//       CHECK:   k3.weight_view %{{.+}}[256] : tensor<320xi8> -> tensor<2x8x1xf8E8M0FNU>
func.func @mxfp4(%p: tensor<320xi8>) -> (tensor<2x8x16xi8>, tensor<2x8x1xf8E8M0FNU>) {
  %c = k3.weight_view %p[0] : tensor<320xi8> -> tensor<2x8x16xi8>
  %s = k3.weight_view %p[256] : tensor<320xi8> -> tensor<2x8x1xf8E8M0FNU>
  return %c, %s : tensor<2x8x16xi8>, tensor<2x8x1xf8E8M0FNU>
}
