//===- KdaStepPattern.cpp - The KDA decode step as the GPU's kernel -------===//
//
// Part of k3. `k3.kda_decode` (`kda-decode=kernel`, the GPU default) as one
// `k3.kda_step`, which k3-gpu-kda-step builds into one kernel with a block
// per value head. The destinations: fresh tensors for the output and the
// three new windows (under GVA the blocks of a group all read the old q/k
// windows while the group's first block writes the new ones, so those must
// not share a buffer), and the state itself, updated in place (one-shot
// bufferization copies it first if the old state is still read).
//
// The kernel needs the head shapes static, as the loop forms do
// (KdaDecodePattern.cpp); elsewhere nothing lowers the op.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Conversion/K3ToLinalg/Common.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::k3;
using namespace mlir::k3::lowering;

namespace {

struct KernelKdaDecode : OpRewritePattern<KdaDecodeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(KdaDecodeOp op, PatternRewriter &b) const override {
    for (Value v : {op.getState(), op.getCq(), op.getCk(), op.getCv()})
      if (!cast<RankedTensorType>(v.getType()).hasStaticShape())
        return b.notifyMatchFailure(op, "needs static head shapes");
    Location loc = op.getLoc();
    auto fresh = [&](Value like) {
      auto type = cast<RankedTensorType>(like.getType());
      return empty(b, loc, sizesOf(b, loc, like), type.getElementType());
    };
    // The output's shape is the out_gate's ([1, HV, V]), its type the op's.
    Value out = empty(b, loc, sizesOf(b, loc, op.getOutGate()),
                      cast<RankedTensorType>(op.getOut().getType()).getElementType());
    SmallVector<Value> inits{out, fresh(op.getCq()), fresh(op.getCk()), fresh(op.getCv()),
                             op.getState()};
    SmallVector<Type> types;
    for (Value v : inits)
      types.push_back(v.getType());
    auto step = KdaStepOp::create(
        b, loc, types, op.getXq(), op.getXk(), op.getXv(), op.getWq(), op.getWk(), op.getWv(),
        op.getCq(), op.getCk(), op.getCv(), op.getF(), op.getALog(), op.getDtBias(),
        op.getBetaLogits(), op.getNormWeight(), op.getOutGate(), inits[0], inits[1], inits[2],
        inits[3], inits[4], op.getFormAttr(), op.getLbAttr(), op.getScaleAttr(), op.getEpsAttr());
    // The results keep the op's types (a static out_gate may be more precise
    // than a dynamic out).
    SmallVector<Value> results;
    for (auto [r, old] : llvm::zip(step.getResults(), op.getResults()))
      results.push_back(r.getType() == old.getType()
                            ? r
                            : Value(tensor::CastOp::create(b, loc, old.getType(), r)));
    b.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::k3::lowering::populateKdaStepPatterns(RewritePatternSet &patterns) {
  // Over the loop forms (KdaDecodePattern.cpp, benefit 1).
  patterns.add<KernelKdaDecode>(patterns.getContext(), /*benefit=*/2);
}
