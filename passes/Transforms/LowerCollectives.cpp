//===- LowerCollectives.cpp - shard collectives to k3.collective ----------===//
//
// Part of k3. Implements k3-lower-collectives (Passes.td): the upstream
// `shard` ops a sharded import holds become k3.collective (runtime calls
// after bufferization, k3-comm-to-calls) and calls of k3_comm_index. Runs
// on tensors at the end of the tiles stage, before bufferization, which
// cannot bufferize `shard` ops.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/K3/K3Ops.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3LOWERCOLLECTIVESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;
using namespace mlir::k3;

namespace {

constexpr const char *kIndexFn = "k3_comm_index";

/// `[d0, ..., dn]` of `v` as mixed static/dynamic sizes.
SmallVector<OpFoldResult> sizesOf(OpBuilder &b, Location loc, Value v) {
  SmallVector<OpFoldResult> sizes;
  auto type = cast<RankedTensorType>(v.getType());
  for (int64_t i = 0; i < type.getRank(); ++i)
    sizes.push_back(
        type.isDynamicDim(i)
            ? OpFoldResult(tensor::DimOp::create(b, loc, v, i).getResult())
            : OpFoldResult(b.getIndexAttr(type.getDimSize(i))));
  return sizes;
}

struct K3LowerCollectivesPass
    : k3::impl::K3LowerCollectivesPassBase<K3LowerCollectivesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<shard::GridOp> grids(module.getOps<shard::GridOp>());
    if (grids.size() > 1) {
      grids[1].emitOpError()
          << "k3-lower-collectives: a binary runs on one grid, this module has "
          << grids.size();
      return signalPassFailure();
    }
    if (grids.empty()) {
      // Nothing to lower; a shard op without its grid is the verifier's.
      return;
    }
    shard::GridOp grid = grids.front();
    ArrayRef<int64_t> shape = grid.getShape();
    if (llvm::any_of(shape,
                     [](int64_t n) { return ShapedType::isDynamic(n); })) {
      grid.emitOpError() << "k3-lower-collectives: the grid's shape must be "
                            "static (the runtime "
                            "checks it against the processes)";
      return signalPassFailure();
    }

