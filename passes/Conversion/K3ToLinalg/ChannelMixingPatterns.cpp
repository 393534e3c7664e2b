//===- ChannelMixingPatterns.cpp - router and routed LatentMoE ------------===//
//
// Part of k3. The router's top-k as explicit loops (exact ties to the lower
// expert id), per token or (the GPU form) per (token, pick); the per-token LatentMoE (one matrix-vector product per token
// and selected expert, the baseline of the grouped lowering in
// GroupedMoePattern.cpp); and the parts both MoE lowerings share.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Conversion/K3ToLinalg/Common.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace mlir::k3;
using namespace mlir::k3::lowering;

namespace {

/// A biased score as the top-k compares it: NaN ranks last (as −inf).
/// Every comparison with a NaN is false, so where it sat in id order would
/// otherwise decide whether it wins (first) or is never "after" a pick
/// (the picks form would repeat ids). A chosen NaN expert still gets its
/// NaN weight from the unbiased score.
Value rankedScore(OpBuilder &b, Location loc, Value v) {
  Value nan = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, v, v);
  return arith::SelectOp::create(b, loc, nan,
                                 cst(b, loc, -std::numeric_limits<double>::infinity()), v);
}

/// scores = sigmoid(x·Wᵀ); per token, k rounds of "the best biased score
/// not taken yet" (strictly greater wins, so ties keep the lower id; NaN
/// ranks last); weights from the unbiased scores, renormalised (+1e-20),
/// scaled.
struct LowerRouter : OpRewritePattern<RouterOp> {
  LowerRouter(MLIRContext *ctx, bool perPick) : OpRewritePattern<RouterOp>(ctx), perPick(perPick) {}
  /// One loop nest over (token, pick) instead of a loop over tokens.
  bool perPick;

