//===- MixingPatterns.cpp - situ_glu, swiglu, kda_gate, attn_res ---------===//
//
// Part of k3. Lowers the elementwise and per-token mixing ops to linalg on
// tensors, all math in f32.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Conversion/K3ToLinalg/Common.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

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

/// The candidates' scores, per token (and per block of a stack):
/// (Σ_d v·norm·query) / sqrt(mean(v²) + eps), over the last dimension.
Value attnResScore(OpBuilder &b, Location loc, AttnResOp op, Value v) {
  int64_t d = cast<RankedTensorType>(op.getOut().getType()).getDimSize(1);
  double eps = op.getEps().convertToDouble();
  Value sumsq = sumOfSquares(b, loc, v);
  Value dot = reduceLast(b, loc, {v, op.getNormWeight(), op.getQuery()},
                         [](OpBuilder &nb, Location nl, ValueRange a) {
                           return Value(arith::MulFOp::create(
                               nb, nl, arith::MulFOp::create(nb, nl, a[0], a[1]), a[2]));
                         });
  return elementwise(b, loc, {dot, sumsq}, cast<RankedTensorType>(dot.getType()),
                     [&](OpBuilder &nb, Location nl, ValueRange a) {
                       Value mean = arith::DivFOp::create(nb, nl, a[1], cst(nb, nl, double(d)));
                       Value rms = math::SqrtOp::create(
                           nb, nl, arith::AddFOp::create(nb, nl, mean, cst(nb, nl, eps)));
                       return Value(arith::DivFOp::create(nb, nl, a[0], rms));
                     });
}

/// Per token: score_i = (Σ_d v_i·norm·query) / sqrt(mean(v_i²) + eps);
/// p = softmax(score); out = Σ_i p_i·v_i (raw values).
struct LowerAttnRes : OpRewritePattern<AttnResOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttnResOp op, PatternRewriter &b) const override {
    if (cast<RankedTensorType>(op.getSources().front().getType()).getRank() == 3)
      return stacked(op, b);
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    auto outType = cast<RankedTensorType>(op.getOut().getType());
    SmallVector<Value> scores;
    for (Value v : op.getSources())
      scores.push_back(attnResScore(b, loc, op, v));
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

