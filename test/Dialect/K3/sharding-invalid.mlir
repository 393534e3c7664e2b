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

// -----

// The routed experts split over the grid and the shared experts whole: the
// two sums of k3.moe must split alike (else the all-reduce would add the
// shared output once per rank), so propagation gathers the experts, from
// two grid axes at once, which upstream partition cannot: an error, not a
// crash.
shard.grid @grid(shape = 2x2)
func.func @moe(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %world = shard.sharding @grid split_axes = [[0, 1]] : !shard.sharding
  %xs = shard.shard %x to %rep annotate_for_users : tensor<?x16xf32>
  %r0 = k3.weight "router" : tensor<8x16xf32>
  %r = shard.shard %r0 to %rep : tensor<8x16xf32>
  %w10 = k3.weight "w1" : tensor<8x8x16xf32>
  %w1 = shard.shard %w10 to %world : tensor<8x8x16xf32>
  %w30 = k3.weight "w3" : tensor<8x8x16xf32>
  %w3 = shard.shard %w30 to %world : tensor<8x8x16xf32>
  %w20 = k3.weight "w2" : tensor<8x16x8xf32>
  %w2 = shard.shard %w20 to %world : tensor<8x16x8xf32>
  %sg0 = k3.weight "sg" : tensor<16x16xf32>
  %sg = shard.shard %sg0 to %rep : tensor<16x16xf32>
  %su0 = k3.weight "su" : tensor<16x16xf32>
  %su = shard.shard %su0 to %rep : tensor<16x16xf32>
  %sd0 = k3.weight "sd" : tensor<16x16xf32>
  %sd = shard.shard %sd0 to %rep : tensor<16x16xf32>
  %i, %w = k3.router %xs, %r top_k = 2 renormalize scaling = 1.0
      : (tensor<?x16xf32>, tensor<8x16xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
  // expected-error @+1 {{'k3.moe' op operand 3 needs a resharding that shard-partition does not make (more than one grid axis at a time)}}
  %y = k3.moe %xs routed(%i, %w) experts(%w1, %w3, %w2) shared(%sg, %su, %sd) activation silu
      : (tensor<?x16xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<8x8x16xf32>, tensor<8x8x16xf32>,
         tensor<8x16x8xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
  %ys = shard.shard %y to %rep : tensor<?x16xf32>
  return %ys : tensor<?x16xf32>
}

// -----

shard.grid @grid(shape = 1x2)
// A split dynamic dimension of a reshape: its size is given for the whole
// tensor, not the rank's block.
func.func @expand_dynamic(%x: tensor<?x8xf32>, %n: index) -> tensor<?x2x8xf32> {
  %rows = shard.sharding @grid split_axes = [[1]] : !shard.sharding
  %xs = shard.shard %x to %rows annotate_for_users : tensor<?x8xf32>
  // expected-error @+1 {{'tensor.expand_shape' op splits dynamic dimension 0}}
  %e = tensor.expand_shape %xs [[0, 1], [2]] output_shape [%n, 2, 8] : tensor<?x8xf32> into tensor<?x2x8xf32>
  return %e : tensor<?x2x8xf32>
}
