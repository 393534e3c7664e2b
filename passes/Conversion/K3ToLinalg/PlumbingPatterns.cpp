//===- PlumbingPatterns.cpp - embed, linear, lm_head, norms, sigmoid ------===//
//
// Part of k3. Lowers the plumbing ops to linalg on tensors. Statistics and
// accumulations are f32; results are converted to the op's element type.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Conversion/K3ToLinalg/Common.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::k3;
using namespace mlir::k3::lowering;

namespace {

/// out[t, d] = table[clamp(ids[t]), d]. The runtime refuses out-of-range
/// ids before running; the clamp only keeps a bad id from reading memory.
struct LowerEmbed : OpRewritePattern<EmbedOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbedOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    auto outType = cast<RankedTensorType>(op.getOut().getType());
    Value table = op.getTable();
    SmallVector<OpFoldResult> sizes{sizesOf(b, loc, op.getIds())[0],
                                    sizesOf(b, loc, table)[1]};
    Value init = empty(b, loc, sizes, outType.getElementType());
    Value last = arith::SubIOp::create(
        b, loc, tensor::DimOp::create(b, loc, table, 0),
        arith::ConstantIndexOp::create(b, loc, 1));
    MLIRContext *ctx = b.getContext();
    auto gen = linalg::GenericOp::create(
        b, loc, TypeRange{outType}, ValueRange{op.getIds()}, ValueRange{init},
        ArrayRef<AffineMap>{project(ctx, 2, {0}), identity(ctx, 2)},
        ArrayRef<utils::IteratorType>{utils::IteratorType::parallel,
                                      utils::IteratorType::parallel},
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value id = arith::IndexCastOp::create(nb, nl, nb.getIndexType(), args[0]);
          Value zero = arith::ConstantIndexOp::create(nb, nl, 0);
          id = arith::MaxSIOp::create(nb, nl, id, zero);
          id = arith::MinSIOp::create(nb, nl, id, last);
          Value d = linalg::IndexOp::create(nb, nl, 1);
          Value v = tensor::ExtractOp::create(nb, nl, table, ValueRange{id, d});
          linalg::YieldOp::create(
              nb, nl, convertScalar(nb, nl, v, outType.getElementType()));
        });
    b.replaceOp(op, gen.getResults());
    return success();
  }
};

/// y = x · Wᵀ; MXFP4 weights are decoded inside the dot products (or into
/// the blocked GEMM's panels).
struct LowerLinear : OpRewritePattern<LinearOp> {
  LowerLinear(MLIRContext *ctx, bool blocked, int64_t panel)
      : OpRewritePattern(ctx), blocked(blocked), panel(panel) {}
  LogicalResult matchAndRewrite(LinearOp op, PatternRewriter &b) const override {
    FailureOr<GemmWeight> w = gemmWeight(b, op, op.getWeight(), op.getScales());
    if (failed(w))
      return failure();
    Location loc = op.getLoc();
    Value acc = blocked && blockedContractApplies(op.getX(), *w, panel)
                    ? blockedContract(b, loc, op.getX(), *w, panel)
                    : contractWeight(b, loc, op.getX(), *w);
    auto type = cast<RankedTensorType>(op.getY().getType());
    b.replaceOp(op, withElementType(b, loc, acc, type.getElementType()));
    return success();
  }

private:
  bool blocked;
  int64_t panel;
};

/// logits = x · Wᵀ over the vocabulary (the blocked GEMM for a prompt's
/// rows, as k3.linear).
struct LowerLmHead : OpRewritePattern<LmHeadOp> {
  LowerLmHead(MLIRContext *ctx, bool blocked, int64_t panel)
      : OpRewritePattern(ctx), blocked(blocked), panel(panel) {}
  LogicalResult matchAndRewrite(LmHeadOp op, PatternRewriter &b) const override {
    FailureOr<GemmWeight> w = gemmWeight(b, op, op.getWeight(), Value());
    if (failed(w))
      return failure();
    b.replaceOp(op, blocked && blockedContractApplies(op.getX(), *w, panel)
                        ? blockedContract(b, op.getLoc(), op.getX(), *w, panel)
                        : contractWeight(b, op.getLoc(), op.getX(), *w));
    return success();
  }

private:
  bool blocked;
  int64_t panel;
};

