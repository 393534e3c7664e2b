//===- MlaAbsorbedPattern.cpp - k3.mla_absorbed to linalg on tensors -------===//
//
// Part of k3. Absorbed MLA (MLA.md §3) on the CPU: the query moves into the
// latent space, scores and the weighted sum run over the cached
// [c | k_rope] rows (shared by all heads), the value up-projection comes
// after the attention, the gate after that. The T·H query rows attend
// together. With `splits = n` the key positions are cut into n contiguous
// parts, one after the other, each giving a partial output and its
// log-sum-exp, merged by LSE (MLA.md §7). With `split-keys = n` (the GPU
// form) an op of a fixed token count (decode) splits its keys into parts
// of n side by side instead: a batch dimension of the per-part softmax and
// contraction, so the parts run as blocks of the same kernels.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Conversion/K3ToLinalg/Common.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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

/// One batch of P key parts, each with its own softmax shift: the largest
/// score m [M, P], Σ e^{s−m} [M, P] and the unnormalised output
/// u = Σ e^{s−m}·c_j [M, P, L]. A part with no visible key (m = −inf, or no
/// key at all) has a sum of 0 and u = 0: it contributes nothing.
struct Partial {
  Value max, sum, u;
};

/// The partial softmax of each part of `s` ([M, P, n] scores of P parts of
/// n keys) over its rows `c` ([P, n, L]).
Partial softmaxParts(OpBuilder &b, Location loc, Value s, Value c) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  AffineMap id3 = identity(ctx, 3), mp = project(ctx, 3, {0, 1});
  SmallVector<IT> par3(3, IT::parallel), lastRed{IT::parallel, IT::parallel, IT::reduction};
  SmallVector<OpFoldResult> sizes = sizesOf(b, loc, s);
  SmallVector<OpFoldResult> mpSizes{sizes[0], sizes[1]};
  SmallVector<OpFoldResult> uSizes{sizes[0], sizes[1], sizesOf(b, loc, c)[2]};
  Value mInit =
      linalg::FillOp::create(b, loc, negInf(b, loc), empty(b, loc, mpSizes, f32)).getResult(0);
  Value m = generic(b, loc, s, mInit, {id3, mp}, lastRed,
                    [](OpBuilder &nb, Location nl, ValueRange a) {
                      return SmallVector<Value>{arith::MaximumFOp::create(nb, nl, a[0], a[1])};
                    })
                .front();
  // e^{s − m}, 0 where the whole part is masked (m = −inf).
  Value p = generic(b, loc, {s, m}, empty(b, loc, sizes, f32), {id3, mp, id3}, par3,
                    [&](OpBuilder &nb, Location nl, ValueRange a) {
                      Value e = math::ExpOp::create(nb, nl, arith::SubFOp::create(nb, nl, a[0], a[1]));
                      Value any = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGT, a[1],
                                                        negInf(nb, nl));
                      return SmallVector<Value>{
                          arith::SelectOp::create(nb, nl, any, e, cst(nb, nl, 0.0))};
                    })
                .front();
  Value sum = generic(b, loc, p, zeros(b, loc, mpSizes), {id3, mp}, lastRed,
                      [](OpBuilder &nb, Location nl, ValueRange a) {
                        return SmallVector<Value>{
                            arith::AddFOp::create(nb, nl, a[1], a[0], kReassociable)};
                      })
                  .front();
  // u[m, p, l] = Σ_j p[m, p, j] · c[p, j, l]; loops (m, p, j, l), the part
  // a batch dimension of the contraction (blocks of their own on a GPU).
  AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
             d2 = getAffineDimExpr(2, ctx), d3 = getAffineDimExpr(3, ctx);
  auto map4 = [&](ArrayRef<AffineExpr> e) { return AffineMap::get(4, 0, e, ctx); };
  Value u = generic(b, loc, {p, c}, zeros(b, loc, uSizes),
                    {map4({d0, d1, d2}), map4({d1, d2, d3}), map4({d0, d1, d3})},
                    {IT::parallel, IT::parallel, IT::reduction, IT::parallel}, multiplyAccumulate)
                .front();
  return {m, sum, u};
}

/// `v` with dimension `at` expanded to [parts, partLen] (their product is
/// its extent).
Value splitDim(OpBuilder &b, Location loc, Value v, unsigned at, OpFoldResult parts,
               OpFoldResult partLen) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape;
  SmallVector<OpFoldResult> outSizes;
  SmallVector<ReassociationIndices> groups;
  SmallVector<OpFoldResult> sizes = sizesOf(b, loc, v);
  for (unsigned d = 0, n = type.getRank(); d < n; ++d) {
    if (d != at) {
      groups.push_back({int64_t(shape.size())});
      shape.push_back(type.getDimSize(d));
      outSizes.push_back(sizes[d]);
      continue;
    }
    groups.push_back({int64_t(shape.size()), int64_t(shape.size()) + 1});
    for (OpFoldResult f : {parts, partLen}) {
      std::optional<int64_t> c = getConstantIntValue(f);
      shape.push_back(c ? *c : ShapedType::kDynamic);
      outSizes.push_back(f);
    }
  }
  return tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get(shape, type.getElementType()),
                                       v, groups, outSizes);
}

