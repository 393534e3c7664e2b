// RUN: k3-opt %s --split-input-file --k3-merge-all-reduces | FileCheck %s

// Two partial sums added right after their all-reduces over the same axes
// are added first and reduced once.
shard.grid @grid(shape = 2x2)
// CHECK-LABEL: func.func @merged(
// CHECK-SAME: %[[A:.*]]: tensor<?x8xf32>, %[[B:.*]]: tensor<?x8xf32>)
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[A]], %[[B]] : tensor<?x8xf32>
// CHECK-NEXT: %[[R:.*]] = shard.all_reduce %[[S]] on @grid grid_axes = [0, 1] : tensor<?x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @merged(%a: tensor<?x8xf32>, %b: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %ra = shard.all_reduce %a on @grid grid_axes = [0, 1] : tensor<?x8xf32> -> tensor<?x8xf32>
  %rb = shard.all_reduce %b on @grid grid_axes = [0, 1] : tensor<?x8xf32> -> tensor<?x8xf32>
  %s = arith.addf %ra, %rb : tensor<?x8xf32>
  return %s : tensor<?x8xf32>
}

// -----

// Left alone: different axes (the sums are over different ranks), a
// reduction used elsewhere too (its whole sum is needed), a max.
shard.grid @grid(shape = 2x2)
// CHECK-LABEL: func.func @kept(
// CHECK-COUNT-6: shard.all_reduce
// CHECK-NOT: shard.all_reduce
func.func @kept(%a: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %r0 = shard.all_reduce %a on @grid grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  %r1 = shard.all_reduce %b on @grid grid_axes = [1] : tensor<8xf32> -> tensor<8xf32>
  %s0 = arith.addf %r0, %r1 : tensor<8xf32>
  %r2 = shard.all_reduce %a on @grid grid_axes = [1] : tensor<8xf32> -> tensor<8xf32>
  %r3 = shard.all_reduce %b on @grid grid_axes = [1] : tensor<8xf32> -> tensor<8xf32>
  %s1 = arith.addf %r2, %r3 : tensor<8xf32>
  %m0 = shard.all_reduce %a on @grid grid_axes = [1] reduction = max : tensor<8xf32> -> tensor<8xf32>
  %m1 = shard.all_reduce %b on @grid grid_axes = [1] reduction = max : tensor<8xf32> -> tensor<8xf32>
  %s2 = arith.addf %m0, %m1 : tensor<8xf32>
  return %s0, %s1, %s2, %r2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
