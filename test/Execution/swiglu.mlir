// RUN: k3-opt %s --k3-cpu-to-llvm | %run_main | FileCheck %s

// SwiGLU, silu(g)·u (Kimi Linear), through the compiled CPU code, against
// values from numpy in f64: 0, 0.311230, 0.731059, -0.537883, 15.7122,
// 99.9955, -0.00136194, 60, -5.61e-12 (unbounded, unlike SiTU-GLU; the far
// negative gate is not NaN).
// CHECK: [0,  0.31123,  0.731059,  -0.537883,  15.7122,  99.9955,  -0.00136194,  60,  -5.61457e-12]
func.func private @printMemrefF32(memref<*xf32>)
func.func @main() {
  %g = arith.constant dense<[0.0, 0.5, 1.0, -1.0, 4.0, 10.0, -10.0, 30.0, -30.0]> : tensor<9xf32>
  %u = arith.constant dense<[1.0, 1.0, 1.0, 2.0, 4.0, 10.0, 3.0, 2.0, 2.0]> : tensor<9xf32>
  %y = k3.swiglu %g, %u : tensor<9xf32>
  %m = bufferization.to_buffer %y : tensor<9xf32> to memref<9xf32>
  %c = memref.cast %m : memref<9xf32> to memref<*xf32>
  call @printMemrefF32(%c) : (memref<*xf32>) -> ()
  return
}
