//===- MlaAbsorbedPattern.cpp - k3.mla_absorbed to linalg on tensors -------===//
//
// Part of k3. Absorbed MLA (MLA.md §3) on the CPU: the query moves into the
// latent space, scores and the weighted sum run over the cached
// [c | k_rope] rows (shared by all heads), the value up-projection comes
// after the attention, the gate after that. With `splits = n` the key
// positions are cut into n contiguous parts, each giving a partial output
// and its log-sum-exp, merged by LSE (MLA.md §7).
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Conversion/K3ToLinalg/Common.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace mlir::k3;
using namespace mlir::k3::lowering;

namespace {

using IT = utils::IteratorType;

Value negInf(OpBuilder &b, Location loc) {
  return arith::ConstantOp::create(b, loc,
                                   b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
}

struct LowerMlaAbsorbed : OpRewritePattern<MlaAbsorbedOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MlaAbsorbedOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    auto outType = cast<RankedTensorType>(op.getOut().getType());
    const int64_t h = qType.getDimSize(1), qk = qType.getDimSize(2),
                  l = cast<RankedTensorType>(op.getLatent().getType()).getDimSize(1),
                  r = cast<RankedTensorType>(op.getKRope().getType()).getDimSize(1),
                  dv = outType.getDimSize(2), dn = qk - r, splits = op.getSplits();
    if (splits < 1)
      return b.notifyMatchFailure(op, "needs at least one split");
    for (int64_t d : {h, qk, l, r, dv})
      if (ShapedType::isDynamic(d))
        return b.notifyMatchFailure(op, "head and latent dims must be static");
    const double scale = op.getScale().convertToDouble();
    const bool causal = op.getCausal();
    Type f32 = b.getF32Type();
    const int64_t dyn = ShapedType::kDynamic;

    Value full = appendCacheRows(b, loc, op.getCache(), op.getLatent(), op.getKRope());
    // The rows [S+T, L+R] are read in the cache's own type and widened to
    // f32 inside the dot products (an f32 copy of the whole cache would
    // triple a decode step's cache traffic; the values are the same).
    Value rows = full;
    Type rowElt = cast<RankedTensorType>(full.getType()).getElementType();
    Value past = tensor::DimOp::create(b, loc, op.getCache(), 0);
    Value keys = tensor::DimOp::create(b, loc, full, 0);
    Value tokens = tensor::DimOp::create(b, loc, op.getQ(), 0);
    // kv_b as [H, P+Vd, L]: W_UK[h] = rows [0, P), W_UV[h] = rows [P, P+Vd).
    Value kvb = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({h, dn + dv, l}, cast<RankedTensorType>(op.getKvB().getType()).getElementType()),
        op.getKvB(), ArrayRef<ReassociationIndices>{{0, 1}, {2}});

    AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
               d2 = getAffineDimExpr(2, ctx), d3 = getAffineDimExpr(3, ctx);
    auto map4 = [&](ArrayRef<AffineExpr> e) { return AffineMap::get(4, 0, e, ctx); };
    SmallVector<IT> lastRed{IT::parallel, IT::parallel, IT::parallel, IT::reduction},
        thirdRed{IT::parallel, IT::parallel, IT::reduction, IT::parallel};

    // Q̃[t, h] = [W_UK[h]ᵀ q_nope[t, h] | q_rope[t, h]], [T, H, L+R]; loops
    // (t, h, p, l) with the latent column innermost.
    Value qNope = lastDims(b, loc, op.getQ(), 0, dn), qRope = lastDims(b, loc, op.getQ(), dn, r);
    SmallVector<OpFoldResult> qlSizes{tokens, b.getIndexAttr(h), b.getIndexAttr(l)};
    SmallVector<OpFoldResult> ones(3, b.getIndexAttr(1));
    Value wuk = tensor::ExtractSliceOp::create(
        b, loc, kvb, {b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(0)},
        {b.getIndexAttr(h), b.getIndexAttr(dn), b.getIndexAttr(l)}, ones);
    Value qLat = generic(b, loc, {qNope, wuk}, zeros(b, loc, qlSizes),
                         {map4({d0, d1, d2}), map4({d1, d2, d3}), map4({d0, d1, d3})}, thirdRed,
                         multiplyAccumulate)
                     .front();
    Value qt = empty(b, loc, {tokens, b.getIndexAttr(h), b.getIndexAttr(l + r)}, f32);
    qt = tensor::InsertSliceOp::create(b, loc, qLat, qt,
                                       {b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(0)},
                                       qlSizes, ones);
    Value qRopeF = withElementType(b, loc, qRope, f32);
    qt = tensor::InsertSliceOp::create(b, loc, qRopeF, qt,
                                       {b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(l)},
                                       sizesOf(b, loc, qRopeF), ones);