  /// A stack of N blocks [N, T, D] first, then [T, D] candidates: the same
  /// softmax with the blocks' part as reductions over N (N need not be
  /// static), in as few loop nests as the variadic form: one per
  /// candidate for its dot product and sum of squares together, one for
  /// the [T, D] candidates' running maximum and denominator, one online
  /// softmax over the blocks (maximum and denominator rescaled as it goes),
  /// the blocks' probabilities, and the weighted sum, started from the
  /// [T, D] candidates' part.
  LogicalResult stacked(AttnResOp op, PatternRewriter &b) const {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    auto outType = cast<RankedTensorType>(op.getOut().getType());
    int64_t d = outType.getDimSize(1);
    double eps = op.getEps().convertToDouble();
    Value stack = op.getSources().front();
    ValueRange rest = op.getSources().drop_front();
    using utils::IteratorType;
    // (Σ_d v·norm·query, Σ_d v²) over the last dimension, in one nest.
    auto partials = [&](Value v) {
      unsigned r = cast<RankedTensorType>(v.getType()).getRank();
      SmallVector<OpFoldResult> sizes = sizesOf(b, loc, v);
      sizes.pop_back();
      SmallVector<IteratorType> its(r, IteratorType::parallel);
      its.back() = IteratorType::reduction;
      return generic(b, loc, {v, op.getNormWeight(), op.getQuery()},
                     {zeros(b, loc, sizes), zeros(b, loc, sizes)},
                     {identity(ctx, r), project(ctx, r, {r - 1}), project(ctx, r, {r - 1}),
                      leading(ctx, r), leading(ctx, r)},
                     its, [](OpBuilder &nb, Location nl, ValueRange a) {
                       Value t = arith::MulFOp::create(
                           nb, nl, arith::MulFOp::create(nb, nl, a[0], a[1]), a[2]);
                       return SmallVector<Value>{
                           arith::AddFOp::create(nb, nl, a[3], t, kReassociable),
                           arith::AddFOp::create(nb, nl, a[4],
                                                 arith::MulFOp::create(nb, nl, a[0], a[0]),
                                                 kReassociable)};
                     });
    };
    auto score = [&](OpBuilder &nb, Location nl, Value dot, Value sumsq) {
      Value mean = arith::DivFOp::create(nb, nl, sumsq, cst(nb, nl, double(d)));
      Value rms =
          math::SqrtOp::create(nb, nl, arith::AddFOp::create(nb, nl, mean, cst(nb, nl, eps)));
      return Value(arith::DivFOp::create(nb, nl, dot, rms));
    };
    auto expMinus = [](OpBuilder &nb, Location nl, Value x, Value m) {
      return Value(math::ExpOp::create(nb, nl, arith::SubFOp::create(nb, nl, x, m)));
    };
    SmallVector<Value> stackParts = partials(stack); // [N, T] each
    SmallVector<Value> restParts;                    // [T] each, two per candidate
    for (Value v : rest)
      llvm::append_range(restParts, partials(v));
    SmallVector<OpFoldResult> tokens{sizesOf(b, loc, stack)[1]};
    size_t n = rest.size();

    // The [T, D] candidates' maximum and denominator (or -inf and 0).
    Value m0, s0;
    if (n == 0) {
      m0 = linalg::FillOp::create(b, loc, cst(b, loc, -INFINITY),
                                  empty(b, loc, tokens, b.getF32Type()))
               .getResult(0);
      s0 = zeros(b, loc, tokens);
    } else {
      SmallVector<AffineMap> maps(2 * n + 2, identity(ctx, 1));
      SmallVector<Value> start =
          generic(b, loc, restParts,
                  {empty(b, loc, tokens, b.getF32Type()), empty(b, loc, tokens, b.getF32Type())},
                  maps, {IteratorType::parallel}, [&](OpBuilder &nb, Location nl, ValueRange a) {
                    SmallVector<Value> scores;
                    for (size_t j = 0; j < n; ++j)
                      scores.push_back(score(nb, nl, a[2 * j], a[2 * j + 1]));
                    Value mx = scores[0];
                    for (Value x : ArrayRef(scores).drop_front())
                      mx = arith::MaximumFOp::create(nb, nl, mx, x);
                    Value sum = cst(nb, nl, 0.0);
                    for (Value x : scores)
                      sum = arith::AddFOp::create(nb, nl, sum, expMinus(nb, nl, x, mx));
                    return SmallVector<Value>{mx, sum};
                  });
      m0 = start[0];
      s0 = start[1];
    }
    // The online softmax over the blocks: m' = max(m, x),
    // s' = s·e^{m - m'} + e^{x - m'}.
    const AffineMap byTokenN = project(ctx, 2, {1, 0}), byToken = project(ctx, 2, {0});
    SmallVector<Value> ms = generic(
        b, loc, stackParts, {m0, s0}, {byTokenN, byTokenN, byToken, byToken},
        {IteratorType::parallel, IteratorType::reduction},
        [&](OpBuilder &nb, Location nl, ValueRange a) {
          Value x = score(nb, nl, a[0], a[1]);
          Value m = arith::MaximumFOp::create(nb, nl, a[2], x);
          Value kept = arith::MulFOp::create(nb, nl, a[3], expMinus(nb, nl, a[2], m));
          return SmallVector<Value>{m, arith::AddFOp::create(nb, nl, kept, expMinus(nb, nl, x, m))};
        });
    auto prob = [&](OpBuilder &nb, Location nl, Value dot, Value sumsq, Value m, Value sum) {
      return Value(
          arith::DivFOp::create(nb, nl, expMinus(nb, nl, score(nb, nl, dot, sumsq), m), sum));
    };
    Value stackProbs =
        generic(b, loc, {stackParts[0], stackParts[1], ms[0], ms[1]},
                empty(b, loc, sizesOf(b, loc, stackParts[0]), b.getF32Type()),
                {identity(ctx, 2), identity(ctx, 2), project(ctx, 2, {1}), project(ctx, 2, {1}),
                 identity(ctx, 2)},
                {IteratorType::parallel, IteratorType::parallel},
                [&](OpBuilder &nb, Location nl, ValueRange a) {
                  return SmallVector<Value>{prob(nb, nl, a[0], a[1], a[2], a[3])};
                })
            .front();
    // out[t, d] = Σ_j p_j[t]·v_j[t, d] over the [T, D] candidates, then
    // Σ_n p[n, t]·stack[n, t, d] accumulated onto it.
    SmallVector<OpFoldResult> outSizes{tokens[0], b.getIndexAttr(d)};
    Value init;
    if (n == 0) {
      init = zeros(b, loc, outSizes);
    } else {
      SmallVector<Value> ins(rest.begin(), rest.end());
      llvm::append_range(ins, restParts);
      ins.push_back(ms[0]);
      ins.push_back(ms[1]);
      SmallVector<AffineMap> maps(n, identity(ctx, 2));
      maps.append(2 * n + 2, project(ctx, 2, {0}));
      maps.push_back(identity(ctx, 2));
      init = generic(b, loc, ins, empty(b, loc, outSizes, b.getF32Type()), maps,
                     {IteratorType::parallel, IteratorType::parallel},
                     [&](OpBuilder &nb, Location nl, ValueRange a) {
                       Value acc = cst(nb, nl, 0.0);
                       for (size_t j = 0; j < n; ++j) {
                         Value p = prob(nb, nl, a[n + 2 * j], a[n + 2 * j + 1], a[3 * n],
                                        a[3 * n + 1]);
                         acc = arith::AddFOp::create(nb, nl, acc,
                                                     arith::MulFOp::create(nb, nl, p, a[j]));
                       }
                       return SmallVector<Value>{acc};
                     })
                 .front();
    }
    Value out = generic(b, loc, {stack, stackProbs}, init,
                        {project(ctx, 3, {2, 0, 1}), project(ctx, 3, {2, 0}),
                         project(ctx, 3, {0, 1})},
                        {IteratorType::parallel, IteratorType::parallel, IteratorType::reduction},
                        [](OpBuilder &nb, Location nl, ValueRange a) {
                          return SmallVector<Value>{arith::AddFOp::create(
                              nb, nl, a[2], arith::MulFOp::create(nb, nl, a[1], a[0]))};
                        })
                    .front();
    out = withElementType(b, loc, out, outType.getElementType());
    if (out.getType() != outType)
      out = tensor::CastOp::create(b, loc, outType, out);
    b.replaceOp(op, out);
    return success();
  }
};

} // namespace

void mlir::k3::lowering::populateMixingPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerAttnRes, LowerKdaGate, LowerSituGlu, LowerSwiGlu>(patterns.getContext());
}
