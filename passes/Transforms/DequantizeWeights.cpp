//===- DequantizeWeights.cpp - MXFP4 weights no GEMM reads, as bf16 -------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "k3-dequantize-weights"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3DEQUANTIZEWEIGHTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;
using namespace mlir::k3;

namespace {

struct K3DequantizeWeightsPass
    : k3::impl::K3DequantizeWeightsPassBase<K3DequantizeWeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<WeightOp> packed;
    getOperation().walk([&](WeightOp op) {
      if (isa<Float4E2M1FNType>(op.getType().getElementType()))
        packed.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (WeightOp op : packed) {
      SmallVector<Operation *> users;
      for (Operation *user : op->getUsers())
        if (all || isa<arith::ScalingExtFOp>(user))
          users.push_back(user);
      if (users.empty())
        continue; // read packed by its GEMMs
      rewriter.setInsertionPoint(op);
      auto type = cast<RankedTensorType>(op.getType());
      // A rank's block of a split weight decodes to the same block.
      Value bf16 = WeightOp::create(rewriter, op.getLoc(), type.clone(rewriter.getBF16Type()),
                                    (op.getName() + "#bf16").str(), op.getSplitDimAttr(),
                                    op.getSplitAxesAttr());
      for (Operation *user : users) {
        if (auto ext = dyn_cast<arith::ScalingExtFOp>(user)) {
          rewriter.setInsertionPoint(ext);
          Value repl = bf16;
          if (ext.getType() != bf16.getType())
            repl = arith::ExtFOp::create(rewriter, ext.getLoc(), ext.getType(), bf16);
          rewriter.replaceOp(ext, repl);
        } else if (auto linear = dyn_cast<LinearOp>(user)) {
          rewriter.modifyOpInPlace(linear, [&] {
            linear.getWeightMutable().assign(bf16);
            linear.getScalesMutable().clear();
          });
        } else if (auto moe = dyn_cast<MoeOp>(user)) {
          rewriter.modifyOpInPlace(moe, [&] {
            for (OpOperand &use : moe->getOpOperands())
              if (use.get() == op.getResult())
                use.set(bf16);
            // All experts become bf16 together; the scales go with the last.
            if (!isa<Float4E2M1FNType>(moe.getW1().getType().getElementType()) &&
                !isa<Float4E2M1FNType>(moe.getW3().getType().getElementType()) &&
                !isa<Float4E2M1FNType>(moe.getW2().getType().getElementType())) {
              moe.getW1ScaleMutable().clear();
              moe.getW3ScaleMutable().clear();
              moe.getW2ScaleMutable().clear();
            }
          });
        } else {
          user->emitOpError() << "uses MXFP4 weight '" << op.getName()
                              << "' in a way the CPU path cannot decode";
          return signalPassFailure();
        }
      }
      if (op->use_empty())
        rewriter.eraseOp(op);
    }
    // The scale weights and their broadcasts are dead now; the greedy
    // driver with no patterns erases trivially dead ops.
    if (failed(applyPatternsGreedily(getOperation(),
                                     RewritePatternSet(&getContext()))))
      signalPassFailure();
  }
};

} // namespace
