//===- DequantizeWeights.cpp - MXFP4 weights as bf16 on the CPU path ------===//
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
      rewriter.setInsertionPoint(op);
      auto type = cast<RankedTensorType>(op.getType());
      Value bf16 = WeightOp::create(rewriter, op.getLoc(),
                                    type.clone(rewriter.getBF16Type()),
                                    (op.getName() + "#bf16").str());
      for (OpOperand &use : llvm::make_early_inc_range(op->getUses())) {
        Operation *user = use.getOwner();
        if (auto linear = dyn_cast<LinearOp>(user)) {
          rewriter.modifyOpInPlace(linear, [&] {
            linear.getWeightMutable().assign(bf16);
            linear.getScalesMutable().clear();
          });
        } else if (auto moe = dyn_cast<MoeOp>(user)) {
          rewriter.modifyOpInPlace(moe, [&] {
            use.set(bf16);
            // All experts become bf16 together; the scales go with the last.
            moe.getW1ScaleMutable().clear();
            moe.getW3ScaleMutable().clear();
            moe.getW2ScaleMutable().clear();
          });
        } else if (auto ext = dyn_cast<arith::ScalingExtFOp>(user)) {
          Value repl = bf16;
          if (ext.getType() != bf16.getType())
            repl = arith::ExtFOp::create(rewriter, ext.getLoc(), ext.getType(), bf16);
          rewriter.replaceOp(ext, repl);
        } else {
          user->emitOpError() << "uses MXFP4 weight '" << op.getName()
                              << "' in a way the CPU path cannot dequantize";
          return signalPassFailure();
        }
      }
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