  LogicalResult matchAndRewrite(RouterOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    auto idxType = cast<RankedTensorType>(op.getIndices().getType());
    auto wType = cast<RankedTensorType>(op.getWeights().getType());
    Value logits = contract(b, loc, op.getX(), op.getWeight());
    auto lType = cast<RankedTensorType>(logits.getType());
    Value scores = elementwise(b, loc, logits, lType,
                               [](OpBuilder &nb, Location nl, ValueRange a) {
                                 return sigmoid(nb, nl, a[0]);
                               });
    Value biased = scores;
    if (op.getBias())
      biased = generic(b, loc, {scores, op.getBias()},
                       empty(b, loc, sizesOf(b, loc, scores), b.getF32Type()),
                       {identity(ctx, 2), project(ctx, 2, {1}), identity(ctx, 2)},
                       {utils::IteratorType::parallel, utils::IteratorType::parallel},
                       [](OpBuilder &nb, Location nl, ValueRange a) {
                         return SmallVector<Value>{arith::AddFOp::create(nb, nl, a[0], a[1])};
                       })
                   .front();
    Value tokens = tensor::DimOp::create(b, loc, op.getX(), 0);
    Value experts = tensor::DimOp::create(b, loc, op.getWeight(), 0);
    int64_t k = op.getTopK();
    SmallVector<OpFoldResult> outSizes{OpFoldResult(tokens), b.getIndexAttr(k)};
    Value idx0 = empty(b, loc, outSizes, idxType.getElementType());
    Value w0 = empty(b, loc, outSizes, wType.getElementType());
    bool renorm = op.getRenormalize();
    double scaling = op.getScaling().convertToDouble();
    Type idxElt = idxType.getElementType();

    if (perPick) {
      SmallVector<Value> r = picksNest(b, loc, scores, biased, experts, k, idx0, w0, renorm,
                                       scaling);
      SmallVector<Value> results;
      for (auto [v, want] : llvm::zip(r, op->getResultTypes()))
        results.push_back(v.getType() == want ? v : Value(tensor::CastOp::create(b, loc, want, v)));
      b.replaceOp(op, results);
      return success();
    }

    auto perToken = scf::ForOp::create(
        b, loc, cstIndex(b, loc, 0), tokens, cstIndex(b, loc, 1), ValueRange{idx0, w0},
        [&](OpBuilder &b1, Location l1, Value t, ValueRange it1) {
          auto picks = scf::ForOp::create(
              b1, l1, cstIndex(b1, l1, 0), cstIndex(b1, l1, k), cstIndex(b1, l1, 1), it1,
              [&](OpBuilder &b2, Location l2, Value j, ValueRange it2) {
                Value fls = arith::ConstantIntOp::create(b2, l2, 0, 1);
                auto search = scf::ForOp::create(
                    b2, l2, cstIndex(b2, l2, 0), experts, cstIndex(b2, l2, 1),
                    ValueRange{fls, cstIndex(b2, l2, 0), cst(b2, l2, 0.0)},
                    [&](OpBuilder &b3, Location l3, Value e, ValueRange best) {
                      Value v = rankedScore(
                          b3, l3, tensor::ExtractOp::create(b3, l3, biased, ValueRange{t, e}));
                      // Taken already: any of the first j picks equals e.
                      auto taken = scf::ForOp::create(
                          b3, l3, cstIndex(b3, l3, 0), j, cstIndex(b3, l3, 1),
                          ValueRange{arith::ConstantIntOp::create(b3, l3, 0, 1)},
                          [&](OpBuilder &b4, Location l4, Value jj, ValueRange f) {
                            Value p = tensor::ExtractOp::create(b4, l4, it2[0], ValueRange{t, jj});
                            Value pi = arith::IndexCastOp::create(b4, l4, b4.getIndexType(), p);
                            Value same = arith::CmpIOp::create(b4, l4, arith::CmpIPredicate::eq, pi, e);
                            scf::YieldOp::create(b4, l4, ValueRange{arith::OrIOp::create(b4, l4, f[0], same)});
                          });
                      Value greater = arith::CmpFOp::create(b3, l3, arith::CmpFPredicate::OGT, v, best[2]);
                      Value notFound = arith::XOrIOp::create(
                          b3, l3, best[0], arith::ConstantIntOp::create(b3, l3, 1, 1));
                      Value better = arith::AndIOp::create(
                          b3, l3,
                          arith::XOrIOp::create(b3, l3, taken.getResult(0),
                                                arith::ConstantIntOp::create(b3, l3, 1, 1)),
                          arith::OrIOp::create(b3, l3, notFound, greater));
                      Value found = arith::OrIOp::create(b3, l3, best[0], better);
                      scf::YieldOp::create(
                          b3, l3,
                          ValueRange{found, arith::SelectOp::create(b3, l3, better, e, best[1]),
                                     arith::SelectOp::create(b3, l3, better, v, best[2])});
                    });
                Value e = search.getResult(1);
                Value s = tensor::ExtractOp::create(b2, l2, scores, ValueRange{t, e});
                Value ei = arith::IndexCastOp::create(b2, l2, idxElt, e);
                Value idx = tensor::InsertOp::create(b2, l2, ei, it2[0], ValueRange{t, j});
                Value w = tensor::InsertOp::create(b2, l2, s, it2[1], ValueRange{t, j});
                scf::YieldOp::create(b2, l2, ValueRange{idx, w});
              });
          // Renormalise and scale this token's k weights.
          Value w = picks.getResult(1);
          Value sum = cst(b1, l1, 0.0);
          for (int64_t j = 0; j < k; ++j)
            sum = arith::AddFOp::create(
                b1, l1, sum,
                tensor::ExtractOp::create(b1, l1, w, ValueRange{t, cstIndex(b1, l1, j)}));
          Value denom = arith::AddFOp::create(b1, l1, sum, cst(b1, l1, 1e-20));
          for (int64_t j = 0; j < k; ++j) {
            Value pos[] = {t, cstIndex(b1, l1, j)};
            Value x = tensor::ExtractOp::create(b1, l1, w, pos);
            if (renorm)
              x = arith::DivFOp::create(b1, l1, x, denom);
            x = arith::MulFOp::create(b1, l1, x, cst(b1, l1, scaling));
            w = tensor::InsertOp::create(b1, l1, x, w, pos);
          }
          scf::YieldOp::create(b1, l1, ValueRange{picks.getResult(0), w});
        });
    // A static token count (decode) refines the dynamic results built here.
    SmallVector<Value> results;
    for (auto [v, want] : llvm::zip(perToken.getResults(), op->getResultTypes()))
      results.push_back(v.getType() == want ? Value(v) : Value(tensor::CastOp::create(b, loc, want, v)));
    b.replaceOp(op, results);
    return success();
  }