/// A part's weight in the log-sum-exp merge, e^{m − top}; an empty or
/// masked part (m = −inf) weighs 0.
Value partWeight(OpBuilder &b, Location loc, Value m, Value top) {
  Value shifted = arith::SubFOp::create(b, loc, m, top);
  return math::ExpOp::create(b, loc, shifted);
}

/// The merge of every part of `parts` by their shifts (MLA.md §7's LSE
/// merge with lse = m + log Σ): top = max m, w = e^{m−top},
/// o = Σ w·u / Σ w·sum, [M, L]; each batch of parts is folded in by a
/// reduction over its part dimension. Every row sees at least one key
/// (causal decode sees the cache), so top is finite and Σ w·sum ≥ 1.
Value mergeParts(OpBuilder &b, Location loc, ArrayRef<Partial> parts) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  SmallVector<OpFoldResult> uSizes = sizesOf(b, loc, parts.front().u);
  SmallVector<OpFoldResult> mSizes{uSizes[0]}, mlSizes{uSizes[0], uSizes[2]};
  AffineMap mp = identity(ctx, 2), m1 = project(ctx, 2, {0});
  SmallVector<IT> red{IT::parallel, IT::reduction};
  Value top =
      linalg::FillOp::create(b, loc, negInf(b, loc), empty(b, loc, mSizes, f32)).getResult(0);
  for (const Partial &part : parts)
    top = generic(b, loc, part.max, top, {mp, m1}, red,
                  [](OpBuilder &nb, Location nl, ValueRange a) {
                    return SmallVector<Value>{arith::MaximumFOp::create(nb, nl, a[0], a[1])};
                  })
              .front();
  Value total = zeros(b, loc, mSizes);
  for (const Partial &part : parts)
    total = generic(b, loc, {part.max, part.sum, top}, total, {mp, mp, m1, m1}, red,
                    [&](OpBuilder &nb, Location nl, ValueRange a) {
                      Value w = arith::MulFOp::create(nb, nl, partWeight(nb, nl, a[0], a[2]), a[1]);
                      return SmallVector<Value>{arith::AddFOp::create(nb, nl, a[3], w)};
                    })
                .front();
  // Loops (m, l, p): the part innermost, so that a GPU maps (m, l) to
  // threads and each thread folds its column of parts.
  AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
             d2 = getAffineDimExpr(2, ctx);
  auto map3 = [&](ArrayRef<AffineExpr> e) { return AffineMap::get(3, 0, e, ctx); };
  Value out = zeros(b, loc, mlSizes);
  for (const Partial &part : parts)
    out = generic(b, loc, {part.u, part.max, top, total}, out,
                  {map3({d0, d2, d1}), map3({d0, d2}), map3({d0}), map3({d0}), map3({d0, d1})},
                  {IT::parallel, IT::parallel, IT::reduction},
                  [&](OpBuilder &nb, Location nl, ValueRange a) {
                    Value w = arith::DivFOp::create(nb, nl, partWeight(nb, nl, a[1], a[2]), a[3]);
                    return SmallVector<Value>{arith::AddFOp::create(
                        nb, nl, a[4], arith::MulFOp::create(nb, nl, w, a[0]))};
                  })
              .front();
  return out;
}

