//===- AttnResMixPattern.cpp - AttnRes as the GPU's one kernel ------------===//
//
// Part of k3. `k3.attn_res` (`attn-res=kernel`, the GPU default) as one
// `k3.attn_res_mix` into a fresh [T, D] destination, which k3-gpu-attn-res
// builds into one kernel with a block per token. Only where the row width
// D is static and gives a team (attnResTeam: a power of two from 32 to 256
// dividing D, at most 32 channels a thread); elsewhere the linalg form
// (MixingPatterns.cpp) takes the op.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Conversion/K3ToLinalg/Common.h"
#include "passes/Passes.h"

using namespace mlir;
using namespace mlir::k3;
using namespace mlir::k3::lowering;

namespace {

struct KernelAttnRes : OpRewritePattern<AttnResOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttnResOp op, PatternRewriter &b) const override {
    auto outType = cast<RankedTensorType>(op.getOut().getType());
    if (outType.isDynamicDim(1) || attnResTeam(outType.getDimSize(1)) == 0)
      return b.notifyMatchFailure(op, "no kernel team for this row width");
    Location loc = op.getLoc();
    // [T, D]: a source's (a stack's dimensions 1 and 2).
    SmallVector<OpFoldResult> sizes = sizesOf(b, loc, op.getSources().back());
    if (sizes.size() == 3)
      sizes.erase(sizes.begin());
    // The destination has the result's type: its static sizes even where
    // the sources' are dynamic.
    for (auto [i, size] : llvm::enumerate(sizes))
      if (!outType.isDynamicDim(i))
        size = b.getIndexAttr(outType.getDimSize(i));
    Value out = empty(b, loc, sizes, outType.getElementType());
    auto mix = AttnResMixOp::create(b, loc, TypeRange{outType}, op.getSources(),
                                    op.getNormWeight(), op.getQuery(), /*then_norm=*/Value(),
                                    out, op.getEpsAttr(), /*then_eps=*/FloatAttr());
    b.replaceOp(op, mix.getResult(0));
    return success();
  }
};

} // namespace

void mlir::k3::lowering::populateAttnResMixPatterns(RewritePatternSet &patterns) {
  // Over the linalg form (MixingPatterns.cpp, benefit 1).
  patterns.add<KernelAttnRes>(patterns.getContext(), /*benefit=*/2);
}