  /// The GPU form: a loop nest over (token t, pick j), each point repeating
  /// the k rounds on scalars and keeping round j. Round r picks the best
  /// expert after round r − 1's in the order (biased score descending, id
  /// ascending), which is the loop form's "best not taken yet, ties to the
  /// lower id" without a list of taken ids; the weight sum runs in the same
  /// order as there. k times the loop form's comparisons, on k times the
  /// threads, and no host loop over tokens. NaN scores rank last in both
  /// forms (rankedScore).
  static SmallVector<Value> picksNest(PatternRewriter &b, Location loc, Value scores,
                                      Value biased, Value experts, int64_t k, Value idx0,
                                      Value w0, bool renorm, double scaling) {
    MLIRContext *ctx = b.getContext();
    Type idxElt = cast<RankedTensorType>(idx0.getType()).getElementType();
    return generic(
        b, loc, ValueRange{}, {idx0, w0}, {identity(ctx, 2), identity(ctx, 2)},
        {utils::IteratorType::parallel, utils::IteratorType::parallel},
        [&](OpBuilder &nb, Location nl, ValueRange) -> SmallVector<Value> {
          Value t = linalg::IndexOp::create(nb, nl, 0), j = linalg::IndexOp::create(nb, nl, 1);
          auto i1 = [&](OpBuilder &bb, Location bl, bool v) {
            return arith::ConstantIntOp::create(bb, bl, v ? 1 : 0, 1).getResult();
          };
          Value c0 = cstIndex(nb, nl, 0), zero = cst(nb, nl, 0.0);
          // Round state: (any round yet, its biased score, its id, Σ weights,
          // round j's id, round j's weight).
          auto rounds = scf::ForOp::create(
              nb, nl, c0, cstIndex(nb, nl, k), cstIndex(nb, nl, 1),
              ValueRange{i1(nb, nl, false), zero, c0, zero, c0, zero},
              [&](OpBuilder &rb, Location rl, Value r, ValueRange st) {
                auto search = scf::ForOp::create(
                    rb, rl, cstIndex(rb, rl, 0), experts, cstIndex(rb, rl, 1),
                    ValueRange{i1(rb, rl, false), cstIndex(rb, rl, 0), cst(rb, rl, 0.0)},
                    [&](OpBuilder &eb, Location el, Value e, ValueRange best) {
                      auto fcmp = [&](arith::CmpFPredicate p, Value x, Value y) {
                        return arith::CmpFOp::create(eb, el, p, x, y).getResult();
                      };
                      Value v = rankedScore(
                          eb, el, tensor::ExtractOp::create(eb, el, biased, ValueRange{t, e}));
                      // After the previous round's pick in the order.
                      Value tieAfter = arith::AndIOp::create(
                          eb, el, fcmp(arith::CmpFPredicate::OEQ, v, st[1]),
                          arith::CmpIOp::create(eb, el, arith::CmpIPredicate::ugt, e, st[2]));
                      Value after = arith::OrIOp::create(
                          eb, el,
                          arith::XOrIOp::create(eb, el, st[0], i1(eb, el, true)),
                          arith::OrIOp::create(eb, el, fcmp(arith::CmpFPredicate::OLT, v, st[1]),
                                               tieAfter));
                      Value better = arith::AndIOp::create(
                          eb, el, after,
                          arith::OrIOp::create(
                              eb, el, arith::XOrIOp::create(eb, el, best[0], i1(eb, el, true)),
                              fcmp(arith::CmpFPredicate::OGT, v, best[2])));
                      scf::YieldOp::create(
                          eb, el,
                          ValueRange{arith::OrIOp::create(eb, el, best[0], better),
                                     arith::SelectOp::create(eb, el, better, e, best[1]),
                                     arith::SelectOp::create(eb, el, better, v, best[2])});
                    });
                Value e = search.getResult(1);
                Value s = tensor::ExtractOp::create(rb, rl, scores, ValueRange{t, e});
                Value mine = arith::CmpIOp::create(rb, rl, arith::CmpIPredicate::eq, r, j);
                scf::YieldOp::create(
                    rb, rl,
                    ValueRange{i1(rb, rl, true), search.getResult(2), e,
                               arith::AddFOp::create(rb, rl, st[3], s),
                               arith::SelectOp::create(rb, rl, mine, e, st[4]),
                               arith::SelectOp::create(rb, rl, mine, s, st[5])});
              });
          Value w = rounds.getResult(5);
          if (renorm)
            w = arith::DivFOp::create(
                nb, nl, w, arith::AddFOp::create(nb, nl, rounds.getResult(3), cst(nb, nl, 1e-20)));
          w = arith::MulFOp::create(nb, nl, w, cst(nb, nl, scaling));
          return {arith::IndexCastOp::create(nb, nl, idxElt, rounds.getResult(4)), w};
        });
  }
};

