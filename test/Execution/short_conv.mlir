// RUN: k3-opt %s --k3-cpu-to-llvm | %run_main | FileCheck %s

// Width-3 depthwise causal conv over [window | x]: the window [[1, 2], [3, 4]]
// holds the two previous inputs; filters [0.5, -1, 2] and [1, 1, 1] (the last
// tap multiplies the current token) give [[7.5, 12], [10.5, 18]]; SiLU of
// that; the new window is the last two rows of x.
// CHECK:      {{\[\[}}7.49585,   11.9999],
// CHECK-NEXT:  [10.4997,   18]]
// CHECK:      {{\[\[}}5,   6],
// CHECK-NEXT:  [7,   8]]
func.func private @printMemrefF32(memref<*xf32>)
func.func @main() {
  %x = arith.constant dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>
  %xd = tensor.cast %x : tensor<2x2xf32> to tensor<?x2xf32>
  %w = arith.constant dense<[[0.5, -1.0, 2.0], [1.0, 1.0, 1.0]]> : tensor<2x3xf32>
  %s = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %y, %s1 = k3.short_conv %xd, %w, state(%s) silu
      : (tensor<?x2xf32>, tensor<2x3xf32>, tensor<2x2xf32>) -> (tensor<?x2xf32>, tensor<2x2xf32>)
  %ym = bufferization.to_buffer %y : tensor<?x2xf32> to memref<?x2xf32>
  %yc = memref.cast %ym : memref<?x2xf32> to memref<*xf32>
  call @printMemrefF32(%yc) : (memref<*xf32>) -> ()
  %sm = bufferization.to_buffer %s1 : tensor<2x2xf32> to memref<2x2xf32>
  %sc = memref.cast %sm : memref<2x2xf32> to memref<*xf32>
  call @printMemrefF32(%sc) : (memref<*xf32>) -> ()
  return
}
