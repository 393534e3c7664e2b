// RUN: k3-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(sharding-propagation,cse,shard-partition,canonicalize,cse))' | FileCheck %s

// The k3 ops' sharding models (dialects/K3/K3Sharding.cpp) for attention,
// on a 1 x 2 grid: annotated weights and arguments, as the importer writes
// them for --tp=2, and upstream propagation and partition. A KDA layer
// splits by heads: the column-parallel projections give each rank 2 of
// the 4 heads' channels, the convolution and its window follow the
// channels, the recurrence and its state the heads, and the row-parallel
// output projection ends in one all-reduce over the tp axis.

shard.grid @grid(shape = 1x2)
// CHECK-LABEL: func.func @kda(
// CHECK-SAME: %[[X:.*]]: tensor<?x16xf32>, %[[WIN:.*]]: tensor<3x16xf32>, %[[S0:.*]]: tensor<2x8x8xf32>)
// CHECK-SAME: -> (tensor<?x16xf32>, tensor<3x16xf32>, tensor<2x8x8xf32>)
// CHECK-DAG: %[[WQ:.*]] = k3.weight "wq" {split_axes = array<i64: 1>, split_dim = 0 : i64} : tensor<16x16xf32>
// CHECK-DAG: %[[CW:.*]] = k3.weight "conv" {split_axes = array<i64: 1>, split_dim = 0 : i64} : tensor<16x4xf32>
// CHECK-DAG: %[[WB:.*]] = k3.weight "wb" {split_axes = array<i64: 1>, split_dim = 0 : i64} : tensor<2x16xf32>
// CHECK-DAG: %[[WO:.*]] = k3.weight "wo" {split_axes = array<i64: 1>, split_dim = 1 : i64} : tensor<16x16xf32>
// CHECK: %[[P:.*]] = k3.linear %[[X]], %[[WQ]] : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
// CHECK: k3.short_conv %[[P]], %[[CW]], state(%[[WIN]]) silu : (tensor<?x16xf32>, tensor<16x4xf32>, tensor<3x16xf32>) -> (tensor<?x16xf32>, tensor<3x16xf32>)
// CHECK: tensor.expand_shape {{.*}} : tensor<?x16xf32> into tensor<?x2x8xf32>
// CHECK: k3.l2_norm {{.*}} : tensor<?x2x8xf32>
// CHECK: k3.kda {{.*}} state(%[[S0]]) {{.*}} -> (tensor<?x2x8xf32>, tensor<2x8x8xf32>)
// CHECK: %[[O:.*]] = k3.linear {{.*}}, %[[WO]] : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
// CHECK: %[[R:.*]] = shard.all_reduce %[[O]] on @grid grid_axes = [1] : tensor<?x16xf32> -> tensor<?x16xf32>
// CHECK: return %[[R]]
func.func @kda(%x: tensor<?x16xf32>, %win: tensor<3x32xf32>, %s0: tensor<4x8x8xf32>)
    -> (tensor<?x16xf32>, tensor<3x32xf32>, tensor<4x8x8xf32>) {
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %rows = shard.sharding @grid split_axes = [[1]] : !shard.sharding
  %cols = shard.sharding @grid split_axes = [[], [1]] : !shard.sharding
  %xs = shard.shard %x to %rep annotate_for_users : tensor<?x16xf32>
  %wins = shard.shard %win to %cols annotate_for_users : tensor<3x32xf32>
  %s0s = shard.shard %s0 to %rows annotate_for_users : tensor<4x8x8xf32>
  %wq0 = k3.weight "wq" : tensor<32x16xf32>
  %wq = shard.shard %wq0 to %rows : tensor<32x16xf32>
  %cw0 = k3.weight "conv" : tensor<32x4xf32>
  %cw = shard.shard %cw0 to %rows : tensor<32x4xf32>
  %wb0 = k3.weight "wb" : tensor<4x16xf32>
  %wb = shard.shard %wb0 to %rows : tensor<4x16xf32>
  %wo0 = k3.weight "wo" : tensor<16x32xf32>
  %wo = shard.shard %wo0 to %cols : tensor<16x32xf32>
  %p = k3.linear %xs, %wq : (tensor<?x16xf32>, tensor<32x16xf32>) -> tensor<?x32xf32>
  %y, %ns = k3.short_conv %p, %cw, state(%wins) silu
      : (tensor<?x32xf32>, tensor<32x4xf32>, tensor<3x32xf32>) -> (tensor<?x32xf32>, tensor<3x32xf32>)
  %c0 = arith.constant 0 : index
  %t = tensor.dim %xs, %c0 : tensor<?x16xf32>
  %q = tensor.expand_shape %y [[0], [1, 2]] output_shape [%t, 4, 8] : tensor<?x32xf32> into tensor<?x4x8xf32>
  %qn = k3.l2_norm %q {eps = 1.0e-6 : f32} : tensor<?x4x8xf32>
  %bl = k3.linear %xs, %wb : (tensor<?x16xf32>, tensor<4x16xf32>) -> tensor<?x4xf32>
  %beta = k3.sigmoid %bl : tensor<?x4xf32>
  %o, %s1 = k3.kda %qn, %qn, %qn, %qn, %beta, state(%s0s) scale = 0.25
      : (tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4xf32>,
         tensor<4x8x8xf32>) -> (tensor<?x4x8xf32>, tensor<4x8x8xf32>)
  %m = tensor.collapse_shape %o [[0], [1, 2]] : tensor<?x4x8xf32> into tensor<?x32xf32>
  %out = k3.linear %m, %wo : (tensor<?x32xf32>, tensor<16x32xf32>) -> tensor<?x16xf32>
  %outs = shard.shard %out to %rep : tensor<?x16xf32>
  %nss = shard.shard %ns to %cols : tensor<3x32xf32>
  %s1s = shard.shard %s1 to %rows : tensor<4x8x8xf32>
  return %outs, %nss, %s1s : tensor<?x16xf32>, tensor<3x32xf32>, tensor<4x8x8xf32>
}

