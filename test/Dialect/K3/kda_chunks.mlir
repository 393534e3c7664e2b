// RUN: k3-opt %s | FileCheck %s
// RUN: k3-opt %s | k3-opt | FileCheck %s
// RUN: k3-opt %s --mlir-print-op-generic | k3-opt | FileCheck %s

// The tensor form (destinations and results, with boundary states) and the
// memref form (no results, without them) of the GPU's chunked KDA; the
// workspace is a destination like the others.
// CHECK-LABEL: func.func @tensors
//       CHECK:   k3.kda_chunks %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} outs(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) scale = 2.500000e-01 every = 16
//  CHECK-SAME:     -> (tensor<?x4x16xbf16>, tensor<4x16x16xf32>, tensor<?x4x784xf32>, tensor<?x4x16x16xf32>)
func.func @tensors(%q: tensor<?x2x16xbf16>, %k: tensor<?x2x16xbf16>, %v: tensor<?x4x16xbf16>,
                   %g: tensor<?x4x16xf32>, %beta: tensor<?x4xf32>, %o: tensor<?x4x16xbf16>,
                   %s: tensor<4x16x16xf32>, %ws: tensor<?x4x784xf32>, %b: tensor<?x4x16x16xf32>)
    -> (tensor<?x4x16xbf16>, tensor<4x16x16xf32>, tensor<?x4x16x16xf32>) {
  %o1, %s1, %wsr, %b1 = k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s, %ws, %b) scale = 0.25 every = 16
      : (tensor<?x2x16xbf16>, tensor<?x2x16xbf16>, tensor<?x4x16xbf16>, tensor<?x4x16xf32>,
         tensor<?x4xf32>, tensor<?x4x16xbf16>, tensor<4x16x16xf32>, tensor<?x4x784xf32>, tensor<?x4x16x16xf32>)
      -> (tensor<?x4x16xbf16>, tensor<4x16x16xf32>, tensor<?x4x784xf32>, tensor<?x4x16x16xf32>)
  return %o1, %s1, %b1 : tensor<?x4x16xbf16>, tensor<4x16x16xf32>, tensor<?x4x16x16xf32>
}

// The memref form, and `pairwise` (the unbounded gate's kernels).
// CHECK-LABEL: func.func @memrefs
//       CHECK:   k3.kda_chunks %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} outs(%{{.+}}, %{{.+}}, %{{.+}}) scale = 1.250000e-01 every = 0 :
//  CHECK-SAME:     memref<1x64x32xf32>, memref<?x1x2752xf32>) -> ()
//       CHECK:   k3.kda_chunks %{{.+}} scale = 1.250000e-01 every = 0 pairwise :
func.func @memrefs(%q: memref<?x1x64xf32>, %k: memref<?x1x64xf32>, %v: memref<?x1x32xf32>,
                   %g: memref<?x1x64xf32>, %beta: memref<?x1xf32>, %o: memref<?x1x32xf32>,
                   %s: memref<1x64x32xf32>, %ws: memref<?x1x2752xf32>) {
  k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s, %ws) scale = 0.125 every = 0
      : (memref<?x1x64xf32>, memref<?x1x64xf32>, memref<?x1x32xf32>, memref<?x1x64xf32>,
         memref<?x1xf32>, memref<?x1x32xf32>, memref<1x64x32xf32>, memref<?x1x2752xf32>) -> ()
  k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s, %ws) scale = 0.125 every = 0 pairwise
      : (memref<?x1x64xf32>, memref<?x1x64xf32>, memref<?x1x32xf32>, memref<?x1x64xf32>,
         memref<?x1xf32>, memref<?x1x32xf32>, memref<1x64x32xf32>, memref<?x1x2752xf32>) -> ()
  return
}