/// mergeParts for the one stack of P parts a k3.attend_parts gives (the
/// GPU's fused decode), as one loop nest over (m, l) instead of three
/// reductions: each element folds the parts' maximum, then their weighted
/// sums, then its column, in mergeParts' order and arithmetic (the same
/// floats), recomputing the two statistics per l so that neither needs a
/// kernel of its own. P = ⌈keys / part_keys⌉ (512 at K3's 128K keys in
/// parts of 256): the recomputation is 2P more exponentials and loads of
/// [M, P] values (which stay in cache) per element, beside the [M, P, L]
/// partial outputs every form reads once.
Value mergeStack(OpBuilder &b, Location loc, const Partial &stack) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  SmallVector<OpFoldResult> uSizes = sizesOf(b, loc, stack.u);
  Value count = getValueOrCreateConstantIndexOp(b, loc, uSizes[1]);
  Value init = empty(b, loc, {uSizes[0], uSizes[2]}, f32);
  auto body = [&](OpBuilder &nb, Location nl, ValueRange) {
    Value m = linalg::IndexOp::create(nb, nl, 0);
    Value col = linalg::IndexOp::create(nb, nl, 1);
    Value zero = cstIndex(nb, nl, 0);
    Value one = cstIndex(nb, nl, 1);
    // acc' = step(p, acc) for p = 0 .. P−1.
    auto fold = [&](Value start, function_ref<Value(OpBuilder &, Location, Value, Value)> step) {
      auto loop = scf::ForOp::create(
          nb, nl, zero, count, one, ValueRange{start},
          [&](OpBuilder &lb, Location ll, Value p, ValueRange acc) {
            Value next = step(lb, ll, p, acc[0]);
            scf::YieldOp::create(lb, ll, next);
          });
      return loop.getResult(0);
    };
    auto weight = [&](OpBuilder &lb, Location ll, Value p, Value topV) {
      Value mp = tensor::ExtractOp::create(lb, ll, stack.max, ValueRange{m, p});
      return partWeight(lb, ll, mp, topV);
    };
    Value top = fold(negInf(nb, nl), [&](OpBuilder &lb, Location ll, Value p, Value acc) {
      Value mp = tensor::ExtractOp::create(lb, ll, stack.max, ValueRange{m, p});
      return Value(arith::MaximumFOp::create(lb, ll, mp, acc));
    });
    Value total = fold(cst(nb, nl, 0.0), [&](OpBuilder &lb, Location ll, Value p, Value acc) {
      Value w = weight(lb, ll, p, top);
      Value sp = tensor::ExtractOp::create(lb, ll, stack.sum, ValueRange{m, p});
      Value ws = arith::MulFOp::create(lb, ll, w, sp);
      return Value(arith::AddFOp::create(lb, ll, acc, ws));
    });
    Value out = fold(cst(nb, nl, 0.0), [&](OpBuilder &lb, Location ll, Value p, Value acc) {
      Value w = weight(lb, ll, p, top);
      Value share = arith::DivFOp::create(lb, ll, w, total);
      Value up = tensor::ExtractOp::create(lb, ll, stack.u, ValueRange{m, p, col});
      Value term = arith::MulFOp::create(lb, ll, share, up);
      return Value(arith::AddFOp::create(lb, ll, acc, term));
    });
    return SmallVector<Value>{out};
  };
  return generic(b, loc, {}, init, {identity(ctx, 2)}, {IT::parallel, IT::parallel}, body)
      .front();
}

/// o = u / sum of a single part's partial ([M, 1, L] → [M, L]; 0 for a
/// row that sees no key).
Value normalised(OpBuilder &b, Location loc, const Partial &only) {
  MLIRContext *ctx = b.getContext();
  AffineMap id3 = identity(ctx, 3), mp = project(ctx, 3, {0, 1});
  Value o = generic(b, loc, {only.u, only.sum},
                    empty(b, loc, sizesOf(b, loc, only.u), b.getF32Type()), {id3, mp, id3},
                    SmallVector<IT>(3, IT::parallel),
                    [&](OpBuilder &nb, Location nl, ValueRange a) {
                      Value any = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGT, a[1],
                                                        cst(nb, nl, 0.0));
                      return SmallVector<Value>{arith::SelectOp::create(
                          nb, nl, any, arith::DivFOp::create(nb, nl, a[0], a[1]),
                          cst(nb, nl, 0.0))};
                    })
                .front();
  return tensor::CollapseShapeOp::create(b, loc, o, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
}