// -----

// KDA's decay gate: A_log is replicated (it may be padded past H), so the
// slice of its first H values is whole on every rank and partition cuts
// the rank's heads from it (shard.all_slice, no communication); A_log
// stored [1, 1, H, 1] splits along its H.
shard.grid @grid(shape = 1x2)
// CHECK-LABEL: func.func @gate(
// CHECK: %[[A:.*]] = k3.weight "A_log" : tensor<1x1x8x1xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[A]] {{.*}} into tensor<8xf32>
// CHECK: %[[H:.*]] = tensor.extract_slice %[[C]][0] [4] [1] : tensor<8xf32> to tensor<4xf32>
// CHECK: %[[MINE:.*]] = shard.all_slice %[[H]] on @grid grid_axes = [1] slice_axis = 0 : tensor<4xf32> -> tensor<2xf32>
// CHECK: k3.kda_gate lower_bound lb = -5.000000e+00 %{{.*}}, %[[MINE]], %{{.*}} : (tensor<?x2x8xf32>, tensor<2xf32>, tensor<2x8xf32>) -> tensor<?x2x8xf32>
func.func @gate(%f: tensor<?x4x8xf32>) -> tensor<?x4x8xf32> {
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %heads = shard.sharding @grid split_axes = [[], [1]] : !shard.sharding
  %rows = shard.sharding @grid split_axes = [[1]] : !shard.sharding
  %fs = shard.shard %f to %heads annotate_for_users : tensor<?x4x8xf32>
  %a0 = k3.weight "A_log" : tensor<1x1x8x1xf32>
  %a = shard.shard %a0 to %rep : tensor<1x1x8x1xf32>
  %flat = tensor.collapse_shape %a [[0, 1, 2, 3]] : tensor<1x1x8x1xf32> into tensor<8xf32>
  %h = tensor.extract_slice %flat[0] [4] [1] : tensor<8xf32> to tensor<4xf32>
  %dt0 = k3.weight "dt_bias" : tensor<32xf32>
  %dt1 = shard.shard %dt0 to %rows : tensor<32xf32>
  %dt = tensor.expand_shape %dt1 [[0, 1]] output_shape [4, 8] : tensor<32xf32> into tensor<4x8xf32>
  %g = k3.kda_gate lower_bound lb = -5.0 %fs, %h, %dt
      : (tensor<?x4x8xf32>, tensor<4xf32>, tensor<4x8xf32>) -> tensor<?x4x8xf32>
  %gs = shard.shard %g to %heads : tensor<?x4x8xf32>
  return %gs : tensor<?x4x8xf32>
}

