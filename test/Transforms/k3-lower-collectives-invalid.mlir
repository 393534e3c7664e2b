// RUN: k3-opt %s --split-input-file --verify-diagnostics --k3-lower-collectives

// Only what the runtime runs is lowered; anything else is an error on the
// op, never a shard op left in the IR.
shard.grid @grid(shape = 2)
func.func @max(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{k3-lower-collectives: only sums are lowered, not max}}
  %r = shard.all_reduce %x on @grid grid_axes = [0] reduction = max : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

shard.grid @grid(shape = 2)
func.func @scatter(%x: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{k3-lower-collectives: no runtime call for this op}}
  %r = shard.reduce_scatter %x on @grid grid_axes = [0] scatter_axis = 0 : tensor<4xf32> -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func @axes(%x: tensor<4xf32>, %d: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{axes must be ascending axes of the rank-1 grid, got axis 1 at position 0}}
  %r = k3.collective all_reduce %x outs(%d) grid = [2] axes = [1] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @gather(%x: tensor<4xf32>, %d: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{init extent 0 is 3, expected 4 (the group's ranks)}}
  %r = k3.collective all_gather %x outs(%d) grid = [2, 2] axes = [0, 1] : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}

// -----

func.func @dtype(%x: tensor<4xi32>, %d: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{input and init must both be f32 or both bf16}}
  %r = k3.collective all_reduce %x outs(%d) grid = [2] axes = [0] : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %r : tensor<4xi32>
}

// -----

func.func @split() -> tensor<4x8xbf16> {
  // expected-error @+1 {{split_dim 2 is not a dimension of its rank-2 type}}
  %w = k3.weight "w" {split_dim = 2 : i64, split_axes = array<i64: 0>} : tensor<4x8xbf16>
  return %w : tensor<4x8xbf16>
}
