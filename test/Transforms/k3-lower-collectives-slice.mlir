// RUN: k3-opt %s --k3-lower-collectives | FileCheck %s --check-prefix=SLICE

// An all_slice (partition's reshard of a whole value to a split one) is the
// rank's block: a slice at its index along the axes, row-major over them,
// times the block's size. No communication.
shard.grid @grid(shape = 2x3)
// SLICE-LABEL: func.func @slice(
// SLICE: %[[I0:.*]] = call @k3_comm_index(%c0_i64)
// SLICE: %[[A:.*]] = arith.index_cast %[[I0]]
// SLICE: %[[I1:.*]] = call @k3_comm_index(%c1_i64)
// SLICE: %[[B:.*]] = arith.index_cast %[[I1]]
// SLICE: %[[R:.*]] = arith.addi %{{.*}}, %[[B]]
// SLICE: %[[OFF:.*]] = arith.muli %[[R]], %c2
// SLICE: tensor.extract_slice %arg0[0, %[[OFF]]] [%{{.*}}, 2] [1, 1] : tensor<?x12xf32> to tensor<?x2xf32>
// SLICE-NOT: k3.collective
func.func @slice(%x: tensor<?x12xf32>) -> tensor<?x2xf32> {
  %s = shard.all_slice %x on @grid grid_axes = [0, 1] slice_axis = 1 : tensor<?x12xf32> -> tensor<?x2xf32>
  return %s : tensor<?x2xf32>
}
