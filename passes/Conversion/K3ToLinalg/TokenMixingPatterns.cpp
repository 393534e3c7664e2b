//===- TokenMixingPatterns.cpp - short_conv and the recurrent KDA ---------===//
//
// Part of k3. The CPU path's token mixers: the causal depthwise conv over
// [window | x], and KDA as its token recurrence (an scf.for over tokens
// carrying the f32 state); the chunkwise form is k3-kda-chunkwise's job.
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

/// y[t, c] = Σ_i w[c, i] · x̂[t + i, c] over x̂ = [state | x]; the new state
/// is the last W−1 rows of x̂; SiLU when asked.
struct LowerShortConv : OpRewritePattern<ShortConvOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ShortConvOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    Value state = op.getState();
    Type stateElt = cast<RankedTensorType>(state.getType()).getElementType();
    Value hat = concatRows(b, loc, state, withElementType(b, loc, op.getX(), stateElt));
    SmallVector<OpFoldResult> xs = sizesOf(b, loc, op.getX());
    Value acc = zeros(b, loc, xs);
    // Loops (t, c, i): x̂ at (t + i, c), w at (c, i).
    AffineExpr t = getAffineDimExpr(0, ctx), c = getAffineDimExpr(1, ctx),
               i = getAffineDimExpr(2, ctx);
    bool silu = op.getSilu();
    Value y = generic(b, loc, {hat, op.getWeight()}, acc,
                      {AffineMap::get(3, 0, {t + i, c}, ctx),
                       AffineMap::get(3, 0, {c, i}, ctx), project(ctx, 3, {0, 1})},
                      {utils::IteratorType::parallel, utils::IteratorType::parallel,
                       utils::IteratorType::reduction},
                      [](OpBuilder &nb, Location nl, ValueRange a) {
                        Value m = arith::MulFOp::create(nb, nl, a[0], a[1]);
                        return SmallVector<Value>{arith::AddFOp::create(nb, nl, a[2], m)};
                      })
                  .front();
    auto yType = cast<RankedTensorType>(op.getY().getType());
    y = elementwise(b, loc, y, yType, [&](OpBuilder &nb, Location nl, ValueRange a) {
      return silu ? Value(arith::MulFOp::create(nb, nl, a[0], sigmoid(nb, nl, a[0])))
                  : a[0];
    });
    SmallVector<OpFoldResult> ss = sizesOf(b, loc, state);
    Value newState = tensor::ExtractSliceOp::create(
        b, loc, hat, {xs[0], b.getIndexAttr(0)}, ss,
        {b.getIndexAttr(1), b.getIndexAttr(1)});
    b.replaceOp(op, {y, newState});
    return success();
  }
};

