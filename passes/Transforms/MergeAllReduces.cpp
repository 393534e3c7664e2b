//===- MergeAllReduces.cpp - One all-reduce for two added partial sums ----===//
//
// Part of k3. Implements k3-merge-all-reduces (Passes.td).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3MERGEALLREDUCESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

/// `v`'s all-reduce when it sums and `v` is used once (by the add).
shard::AllReduceOp partialSum(Value v) {
  auto reduce = v.getDefiningOp<shard::AllReduceOp>();
  if (!reduce || !reduce->hasOneUse() || reduce.getReduction() != shard::ReductionKind::Sum ||
      reduce.getInput().getType() != reduce.getType())
    return {};
  return reduce;
}

struct K3MergeAllReducesPass : k3::impl::K3MergeAllReducesPassBase<K3MergeAllReducesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<arith::AddFOp> adds;
    getOperation().walk([&](arith::AddFOp add) { adds.push_back(add); });
    for (arith::AddFOp add : adds) {
      shard::AllReduceOp lhs = partialSum(add.getLhs()), rhs = partialSum(add.getRhs());
      if (!lhs || !rhs || lhs == rhs || lhs.getGrid() != rhs.getGrid() ||
          lhs.getGridAxes() != rhs.getGridAxes())
        continue;
      // Each rank adds its two partials, then the ranks' sums are added:
      // the same sum in another order (in bf16, rounded at other points).
      OpBuilder b(add);
      Value sum = arith::AddFOp::create(b, add.getLoc(), lhs.getInput(), rhs.getInput(),
                                        add.getFastmathAttr());
      add.replaceAllUsesWith(shard::AllReduceOp::create(b, add.getLoc(), sum, lhs.getGrid(),
                                                        lhs.getGridAxes(),
                                                        shard::ReductionKind::Sum)
                                 .getResult());
      add.erase();
      lhs.erase();
      rhs.erase();
    }
  }
};

} // namespace
