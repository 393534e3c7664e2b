// RUN: k3-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(sharding-propagation,cse,shard-partition,canonicalize,cse))' | FileCheck %s

// The k3 ops' sharding models (dialects/K3/K3Sharding.cpp) for the
// feed-forward blocks and the output, as the importer annotates them.

// A dense MLP, Megatron style on a 1 x 2 grid: gate and up split by rows
// (the hidden channels), down by columns; the channels are a sum, so the
// rank's partial output is all-reduced over the tp axis.
shard.grid @grid(shape = 1x2)
// CHECK-LABEL: func.func @mlp(
// CHECK: %[[Y:.*]] = k3.mlp %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} activation silu : (tensor<?x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<16x32xf32>) -> tensor<?x16xf32>
// CHECK: shard.all_reduce %[[Y]] on @grid grid_axes = [1] : tensor<?x16xf32> -> tensor<?x16xf32>
func.func @mlp(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %rows = shard.sharding @grid split_axes = [[1]] : !shard.sharding
  %cols = shard.sharding @grid split_axes = [[], [1]] : !shard.sharding
  %xs = shard.shard %x to %rep annotate_for_users : tensor<?x16xf32>
  %g0 = k3.weight "gate" : tensor<64x16xf32>
  %g = shard.shard %g0 to %rows : tensor<64x16xf32>
  %u0 = k3.weight "up" : tensor<64x16xf32>
  %u = shard.shard %u0 to %rows : tensor<64x16xf32>
  %d0 = k3.weight "down" : tensor<16x64xf32>
  %d = shard.shard %d0 to %cols : tensor<16x64xf32>
  %y = k3.mlp %xs, %g, %u, %d activation silu : (tensor<?x16xf32>, tensor<64x16xf32>, tensor<64x16xf32>, tensor<16x64xf32>) -> tensor<?x16xf32>
  %ys = shard.shard %y to %rep : tensor<?x16xf32>
  return %ys : tensor<?x16xf32>
}

// -----

// A MoE block on a 2 x 2 grid, the routed experts and the shared experts'
// channels split over the whole grid: the router runs whole on every rank,
// its picks become the rank's local expert ids (the rank's block of 2 of
// the 8 experts, counted row-major over the grid, subtracted), and the
// experts' and shared channels' partial sums meet in one all-reduce.
shard.grid @grid(shape = 2x2)
// CHECK-LABEL: func.func @moe(
// CHECK: %[[I:.*]], %[[W:.*]] = k3.router %{{.*}} : (tensor<?x16xf32>, tensor<8x16xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
// CHECK: %[[P:.*]]:2 = shard.process_multi_index on @grid axes = [0, 1] : index, index
// CHECK: %[[B0:.*]] = arith.muli %[[P]]#0, %c2
// CHECK: %[[B:.*]] = arith.addi %[[B0]], %[[P]]#1
// CHECK: %[[F:.*]] = arith.muli %[[B]], %c2
// CHECK: %[[F32:.*]] = arith.index_cast %[[F]] : index to i32
// CHECK: %[[FS:.*]] = tensor.splat %[[F32]]
// CHECK: %[[L:.*]] = arith.subi %[[I]], %[[FS]] : tensor<?x2xi32>
// CHECK: %[[Y:.*]] = k3.moe %{{.*}} routed(%[[L]], %[[W]]) experts({{.*}}) shared({{.*}}) activation silu : (tensor<?x16xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x16x8xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<16x4xf32>) -> tensor<?x16xf32>
// CHECK: shard.all_reduce %[[Y]] on @grid grid_axes = [0, 1] : tensor<?x16xf32> -> tensor<?x16xf32>
// CHECK-NOT: shard.all_reduce
func.func @moe(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %world = shard.sharding @grid split_axes = [[0, 1]] : !shard.sharding
  %worldCols = shard.sharding @grid split_axes = [[], [0, 1]] : !shard.sharding
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
  %sg = shard.shard %sg0 to %world : tensor<16x16xf32>
  %su0 = k3.weight "su" : tensor<16x16xf32>
  %su = shard.shard %su0 to %world : tensor<16x16xf32>
  %sd0 = k3.weight "sd" : tensor<16x16xf32>
  %sd = shard.shard %sd0 to %worldCols : tensor<16x16xf32>
  %i, %w = k3.router %xs, %r top_k = 2 renormalize scaling = 1.0
      : (tensor<?x16xf32>, tensor<8x16xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
  %y = k3.moe %xs routed(%i, %w) experts(%w1, %w3, %w2) shared(%sg, %su, %sd) activation silu
      : (tensor<?x16xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<8x8x16xf32>, tensor<8x8x16xf32>,
         tensor<8x16x8xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
  %ys = shard.shard %y to %rep : tensor<?x16xf32>
  return %ys : tensor<?x16xf32>
}

// -----

// The output on a 1 x 2 grid: the embedding and AttnRes run whole, the
// lm_head splits the vocabulary, and the logits, annotated split and then
// whole for the return, are gathered along it (not the weight: a
// vocabulary's rows are the largest matrix of a model).
shard.grid @grid(shape = 1x2)
// CHECK-LABEL: func.func @output(
// CHECK: k3.embed {{.*}} : (tensor<?xi32>, tensor<64x16xf32>) -> tensor<?x16xf32>
// CHECK: k3.attn_res
// CHECK: %[[L:.*]] = k3.lm_head %{{.*}}, %{{.*}} : (tensor<?x16xf32>, tensor<32x16xf32>) -> tensor<?x32xf32>
// CHECK: shard.all_gather %[[L]] on @grid grid_axes = [1] gather_axis = 1 : tensor<?x32xf32> -> tensor<?x64xf32>
// CHECK-NOT: shard.all_gather
func.func @output(%ids: tensor<?xi32>) -> tensor<?x64xf32> {
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %rows = shard.sharding @grid split_axes = [[1]] : !shard.sharding
  %vocab = shard.sharding @grid split_axes = [[], [1]] : !shard.sharding
  %is = shard.shard %ids to %rep annotate_for_users : tensor<?xi32>
  %e0 = k3.weight "embed" : tensor<64x16xf32>
  %e = shard.shard %e0 to %rep : tensor<64x16xf32>
  %n0 = k3.weight "norm" : tensor<16xf32>
  %n = shard.shard %n0 to %rep : tensor<16xf32>
  %h0 = k3.weight "head" : tensor<64x16xf32>
  %h = shard.shard %h0 to %rows : tensor<64x16xf32>
  %x = k3.embed %is, %e : (tensor<?xi32>, tensor<64x16xf32>) -> tensor<?x16xf32>
  %a = k3.attn_res [%x, %x] norm(%n) query(%n) {eps = 1.0e-5 : f32}
      : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %l = k3.lm_head %a, %h : (tensor<?x16xf32>, tensor<64x16xf32>) -> tensor<?x64xf32>
  %ls = shard.shard %l to %vocab : tensor<?x64xf32>
  %lr = shard.shard %ls to %rep : tensor<?x64xf32>
  return %lr : tensor<?x64xf32>
}