/// Row `t` of a [T, n] tensor as [1, n].
Value rowOf(OpBuilder &b, Location loc, Value m, Value t) {
  SmallVector<OpFoldResult> sizes = sizesOf(b, loc, m);
  sizes[0] = b.getIndexAttr(1);
  return tensor::ExtractSliceOp::create(b, loc, m, {t, b.getIndexAttr(0)}, sizes,
                                        {b.getIndexAttr(1), b.getIndexAttr(1)});
}

/// The per-token LatentMoE: per token and selected expert, one matrix-
/// vector product per expert matrix (MXFP4 decoded in its inner loop),
/// weighted into the f32 combine. The baseline `k3-bench moe` measures the
/// grouped lowering against (`convert-k3-to-linalg{moe-dispatch=per-token}`).
struct LowerMoePerToken : OpRewritePattern<MoeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MoeOp op, PatternRewriter &b) const override {
    GemmWeight w1, w3, w2;
    if (failed(moeWeights(b, op, w1, w3, w2)))
      return failure();
    Location loc = op.getLoc();
    FloatAttr beta1 = op.getBeta1Attr(), beta2 = op.getBeta2Attr();
    bool mxfp8 = op.getMxfp8Inputs();
    Value z = moeLatentInput(b, op);
    Value tokens = tensor::DimOp::create(b, loc, op.getX(), 0);
    // The picks per token: static from k3.router, dynamic only in hand-
    // written IR (the other MoE forms decline it and leave it to this one).
    Value picksPerToken = tensor::DimOp::create(b, loc, op.getIndices(), 1);
    Value u0 = zeros(b, loc, sizesOf(b, loc, z));
    Value zt;
    // u[t] += w · E_e(z[t]), in f32.
    auto pick = [&](OpBuilder &b2, Location l2, Value e, Value tok, Value j, Value u) -> Value {
      Value wgt = tensor::ExtractOp::create(b2, l2, op.getWeights(), ValueRange{tok, j});
      Value g = contractWeight(b2, l2, zt, expertOf(b2, l2, w1, e));
      Value up = contractWeight(b2, l2, zt, expertOf(b2, l2, w3, e));
      Value h = createGlu(b2, l2, g.getType(), g, up, op.getGlu(), beta1, beta2);
      if (mxfp8)
        h = roundToMxfp8(b2, l2, h);
      Value y = contractWeight(b2, l2, h, expertOf(b2, l2, w2, e));
      Value row = rowOf(b2, l2, u, tok);
      Value sum = elementwise(b2, l2, {row, y}, cast<RankedTensorType>(row.getType()),
                              [&](OpBuilder &nb, Location nl, ValueRange a) {
                                return Value(arith::AddFOp::create(
                                    nb, nl, a[0], arith::MulFOp::create(nb, nl, wgt, a[1])));
                              });
      return tensor::InsertSliceOp::create(b2, l2, sum, u, {tok, b2.getIndexAttr(0)},
                                           sizesOf(b2, l2, row),
                                           {b2.getIndexAttr(1), b2.getIndexAttr(1)});
    };
    auto perToken = scf::ForOp::create(
        b, loc, cstIndex(b, loc, 0), tokens, cstIndex(b, loc, 1), ValueRange{u0},
        [&](OpBuilder &b1, Location l1, Value tok, ValueRange it1) {
          zt = rowOf(b1, l1, z, tok);
          if (mxfp8)
            zt = roundToMxfp8(b1, l1, zt);
          auto perPick = scf::ForOp::create(
              b1, l1, cstIndex(b1, l1, 0), picksPerToken, cstIndex(b1, l1, 1), it1,
              [&](OpBuilder &b2, Location l2, Value j, ValueRange it2) {
                Value e = arith::IndexCastOp::create(
                    b2, l2, b2.getIndexType(),
                    tensor::ExtractOp::create(b2, l2, op.getIndices(), ValueRange{tok, j}));
                // A pick outside [0, E) is dropped, as in the grouped form.
                Value numExperts = tensor::DimOp::create(b2, l2, w1.data, 0);
                Value valid = arith::CmpIOp::create(b2, l2, arith::CmpIPredicate::ult, e, numExperts);
                auto guard = scf::IfOp::create(
                    b2, l2, valid,
                    [&](OpBuilder &b3, Location l3) {
                      scf::YieldOp::create(b3, l3, pick(b3, l3, e, tok, j, it2[0]));
                    },
                    [&](OpBuilder &b3, Location l3) { scf::YieldOp::create(b3, l3, it2); });
                scf::YieldOp::create(b2, l2, guard.getResults());
              });
          scf::YieldOp::create(b1, l1, perPick.getResults());
        });
    finishMoe(b, op, perToken.getResult(0));
    return success();
  }
};

} // namespace