/// Two partials of one part each ([M, 1] shifts and sums, [M, 1, L]
/// outputs) folded into one, as an online softmax folds a new block of
/// keys: top = max(m_a, m_b), each side weighed by e^{m − top} (0 for a
/// side that has seen no key, m = −inf).
Partial combine(OpBuilder &b, Location loc, const Partial &x, const Partial &y) {
  MLIRContext *ctx = b.getContext();
  AffineMap id2 = identity(ctx, 2), id3 = identity(ctx, 3), mp = project(ctx, 3, {0, 1});
  SmallVector<IT> par2(2, IT::parallel), par3(3, IT::parallel);
  Type f32 = b.getF32Type();
  Value top = generic(b, loc, {x.max, y.max}, empty(b, loc, sizesOf(b, loc, x.max), f32),
                      {id2, id2, id2}, par2,
                      [](OpBuilder &nb, Location nl, ValueRange a) {
                        return SmallVector<Value>{arith::MaximumFOp::create(nb, nl, a[0], a[1])};
                      })
                  .front();
  auto weight = [](OpBuilder &nb, Location nl, Value m, Value t) {
    Value any = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGT, m, negInf(nb, nl));
    Value e = math::ExpOp::create(nb, nl, arith::SubFOp::create(nb, nl, m, t));
    return Value(arith::SelectOp::create(nb, nl, any, e, cst(nb, nl, 0.0)));
  };
  auto mix = [&](OpBuilder &nb, Location nl, ValueRange a) {
    // a: value x, value y, m_x, m_y, top.
    Value wx = weight(nb, nl, a[2], a[4]), wy = weight(nb, nl, a[3], a[4]);
    return SmallVector<Value>{arith::AddFOp::create(nb, nl, arith::MulFOp::create(nb, nl, a[0], wx),
                                                    arith::MulFOp::create(nb, nl, a[1], wy))};
  };
  Value sum = generic(b, loc, {x.sum, y.sum, x.max, y.max, top},
                      empty(b, loc, sizesOf(b, loc, x.sum), f32), {id2, id2, id2, id2, id2, id2},
                      par2, mix)
                  .front();
  Value u = generic(b, loc, {x.u, y.u, x.max, y.max, top},
                    empty(b, loc, sizesOf(b, loc, x.u), f32), {id3, id3, mp, mp, mp, id3}, par3,
                    mix)
                .front();
  return {top, sum, u};
}

