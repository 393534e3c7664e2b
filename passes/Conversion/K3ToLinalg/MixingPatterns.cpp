//===- MixingPatterns.cpp - situ_glu, swiglu, kda_gate, attn_res ---------===//
//
// Part of k3. Lowers the elementwise and per-token mixing ops to linalg on
// tensors, all math in f32.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Conversion/K3ToLinalg/Common.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::k3;
using namespace mlir::k3::lowering;

namespace {

/// β·tanh(z/β).
Value softCap(OpBuilder &b, Location loc, Value z, double beta) {
  Value t = math::TanhOp::create(b, loc, arith::DivFOp::create(b, loc, z, cst(b, loc, beta)));
  return arith::MulFOp::create(b, loc, t, cst(b, loc, beta));
}

/// [β1·tanh(g/β1)·sigmoid(g)] · [β2·tanh(u/β2)] (u itself without β2).
struct LowerSituGlu : OpRewritePattern<SituGluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SituGluOp op, PatternRewriter &b) const override {
    double beta1 = op.getBeta1().convertToDouble();
    std::optional<double> beta2;
    if (op.getBeta2Attr())
      beta2 = op.getBeta2Attr().getValueAsDouble();
    b.replaceOp(op, elementwise(b, op.getLoc(), {op.getGate(), op.getUp()},
                                cast<RankedTensorType>(op.getY().getType()),
                                [&](OpBuilder &nb, Location nl, ValueRange a) {
                                  Value g = arith::MulFOp::create(
                                      nb, nl, softCap(nb, nl, a[0], beta1),
                                      sigmoid(nb, nl, a[0]));
                                  Value u = beta2 ? softCap(nb, nl, a[1], *beta2) : a[1];
                                  return Value(arith::MulFOp::create(nb, nl, g, u));
                                }));
    return success();
  }
};

/// silu(g) · u = g · sigmoid(g) · u.
struct LowerSwiGlu : OpRewritePattern<SwiGluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SwiGluOp op, PatternRewriter &b) const override {
    b.replaceOp(op, elementwise(b, op.getLoc(), {op.getGate(), op.getUp()},
                                cast<RankedTensorType>(op.getY().getType()),
                                [&](OpBuilder &nb, Location nl, ValueRange a) {
                                  Value g = arith::MulFOp::create(nb, nl, a[0],
                                                                  sigmoid(nb, nl, a[0]));
                                  return Value(arith::MulFOp::create(nb, nl, g, a[1]));
                                }));
    return success();
  }
};

/// g = lb·sigmoid(exp(A)·(x + dt)) or −exp(A)·softplus(x + dt); softplus is
/// the identity above 20 (FLA).
struct LowerKdaGate : OpRewritePattern<KdaGateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(KdaGateOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    bool bounded = op.getForm() == KdaGateForm::lower_bound;
    double lb = bounded ? double(op.getLbAttr().getValueAsDouble()) : 0.0;
    Value init = empty(b, loc, sizesOf(b, loc, op.getX()), b.getF32Type());
    Value g = generic(
                  b, loc, {op.getX(), op.getALog(), op.getDtBias()}, init,
                  {identity(ctx, 3), project(ctx, 3, {1}), project(ctx, 3, {1, 2}),
                   identity(ctx, 3)},
                  SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel),
                  [&](OpBuilder &nb, Location nl, ValueRange a) {
                    return SmallVector<Value>{kdaDecay(nb, nl, bounded, lb, a[0], a[1], a[2])};
                  })
                  .front();
    b.replaceOp(op, g);
    return success();
  }
};

/// Per token: score_i = (Σ_d v_i·norm·query) / sqrt(mean(v_i²) + eps);
/// p = softmax(score); out = Σ_i p_i·v_i (raw values).
struct LowerAttnRes : OpRewritePattern<AttnResOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttnResOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    auto outType = cast<RankedTensorType>(op.getOut().getType());
    int64_t d = outType.getDimSize(1);
    double eps = op.getEps().convertToDouble();
    SmallVector<Value> scores;
    for (Value v : op.getSources()) {
      Value sumsq = sumOfSquares(b, loc, v);
      Value dot = reduceLast(b, loc, {v, op.getNormWeight(), op.getQuery()},
                             [](OpBuilder &nb, Location nl, ValueRange a) {
                               return Value(arith::MulFOp::create(
                                   nb, nl, arith::MulFOp::create(nb, nl, a[0], a[1]), a[2]));
                             });
      scores.push_back(elementwise(
          b, loc, {dot, sumsq}, cast<RankedTensorType>(dot.getType()),
          [&](OpBuilder &nb, Location nl, ValueRange a) {
            Value mean = arith::DivFOp::create(nb, nl, a[1], cst(nb, nl, double(d)));
            Value rms = math::SqrtOp::create(
                nb, nl, arith::AddFOp::create(nb, nl, mean, cst(nb, nl, eps)));
            return Value(arith::DivFOp::create(nb, nl, a[0], rms));
          }));
    }
    // Softmax over the candidates, one token at a time.
    size_t n = scores.size();
    SmallVector<Value> inits;
    for (size_t i = 0; i < n; ++i)
      inits.push_back(empty(b, loc, sizesOf(b, loc, scores[i]), b.getF32Type()));
    SmallVector<AffineMap> maps(2 * n, identity(ctx, 1));
    SmallVector<Value> probs = generic(
        b, loc, scores, inits, maps, {utils::IteratorType::parallel},
        [&](OpBuilder &nb, Location nl, ValueRange a) {
          Value mx = a[0];
          for (size_t i = 1; i < n; ++i)
            mx = arith::MaximumFOp::create(nb, nl, mx, a[i]);
          SmallVector<Value> e;
          Value sum = cst(nb, nl, 0.0);
          for (size_t i = 0; i < n; ++i) {
            e.push_back(math::ExpOp::create(nb, nl, arith::SubFOp::create(nb, nl, a[i], mx)));
            sum = arith::AddFOp::create(nb, nl, sum, e.back());
          }
          for (Value &x : e)
            x = arith::DivFOp::create(nb, nl, x, sum);
          return e;
        });
    // out[t, d] = Σ_i p_i[t] · v_i[t, d].
    SmallVector<Value> ins(op.getSources().begin(), op.getSources().end());
    ins.append(probs.begin(), probs.end());
    SmallVector<AffineMap> outMaps(n, identity(ctx, 2));
    outMaps.append(n, project(ctx, 2, {0}));
    outMaps.push_back(identity(ctx, 2));
    Value init = empty(b, loc, sizesOf(b, loc, op.getSources().front()),
                       outType.getElementType());
    Value out = generic(b, loc, ins, init, outMaps,
                        {utils::IteratorType::parallel, utils::IteratorType::parallel},
                        [&](OpBuilder &nb, Location nl, ValueRange a) {
                          Value acc = cst(nb, nl, 0.0);
                          for (size_t i = 0; i < n; ++i)
                            acc = arith::AddFOp::create(
                                nb, nl, acc, arith::MulFOp::create(nb, nl, a[n + i], a[i]));
                          return SmallVector<Value>{acc};
                        })
                    .front();
    b.replaceOp(op, out);
    return success();
  }
};

} // namespace

void mlir::k3::lowering::populateMixingPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerAttnRes, LowerKdaGate, LowerSituGlu, LowerSwiGlu>(patterns.getContext());
}
