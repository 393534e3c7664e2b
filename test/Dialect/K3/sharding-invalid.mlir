// RUN: k3-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition))'

// What partition refuses, with one error on the op.

shard.grid @grid(shape = 2x2)
// A weight is stored as one block per rank: split along one dimension.
func.func @two_dims() -> tensor<8x8xf32> {
  %both = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
  // expected-error @+1 {{'k3.weight' op is split along dimensions 0 and 1; a weight splits along one}}
  %w0 = k3.weight "w" : tensor<8x8xf32>
  %w = shard.shard %w0 to %both : tensor<8x8xf32>
  return %w : tensor<8x8xf32>
}

// -----

shard.grid @grid(shape = 1x2)
// The size of a split dimension differs between the program and a rank's.
func.func @dim_of_split(%x: tensor<?x8xf32>) -> index {
  %rows = shard.sharding @grid split_axes = [[1]] : !shard.sharding
  %xs = shard.shard %x to %rows annotate_for_users : tensor<?x8xf32>
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tensor.dim' op reads the size of a split dimension}}
  %n = tensor.dim %xs, %c0 : tensor<?x8xf32>
  return %n : index
}
