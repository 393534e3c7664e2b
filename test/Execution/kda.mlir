// RUN: k3-opt %s --k3-cpu-to-llvm | %run_main | FileCheck %s

// The KDA token recurrence (decay, predict, update, read) for 3 tokens with
// GVA (1 q/k head, 2 value heads), a gate saturated at -5 on one head and a
// non-zero initial state; expected values from a float64 transcription of
// KDA.md §2 (out, then the final state).
// CHECK:      {{\[\[\[}}0.312651,    0.583383],
// CHECK-NEXT:   [0.240434,    -0.479245]],
// CHECK-NEXT:  {{\[\[}}0.0740505,    0.15533],
// CHECK-NEXT:   [0.120742,    -0.243593]],
// CHECK-NEXT:  {{\[\[}}0.830341,    -0.348096],
// CHECK-NEXT:   [0.422038,    -0.363261]]]
// CHECK:      {{\[\[\[}}0.391014,    0.298079],
// CHECK-NEXT:   [1.66068,    -0.696193]],
// CHECK-NEXT:  {{\[\[}}-0.229322,    0.282806],
// CHECK-NEXT:   [0.844077,    -0.726522]]]
func.func private @printMemrefF32(memref<*xf32>)
func.func @main() {
  %q = arith.constant dense<[[[0.6, 0.8]], [[1.0, 0.0]], [[0.0, 1.0]]]> : tensor<3x1x2xf32>
  %k = arith.constant dense<[[[0.8, 0.6]], [[0.0, 1.0]], [[0.6, -0.8]]]> : tensor<3x1x2xf32>
  %v = arith.constant dense<[[[1.0, 2.0], [0.5, -1.0]], [[3.0, -1.0], [2.0, 0.0]], [[0.0, 1.0], [-1.0, 1.0]]]> : tensor<3x2x2xf32>
  %g = arith.constant dense<[[[-0.1, -0.2], [-5.0, -5.0]], [[-1.0, 0.0], [-0.5, -0.5]], [[-0.3, -0.3], [-2.0, -0.1]]]> : tensor<3x2x2xf32>
  %beta = arith.constant dense<[[0.5, 1.0], [0.9, 0.2], [0.3, 0.7]]> : tensor<3x2xf32>
  %s0 = arith.constant dense<[[[0.1, 0.2], [0.3, 0.4]], [[-0.5, 0.0], [0.2, 1.0]]]> : tensor<2x2x2xf32>
  // Dynamic T, as the imported model has it.
  %qd = tensor.cast %q : tensor<3x1x2xf32> to tensor<?x1x2xf32>
  %kd = tensor.cast %k : tensor<3x1x2xf32> to tensor<?x1x2xf32>
  %vd = tensor.cast %v : tensor<3x2x2xf32> to tensor<?x2x2xf32>
  %gd = tensor.cast %g : tensor<3x2x2xf32> to tensor<?x2x2xf32>
  %bd = tensor.cast %beta : tensor<3x2xf32> to tensor<?x2xf32>
  %o, %s1 = k3.kda %qd, %kd, %vd, %gd, %bd, state(%s0) scale = 0.5
      : (tensor<?x1x2xf32>, tensor<?x1x2xf32>, tensor<?x2x2xf32>, tensor<?x2x2xf32>, tensor<?x2xf32>, tensor<2x2x2xf32>)
      -> (tensor<?x2x2xf32>, tensor<2x2x2xf32>)
  %om = bufferization.to_buffer %o : tensor<?x2x2xf32> to memref<?x2x2xf32>
  %oc = memref.cast %om : memref<?x2x2xf32> to memref<*xf32>
  call @printMemrefF32(%oc) : (memref<*xf32>) -> ()
  %sm = bufferization.to_buffer %s1 : tensor<2x2x2xf32> to memref<2x2x2xf32>
  %sc = memref.cast %sm : memref<2x2x2xf32> to memref<*xf32>
  call @printMemrefF32(%sc) : (memref<*xf32>) -> ()
  return
}