    // s[t, h, j] = scale · Q̃[t, h]·row_j: one dot of L+R values per key,
    // loops (t, h, j, i); causal positions past S + t become −inf (select).
    SmallVector<OpFoldResult> sSizes{tokens, b.getIndexAttr(h), keys};
    Value dots = generic(b, loc, {qt, rows}, zeros(b, loc, sSizes),
                         {map4({d0, d1, d3}), map4({d2, d3}), map4({d0, d1, d2})}, lastRed,
                         multiplyAccumulate)
                     .front();
    AffineMap id3 = identity(ctx, 3), th = project(ctx, 3, {0, 1});
    SmallVector<IT> par3(3, IT::parallel), redJ{IT::parallel, IT::parallel, IT::reduction};
    Value scores = generic(b, loc, dots, empty(b, loc, sSizes, f32), {id3, id3}, par3,
                           [&](OpBuilder &nb, Location nl, ValueRange a) {
                             Value s = arith::MulFOp::create(nb, nl, a[0], cst(nb, nl, scale));
                             if (!causal)
                               return SmallVector<Value>{s};
                             Value limit = arith::AddIOp::create(
                                 nb, nl, past, linalg::IndexOp::create(nb, nl, 0));
                             Value visible = arith::CmpIOp::create(
                                 nb, nl, arith::CmpIPredicate::ule,
                                 linalg::IndexOp::create(nb, nl, 2), limit);
                             return SmallVector<Value>{
                                 arith::SelectOp::create(nb, nl, visible, s, negInf(nb, nl))};
                           })
                       .front();