// -----

// MLA splits by heads: q_b's rows and kv_b's heads, the gate; the latent
// row, its rope part and the cache are every head's, whole on each rank.
shard.grid @grid(shape = 1x2)
// CHECK-LABEL: func.func @mla(
// CHECK-SAME: %{{.*}}: tensor<?x16xf32>, %[[CACHE:.*]]: tensor<?x12xf32>)
// CHECK: %[[KVB:.*]] = k3.weight "kv_b" {split_axes = array<i64: 1>, split_dim = 0 : i64} : tensor<24x8xf32>
// CHECK: k3.mla {{.*}} kv_b(%[[KVB]]), cache(%[[CACHE]]) gate({{.*}}) {{.*}} : (tensor<?x2x12xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<24x8xf32>, tensor<?x12xf32>, tensor<?x2x4xf32>) -> (tensor<?x2x4xf32>, tensor<?x12xf32>)
// CHECK: shard.all_reduce {{.*}} grid_axes = [1]
func.func @mla(%x: tensor<?x16xf32>, %cache: tensor<?x12xf32>) -> (tensor<?x16xf32>, tensor<?x12xf32>) {
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %rows = shard.sharding @grid split_axes = [[1]] : !shard.sharding
  %cols = shard.sharding @grid split_axes = [[], [1]] : !shard.sharding
  %xs = shard.shard %x to %rep annotate_for_users : tensor<?x16xf32>
  %cs = shard.shard %cache to %rep annotate_for_users : tensor<?x12xf32>
  %wq0 = k3.weight "q" : tensor<48x16xf32>
  %wq = shard.shard %wq0 to %rows : tensor<48x16xf32>
  %wa0 = k3.weight "kv_a" : tensor<12x16xf32>
  %wa = shard.shard %wa0 to %rep : tensor<12x16xf32>
  %kvb0 = k3.weight "kv_b" : tensor<48x8xf32>
  %kvb = shard.shard %kvb0 to %rows : tensor<48x8xf32>
  %wg0 = k3.weight "g" : tensor<16x16xf32>
  %wg = shard.shard %wg0 to %rows : tensor<16x16xf32>
  %wo0 = k3.weight "o" : tensor<16x16xf32>
  %wo = shard.shard %wo0 to %cols : tensor<16x16xf32>
  %c0 = arith.constant 0 : index
  %t = tensor.dim %xs, %c0 : tensor<?x16xf32>
  %q0 = k3.linear %xs, %wq : (tensor<?x16xf32>, tensor<48x16xf32>) -> tensor<?x48xf32>
  %q = tensor.expand_shape %q0 [[0], [1, 2]] output_shape [%t, 4, 12] : tensor<?x48xf32> into tensor<?x4x12xf32>
  %ckr = k3.linear %xs, %wa : (tensor<?x16xf32>, tensor<12x16xf32>) -> tensor<?x12xf32>
  %lat = tensor.extract_slice %ckr[0, 0] [%t, 8] [1, 1] : tensor<?x12xf32> to tensor<?x8xf32>
  %rope = tensor.extract_slice %ckr[0, 8] [%t, 4] [1, 1] : tensor<?x12xf32> to tensor<?x4xf32>
  %g0 = k3.linear %xs, %wg : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
  %g = tensor.expand_shape %g0 [[0], [1, 2]] output_shape [%t, 4, 4] : tensor<?x16xf32> into tensor<?x4x4xf32>
  %o, %nc = k3.mla %q, %lat, %rope, kv_b(%kvb), cache(%cs) gate(%g) scale = 0.35 causal
      : (tensor<?x4x12xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<48x8xf32>, tensor<?x12xf32>,
         tensor<?x4x4xf32>) -> (tensor<?x4x4xf32>, tensor<?x12xf32>)
  %m = tensor.collapse_shape %o [[0], [1, 2]] : tensor<?x4x4xf32> into tensor<?x16xf32>
  %out = k3.linear %m, %wo : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
  %outs = shard.shard %out to %rep : tensor<?x16xf32>
  %ncs = shard.shard %nc to %rep : tensor<?x12xf32>
  return %outs, %ncs : tensor<?x16xf32>, tensor<?x12xf32>
}
