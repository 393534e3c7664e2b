// RUN: k3-opt %s | FileCheck %s
// RUN: k3-opt %s | k3-opt | FileCheck %s
// RUN: k3-opt %s --mlir-print-op-generic | k3-opt | FileCheck %s

// The tensor form (destinations and results) and the memref form (no
// results) of absorbed MLA decode's parts.
// CHECK-LABEL: func.func @tensors
//       CHECK:   k3.attend_parts %{{.+}}, %{{.+}} outs(%{{.+}}, %{{.+}}, %{{.+}}) part_keys = 256
//  CHECK-SAME:     -> (tensor<64x?xf32>, tensor<64x?xf32>, tensor<64x?x512xf32>)
func.func @tensors(%q: tensor<64x576xf32>, %rows: tensor<?x576xbf16>, %m: tensor<64x?xf32>,
                   %l: tensor<64x?xf32>, %u: tensor<64x?x512xf32>)
    -> (tensor<64x?xf32>, tensor<64x?xf32>, tensor<64x?x512xf32>) {
  %m1, %l1, %u1 = k3.attend_parts %q, %rows outs(%m, %l, %u) part_keys = 256
      : (tensor<64x576xf32>, tensor<?x576xbf16>, tensor<64x?xf32>, tensor<64x?xf32>,
         tensor<64x?x512xf32>) -> (tensor<64x?xf32>, tensor<64x?xf32>, tensor<64x?x512xf32>)
  return %m1, %l1, %u1 : tensor<64x?xf32>, tensor<64x?xf32>, tensor<64x?x512xf32>
}

// CHECK-LABEL: func.func @memrefs
//       CHECK:   k3.attend_parts %{{.+}}, %{{.+}} outs(%{{.+}}, %{{.+}}, %{{.+}}) part_keys = 16
//  CHECK-SAME:     memref<2x3x32xf32>) -> ()
func.func @memrefs(%q: memref<2x40xf32>, %rows: memref<40x40xf32>, %m: memref<2x3xf32>,
                   %l: memref<2x3xf32>, %u: memref<2x3x32xf32>) {
  k3.attend_parts %q, %rows outs(%m, %l, %u) part_keys = 16
      : (memref<2x40xf32>, memref<40x40xf32>, memref<2x3xf32>, memref<2x3xf32>,
         memref<2x3x32xf32>) -> ()
  return
}

// q_scale: the queries unscaled, the kernel multiplies them as it loads them.
// CHECK-LABEL: func.func @scaled
//       CHECK:   k3.attend_parts %{{.+}}, %{{.+}} outs(%{{.+}}, %{{.+}}, %{{.+}}) part_keys = 16 {q_scale = 1.250000e-01 : f32}
func.func @scaled(%q: memref<2x40xf32>, %rows: memref<40x40xf32>, %m: memref<2x3xf32>,
                  %l: memref<2x3xf32>, %u: memref<2x3x32xf32>) {
  k3.attend_parts %q, %rows outs(%m, %l, %u) part_keys = 16 {q_scale = 0.125 : f32}
      : (memref<2x40xf32>, memref<40x40xf32>, memref<2x3xf32>, memref<2x3xf32>,
         memref<2x3x32xf32>) -> ()
  return
}