    // Per split i over keys [i·n, min((i+1)·n, S+T)): m_i = max s, l_i = Σ
    // e^{s−m_i}, u_i = Σ e^{s−m_i}·c_j ([T, H, L]); lse_i = m_i + log l_i.
    // A split with no visible key has m_i = −inf: it contributes nothing.
    Value part = arith::DivUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, keys, cstIndex(b, loc, splits - 1)),
        cstIndex(b, loc, splits));
    SmallVector<OpFoldResult> thSizes{tokens, b.getIndexAttr(h)};
    SmallVector<Value> lses, outs;
    for (int64_t i = 0; i < splits; ++i) {
      Value start = arith::MinUIOp::create(
          b, loc, arith::MulIOp::create(b, loc, part, cstIndex(b, loc, i)), keys);
      Value size = arith::MinUIOp::create(b, loc, part, arith::SubIOp::create(b, loc, keys, start));
      Value s = tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get({dyn, h, dyn}, f32), scores,
          {b.getIndexAttr(0), b.getIndexAttr(0), start}, {tokens, b.getIndexAttr(h), size}, ones);
      Value c = tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get({dyn, l}, rowElt), rows, {start, b.getIndexAttr(0)},
          {size, b.getIndexAttr(l)}, {b.getIndexAttr(1), b.getIndexAttr(1)});
      Value mInit = linalg::FillOp::create(b, loc, negInf(b, loc), empty(b, loc, thSizes, f32))
                        .getResult(0);
      Value m = generic(b, loc, s, mInit, {id3, th}, redJ,
                        [](OpBuilder &nb, Location nl, ValueRange a) {
                          return SmallVector<Value>{arith::MaximumFOp::create(nb, nl, a[0], a[1])};
                        })
                    .front();
      // e^{s − m}, 0 where the whole split is masked (m = −inf).
      Value p = generic(b, loc, {s, m}, empty(b, loc, sizesOf(b, loc, s), f32), {id3, th, id3}, par3,
                        [&](OpBuilder &nb, Location nl, ValueRange a) {
                          Value e = math::ExpOp::create(nb, nl, arith::SubFOp::create(nb, nl, a[0], a[1]));
                          Value any = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGT, a[1],
                                                            negInf(nb, nl));
                          return SmallVector<Value>{
                              arith::SelectOp::create(nb, nl, any, e, cst(nb, nl, 0.0))};
                        })
                    .front();
      Value sum = generic(b, loc, p, zeros(b, loc, thSizes), {id3, th}, redJ,
                          [](OpBuilder &nb, Location nl, ValueRange a) {
                            return SmallVector<Value>{arith::AddFOp::create(nb, nl, a[1], a[0], kReassociable)};
                          })
                      .front();
      // u[t, h, l] = Σ_j p[t, h, j] · c[j, l]; loops (t, h, j, l).
      Value u = generic(b, loc, {p, c}, zeros(b, loc, qlSizes),
                        {map4({d0, d1, d2}), map4({d2, d3}), map4({d0, d1, d3})}, thirdRed, multiplyAccumulate)
                    .front();
      // lse = m + log l (−inf for an empty split); the partial output u / l.
      Value lse = generic(b, loc, {m, sum}, empty(b, loc, thSizes, f32),
                          {identity(ctx, 2), identity(ctx, 2), identity(ctx, 2)},
                          {IT::parallel, IT::parallel},
                          [](OpBuilder &nb, Location nl, ValueRange a) {
                            return SmallVector<Value>{arith::AddFOp::create(
                                nb, nl, a[0], math::LogOp::create(nb, nl, a[1]))};
                          })
                      .front();
      Value o = generic(b, loc, {u, sum}, empty(b, loc, qlSizes, f32), {id3, th, id3}, par3,
                        [&](OpBuilder &nb, Location nl, ValueRange a) {
                          Value any = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGT, a[1],
                                                            cst(nb, nl, 0.0));
                          return SmallVector<Value>{arith::SelectOp::create(
                              nb, nl, any, arith::DivFOp::create(nb, nl, a[0], a[1]),
                              cst(nb, nl, 0.0))};
                        })
                    .front();
      lses.push_back(lse);
      outs.push_back(o);
    }
    // Merge: lse = log Σ e^{lse_i} (from the largest), o = Σ e^{lse_i−lse}·o_i.
    Value oLat = outs.empty() ? Value() : outs.front();
    if (splits > 1) {
      SmallVector<AffineMap> maps(splits + 1, identity(ctx, 2));
      Value top = generic(b, loc, lses, linalg::FillOp::create(b, loc, negInf(b, loc),
                                                              empty(b, loc, thSizes, f32))
                                            .getResult(0),
                          maps, {IT::parallel, IT::parallel},
                          [&](OpBuilder &nb, Location nl, ValueRange a) {
                            Value mx = a.back();
                            for (Value x : a.drop_back())
                              mx = arith::MaximumFOp::create(nb, nl, mx, x);
                            return SmallVector<Value>{mx};
                          })
                      .front();
      SmallVector<Value> weightsIn(lses);
      weightsIn.push_back(top);
      SmallVector<AffineMap> wMaps(splits + 2, identity(ctx, 2));
      Value total = generic(b, loc, weightsIn, zeros(b, loc, thSizes), wMaps,
                            {IT::parallel, IT::parallel},
                            [&](OpBuilder &nb, Location nl, ValueRange a) {
                              Value acc = a.back();
                              for (Value x : a.take_front(splits))
                                acc = arith::AddFOp::create(
                                    nb, nl, acc,
                                    math::ExpOp::create(nb, nl, arith::SubFOp::create(nb, nl, x, a[splits])));
                              return SmallVector<Value>{acc};
                            })
                        .front();
      // o = Σ_i e^{lse_i − top} o_i / Σ_i e^{lse_i − top}.
      SmallVector<Value> ins(outs);
      ins.append(lses.begin(), lses.end());
      ins.push_back(top);
      ins.push_back(total);
      SmallVector<AffineMap> oMaps(splits, id3);
      for (int64_t i = 0; i < splits + 2; ++i)
        oMaps.push_back(th);
      oMaps.push_back(id3);
      oLat = generic(b, loc, ins, zeros(b, loc, qlSizes), oMaps, par3,
                     [&](OpBuilder &nb, Location nl, ValueRange a) {
                       Value acc = a.back();
                       Value topV = a[2 * splits], totalV = a[2 * splits + 1];
                       for (int64_t i = 0; i < splits; ++i) {
                         Value w = math::ExpOp::create(
                             nb, nl, arith::SubFOp::create(nb, nl, a[splits + i], topV));
                         acc = arith::AddFOp::create(nb, nl, acc,
                                                     arith::MulFOp::create(nb, nl, w, a[i]));
                       }
                       return SmallVector<Value>{arith::DivFOp::create(nb, nl, acc, totalV)};
                     })
                 .front();
    }

    // o[t, h, v] = W_UV[h] o_lat[t, h]: loops (t, h, v, l), the latent
    // reduced innermost; then the gate.
    Value wuv = tensor::ExtractSliceOp::create(
        b, loc, kvb, {b.getIndexAttr(0), b.getIndexAttr(dn), b.getIndexAttr(0)},
        {b.getIndexAttr(h), b.getIndexAttr(dv), b.getIndexAttr(l)}, ones);
    Value o = generic(b, loc, {oLat, wuv},
                      zeros(b, loc, {tokens, b.getIndexAttr(h), b.getIndexAttr(dv)}),
                      {map4({d0, d1, d3}), map4({d1, d2, d3}), map4({d0, d1, d2})}, lastRed,
                      multiplyAccumulate)
                  .front();
    finishMla(b, op, o, op.getGate(), full);
    return success();
  }
};

} // namespace

void mlir::k3::lowering::populateMlaAbsorbedPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerMlaAbsorbed>(patterns.getContext());
}
