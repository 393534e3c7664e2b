// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// The chunked form: chunk and sub-chunk sizes, the tile form, and the state
// at every chunk boundary as a third result.
// CHECK-LABEL: func.func @chunked
//       CHECK:   %{{.+}}, %{{.+}}, %[[B:.+]] = k3.kda_chunked %{{.+}}, state(%{{.+}}) scale = 2.500000e-01 chunk = 64 sub_chunk = 16 factored
//  CHECK-SAME:     -> (tensor<?x4x8xbf16>, tensor<4x16x8xf32>, tensor<?x4x16x8xf32>)
//       CHECK:   return %[[B]]
func.func @chunked(%q: tensor<?x4x16xbf16>, %k: tensor<?x4x16xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4x16xf32>,
                   %beta: tensor<?x4xf32>, %s0: tensor<4x16x8xf32>) -> tensor<?x4x16x8xf32> {
  %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.25 chunk = 64 sub_chunk = 16 factored
      : (tensor<?x4x16xbf16>, tensor<?x4x16xbf16>, tensor<?x4x8xbf16>, tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>)
      -> (tensor<?x4x8xbf16>, tensor<4x16x8xf32>, tensor<?x4x16x8xf32>)
  return %b : tensor<?x4x16x8xf32>
}

// -----

// Static T = 33 in chunks of 16: three boundary states; the safe form, GVA.
// CHECK-LABEL: func.func @safe
//       CHECK:   k3.kda_chunked {{.+}} chunk = 16 sub_chunk = 8 safe
//  CHECK-SAME:     -> (tensor<33x4x16xf32>, tensor<4x16x16xf32>, tensor<3x4x16x16xf32>)
func.func @safe(%q: tensor<33x2x16xf32>, %k: tensor<33x2x16xf32>, %v: tensor<33x4x16xf32>, %g: tensor<33x4x16xf32>,
                %beta: tensor<33x4xf32>, %s0: tensor<4x16x16xf32>) -> tensor<33x4x16xf32> {
  %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.25 chunk = 16 sub_chunk = 8 safe
      : (tensor<33x2x16xf32>, tensor<33x2x16xf32>, tensor<33x4x16xf32>, tensor<33x4x16xf32>, tensor<33x4xf32>, tensor<4x16x16xf32>)
      -> (tensor<33x4x16xf32>, tensor<4x16x16xf32>, tensor<3x4x16x16xf32>)
  return %o : tensor<33x4x16xf32>
}