Value mlir::k3::lowering::moeLatentInput(PatternRewriter &b, MoeOp op) {
  Location loc = op.getLoc();
  if (!op.getLatentDown())
    return withElementType(b, loc, op.getX(), b.getF32Type());
  int64_t t = cast<RankedTensorType>(op.getY().getType()).getDimSize(0);
  int64_t dl = cast<RankedTensorType>(op.getLatentDown().getType()).getDimSize(0);
  return LinearOp::create(b, loc, RankedTensorType::get({t, dl}, b.getF32Type()), op.getX(),
                          op.getLatentDown(), Value());
}

LogicalResult mlir::k3::lowering::moeWeights(PatternRewriter &b, MoeOp op, GemmWeight &w1,
                                             GemmWeight &w3, GemmWeight &w2) {
  FailureOr<GemmWeight> g1 = gemmWeight(b, op, op.getW1(), op.getW1Scale()),
                        g3 = gemmWeight(b, op, op.getW3(), op.getW3Scale()),
                        g2 = gemmWeight(b, op, op.getW2(), op.getW2Scale());
  if (failed(g1) || failed(g3) || failed(g2))
    return failure();
  w1 = *g1;
  w3 = *g3;
  w2 = *g2;
  return success();
}

void mlir::k3::lowering::finishMoe(PatternRewriter &b, MoeOp op, Value u) {
  Location loc = op.getLoc();
  auto yType = cast<RankedTensorType>(op.getY().getType());
  auto f32Of = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getF32Type());
  };
  int64_t t = yType.getDimSize(0);
  // The shared expert first: the routed path's last projection then comes
  // last, so that on the GPU the sum runs in its kernel's epilogue
  // (k3-gpu-mma-contractions) while the shared expert's kernels, which do
  // not wait for the routed experts, join earlier launches
  // (k3-gpu-merge-launches). The sum is the same either way.
  Value s;
  if (op.getSharedGate()) {
    int64_t is = cast<RankedTensorType>(op.getSharedGate().getType()).getDimSize(0);
    auto hType = f32Of({t, is});
    Value sg = LinearOp::create(b, loc, hType, op.getX(), op.getSharedGate(), Value());
    Value su = LinearOp::create(b, loc, hType, op.getX(), op.getSharedUp(), Value());
    Value sh = createGlu(b, loc, hType, sg, su, op.getGlu(), op.getBeta1Attr(), op.getBeta2Attr());
    s = LinearOp::create(b, loc, f32Of(yType.getShape()), sh, op.getSharedDown(), Value());
  }
  if (op.getNorm())
    u = RmsNormOp::create(b, loc, u.getType(), u, op.getNorm(), Value(), op.getEpsAttr());
  if (op.getLatentUp())
    u = LinearOp::create(b, loc, f32Of(yType.getShape()), u, op.getLatentUp(), Value());
  if (s) {
    u = elementwise(b, loc, {u, s}, cast<RankedTensorType>(u.getType()),
                    [](OpBuilder &nb, Location nl, ValueRange a) {
                      return Value(arith::AddFOp::create(nb, nl, a[0], a[1]));
                    });
  }
  u = elementwise(b, loc, u, yType, [](OpBuilder &, Location, ValueRange a) { return a[0]; });
  if (u.getType() != yType)
    u = tensor::CastOp::create(b, loc, yType, u);
  b.replaceOp(op, u);
}

void mlir::k3::lowering::populateChannelMixingPatterns(RewritePatternSet &patterns,
                                                       bool routerPerPick) {
  patterns.add<LowerRouter>(patterns.getContext(), routerPerPick);
}

void mlir::k3::lowering::populateMoePatterns(RewritePatternSet &patterns, StringRef dispatch,
                                             int64_t panelColumns) {
  // The per-token form also catches what the others decline (dynamic
  // expert shapes).
  if (dispatch == "grouped")
    populateGroupedMoePattern(patterns, panelColumns);
  if (dispatch == "mma")
    populateMmaMoePattern(patterns);
  if (dispatch == "slots" || dispatch == "mma")
    populateSlotMoePattern(patterns);
  patterns.add<LowerMoePerToken>(patterns.getContext(),
                                 /*benefit=*/dispatch == "per-token" ? 1 : 0);
}
