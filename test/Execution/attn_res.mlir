// RUN: k3-opt %s --k3-cpu-to-llvm | %run_main | FileCheck %s

// The AttnRes test vector of MOE_MXFP4.md §9: snapshots [0.1, 0.2, 0.3, 0.4]
// and [2, 0, -1, 1], running sum [1, -2, 0.5, 3], norm weight 1, query
// [0.5, -0.25, 0, 1] → out = [1.069956, -0.889366, 0.018912, 1.792294].
// A second token whose candidates are all equal gets them back unchanged,
// whatever the softmax weights.
// CHECK: {{\[\[}}1.06996,   -0.889366,   0.0189117,   1.79229],
// CHECK-NEXT: [5,   6,   7,   8]]
func.func private @printMemrefF32(memref<*xf32>)
func.func @main() {
  %b0 = arith.constant dense<[[0.1, 0.2, 0.3, 0.4], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>
  %b1 = arith.constant dense<[[2.0, 0.0, -1.0, 1.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>
  %r = arith.constant dense<[[1.0, -2.0, 0.5, 3.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>
  %n = arith.constant dense<1.0> : tensor<4xbf16>
  %q = arith.constant dense<[0.5, -0.25, 0.0, 1.0]> : tensor<4xbf16>
  %h = k3.attn_res [%b0, %b1, %r] norm(%n) query(%q) {eps = 1.0e-05 : f32}
      : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xbf16>, tensor<4xbf16>) -> tensor<2x4xf32>
  %m = bufferization.to_buffer %h : tensor<2x4xf32> to memref<2x4xf32>
  %c = memref.cast %m : memref<2x4xf32> to memref<*xf32>
  call @printMemrefF32(%c) : (memref<*xf32>) -> ()
  return
}
