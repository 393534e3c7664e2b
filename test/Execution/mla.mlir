// RUN: k3-opt %s --k3-cpu-to-llvm | %run_main | FileCheck %s

// Expanded MLA for 2 new tokens after 2 cached ones (2 heads, nope 1, rope 1,
// latent 2, v 1), causal at offset S = 2, with the output gate; expected from
// a float64 transcription of MLA.md §2: [[0.175771, 0.126224],
// [-0.0615623, 0.386312]]. The new cache is the old rows then [c | k_rope].
// CHECK:      {{\[\[\[}}0.175771],
// CHECK-NEXT:   [0.126224]],
// CHECK-NEXT:  {{\[\[}}-0.0615623],
// CHECK-NEXT:   [0.386312]]]
// CHECK:      {{\[\[}}1,   0,   0.5],
// CHECK-NEXT:  [0,   1,   -0.5],
// CHECK-NEXT:  [0.5,   0.5,   1],
// CHECK-NEXT:  [1,   -1,   0]]
func.func private @printMemrefF32(memref<*xf32>)
func.func @main() {
  %q = arith.constant dense<[[[1.0, 0.5], [0.0, 1.0]], [[2.0, -1.0], [1.0, 1.0]]]> : tensor<2x2x2xf32>
  %c = arith.constant dense<[[0.5, 0.5], [1.0, -1.0]]> : tensor<2x2xf32>
  %kr = arith.constant dense<[[1.0], [0.0]]> : tensor<2x1xf32>
  %kvb = arith.constant dense<[[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [1.0, -1.0]]> : tensor<4x2xbf16>
  %cache = arith.constant dense<[[1.0, 0.0, 0.5], [0.0, 1.0, -0.5]]> : tensor<2x3xf32>
  %g = arith.constant dense<[[[0.0], [1.0]], [[-1.0], [2.0]]]> : tensor<2x2x1xf32>
  %qd = tensor.cast %q : tensor<2x2x2xf32> to tensor<?x2x2xf32>
  %cd = tensor.cast %c : tensor<2x2xf32> to tensor<?x2xf32>
  %krd = tensor.cast %kr : tensor<2x1xf32> to tensor<?x1xf32>
  %cached = tensor.cast %cache : tensor<2x3xf32> to tensor<?x3xf32>
  %gd = tensor.cast %g : tensor<2x2x1xf32> to tensor<?x2x1xf32>
  %o, %c1 = k3.mla %qd, %cd, %krd, kv_b(%kvb), cache(%cached) gate(%gd) scale = 0.7 causal
      : (tensor<?x2x2xf32>, tensor<?x2xf32>, tensor<?x1xf32>, tensor<4x2xbf16>, tensor<?x3xf32>, tensor<?x2x1xf32>)
      -> (tensor<?x2x1xf32>, tensor<?x3xf32>)
  %om = bufferization.to_buffer %o : tensor<?x2x1xf32> to memref<?x2x1xf32>
  %oc = memref.cast %om : memref<?x2x1xf32> to memref<*xf32>
  call @printMemrefF32(%oc) : (memref<*xf32>) -> ()
  %cm = bufferization.to_buffer %c1 : tensor<?x3xf32> to memref<?x3xf32>
  %cc = memref.cast %cm : memref<?x3xf32> to memref<*xf32>
  call @printMemrefF32(%cc) : (memref<*xf32>) -> ()
  return
}
