//===- RowNormPattern.cpp - RMSNorm as the GPU's one kernel ---------------===//
//
// Part of k3. `k3.rms_norm` of [R, D] rows (`norm=kernel`, the GPU default)
// as one `k3.row_norm` into a fresh [R, D] destination, which
// k3-gpu-row-norm builds into one kernel with a block per row. The linalg
// form (PlumbingPatterns.cpp) is two kernels on a GPU: the sums of squares
// with a thread per row walking all D values, then the scaling. Only for
// rank-2 rows whose static width D gives a team (rowNormTeam); the rest,
// such as the KDA's gated [T, H, Dv] output norm, stays linalg.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Conversion/K3ToLinalg/Common.h"
#include "passes/Passes.h"

using namespace mlir;
using namespace mlir::k3;
using namespace mlir::k3::lowering;

namespace {

struct KernelRowNorm : OpRewritePattern<RmsNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RmsNormOp op, PatternRewriter &b) const override {
    auto type = cast<RankedTensorType>(op.getY().getType());
    if (type.getRank() != 2)
      return b.notifyMatchFailure(op, "not [R, D] rows");
    if (type.isDynamicDim(1) || rowNormTeam(type.getDimSize(1)) == 0)
      return b.notifyMatchFailure(op, "no kernel team for this row width");
    Location loc = op.getLoc();
    // The destination has y's type: its static sizes (the width the team
    // needs, a decode step's one row) even where x's are dynamic.
    SmallVector<OpFoldResult> sizes = sizesOf(b, loc, op.getX());
    for (auto [i, size] : llvm::enumerate(sizes))
      if (!type.isDynamicDim(i))
        size = b.getIndexAttr(type.getDimSize(i));
    Value out = empty(b, loc, sizes, type.getElementType());
    auto norm = RowNormOp::create(b, loc, TypeRange{type}, op.getX(), op.getWeight(),
                                  op.getGate(), out, op.getEpsAttr());
    b.replaceOp(op, norm.getResult(0));
    return success();
  }
};

} // namespace

void mlir::k3::lowering::populateRowNormPatterns(RewritePatternSet &patterns) {
  // Over the linalg form (PlumbingPatterns.cpp, benefit 1).
  patterns.add<KernelRowNorm>(patterns.getContext(), /*benefit=*/2);
}
