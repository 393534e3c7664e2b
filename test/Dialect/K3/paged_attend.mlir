// RUN: k3-opt %s | FileCheck %s
// RUN: k3-opt %s | k3-opt | FileCheck %s
// RUN: k3-opt %s --mlir-print-op-generic | k3-opt | FileCheck %s

// k3.mla_paged's attention in destination-passing style: 2 heads, latent 32,
// rope 8, a bf16 pool of pages.
// CHECK-LABEL: func.func @attend
//       CHECK:   k3.paged_attend %{{.+}} pages(%{{.+}}) table(%{{.+}}) lengths(%{{.+}}) rows(%{{.+}}) outs(%{{.+}})
//  CHECK-SAME:     -> tensor<?x2x32xf32>
func.func @attend(%q: tensor<?x2x40xf32>, %pool: tensor<?x16x40xbf16>, %bt: tensor<?x?xi32>,
                  %len: tensor<?xi32>, %rows: tensor<?x40xbf16>, %o: tensor<?x2x32xf32>)
    -> tensor<?x2x32xf32> {
  %r = k3.paged_attend %q pages(%pool) table(%bt) lengths(%len) rows(%rows) outs(%o)
      : (tensor<?x2x40xf32>, tensor<?x16x40xbf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?x40xbf16>, tensor<?x2x32xf32>) -> tensor<?x2x32xf32>
  return %r : tensor<?x2x32xf32>
}

// After bufferization: no results.
// CHECK-LABEL: func.func @buffers
//       CHECK:   k3.paged_attend {{.+}} -> (){{$}}
func.func @buffers(%q: memref<?x2x40xf32>, %pool: memref<?x?x40xf32>, %bt: memref<?x?xi32>,
                   %len: memref<?xi32>, %rows: memref<?x40xf32>, %o: memref<?x2x32xf32>) {
  k3.paged_attend %q pages(%pool) table(%bt) lengths(%len) rows(%rows) outs(%o)
      : (memref<?x2x40xf32>, memref<?x?x40xf32>, memref<?x?xi32>, memref<?xi32>,
         memref<?x40xf32>, memref<?x2x32xf32>) -> ()
  return
}
