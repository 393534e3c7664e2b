// RUN: k3-opt %s --k3-lower-collectives | FileCheck %s
// RUN: k3-opt %s --k3-lower-collectives --one-shot-bufferize="bufferize-function-boundaries" --k3-comm-to-calls | FileCheck %s --check-prefix=CALLS

// The upstream shard ops of a sharded import become k3.collective (a sum
// into a new tensor; a gather into [P, ...], moved before the gather axis
// and merged with it) and calls of k3_comm_index; the grid becomes the
// module's k3.grid and shard.grid goes.
shard.grid @grid(shape = 2x2)
// CHECK: module attributes {k3.grid = array<i64: 2, 2>}
// CHECK-NOT: shard.
func.func @f(%x: tensor<?x8xf32>, %y: tensor<3x4xf32>) -> (tensor<?x8xf32>, tensor<3x16xf32>, index, index) {
  // CHECK: %[[D:.*]] = tensor.empty(%{{.*}}) : tensor<?x8xf32>
  // CHECK: k3.collective all_reduce %arg0 outs(%[[D]]) grid = [2, 2] axes = [0]
  %r = shard.all_reduce %x on @grid grid_axes = [0] : tensor<?x8xf32> -> tensor<?x8xf32>
  // CHECK: %[[G:.*]] = k3.collective all_gather %arg1 outs(%{{.*}}) grid = [2, 2] axes = [0, 1] : (tensor<3x4xf32>, tensor<4x3x4xf32>)
  // CHECK: %[[T:.*]] = linalg.transpose ins(%[[G]] : tensor<4x3x4xf32>) outs(%{{.*}} : tensor<3x4x4xf32>) permutation = [1, 0, 2]
  // CHECK: tensor.collapse_shape %[[T]] {{\[}}[0], [1, 2]] : tensor<3x4x4xf32> into tensor<3x16xf32>
  %g = shard.all_gather %y on @grid grid_axes = [0, 1] gather_axis = 1 : tensor<3x4xf32> -> tensor<3x16xf32>
  // CHECK: call @k3_comm_index(%c-1_i64)
  %i = shard.process_linear_index on @grid : index
  // CHECK: call @k3_comm_index(%c1_i64)
  %j = shard.process_multi_index on @grid axes = [1] : index
  return %r, %g, %i, %j : tensor<?x8xf32>, tensor<3x16xf32>, index, index
}
// CHECK: func.func private @k3_comm_index(i64) -> i64

// On buffers each collective is one call on dense buffers' addresses: the
// sum in place on its output (the input copied there first), the gather
// from a dense copy of a strided input; kind, count, dtype and axis mask.
// CALLS: memref.copy %arg0, %[[OUT:.*]] :
// CALLS: %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[OUT]]
// CALLS: call @k3_comm_collective(%c0_i32, %{{.*}}, %{{.*}}, %{{.*}}, %c0_i32{{.*}}, %c1_i64)
// CALLS: %[[IN:.*]] = memref.alloc() : memref<3x4xf32>
// CALLS: memref.copy %arg1, %[[IN]]
// CALLS: call @k3_comm_collective(%c1_i32, %{{.*}}, %{{.*}}, %{{.*}}, %c0_i32{{.*}}, %c3_i64)
// CALLS: memref.dealloc %[[IN]]
// CALLS-NOT: k3.collective
// CALLS: func.func private @k3_comm_collective(i32, i64, i64, i64, i32, i64)