    OpBuilder b(&getContext());
    bool failed = false;
    func::FuncOp indexFn;
    auto callIndex = [&](Location loc, int64_t axis) -> Value {
      if (!indexFn) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToEnd(module.getBody());
        indexFn = func::FuncOp::create(
            b, loc, kIndexFn,
            b.getFunctionType({b.getI64Type()}, {b.getI64Type()}));
        indexFn.setPrivate();
      }
      Value arg = arith::ConstantIntOp::create(b, loc, b.getI64Type(), axis);
      Value i64 =
          func::CallOp::create(b, loc, indexFn, ValueRange{arg}).getResult(0);
      return arith::IndexCastOp::create(b, loc, b.getIndexType(), i64);
    };
    auto axesOf = [](ArrayRef<int16_t> axes) {
      return SmallVector<int64_t>(axes.begin(), axes.end());
    };

    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<shard::ShardDialect>(op->getDialect()) && !isa<shard::GridOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      b.setInsertionPoint(op);
      Location loc = op->getLoc();
      if (auto reduce = dyn_cast<shard::AllReduceOp>(op)) {
        if (reduce.getReduction() != shard::ReductionKind::Sum) {
          op->emitOpError()
              << "k3-lower-collectives: only sums are lowered, not "
              << shard::stringifyReductionKind(reduce.getReduction());
          failed = true;
          continue;
        }
        Value in = reduce.getInput();
        auto type = cast<RankedTensorType>(in.getType());
        if (type != reduce.getType()) {
          op->emitOpError()
              << "k3-lower-collectives: the result type must be the input's";
          failed = true;
          continue;
        }
        Value init = tensor::EmptyOp::create(b, loc, sizesOf(b, loc, in),
                                             type.getElementType());
        Value out = CollectiveOp::create(b, loc, TypeRange{type}, in, init,
                                         CollectiveKind::all_reduce, shape,
                                         axesOf(reduce.getGridAxes()))
                        .getResult(0);
        reduce.replaceAllUsesWith(out);
        reduce.erase();
      } else if (auto gather = dyn_cast<shard::AllGatherOp>(op)) {
        Value in = gather.getInput();
        auto type = cast<RankedTensorType>(in.getType());
        int64_t axis = gather.getGatherAxis().getSExtValue();
        int64_t group = 1;
        for (int16_t a : gather.getGridAxes())
          group *= shape[a];
        // The group's blocks stacked: [P, d0, ..., dn].
        SmallVector<OpFoldResult> sizes = sizesOf(b, loc, in);
        SmallVector<OpFoldResult> stacked{b.getIndexAttr(group)};
        stacked.append(sizes);
        Value init =
            tensor::EmptyOp::create(b, loc, stacked, type.getElementType());
        Value blocks =
            CollectiveOp::create(b, loc, TypeRange{init.getType()}, in, init,
                                 CollectiveKind::all_gather, shape,
                                 axesOf(gather.getGridAxes()))
                .getResult(0);
        // P moved before `axis`, then merged with it.
        if (axis > 0) {
          SmallVector<int64_t> perm;
          SmallVector<OpFoldResult> moved;
          for (int64_t i = 1; i <= axis; ++i) {
            perm.push_back(i);
            moved.push_back(stacked[i]);
          }
          perm.push_back(0);
          moved.push_back(stacked[0]);
          for (int64_t i = axis + 1; i < int64_t(stacked.size()); ++i) {
            perm.push_back(i);
            moved.push_back(stacked[i]);
          }
          Value dest =
              tensor::EmptyOp::create(b, loc, moved, type.getElementType());
          blocks = linalg::TransposeOp::create(b, loc, blocks, dest, perm)
                       ->getResult(0);
        }
        SmallVector<ReassociationIndices> merge;
        for (int64_t i = 0; i < int64_t(stacked.size()); ++i) {
          if (i == axis + 1)
            continue;
          merge.push_back(i == axis ? ReassociationIndices{i, i + 1}
                                    : ReassociationIndices{i});
        }
        Value out = tensor::CollapseShapeOp::create(b, loc, gather.getType(),
                                                    blocks, merge);
        gather.replaceAllUsesWith(out);
        gather.erase();
      } else if (auto slice = dyn_cast<shard::AllSliceOp>(op)) {
        // A whole tensor's block on this rank (partition's reshard of a
        // replicated value to a split one): no communication, a slice at
        // the rank's block along the axes, counted row-major over them.
        auto type = cast<RankedTensorType>(slice.getType());
        int64_t axis = slice.getSliceAxis().getSExtValue();
        if (type.isDynamicDim(axis)) {
          op->emitOpError() << "k3-lower-collectives: a dynamic slice axis is not lowered";
          failed = true;
          continue;
        }
        Value block = arith::ConstantIndexOp::create(b, loc, 0);
        for (int16_t a : slice.getGridAxes())
          block = arith::AddIOp::create(
              b, loc,
              arith::MulIOp::create(b, loc, block,
                                    arith::ConstantIndexOp::create(b, loc, shape[a])),
              callIndex(loc, a));
        SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
        offsets[axis] = arith::MulIOp::create(
                            b, loc, block,
                            arith::ConstantIndexOp::create(b, loc, type.getDimSize(axis)))
                            .getResult();
        SmallVector<OpFoldResult> sizes = sizesOf(b, loc, slice.getInput());
        sizes[axis] = b.getIndexAttr(type.getDimSize(axis));
        Value out = tensor::ExtractSliceOp::create(
            b, loc, type, slice.getInput(), offsets, sizes,
            SmallVector<OpFoldResult>(type.getRank(), b.getIndexAttr(1)));
        slice.replaceAllUsesWith(out);
        slice.erase();
      } else if (auto linear = dyn_cast<shard::ProcessLinearIndexOp>(op)) {
        linear.replaceAllUsesWith(callIndex(loc, -1));
        linear.erase();
      } else if (auto multi = dyn_cast<shard::ProcessMultiIndexOp>(op)) {
        SmallVector<Value> coords;
        ArrayRef<int16_t> axes = multi.getAxes();
        for (int64_t i = 0; i < int64_t(multi.getNumResults()); ++i)
          coords.push_back(callIndex(loc, axes.empty() ? i : axes[i]));
        multi.replaceAllUsesWith(coords);
        multi.erase();
      } else {
        op->emitOpError()
            << "k3-lower-collectives: no runtime call for this op (lowered: "
               "all_reduce with a sum, all_gather, all_slice, process_linear_index, "
               "process_multi_index)";
        failed = true;
      }
    }
    if (failed)
      return signalPassFailure();
    module->setAttr("k3.grid", b.getDenseI64ArrayAttr(shape));
    grid.erase();
  }
};

} // namespace