/// y = x · rsqrt(mean(x²) + eps) · w [· sigmoid(gate)] over the last dim.
struct LowerRmsNorm : OpRewritePattern<RmsNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RmsNormOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = op.getX();
    auto type = cast<RankedTensorType>(op.getY().getType());
    unsigned r = type.getRank();
    double eps = op.getEps().convertToDouble();
    Value sumsq = sumOfSquares(b, loc, x);
    MLIRContext *ctx = b.getContext();
    SmallVector<Value> ins{x, sumsq, op.getWeight()};
    SmallVector<AffineMap> maps{identity(ctx, r), leading(ctx, r),
                                project(ctx, r, {r - 1})};
    if (op.getGate()) {
      ins.push_back(op.getGate());
      maps.push_back(identity(ctx, r));
    }
    maps.push_back(identity(ctx, r));
    Value init = empty(b, loc, sizesOf(b, loc, x), type.getElementType());
    int64_t d = cast<RankedTensorType>(op.getWeight().getType()).getDimSize(0);
    bool gated = static_cast<bool>(op.getGate());
    Value y = generic(b, loc, ins, init, maps,
                      SmallVector<utils::IteratorType>(r, utils::IteratorType::parallel),
                      [&](OpBuilder &nb, Location nl, ValueRange a) {
                        Value mean = arith::DivFOp::create(nb, nl, a[1], cst(nb, nl, double(d)));
                        Value inv = math::RsqrtOp::create(
                            nb, nl, arith::AddFOp::create(nb, nl, mean, cst(nb, nl, eps)));
                        Value v = arith::MulFOp::create(
                            nb, nl, arith::MulFOp::create(nb, nl, a[0], inv), a[2]);
                        if (gated)
                          v = arith::MulFOp::create(nb, nl, v, sigmoid(nb, nl, a[3]));
                        return SmallVector<Value>{v};
                      })
                  .front();
    b.replaceOp(op, y);
    return success();
  }
};

/// y = x / sqrt(Σx² + eps) over the last dim (eps inside the root).
struct LowerL2Norm : OpRewritePattern<L2NormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(L2NormOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = op.getX();
    auto type = cast<RankedTensorType>(x.getType());
    unsigned r = type.getRank();
    double eps = op.getEps().convertToDouble();
    Value sumsq = sumOfSquares(b, loc, x);
    MLIRContext *ctx = b.getContext();
    Value init = empty(b, loc, sizesOf(b, loc, x), type.getElementType());
    Value y = generic(b, loc, {x, sumsq}, init,
                      {identity(ctx, r), leading(ctx, r), identity(ctx, r)},
                      SmallVector<utils::IteratorType>(r, utils::IteratorType::parallel),
                      [&](OpBuilder &nb, Location nl, ValueRange a) {
                        Value inv = math::RsqrtOp::create(
                            nb, nl, arith::AddFOp::create(nb, nl, a[1], cst(nb, nl, eps)));
                        return SmallVector<Value>{arith::MulFOp::create(nb, nl, a[0], inv)};
                      })
                  .front();
    b.replaceOp(op, y);
    return success();
  }
};

struct LowerSigmoid : OpRewritePattern<SigmoidOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SigmoidOp op, PatternRewriter &b) const override {
    b.replaceOp(op, elementwise(b, op.getLoc(), op.getX(),
                                cast<RankedTensorType>(op.getY().getType()),
                                [](OpBuilder &nb, Location nl, ValueRange a) {
                                  return sigmoid(nb, nl, a[0]);
                                }));
    return success();
  }
};

} // namespace

void mlir::k3::lowering::populatePlumbingPatterns(RewritePatternSet &patterns,
                                                  bool blockedLinear,
                                                  int64_t panelColumns) {
  patterns.add<LowerEmbed, LowerL2Norm, LowerRmsNorm, LowerSigmoid>(patterns.getContext());
  patterns.add<LowerLinear, LowerLmHead>(patterns.getContext(), blockedLinear, panelColumns);
}