/// Q̃[t, h] = scale · [W_UK[h]ᵀ q_nope[t, h] | q_rope[t, h]] as [T·H, L+R]
/// f32 rows, token-major (`kvb`: kv_b as [H, P+Vd, L], `tokens`: T).
/// Attention runs on the M = T·H query rows together, as FlashMLA folds
/// s_q·h_q into the MMA rows: one decode token's heads fill a tile.
Value absorbedQueries(OpBuilder &b, Location loc, Value q, Value kvb, Value tokens, int64_t dn,
                      double scale, bool scaled = true) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  const int64_t h = cast<RankedTensorType>(kvb.getType()).getDimSize(0),
                l = cast<RankedTensorType>(kvb.getType()).getDimSize(2),
                r = cast<RankedTensorType>(q.getType()).getDimSize(2) - dn;
  AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
             d2 = getAffineDimExpr(2, ctx), d3 = getAffineDimExpr(3, ctx);
  auto map4 = [&](ArrayRef<AffineExpr> e) { return AffineMap::get(4, 0, e, ctx); };
  // Loops (t, h, p, l) with the latent column innermost.
  Value qNope = lastDims(b, loc, q, 0, dn), qRope = lastDims(b, loc, q, dn, r);
  SmallVector<OpFoldResult> qlSizes{tokens, b.getIndexAttr(h), b.getIndexAttr(l)};
  SmallVector<OpFoldResult> ones(3, b.getIndexAttr(1));
  Value wuk = tensor::ExtractSliceOp::create(
      b, loc, kvb, {b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(0)},
      {b.getIndexAttr(h), b.getIndexAttr(dn), b.getIndexAttr(l)}, ones);
  Value qLat = generic(b, loc, {qNope, wuk}, zeros(b, loc, qlSizes),
                       {map4({d0, d1, d2}), map4({d1, d2, d3}), map4({d0, d1, d3})},
                       {IT::parallel, IT::parallel, IT::reduction, IT::parallel},
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
  qt = tensor::CollapseShapeOp::create(b, loc, qt, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  if (!scaled)
    return qt;
  // The softmax scale multiplies the T·H queries once rather than every
  // one of the T·H·(S+T) scores (a decode step's largest elementwise pass).
  return elementwise(b, loc, qt, cast<RankedTensorType>(qt.getType()),
                     [&](OpBuilder &nb, Location nl, ValueRange a) {
                       return Value(arith::MulFOp::create(nb, nl, a[0], cst(nb, nl, scale)));
                     });
}

/// o[t, h, v] = W_UV[h] o_lat[t, h] ([T, H, Vd] f32 from `oLat` [T, H, L]
/// and `kvb` as [H, P+Vd, L]): loops (t, h, v, l), the latent reduced
/// innermost.
Value valueUp(OpBuilder &b, Location loc, Value oLat, Value kvb, Value tokens, int64_t dn,
              int64_t dv) {
  MLIRContext *ctx = b.getContext();
  const int64_t h = cast<RankedTensorType>(kvb.getType()).getDimSize(0),
                l = cast<RankedTensorType>(kvb.getType()).getDimSize(2);
  AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
             d2 = getAffineDimExpr(2, ctx), d3 = getAffineDimExpr(3, ctx);
  auto map4 = [&](ArrayRef<AffineExpr> e) { return AffineMap::get(4, 0, e, ctx); };
  Value wuv = tensor::ExtractSliceOp::create(
      b, loc, kvb, {b.getIndexAttr(0), b.getIndexAttr(dn), b.getIndexAttr(0)},
      {b.getIndexAttr(h), b.getIndexAttr(dv), b.getIndexAttr(l)},
      SmallVector<OpFoldResult>(3, b.getIndexAttr(1)));
  return generic(b, loc, {oLat, wuv},
                 zeros(b, loc, {tokens, b.getIndexAttr(h), b.getIndexAttr(dv)}),
                 {map4({d0, d1, d3}), map4({d1, d2, d3}), map4({d0, d1, d2})},
                 {IT::parallel, IT::parallel, IT::parallel, IT::reduction}, multiplyAccumulate)
      .front();
}

struct LowerMlaAbsorbed : OpRewritePattern<MlaAbsorbedOp> {
  LowerMlaAbsorbed(MLIRContext *ctx, int64_t splitKeys, bool fused)
      : OpRewritePattern(ctx), splitKeys(splitKeys), fused(fused) {}

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

    Value full = appendCacheRows(b, loc, op.getCache(), op.getLatent(), op.getKRope());
    // The rows [S+T, L+R] are read in the cache's own type and widened to
    // f32 inside the dot products (an f32 copy of the whole cache would
    // triple a decode step's cache traffic; the values are the same).
    Value rows = full;
    Value past = tensor::DimOp::create(b, loc, op.getCache(), 0);
    Value keys = tensor::DimOp::create(b, loc, full, 0);
    Value tokens = tensor::DimOp::create(b, loc, op.getQ(), 0);
    // kv_b as [H, P+Vd, L]: W_UK[h] = rows [0, P), W_UV[h] = rows [P, P+Vd).
    Value kvb = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({h, dn + dv, l}, cast<RankedTensorType>(op.getKvB().getType()).getElementType()),
        op.getKvB(), ArrayRef<ReassociationIndices>{{0, 1}, {2}});

    AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
               d2 = getAffineDimExpr(2, ctx);
    const int64_t t0 = qType.getDimSize(0);
    // One k3.attend_parts for every part (below), which scales the queries
    // as it loads them (q_scale): no kernel of their own.
    const bool attendParts = fused && splitKeys > 0 && !ShapedType::isDynamic(t0) &&
                             (t0 == 1 || !causal) && attendPartsKernelFits(l + r, l);
    Value qt = absorbedQueries(b, loc, op.getQ(), kvb, tokens, dn, scale,
                               /*scaled=*/!attendParts);
    SmallVector<OpFoldResult> ones(3, b.getIndexAttr(1)), ones2(2, b.getIndexAttr(1));
    OpFoldResult rowsM = ShapedType::isDynamic(t0)
                             ? OpFoldResult(arith::MulIOp::create(b, loc, tokens, cstIndex(b, loc, h)))
                             : b.getIndexAttr(t0 * h);

    // s[m, j] = (scale · Q̃[m])·row_j: one dot of L+R values per key, loops
    // (m, j, i). Causal positions past S + m / H become −inf (select); one
    // token sees every key (S + 0 < S + 1), so a decode step has no mask.
    AffineMap id2 = identity(ctx, 2);
    auto map3 = [&](ArrayRef<AffineExpr> e) { return AffineMap::get(3, 0, e, ctx); };
    // (Not for k3.attend_parts, which makes its scores itself.)
    SmallVector<OpFoldResult> sSizes{rowsM, keys};
    Value scores;
    if (!attendParts)
      scores = generic(b, loc, {qt, rows}, zeros(b, loc, sSizes),
                       {map3({d0, d2}), map3({d1, d2}), map3({d0, d1})},
                       {IT::parallel, IT::parallel, IT::reduction}, multiplyAccumulate)
                   .front();
    if (!attendParts && causal && t0 != 1)
      scores = generic(b, loc, scores, empty(b, loc, sSizes, f32), {id2, id2},
                       {IT::parallel, IT::parallel},
                       [&](OpBuilder &nb, Location nl, ValueRange a) {
                         Value t = arith::DivUIOp::create(
                             nb, nl, linalg::IndexOp::create(nb, nl, 0), cstIndex(nb, nl, h));
                         Value limit = arith::AddIOp::create(nb, nl, past, t);
                         Value visible = arith::CmpIOp::create(
                             nb, nl, arith::CmpIPredicate::ule,
                             linalg::IndexOp::create(nb, nl, 1), limit);
                         return SmallVector<Value>{
                             arith::SelectOp::create(nb, nl, visible, a[0], negInf(nb, nl))};
                       })
                   .front();

    // The keys [start, start + size) as P parts of `len`: scores [M, P, len]
    // and latent rows [P, len, L].
    auto parts = [&](Value start, OpFoldResult count, OpFoldResult len, Value size) {
      Value s = tensor::ExtractSliceOp::create(b, loc, scores, {b.getIndexAttr(0), start},
                                               {rowsM, size}, ones2);
      Value c = tensor::ExtractSliceOp::create(b, loc, rows, {start, b.getIndexAttr(0)},
                                               {size, b.getIndexAttr(l)}, ones2);
      // Made one after the other, not as arguments (whose order C++ leaves
      // to the compiler): the IR must not depend on which compiler built k3.
      Value cParts = splitDim(b, loc, c, 0, count, len);
      Value sParts = splitDim(b, loc, s, 1, count, len);
      return softmaxParts(b, loc, sParts, cParts);
    };
    SmallVector<Partial> partials;
    // Whether the one partial holds a single part (o = u / sum).
    bool onePart = true;
    if (attendParts) {
      // One kernel for every part, the last one short (k3.attend_parts,
      // k3-gpu-attend-parts): each row is read once, for its score and its
      // value. No position is masked (decode sees the whole cache).
      Value count = arith::CeilDivUIOp::create(b, loc, keys, cstIndex(b, loc, splitKeys));
      Value m = empty(b, loc, {rowsM, count}, f32), sum = empty(b, loc, {rowsM, count}, f32);
      Value u = empty(b, loc, {rowsM, count, b.getIndexAttr(l)}, f32);
      auto attend = AttendPartsOp::create(b, loc, TypeRange{m.getType(), sum.getType(), u.getType()},
                                          qt, rows, m, sum, u, b.getI64IntegerAttr(splitKeys),
                                          b.getF32FloatAttr(scale));
      partials.push_back({attend.getResult(0), attend.getResult(1), attend.getResult(2)});
      onePart = false;
    } else if (splitKeys > 0 && !ShapedType::isDynamic(qType.getDimSize(0))) {
      // Split-K for a fixed number of tokens (decode): keys/n parts of n
      // keys side by side (a batch dimension: per-part blocks on a GPU, so
      // that a long cache is read by the whole device), then the < n keys
      // left over as one more part; partial outputs are [M, keys/n, L].
      Value n = cstIndex(b, loc, splitKeys);
      Value count = arith::DivUIOp::create(b, loc, keys, n);
      Value mainKeys = arith::MulIOp::create(b, loc, count, n);
      partials.push_back(
          parts(cstIndex(b, loc, 0), count, b.getIndexAttr(splitKeys), mainKeys));
      Value rest = arith::SubIOp::create(b, loc, keys, mainKeys);
      partials.push_back(parts(mainKeys, b.getIndexAttr(1), rest, rest));
    } else {
      // `splits` contiguous parts [i·n, min((i+1)·n, S+T)), n = ⌈(S+T) /
      // splits⌉, one after the other (the last one may be short or empty).
      Value part = arith::DivUIOp::create(
          b, loc, arith::AddIOp::create(b, loc, keys, cstIndex(b, loc, splits - 1)),
          cstIndex(b, loc, splits));
      for (int64_t i = 0; i < splits; ++i) {
        Value start = arith::MinUIOp::create(
            b, loc, arith::MulIOp::create(b, loc, part, cstIndex(b, loc, i)), keys);
        Value size =
            arith::MinUIOp::create(b, loc, part, arith::SubIOp::create(b, loc, keys, start));
        partials.push_back(parts(start, b.getIndexAttr(1), size, size));
      }
    }
    // One part needs no merge: o = u / sum (0 for a row that sees no key).
    Value oLat;
    if (partials.size() == 1 && onePart) {
      oLat = normalised(b, loc, partials.front());
    } else if (partials.size() == 1) {
      oLat = mergeStack(b, loc, partials.front()); // k3.attend_parts' stack
    } else {
      oLat = mergeParts(b, loc, partials);
    }
    oLat = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({t0, h, l}, f32), oLat,
        ArrayRef<ReassociationIndices>{{0, 1}, {2}},
        ArrayRef<OpFoldResult>{ShapedType::isDynamic(t0) ? OpFoldResult(tokens)
                                                          : b.getIndexAttr(t0),
                               b.getIndexAttr(h), b.getIndexAttr(l)});

    // Then the gate.
    Value o = valueUp(b, loc, oLat, kvb, tokens, dn, dv);
    finishMla(b, op, o, op.getGate(), full);
    return success();
  }

  int64_t splitKeys;
  /// Decode's parts in one k3.attend_parts (the GPU's fused kernel).
  bool fused;
};

