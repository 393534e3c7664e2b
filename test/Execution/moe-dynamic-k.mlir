// RUN: k3-opt %s --k3-cpu-to-llvm | %run_main | FileCheck %s
// RUN: k3-opt %s --k3-cpu-to-llvm="moe-dispatch=slots" | %run_main | FileCheck %s
// RUN: k3-opt %s --k3-cpu-to-llvm="moe-dispatch=per-token" | %run_main | FileCheck %s

// Routing with a dynamic number of picks per token (tensor<?x?xi32>; k3.router
// always gives a static one, hand-written IR need not): the grouped and slot
// forms need a static top-k and leave the op to the per-token loop, whose
// loop bound is then the indices' second extent; the result equals the
// statically shaped call's, which routes to the same two experts.
// CHECK: {{^}}[[ROW:\[\[.*\]\]]]
// CHECK-NOT: {{^}}{{\[\[}}0,{{ *}}0]]
// CHECK: {{^}}[[ROW]]
func.func private @printMemrefF32(memref<*xf32>)
func.func @moe_static(%i: tensor<1x2xi32>, %p: tensor<1x2xf32>) {
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
func.func @moe_dynamic(%i: tensor<1x2xi32>, %p: tensor<1x2xf32>) {
  %x = arith.constant dense<[[1.0, -1.0]]> : tensor<1x2xf32>
  %xd = tensor.cast %x : tensor<1x2xf32> to tensor<?x2xf32>
  %id = tensor.cast %i : tensor<1x2xi32> to tensor<?x?xi32>
  %pd = tensor.cast %p : tensor<1x2xf32> to tensor<?x?xf32>
  %w1 = arith.constant dense<[[[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.5], [1.0, -1.0]]]> : tensor<2x2x2xf32>
  %w3 = arith.constant dense<[[[1.0, 1.0], [1.0, -1.0]], [[2.0, 0.0], [0.0, 2.0]]]> : tensor<2x2x2xf32>
  %w2 = arith.constant dense<[[[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]]> : tensor<2x2x2xf32>
  %y = k3.moe %xd routed(%id, %pd) experts(%w1, %w3, %w2) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<?x2xf32>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<2x2x2xf32>, tensor<2x2x2xf32>,
         tensor<2x2x2xf32>) -> tensor<?x2xf32>
  %ym = bufferization.to_buffer %y : tensor<?x2xf32> to memref<?x2xf32>
  %yc = memref.cast %ym : memref<?x2xf32> to memref<*xf32>
  call @printMemrefF32(%yc) : (memref<*xf32>) -> ()
  return
}
func.func @main() {
  %w = arith.constant dense<[[0.7, 0.3]]> : tensor<1x2xf32>
  %i = arith.constant dense<[[1, 0]]> : tensor<1x2xi32>
  call @moe_static(%i, %w) : (tensor<1x2xi32>, tensor<1x2xf32>) -> ()
  call @moe_dynamic(%i, %w) : (tensor<1x2xi32>, tensor<1x2xf32>) -> ()
  return
}
