//===- DecomposeMlp.cpp - Split k3.mlp into its projections ---------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "k3-decompose-mlp"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3DECOMPOSEMLPPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;
using namespace mlir::k3;

namespace {

/// k3.mlp(x) → linear(glu(linear(x, gate), linear(x, up)), down), the GLU
/// k3.situ_glu or k3.swiglu by the op's activation.
struct DecomposeMlp : OpRewritePattern<MlpOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MlpOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto xType = cast<RankedTensorType>(op.getX().getType());
    auto gateType = cast<RankedTensorType>(op.getGateProj().getType());
    // [T, I] in the activation's element type: the rewrite must not add or
    // remove a rounding point.
    auto hiddenType = RankedTensorType::get(
        {xType.getDimSize(0), gateType.getDimSize(0)}, xType.getElementType());
    Value gate = LinearOp::create(rewriter, loc, hiddenType, op.getX(),
                                  op.getGateProj(), Value());
    Value up = LinearOp::create(rewriter, loc, hiddenType, op.getX(),
                                op.getUpProj(), Value());
    Value hidden = createGlu(rewriter, loc, hiddenType, gate, up, op.getGlu(),
                                     op.getBeta1Attr(), op.getBeta2Attr());
    rewriter.replaceOpWithNewOp<LinearOp>(op, op.getY().getType(), hidden,
                                          op.getDownProj(), Value());
    return success();
  }
};

struct K3DecomposeMlpPass
    : k3::impl::K3DecomposeMlpPassBase<K3DecomposeMlpPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeMlp>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
