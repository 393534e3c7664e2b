// RUN: k3-opt %s --k3-cpu-to-llvm | %run_main | FileCheck %s
// RUN: k3-opt %s --k3-cpu-to-llvm="moe-dispatch=slots" | %run_main | FileCheck %s

// A (token, expert) pair whose index lies outside [0, E) is dropped by the
// grouped dispatch and by the slot GEMMs, the GPU's form (never a read or
// write out of bounds; the slot reads expert 0 and the combine selects its
// term away): routing token 0 to
// experts (1, 7), (1, -5) or (1, 1000000) with E = 2 gives what routing it
// to (1, 0) with weight 0 for the second pick gives.
// CHECK: {{^}}[[ROW:\[\[.*\]\]]]
// CHECK: {{^}}[[ROW]]
// CHECK: {{^}}[[ROW]]
// CHECK: {{^}}[[ROW]]
func.func private @printMemrefF32(memref<*xf32>)
func.func @moe(%i: tensor<1x2xi32>, %p: tensor<1x2xf32>) {
  %x = arith.constant dense<[[1.0, -1.0]]> : tensor<1x2xf32>
  %xd = tensor.cast %x : tensor<1x2xf32> to tensor<?x2xf32>
  %id = tensor.cast %i : tensor<1x2xi32> to tensor<?x2xi32>
  %pd = tensor.cast %p : tensor<1x2xf32> to tensor<?x2xf32>
  %w1 = arith.constant dense<[[[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.5], [1.0, -1.0]]]> : tensor<2x2x2xf32>
  %w3 = arith.constant dense<[[[1.0, 1.0], [1.0, -1.0]], [[2.0, 0.0], [0.0, 2.0]]]> : tensor<2x2x2xf32>
  %w2 = arith.constant dense<[[[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]]> : tensor<2x2x2xf32>
  %y = k3.moe %xd routed(%id, %pd) experts(%w1, %w3, %w2) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<?x2xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<2x2x2xf32>, tensor<2x2x2xf32>,
         tensor<2x2x2xf32>) -> tensor<?x2xf32>
  %ym = bufferization.to_buffer %y : tensor<?x2xf32> to memref<?x2xf32>
  %yc = memref.cast %ym : memref<?x2xf32> to memref<*xf32>
  call @printMemrefF32(%yc) : (memref<*xf32>) -> ()
  return
}
func.func @main() {
  %w = arith.constant dense<[[0.7, 0.3]]> : tensor<1x2xf32>
  %w0 = arith.constant dense<[[0.7, 0.0]]> : tensor<1x2xf32>
  %ref = arith.constant dense<[[1, 0]]> : tensor<1x2xi32>
  %a = arith.constant dense<[[1, 7]]> : tensor<1x2xi32>
  %b = arith.constant dense<[[1, -5]]> : tensor<1x2xi32>
  %c = arith.constant dense<[[1, 1000000]]> : tensor<1x2xi32>
  call @moe(%ref, %w0) : (tensor<1x2xi32>, tensor<1x2xf32>) -> ()
  call @moe(%a, %w) : (tensor<1x2xi32>, tensor<1x2xf32>) -> ()
  call @moe(%b, %w) : (tensor<1x2xi32>, tensor<1x2xf32>) -> ()
  call @moe(%c, %w) : (tensor<1x2xi32>, tensor<1x2xf32>) -> ()
  return
}
