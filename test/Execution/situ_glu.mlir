// RUN: k3-opt %s --k3-cpu-to-llvm | %run_main | FileCheck %s

// The SiTU-GLU table of MOE_MXFP4.md §8 (β1 = 4, β2 = 25) through the
// compiled CPU code: 0.309454, 0.715818, -0.525829, 11.865258, 37.484606,
// -0.000535, 99.932869, 100 (printed to 6 significant digits).
// CHECK: [0,  0.309454,  0.715818,  -0.525829,  11.8653,  37.4846,  -0.000534917,  99.9329,  100]
func.func private @printMemrefF32(memref<*xf32>)
func.func @main() {
  %g = arith.constant dense<[0.0, 0.5, 1.0, -1.0, 4.0, 10.0, -10.0, 30.0, 1.0e4]> : tensor<9xf32>
  %u = arith.constant dense<[1.0, 1.0, 1.0, 2.0, 4.0, 10.0, 3.0, 100.0, 1.0e4]> : tensor<9xf32>
  %y = k3.situ_glu %g, %u {beta1 = 4.0 : f32, beta2 = 25.0 : f32} : tensor<9xf32>
  %m = bufferization.to_buffer %y : tensor<9xf32> to memref<9xf32>
  %c = memref.cast %m : memref<9xf32> to memref<*xf32>
  call @printMemrefF32(%c) : (memref<*xf32>) -> ()
  return
}
