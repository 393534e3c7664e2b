// RUN: k3-opt %s --k3-cpu-to-llvm | %run_main | FileCheck %s

// l2_norm: [3, 4] / sqrt(25 + 1e-6) = [0.6, 0.8].
// CHECK: [0.6,  0.8]
// rms_norm: rms([3, 4]) = sqrt(12.5 + 1e-5) = 3.535535; times weight [1, 2]
// → [0.848528, 2.26274]; gated by sigmoid(0) = 0.5 → [0.424264, 1.13137].
// CHECK: [0.848528,  2.26274]
// CHECK: [0.424264,  1.13137]
// sigmoid([0, 2]) = [0.5, 0.880797].
// CHECK: [0.5,  0.880797]
func.func private @printMemrefF32(memref<*xf32>)
func.func @print(%t: tensor<1x2xf32>) {
  %m = bufferization.to_buffer %t : tensor<1x2xf32> to memref<1x2xf32>
  %c = memref.cast %m : memref<1x2xf32> to memref<*xf32>
  call @printMemrefF32(%c) : (memref<*xf32>) -> ()
  return
}
func.func @main() {
  %x = arith.constant dense<[[3.0, 4.0]]> : tensor<1x2xf32>
  %w = arith.constant dense<[1.0, 2.0]> : tensor<2xbf16>
  %g = arith.constant dense<0.0> : tensor<1x2xf32>
  %l2 = k3.l2_norm %x {eps = 1.0e-06 : f32} : tensor<1x2xf32>
  call @print(%l2) : (tensor<1x2xf32>) -> ()
  %r = k3.rms_norm %x, %w {eps = 1.0e-05 : f32} : (tensor<1x2xf32>, tensor<2xbf16>) -> tensor<1x2xf32>
  call @print(%r) : (tensor<1x2xf32>) -> ()
  %rg = k3.rms_norm %x, %w gate(%g) {eps = 1.0e-05 : f32}
      : (tensor<1x2xf32>, tensor<2xbf16>, tensor<1x2xf32>) -> tensor<1x2xf32>
  call @print(%rg) : (tensor<1x2xf32>) -> ()
  %s = arith.constant dense<[[0.0, 2.0]]> : tensor<1x2xf32>
  %sg = k3.sigmoid %s : tensor<1x2xf32>
  call @print(%sg) : (tensor<1x2xf32>) -> ()
  return
}