/// The token recurrence of KDA.md §2, one scf.for step per token: decay,
/// predict, update, read. Value head h reads q/k head h / (HV / H) (GVA).
struct LowerKda : OpRewritePattern<KdaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(KdaOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    auto vType = cast<RankedTensorType>(op.getV().getType());
    int64_t h = qType.getDimSize(1), dk = qType.getDimSize(2),
            hv = vType.getDimSize(1), dv = vType.getDimSize(2);
    if (ShapedType::isDynamic(h) || ShapedType::isDynamic(dk) ||
        ShapedType::isDynamic(hv) || ShapedType::isDynamic(dv))
      return b.notifyMatchFailure(op, "heads and head dims must be static");
    const int64_t group = hv / h;
    const double scale = op.getScale().convertToDouble();
    auto outType = cast<RankedTensorType>(op.getOut().getType());
    Value tokens = tensor::DimOp::create(b, loc, op.getQ(), 0);
    Value out = empty(b, loc, sizesOf(b, loc, op.getV()), outType.getElementType());

    // Token t's rows: rank-reduced slices at offset t.
    auto row = [&](OpBuilder &nb, Location nl, Value src, Value t) {
      auto type = cast<RankedTensorType>(src.getType());
      SmallVector<OpFoldResult> offsets{t}, sizes{nb.getIndexAttr(1)},
          strides(type.getRank(), nb.getIndexAttr(1));
      SmallVector<int64_t> shape;
      for (int64_t d = 1; d < type.getRank(); ++d) {
        offsets.push_back(nb.getIndexAttr(0));
        sizes.push_back(nb.getIndexAttr(type.getDimSize(d)));
        shape.push_back(type.getDimSize(d));
      }
      return tensor::ExtractSliceOp::create(
          nb, nl, RankedTensorType::get(shape, type.getElementType()), src,
          offsets, sizes, strides);
    };

    AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx);
    // Loops (h, i, j) over [HV, K, V]; q/k rows are [H, K] read at h / group.
    AffineMap sMap = identity(ctx, 3), keyMap = AffineMap::get(3, 0, {d0.floorDiv(group), d1}, ctx),
              gMap = project(ctx, 3, {0, 1}), vMap = project(ctx, 3, {0, 2}),
              headMap = project(ctx, 3, {0});
    using IT = utils::IteratorType;
    SmallVector<IT> par3(3, IT::parallel), red3{IT::parallel, IT::reduction, IT::parallel};
    // Reductions over i produce [HV, V]: loops (h, i, j) with output (h, j).
    AffineMap hjMap = project(ctx, 3, {0, 2});

    // Snapshots: the state after every N tokens, [⌊T/N⌋, HV, K, V].
    std::optional<int64_t> every = op.getSnapshotInterval();
    SmallVector<Value> inits{op.getInitialState(), out};
    if (every) {
      Value count = arith::DivUIOp::create(b, loc, tokens, cstIndex(b, loc, *every));
      SmallVector<OpFoldResult> sizes{count};
      for (int64_t d : {hv, dk, dv})
        sizes.push_back(b.getIndexAttr(d));
      inits.push_back(empty(b, loc, sizes, b.getF32Type()));
    }
    auto loop = scf::ForOp::create(
        b, loc, cstIndex(b, loc, 0), tokens, cstIndex(b, loc, 1), inits,
        [&](OpBuilder &nb, Location nl, Value t, ValueRange iter) {
          Value q = row(nb, nl, op.getQ(), t), k = row(nb, nl, op.getK(), t),
                v = row(nb, nl, op.getV(), t), g = row(nb, nl, op.getG(), t),
                beta = row(nb, nl, op.getBeta(), t);
          Value s = iter[0];
          // The state is updated in place (outs = the loop-carried tensor),
          // so bufferization keeps one buffer across all tokens.
          // Decay: S[h, i, j] *= exp(g[h, i]), one exponential per key row.
          Value alpha = elementwise(nb, nl, g, cast<RankedTensorType>(g.getType()),
                                    [](OpBuilder &bb, Location l, ValueRange a) {
                                      return Value(math::ExpOp::create(bb, l, a[0]));
                                    });
          Value decayed = generic(nb, nl, {alpha}, s, {gMap, sMap}, par3,
                                  [](OpBuilder &bb, Location l, ValueRange a) {
                                    return SmallVector<Value>{
                                        arith::MulFOp::create(bb, l, a[1], a[0])};
                                  })
                              .front();
          // Predict with the decayed state: p[h, j] = Σ_i S[h, i, j] k[h', i].
          SmallVector<OpFoldResult> hvSizes{nb.getIndexAttr(hv), nb.getIndexAttr(dv)};
          Value pred = generic(nb, nl, {decayed, k}, zeros(nb, nl, hvSizes),
                               {sMap, keyMap, hjMap}, red3,
                               [](OpBuilder &bb, Location l, ValueRange a) {
                                 Value m = arith::MulFOp::create(bb, l, a[0], a[1]);
                                 return SmallVector<Value>{arith::AddFOp::create(bb, l, a[2], m)};
                               })
                           .front();
          // Update: S[h, i, j] += k[h', i] · β[h] (v[h, j] − p[h, j]).
          Value updated =
              generic(nb, nl, {k, v, pred, beta}, decayed,
                      {keyMap, vMap, vMap, headMap, sMap}, par3,
                      [](OpBuilder &bb, Location l, ValueRange a) {
                        Value delta = arith::MulFOp::create(
                            bb, l, a[3], arith::SubFOp::create(bb, l, a[1], a[2]));
                        return SmallVector<Value>{arith::AddFOp::create(
                            bb, l, a[4], arith::MulFOp::create(bb, l, a[0], delta))};
                      })
                  .front();
          // Read the updated state: o[h, j] = Σ_i S[h, i, j] · scale · q[h', i].
          Value o = generic(nb, nl, {updated, q}, zeros(nb, nl, hvSizes),
                            {sMap, keyMap, hjMap}, red3,
                            [&](OpBuilder &bb, Location l, ValueRange a) {
                              Value sq = arith::MulFOp::create(bb, l, a[1], cst(bb, l, scale));
                              Value m = arith::MulFOp::create(bb, l, a[0], sq);
                              return SmallVector<Value>{arith::AddFOp::create(bb, l, a[2], m)};
                            })
                        .front();
          o = withElementType(nb, nl, o, outType.getElementType());
          Value next = tensor::InsertSliceOp::create(
              nb, nl, o, iter[1],
              {t, nb.getIndexAttr(0), nb.getIndexAttr(0)},
              {nb.getIndexAttr(1), nb.getIndexAttr(hv), nb.getIndexAttr(dv)},
              {nb.getIndexAttr(1), nb.getIndexAttr(1), nb.getIndexAttr(1)});
          SmallVector<Value> yields{updated, next};
          if (every) {
            Value done = arith::AddIOp::create(nb, nl, t, cstIndex(nb, nl, 1));
            Value atBoundary = arith::CmpIOp::create(
                nb, nl, arith::CmpIPredicate::eq,
                arith::RemUIOp::create(nb, nl, done, cstIndex(nb, nl, *every)),
                cstIndex(nb, nl, 0));
            auto branch = scf::IfOp::create(
                nb, nl, atBoundary,
                [&](OpBuilder &tb, Location tl) {
                  Value slot = arith::SubIOp::create(
                      tb, tl, arith::DivUIOp::create(tb, tl, done, cstIndex(tb, tl, *every)),
                      cstIndex(tb, tl, 1));
                  SmallVector<OpFoldResult> offsets{slot}, sizes{tb.getIndexAttr(1)},
                      strides(4, tb.getIndexAttr(1));
                  for (int64_t d : {hv, dk, dv}) {
                    offsets.push_back(tb.getIndexAttr(0));
                    sizes.push_back(tb.getIndexAttr(d));
                  }
                  scf::YieldOp::create(tb, tl,
                                       Value(tensor::InsertSliceOp::create(
                                           tb, tl, updated, iter[2], offsets, sizes, strides)));
                },
                [&](OpBuilder &eb, Location el) { scf::YieldOp::create(eb, el, iter[2]); });
            yields.push_back(branch.getResult(0));
          }
          scf::YieldOp::create(nb, nl, yields);
        });
    SmallVector<Value> results{loop.getResult(1), loop.getResult(0)};
    if (every)
      results.push_back(tensor::CastOp::create(b, loc, op.getSnapshots().getType(),
                                               loop.getResult(2)));
    b.replaceOp(op, results);
    return success();
  }
};

