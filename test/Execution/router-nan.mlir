// RUN: k3-opt %s --k3-cpu-to-llvm | %run_main | FileCheck %s
// RUN: k3-opt %s --k3-cpu-to-llvm="router=picks" | %run_main | FileCheck %s

// Both router forms rank a NaN score last, so they pick the same experts
// and the k rounds pick k distinct ones (without that, every comparison with
// the NaN is false: the loop form would take it when it comes first in id
// order, the picks form would repeat an id). Scores sigmoid(2), NaN,
// sigmoid(1) with k = 3: experts 0, 2, then 1; the NaN reaches the weight
// sum, so every renormalised weight is NaN rather than a finite value
// hiding it.
// CHECK:      {{\[\[}}0,   2,   1]]
// CHECK:      {{\[\[-?nan,   -?nan,   -?nan\]\]}}
func.func private @printMemrefI32(memref<*xi32>)
func.func private @printMemrefF32(memref<*xf32>)
func.func @main() {
  %x = arith.constant dense<[[1.0, 0.0]]> : tensor<1x2xf32>
  %w = arith.constant dense<[[2.0, 0.0], [0x7FC00000, 0.0], [1.0, 0.0]]> : tensor<3x2xf32>
  %xd = tensor.cast %x : tensor<1x2xf32> to tensor<?x2xf32>
  %i, %p = k3.router %xd, %w top_k = 3 renormalize scaling = 1.0
      : (tensor<?x2xf32>, tensor<3x2xf32>) -> (tensor<?x3xi32>, tensor<?x3xf32>)
  %im = bufferization.to_buffer %i : tensor<?x3xi32> to memref<?x3xi32>
  %ic = memref.cast %im : memref<?x3xi32> to memref<*xi32>
  call @printMemrefI32(%ic) : (memref<*xi32>) -> ()
  %pm = bufferization.to_buffer %p : tensor<?x3xf32> to memref<?x3xf32>
  %pc = memref.cast %pm : memref<?x3xf32> to memref<*xf32>
  call @printMemrefF32(%pc) : (memref<*xf32>) -> ()
  return
}