/// k3.mla_paged on the CPU: the queries of all B requests absorbed at
/// once; then per request (an scf.for: the parallel loops are the ones
/// inside, over heads and keys; an scf.forall here would put the page loop
/// with its per-page buffers inside OpenMP's alloca scope, which the
/// lowering to control flow cannot split) a loop over its pages, each
/// page's rows read in place (a slice of the pool, no gather; the last page
/// cut at the request's length) as one part of an online softmax; then its own new row as a last part. The value
/// up-projection and the gate run over all B tokens again.
///
/// `kernel` (the GPU form): the attention between the absorbed queries and
/// the value up-projection is one k3.paged_attend instead (k3-gpu-paged-
/// attend: one kernel, a block per head and request, which reads the
/// lengths and the table on the device), the rest as above.
struct LowerMlaPaged : OpRewritePattern<MlaPagedOp> {
  LowerMlaPaged(MLIRContext *ctx, bool kernel) : OpRewritePattern(ctx), kernel(kernel) {}

  LogicalResult matchAndRewrite(MlaPagedOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    auto pagesType = cast<RankedTensorType>(op.getPages().getType());
    const int64_t h = qType.getDimSize(1), qk = qType.getDimSize(2),
                  l = cast<RankedTensorType>(op.getLatent().getType()).getDimSize(1),
                  r = cast<RankedTensorType>(op.getKRope().getType()).getDimSize(1),
                  dv = cast<RankedTensorType>(op.getOut().getType()).getDimSize(2), dn = qk - r;
    Type f32 = b.getF32Type(), cacheElt = pagesType.getElementType();
    Value tokens = tensor::DimOp::create(b, loc, op.getQ(), 0);
    Value kvb = tensor::ExpandShapeOp::create(
        b, loc,
        RankedTensorType::get({h, dn + dv, l},
                              cast<RankedTensorType>(op.getKvB().getType()).getElementType()),
        op.getKvB(), ArrayRef<ReassociationIndices>{{0, 1}, {2}});
    // The kernel scales the queries as it loads them (q_scale): no kernel
    // of their own.
    const bool useKernel = kernel && pagedAttendTeam(l) > 0;
    Value qt = absorbedQueries(b, loc, op.getQ(), kvb, tokens, dn, op.getScale().convertToDouble(),
                               /*scaled=*/!useKernel);
    // Each request's new row as the pages will hold it: it attends to the
    // stored value, as every later step will.
    Value rows = newCacheRows(b, loc, cacheElt, op.getLatent(), op.getKRope());
    if (useKernel) {
      Value q3 = tensor::ExpandShapeOp::create(
          b, loc, RankedTensorType::get({ShapedType::kDynamic, h, l + r}, f32), qt,
          ArrayRef<ReassociationIndices>{{0, 1}, {2}},
          ArrayRef<OpFoldResult>{tokens, b.getIndexAttr(h), b.getIndexAttr(l + r)});
      Value out = empty(b, loc, {tokens, b.getIndexAttr(h), b.getIndexAttr(l)}, f32);
      auto attend =
          PagedAttendOp::create(b, loc, TypeRange{out.getType()}, q3, op.getPages(),
                                op.getBlockTable(), op.getLengths(), rows, out, op.getScaleAttr());
      Value o = valueUp(b, loc, attend.getResult(0), kvb, tokens, dn, dv);
      finishMla(b, op, o, op.getGate(), rows);
      return success();
    }
    Value pageRows = tensor::DimOp::create(b, loc, op.getPages(), 1);

    AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
               d2 = getAffineDimExpr(2, ctx);
    auto map3 = [&](ArrayRef<AffineExpr> e) { return AffineMap::get(3, 0, e, ctx); };
    SmallVector<IT> dot{IT::parallel, IT::parallel, IT::reduction};
    // The partial softmax of the H query rows `q` [H, L+R] over `keys`
    // [n, L+R] (one part).
    auto part = [&](OpBuilder &nb, Location nl, Value q, Value keys) {
      SmallVector<OpFoldResult> sSizes{nb.getIndexAttr(h), sizesOf(nb, nl, keys)[0]};
      Value sc = generic(nb, nl, {q, keys}, zeros(nb, nl, sSizes),
                         {map3({d0, d2}), map3({d1, d2}), map3({d0, d1})}, dot,
                         multiplyAccumulate)
                     .front();
      Value c = columns(nb, nl, keys, 0, l);
      return softmaxParts(nb, nl, splitDim(nb, nl, sc, 1, nb.getIndexAttr(1), sSizes[1]),
                          splitDim(nb, nl, c, 0, nb.getIndexAttr(1), sizesOf(nb, nl, keys)[0]));
    };

    Value oLat = empty(b, loc, {tokens, b.getIndexAttr(h), b.getIndexAttr(l)}, f32);
    scf::ForOp requests = loop(
        b, loc, tokens, 1, ValueRange{oLat},
        [&](OpBuilder &rb, Location rl, Value req, ValueRange into) {
          Value len = arith::IndexCastOp::create(
              rb, rl, rb.getIndexType(), tensor::ExtractOp::create(rb, rl, op.getLengths(), req));
          Value q = tensor::ExtractSliceOp::create(
              rb, rl, RankedTensorType::get({h, l + r}, f32), qt,
              ArrayRef<OpFoldResult>{
                  arith::MulIOp::create(rb, rl, req, cstIndex(rb, rl, h)).getResult(),
                  rb.getIndexAttr(0)},
              ArrayRef<OpFoldResult>{rb.getIndexAttr(h), rb.getIndexAttr(l + r)}, ones(rb, 2));
          Partial init{
              linalg::FillOp::create(rb, rl, negInf(rb, rl),
                                     empty(rb, rl, {rb.getIndexAttr(h), rb.getIndexAttr(1)}, f32))
                  .getResult(0),
              zeros(rb, rl, {rb.getIndexAttr(h), rb.getIndexAttr(1)}),
              zeros(rb, rl, {rb.getIndexAttr(h), rb.getIndexAttr(1), rb.getIndexAttr(l)})};
          // At most the table's width: a length past it (which the engine never
          // passes) reads no row outside the table.
          Value pagesUsed = arith::MinUIOp::create(
              rb, rl, arith::CeilDivUIOp::create(rb, rl, len, pageRows),
              tensor::DimOp::create(rb, rl, op.getBlockTable(), 1));
          scf::ForOp pagesLoop = loop(
              rb, rl, pagesUsed, 1, ValueRange{init.max, init.sum, init.u},
              [&](OpBuilder &nb, Location nl, Value i, ValueRange acc) {
                Value page = arith::IndexCastOp::create(
                    nb, nl, nb.getIndexType(),
                    tensor::ExtractOp::create(nb, nl, op.getBlockTable(), ValueRange{req, i}));
                // The request's rows of page `page`, [min(PT, len − i·PT), L+R], in
                // place: rows past its length are never read (the pool is not
                // cleared; they may hold anything).
                Value valid = arith::MinUIOp::create(
                    nb, nl, pageRows,
                    arith::SubIOp::create(nb, nl, len, arith::MulIOp::create(nb, nl, i, pageRows)));
                Value keys = tensor::ExtractSliceOp::create(
                    nb, nl, RankedTensorType::get({ShapedType::kDynamic, l + r}, cacheElt),
                    op.getPages(),
                    ArrayRef<OpFoldResult>{page, nb.getIndexAttr(0), nb.getIndexAttr(0)},
                    ArrayRef<OpFoldResult>{nb.getIndexAttr(1), valid, nb.getIndexAttr(l + r)},
                    ones(nb, 3));
                Partial next = combine(nb, nl, {acc[0], acc[1], acc[2]}, part(nb, nl, q, keys));
                return SmallVector<Value>{next.max, next.sum, next.u};
              });
          Partial seen{pagesLoop.getResult(0), pagesLoop.getResult(1), pagesLoop.getResult(2)};
          Value own = tensor::ExtractSliceOp::create(rb, rl, rows, {req, rb.getIndexAttr(0)},
                                                     {rb.getIndexAttr(1), rb.getIndexAttr(l + r)},
                                                     ones(rb, 2));
          Value o = normalised(rb, rl, combine(rb, rl, seen, part(rb, rl, q, own)));
          Value o3 = tensor::ExpandShapeOp::create(rb, rl, RankedTensorType::get({1, h, l}, f32),
                                                   o, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
          return SmallVector<Value>{tensor::InsertSliceOp::create(
              rb, rl, o3, into[0],
              ArrayRef<OpFoldResult>{req, rb.getIndexAttr(0), rb.getIndexAttr(0)},
              ArrayRef<OpFoldResult>{rb.getIndexAttr(1), rb.getIndexAttr(h), rb.getIndexAttr(l)},
              ones(rb, 3))};
        });
    Value o = valueUp(b, loc, requests.getResult(0), kvb, tokens, dn, dv);
    finishMla(b, op, o, op.getGate(), rows);
    return success();
  }

  bool kernel;
};

} // namespace

void mlir::k3::lowering::populateMlaAbsorbedPatterns(RewritePatternSet &patterns,
                                                     int64_t splitKeys, bool fused,
                                                     bool pagedKernel) {
  patterns.add<LowerMlaAbsorbed>(patterns.getContext(), splitKeys, fused);
  patterns.add<LowerMlaPaged>(patterns.getContext(), pagedKernel);
}
