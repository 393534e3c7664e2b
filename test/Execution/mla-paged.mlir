// RUN: k3-opt %s --k3-cpu-to-llvm | %run_main | FileCheck %s

// k3.mla_paged against k3.mla, request by request. Two requests over a pool
// of 4 pages of 2 rows (2 heads, nope 1, rope 1, latent 2, v 1, f32 rows):
// request 0 has 3 cached rows, in pages 2 then 0 (its second page half
// used); request 1 has 1, in page 3, and a table entry past its pages that
// points at a page of junk. Rows no request owns hold 7s and 9s: reading
// one would show (the row after request 0's last holds NaNs, as an unused
// pool row may). Each request's output and new row must print as k3.mla's
// over its own contiguous cache does (the last row of that op's new cache).
//
// The paged op: outputs [2, 2, 1], then the new rows [2, 3].
// CHECK:      sizes = [2, 2, 1]
// CHECK-NEXT: {{\[\[\[}}[[O00:[-0-9.e]+]]],
// CHECK-NEXT:   {{\[}}[[O01:[-0-9.e]+]]]],
// CHECK-NEXT:  {{\[\[}}[[O10:[-0-9.e]+]]],
// CHECK-NEXT:   {{\[}}[[O11:[-0-9.e]+]]]]]
// CHECK:      sizes = [2, 3]
// CHECK-NEXT: {{\[\[}}[[R0:.+]]],
// CHECK-NEXT:  {{\[}}[[R1:.+]]]]{{$}}
// Request 0 through k3.mla.
// CHECK:      sizes = [1, 2, 1]
// CHECK-NEXT: {{\[\[\[}}[[O00]]],
// CHECK-NEXT:   {{\[}}[[O01]]]]]
// CHECK:      sizes = [4, 3]
// CHECK:      {{\[}}[[R0]]]]
// Request 1 through k3.mla.
// CHECK:      sizes = [1, 2, 1]
// CHECK-NEXT: {{\[\[\[}}[[O10]]],
// CHECK-NEXT:   {{\[}}[[O11]]]]]
// CHECK:      sizes = [2, 3]
// CHECK:      {{\[}}[[R1]]]]
func.func private @printMemrefF32(memref<*xf32>)

func.func @print3(%t: tensor<?x2x1xf32>) {
  %m = bufferization.to_buffer %t : tensor<?x2x1xf32> to memref<?x2x1xf32>
  %u = memref.cast %m : memref<?x2x1xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}
