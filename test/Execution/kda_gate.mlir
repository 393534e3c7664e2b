// RUN: k3-opt %s --k3-cpu-to-llvm | %run_main | FileCheck %s

// Inputs x + dt_bias = [0, 30, -30] with A_log = 0 (scale e^0 = 1):
// lower-bounded: -5·sigmoid(z) = [-2.5, -5 (saturated), -4.7e-13];
// CHECK: [-2.5,   -5,   -4.67{{[0-9]*}}e-13]
// softplus: -softplus(z) = [-ln 2, -30 (identity above 20), -9.4e-14].
// CHECK: [-0.693147,   -30,   -9.35{{[0-9]*}}e-14]
func.func private @printMemrefF32(memref<*xf32>)
func.func @main() {
  %x = arith.constant dense<[[[0.0, 30.0, -30.0]]]> : tensor<1x1x3xf32>
  %a = arith.constant dense<0.0> : tensor<1xf32>
  %dt = arith.constant dense<0.0> : tensor<1x3xf32>
  %g = k3.kda_gate lower_bound lb = -5.0 %x, %a, %dt
      : (tensor<1x1x3xf32>, tensor<1xf32>, tensor<1x3xf32>) -> tensor<1x1x3xf32>
  %gm = bufferization.to_buffer %g : tensor<1x1x3xf32> to memref<1x1x3xf32>
  %gc = memref.cast %gm : memref<1x1x3xf32> to memref<*xf32>
  call @printMemrefF32(%gc) : (memref<*xf32>) -> ()
  %s = k3.kda_gate softplus %x, %a, %dt
      : (tensor<1x1x3xf32>, tensor<1xf32>, tensor<1x3xf32>) -> tensor<1x1x3xf32>
  %sm = bufferization.to_buffer %s : tensor<1x1x3xf32> to memref<1x1x3xf32>
  %sc = memref.cast %sm : memref<1x1x3xf32> to memref<*xf32>
  call @printMemrefF32(%sc) : (memref<*xf32>) -> ()
  return
}