struct LowerMla : OpRewritePattern<MlaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MlaOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    auto outType = cast<RankedTensorType>(op.getOut().getType());
    int64_t h = qType.getDimSize(1), qk = qType.getDimSize(2),
            l = cast<RankedTensorType>(op.getLatent().getType()).getDimSize(1),
            r = cast<RankedTensorType>(op.getKRope().getType()).getDimSize(1),
            dv = outType.getDimSize(2), dn = qk - r;
    if (ShapedType::isDynamic(h) || ShapedType::isDynamic(qk) ||
        ShapedType::isDynamic(l) || ShapedType::isDynamic(r) ||
        ShapedType::isDynamic(dv))
      return b.notifyMatchFailure(op, "head and latent dims must be static");
    const double scale = op.getScale().convertToDouble();
    const bool causal = op.getCausal();

    Value full = appendCacheRows(b, loc, op.getCache(), op.getLatent(), op.getKRope());
    Value past = tensor::DimOp::create(b, loc, op.getCache(), 0);

    // Keys and values of every position, per head: [S+T, H, dn+dv].
    Value fullF = withElementType(b, loc, full, b.getF32Type());
    Value kv = contract(b, loc, columns(b, loc, fullF, 0, l), op.getKvB());
    SmallVector<OpFoldResult> kvSizes{sizesOf(b, loc, kv)[0], b.getIndexAttr(h),
                                      b.getIndexAttr(dn + dv)};
    kv = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({ShapedType::kDynamic, h, dn + dv}, b.getF32Type()),
        kv, ArrayRef<ReassociationIndices>{{0}, {1, 2}}, kvSizes);
    Value kNope = lastDims(b, loc, kv, 0, dn), vals = lastDims(b, loc, kv, dn, dv);
    Value kRope = columns(b, loc, fullF, l, r);
    Value qNope = lastDims(b, loc, op.getQ(), 0, dn), qRope = lastDims(b, loc, op.getQ(), dn, r);

    using IT = utils::IteratorType;
    AffineExpr t = getAffineDimExpr(0, ctx), hh = getAffineDimExpr(1, ctx),
               j = getAffineDimExpr(2, ctx), i = getAffineDimExpr(3, ctx);
    SmallVector<OpFoldResult> sSizes{sizesOf(b, loc, op.getQ())[0], b.getIndexAttr(h),
                                     sizesOf(b, loc, full)[0]};
    // Reassociable multiply-adds (multiplyAccumulate), as every contraction:
    // without them LLVM cannot vectorise the score dot products' inner sum.
    auto dot = [&](Value lhs, Value rhs, AffineMap rhsMap) {
      return generic(b, loc, {lhs, rhs}, zeros(b, loc, sSizes),
                     {AffineMap::get(4, 0, {t, hh, i}, ctx), rhsMap,
                      AffineMap::get(4, 0, {t, hh, j}, ctx)},
                     {IT::parallel, IT::parallel, IT::parallel, IT::reduction},
                     multiplyAccumulate)
          .front();
    };
    Value sNope = dot(qNope, kNope, AffineMap::get(4, 0, {j, hh, i}, ctx));
    Value sRope = dot(qRope, kRope, AffineMap::get(4, 0, {j, i}, ctx));
    // Scaled scores; with `causal`, token t (position S + t) sees j <= S + t.
    AffineMap id3 = identity(ctx, 3);
    Value scores = generic(
                       b, loc, {sNope, sRope}, empty(b, loc, sSizes, b.getF32Type()),
                       {id3, id3, id3}, {IT::parallel, IT::parallel, IT::parallel},
                       [&](OpBuilder &nb, Location nl, ValueRange a) {
                         Value s = arith::MulFOp::create(
                             nb, nl, arith::AddFOp::create(nb, nl, a[0], a[1]), cst(nb, nl, scale));
                         if (!causal)
                           return SmallVector<Value>{s};
                         Value tok = linalg::IndexOp::create(nb, nl, 0);
                         Value pos = linalg::IndexOp::create(nb, nl, 2);
                         Value limit = arith::AddIOp::create(nb, nl, past, tok);
                         Value visible = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ule, pos, limit);
                         Value ninf = arith::ConstantOp::create(
                             nb, nl, nb.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
                         return SmallVector<Value>{arith::SelectOp::create(nb, nl, visible, s, ninf)};
                       })
                       .front();
    // Softmax over j: max, then exp and sum, then normalise.
    SmallVector<OpFoldResult> thSizes{sSizes[0], sSizes[1]};
    AffineMap th = project(ctx, 3, {0, 1});
    Value ninf = arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
    Value mxInit = linalg::FillOp::create(b, loc, ninf, empty(b, loc, thSizes, b.getF32Type()))
                       .getResult(0);
    SmallVector<IT> reduceJ{IT::parallel, IT::parallel, IT::reduction};
    Value mx = generic(b, loc, scores, mxInit, {id3, th}, reduceJ,
                       [](OpBuilder &nb, Location nl, ValueRange a) {
                         return SmallVector<Value>{arith::MaximumFOp::create(nb, nl, a[0], a[1])};
                       })
                   .front();
    Value sum = generic(b, loc, {scores, mx}, zeros(b, loc, thSizes), {id3, th, th}, reduceJ,
                        [](OpBuilder &nb, Location nl, ValueRange a) {
                          Value e = math::ExpOp::create(nb, nl, arith::SubFOp::create(nb, nl, a[0], a[1]));
                          return SmallVector<Value>{arith::AddFOp::create(nb, nl, a[2], e)};
                        })
                    .front();
    Value probs = generic(b, loc, {scores, mx, sum}, empty(b, loc, sSizes, b.getF32Type()),
                          {id3, th, th, id3}, {IT::parallel, IT::parallel, IT::parallel},
                          [](OpBuilder &nb, Location nl, ValueRange a) {
                            Value e = math::ExpOp::create(nb, nl, arith::SubFOp::create(nb, nl, a[0], a[1]));
                            return SmallVector<Value>{arith::DivFOp::create(nb, nl, e, a[2])};
                          })
                      .front();
    // o[t, h, d] = Σ_j p[t, h, j] · v[j, h, d], then the output gate.
    AffineExpr d = getAffineDimExpr(3, ctx);
    SmallVector<OpFoldResult> oSizes{sSizes[0], b.getIndexAttr(h), b.getIndexAttr(dv)};
    Value o = generic(b, loc, {probs, vals}, zeros(b, loc, oSizes),
                      {AffineMap::get(4, 0, {t, hh, j}, ctx), AffineMap::get(4, 0, {j, hh, d}, ctx),
                       AffineMap::get(4, 0, {t, hh, d}, ctx)},
                      {IT::parallel, IT::parallel, IT::reduction, IT::parallel},
                      multiplyAccumulate)
                  .front();
    finishMla(b, op, o, op.getGate(), full);
    return success();
  }
};

} // namespace

void mlir::k3::lowering::populateTokenMixingPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerKda, LowerMla, LowerShortConv>(patterns.getContext());
}