func.func @print2(%t: tensor<?x3xf32>) {
  %m = bufferization.to_buffer %t : tensor<?x3xf32> to memref<?x3xf32>
  %u = memref.cast %m : memref<?x3xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @main() {
  %q = arith.constant dense<[[[1.0, 0.5], [0.0, 1.0]], [[2.0, -1.0], [1.0, 1.0]]]> : tensor<2x2x2xf32>
  %c = arith.constant dense<[[0.5, 0.5], [1.0, -1.0]]> : tensor<2x2xf32>
  %kr = arith.constant dense<[[1.0], [0.0]]> : tensor<2x1xf32>
  %kvb = arith.constant dense<[[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [1.0, -1.0]]> : tensor<4x2xbf16>
  %g = arith.constant dense<[[[0.0], [1.0]], [[-1.0], [2.0]]]> : tensor<2x2x1xf32>
  %pages = arith.constant dense<[[[0.5, -0.5, 1.0], [0x7FC00000, 0x7FC00000, 0x7FC00000]],
                                 [[7.0, 7.0, 7.0], [7.0, 7.0, 7.0]],
                                 [[1.0, 0.0, 0.5], [0.0, 1.0, -0.5]],
                                 [[-1.0, 0.5, 0.25], [9.0, 9.0, 9.0]]]> : tensor<4x2x3xf32>
  %table = arith.constant dense<[[2, 0], [3, 1]]> : tensor<2x2xi32>
  %len = arith.constant dense<[3, 1]> : tensor<2xi32>
  %qd = tensor.cast %q : tensor<2x2x2xf32> to tensor<?x2x2xf32>
  %cd = tensor.cast %c : tensor<2x2xf32> to tensor<?x2xf32>
  %krd = tensor.cast %kr : tensor<2x1xf32> to tensor<?x1xf32>
  %gd = tensor.cast %g : tensor<2x2x1xf32> to tensor<?x2x1xf32>
  %pd = tensor.cast %pages : tensor<4x2x3xf32> to tensor<?x?x3xf32>
  %td = tensor.cast %table : tensor<2x2xi32> to tensor<?x?xi32>
  %ld = tensor.cast %len : tensor<2xi32> to tensor<?xi32>
  %o, %rows = k3.mla_paged %qd, %cd, %krd, kv_b(%kvb), pages(%pd) table(%td) lengths(%ld)
      gate(%gd) scale = 0.7
      : (tensor<?x2x2xf32>, tensor<?x2xf32>, tensor<?x1xf32>, tensor<4x2xbf16>,
         tensor<?x?x3xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?x2x1xf32>)
      -> (tensor<?x2x1xf32>, tensor<?x3xf32>)
  call @print3(%o) : (tensor<?x2x1xf32>) -> ()
  call @print2(%rows) : (tensor<?x3xf32>) -> ()

  // The same two tokens one request at a time, over contiguous caches.
  %cache0 = arith.constant dense<[[1.0, 0.0, 0.5], [0.0, 1.0, -0.5], [0.5, -0.5, 1.0]]> : tensor<3x3xf32>
  %cache1 = arith.constant dense<[[-1.0, 0.5, 0.25]]> : tensor<1x3xf32>
  %c0d = tensor.cast %cache0 : tensor<3x3xf32> to tensor<?x3xf32>
  %c1d = tensor.cast %cache1 : tensor<1x3xf32> to tensor<?x3xf32>
  %q0 = tensor.extract_slice %qd[0, 0, 0] [1, 2, 2] [1, 1, 1] : tensor<?x2x2xf32> to tensor<1x2x2xf32>
  %l0 = tensor.extract_slice %cd[0, 0] [1, 2] [1, 1] : tensor<?x2xf32> to tensor<1x2xf32>
  %k0 = tensor.extract_slice %krd[0, 0] [1, 1] [1, 1] : tensor<?x1xf32> to tensor<1x1xf32>
  %g0 = tensor.extract_slice %gd[0, 0, 0] [1, 2, 1] [1, 1, 1] : tensor<?x2x1xf32> to tensor<1x2x1xf32>
  %o0, %n0 = k3.mla %q0, %l0, %k0, kv_b(%kvb), cache(%c0d) gate(%g0) scale = 0.7 causal
      : (tensor<1x2x2xf32>, tensor<1x2xf32>, tensor<1x1xf32>, tensor<4x2xbf16>, tensor<?x3xf32>,
         tensor<1x2x1xf32>) -> (tensor<1x2x1xf32>, tensor<?x3xf32>)
  %o0d = tensor.cast %o0 : tensor<1x2x1xf32> to tensor<?x2x1xf32>
  call @print3(%o0d) : (tensor<?x2x1xf32>) -> ()
  call @print2(%n0) : (tensor<?x3xf32>) -> ()
  %q1 = tensor.extract_slice %qd[1, 0, 0] [1, 2, 2] [1, 1, 1] : tensor<?x2x2xf32> to tensor<1x2x2xf32>
  %l1 = tensor.extract_slice %cd[1, 0] [1, 2] [1, 1] : tensor<?x2xf32> to tensor<1x2xf32>
  %k1 = tensor.extract_slice %krd[1, 0] [1, 1] [1, 1] : tensor<?x1xf32> to tensor<1x1xf32>
  %g1 = tensor.extract_slice %gd[1, 0, 0] [1, 2, 1] [1, 1, 1] : tensor<?x2x1xf32> to tensor<1x2x1xf32>
  %o1, %n1 = k3.mla %q1, %l1, %k1, kv_b(%kvb), cache(%c1d) gate(%g1) scale = 0.7 causal
      : (tensor<1x2x2xf32>, tensor<1x2xf32>, tensor<1x1xf32>, tensor<4x2xbf16>, tensor<?x3xf32>,
         tensor<1x2x1xf32>) -> (tensor<1x2x1xf32>, tensor<?x3xf32>)
  %o1d = tensor.cast %o1 : tensor<1x2x1xf32> to tensor<?x2x1xf32>
  call @print3(%o1d) : (tensor<?x2x1xf32>) -> ()
  call @print2(%n1) : (tensor<?x3xf32>) -> ()
  return
}
