//===- KdaChunkedPattern.cpp - k3.kda_chunked to linalg on tensors --------===//
//
// Part of k3. The chunked KDA of KDA.md §6.1 as an scf.for over chunks that
// carries the f32 state. Each chunk is copied into zero-padded f32 tiles of
// `chunk` rows (padding with g = k = v = β = q = 0 leaves the real rows'
// outputs and the state unchanged, §6.6), then:
//
//   G      cumulative log-decay (a loop over the chunk's rows)
//   L, Aqk factored form: per pair of sub-chunks against Gref = G[first
//          row of r's sub-chunk]: factors e^{G_r−Gref} ≤ 1 and
//          e^{Gref−G_s}, the latter ≤ 1 off the diagonal and
//          ≤ e^{(B−1)|lb|} on it; safe form (any gate): row by row, the
//          exact e^{G_r−G_s} as running products of the per-token decays
//          e^{g_t} ≤ 1 (safeChunkMatrices), no sub-chunks
//   W, U   (I+L)⁻¹ diag(β)(K⊙e^G), (I+L)⁻¹ diag(β)V by forward substitution
//   Δ = U − W S;  O = (scale Q⊙e^G) S + Aqk Δ;
//   S ← Diag(e^{G_last}) S + (K⊙e^{G_last−G})ᵀ Δ
//
// Every mask is a select applied to each term before it is summed: a
// masked-out factor may be +inf, and inf · 0 would be NaN (§6.5).
//
// The contractions of the sequential part iterate (head, reduction, row,
// column) with the column innermost: each state row is loaded once per
// chunk and the innermost loop is a contiguous multiply-add over V that
// LLVM vectorises.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Conversion/K3ToLinalg/Common.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::k3;
using namespace mlir::k3::lowering;

namespace {

using IT = utils::IteratorType;

Value mul(OpBuilder &b, Location l, Value x, Value y) {
  return arith::MulFOp::create(b, l, x, y, kReassociable);
}
Value add(OpBuilder &b, Location l, Value x, Value y) {
  return arith::AddFOp::create(b, l, x, y, kReassociable);
}
Value sub(OpBuilder &b, Location l, Value x, Value y) {
  return arith::SubFOp::create(b, l, x, y, kReassociable);
}
Value exp(OpBuilder &b, Location l, Value x) { return math::ExpOp::create(b, l, x); }
Value loopIndex(OpBuilder &b, Location l, int64_t dim) {
  return linalg::IndexOp::create(b, l, dim);
}
/// `mask ? term : 0`: the select keeps a masked inf or NaN out of the sum.
Value keep(OpBuilder &b, Location l, Value mask, Value term) {
  return arith::SelectOp::create(b, l, mask, term, cst(b, l, 0.0));
}
Value cmp(OpBuilder &b, Location l, arith::CmpIPredicate p, Value x, Value y) {
  return arith::CmpIOp::create(b, l, p, x, y);
}

SmallVector<OpFoldResult> attrs(OpBuilder &b, ArrayRef<int64_t> values) {
  SmallVector<OpFoldResult> r;
  for (int64_t v : values)
    r.push_back(b.getIndexAttr(v));
  return r;
}

/// Row `r` of a [R, ...] tensor, rank-reduced to its trailing shape.
Value row(OpBuilder &b, Location loc, Value src, OpFoldResult r) {
  auto type = cast<RankedTensorType>(src.getType());
  ArrayRef<int64_t> trailing = type.getShape().drop_front();
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0)), sizes{b.getIndexAttr(1)};
  offsets[0] = r;
  llvm::append_range(sizes, attrs(b, trailing));
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(trailing, type.getElementType()), src, offsets, sizes,
      attrs(b, SmallVector<int64_t>(type.getRank(), 1)));
}

/// `slice` written into row `r` of `dst` (its leading unit dim restored).
Value setRow(OpBuilder &b, Location loc, Value slice, Value dst, OpFoldResult r) {
  auto type = cast<RankedTensorType>(dst.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0)), sizes{b.getIndexAttr(1)};
  offsets[0] = r;
  llvm::append_range(sizes, attrs(b, type.getShape().drop_front()));
  return tensor::InsertSliceOp::create(b, loc, slice, dst, offsets, sizes,
                                       attrs(b, SmallVector<int64_t>(type.getRank(), 1)));
}

/// Rows [start, start + len) of `src` as an f32 tile of `rows` rows, zero
/// past `len`.
Value paddedRows(OpBuilder &b, Location loc, Value src, Value start, Value len, int64_t rows) {
  auto type = cast<RankedTensorType>(src.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), sizes{len};
  offsets[0] = start;
  llvm::append_range(sizes, attrs(b, type.getShape().drop_front()));
  SmallVector<OpFoldResult> ones = attrs(b, SmallVector<int64_t>(rank, 1));
  Value slice = tensor::ExtractSliceOp::create(b, loc, src, offsets, sizes, ones);
  slice = withElementType(b, loc, slice, b.getF32Type());
  SmallVector<int64_t> shape{rows};
  llvm::append_range(shape, type.getShape().drop_front());
  Value tile = zeros(b, loc, attrs(b, shape));
  offsets[0] = b.getIndexAttr(0);
  return tensor::InsertSliceOp::create(b, loc, slice, tile, offsets, sizes, ones);
}

/// Marks the generic producing `v` for k3-tile-contractions: register tiles
/// of `sizes` (one per loop), reductions innermost.
Value tiled(Value v, ArrayRef<int64_t> sizes) {
  Operation *op = v.getDefiningOp();
  op->setAttr("k3.tile", DenseI64ArrayAttr::get(op->getContext(), sizes));
  return v;
}

AffineMap map(MLIRContext *ctx, unsigned dims, ArrayRef<AffineExpr> results) {
  return AffineMap::get(dims, 0, results, ctx);
}

/// The safe form's chunk matrices L [HV, C, C] (s < r) and Aqk [HV, C, C]
/// (s ≤ r) for any gate, row by row: with a_t = e^{g_t} ≤ 1 the per-token
/// decays, every pairwise decay is a product, e^{G_r − G_s} = Π_{s<t≤r} a_t,
/// so the decayed keys Kd_r[s] = k_s ⊙ e^{G_r − G_s} (kept transposed,
/// [HV, K, C], s contiguous) follow Kd_r = Kd_{r−1} ⊙ a_r with column r set
/// to k_r, and row r of L and Aqk is Kd_r's columns against β_r k_r and
/// scale·q_r. One exponential per row and channel and no factor above 1
/// (nothing can overflow, whatever the decay); the products underflow to
/// 0 only where the pairwise decays are below f32's range too. q and k are [C, H, K] tiles read
/// at head / group, g [C, HV, K], β [C, HV].
std::pair<Value, Value> safeChunkMatrices(OpBuilder &b, Location l, Value q, Value k, Value g,
                                          Value beta, int64_t hv, int64_t dk, int64_t c,
                                          int64_t group, double scale) {
  MLIRContext *ctx = b.getContext();
  AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
             d2 = getAffineDimExpr(2, ctx);
  SmallVector<IT> par3(3, IT::parallel), par2(2, IT::parallel);
  Value decay = elementwise(b, l, g, cast<RankedTensorType>(g.getType()),
                            [](OpBuilder &bb, Location bl, ValueRange a) {
                              return exp(bb, bl, a[0]);
                            });
  SmallVector<OpFoldResult> hcc = attrs(b, {hv, c, c});
  auto loop = scf::ForOp::create(
      b, l, cstIndex(b, l, 0), cstIndex(b, l, c), cstIndex(b, l, 1),
      ValueRange{zeros(b, l, attrs(b, {hv, dk, c})), zeros(b, l, hcc), zeros(b, l, hcc)},
      [&](OpBuilder &rb, Location rl, Value r, ValueRange it) {
        Value aR = row(rb, rl, decay, r), kR = row(rb, rl, k, r), qR = row(rb, rl, q, r),
              bR = row(rb, rl, beta, r);
        // Loops (head, channel, s), s innermost: Kd ← Kd ⊙ a_r, column r ← k_r,
        // in vectors of 16 s (k3-tile-contractions).
        AffineMap headChan = map(ctx, 3, {d0, d1}),
                  keyChan = map(ctx, 3, {d0.floorDiv(group), d1});
        Value kd = generic(rb, rl, {aR, kR}, it[0], {headChan, keyChan, identity(ctx, 3)}, par3,
                           [&](OpBuilder &bb, Location bl, ValueRange a) {
                             Value here = cmp(bb, bl, arith::CmpIPredicate::eq,
                                              loopIndex(bb, bl, 2), r);
                             return SmallVector<Value>{arith::SelectOp::create(
                                 bb, bl, here, a[1], mul(bb, bl, a[2], a[0]))};
                           })
                       .front();
        tiled(kd, {1, 1, fit(c, 16)});
        // Σ over the channel, loops (head, channel, s): a multiply-add over
        // the contiguous s for each channel, in register tiles of 16 s
        // (k3-tile-contractions: the accumulators stay in registers over
        // the channels).
        SmallVector<OpFoldResult> hc = attrs(rb, {hv, c});
        AffineMap headS = map(ctx, 3, {d0, d2});
        SmallVector<Value> sums = generic(
            rb, rl, {kd, kR, qR}, {zeros(rb, rl, hc), zeros(rb, rl, hc)},
            {identity(ctx, 3), keyChan, keyChan, headS, headS},
            {IT::parallel, IT::reduction, IT::parallel},
            [&](OpBuilder &bb, Location bl, ValueRange a) {
              return SmallVector<Value>{add(bb, bl, a[3], mul(bb, bl, a[0], a[1])),
                                        add(bb, bl, a[4], mul(bb, bl, a[0], a[2]))};
            });
        tiled(sums[0], {1, 1, fit(c, 16)});
        // Row r: L = β_r Σ (s < r), Aqk = scale Σ (s ≤ r).
        SmallVector<Value> rows = generic(
            rb, rl, {sums[0], sums[1], bR}, {empty(rb, rl, hc, rb.getF32Type()),
                                             empty(rb, rl, hc, rb.getF32Type())},
            {identity(ctx, 2), identity(ctx, 2), map(ctx, 2, {d0}), identity(ctx, 2),
             identity(ctx, 2)},
            par2, [&](OpBuilder &bb, Location bl, ValueRange a) {
              Value s = loopIndex(bb, bl, 1);
              Value below = cmp(bb, bl, arith::CmpIPredicate::ult, s, r),
                    onOrBelow = cmp(bb, bl, arith::CmpIPredicate::ule, s, r);
              Value lr = mul(bb, bl, a[2], a[0]), ar = mul(bb, bl, cst(bb, bl, scale), a[1]);
              return SmallVector<Value>{keep(bb, bl, below, lr), keep(bb, bl, onOrBelow, ar)};
            });
        SmallVector<OpFoldResult> offsets{rb.getIndexAttr(0), r, rb.getIndexAttr(0)};
        auto put = [&](Value v, Value dst) {
          return tensor::InsertSliceOp::create(rb, rl, v, dst, offsets, attrs(rb, {hv, 1, c}),
                                               attrs(rb, {1, 1, 1}))
              .getResult();
        };
        scf::YieldOp::create(rb, rl, ValueRange{kd, put(rows[0], it[1]), put(rows[1], it[2])});
      });
  return {loop.getResult(1), loop.getResult(2)};
}

struct LowerKdaChunked : OpRewritePattern<KdaChunkedOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(KdaChunkedOp op, PatternRewriter &b) const override {
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    auto vType = cast<RankedTensorType>(op.getV().getType());
    const int64_t h = qType.getDimSize(1), dk = qType.getDimSize(2), hv = vType.getDimSize(1),
                  dv = vType.getDimSize(2), c = op.getChunk(), bs = op.getSubChunk();
    for (int64_t d : {h, dk, hv, dv})
      if (ShapedType::isDynamic(d))
        return b.notifyMatchFailure(op, "heads and head dims must be static");
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    const int64_t group = hv / h, numSub = c / bs;
    const bool factored = op.getForm() == KdaTileForm::factored;
    const double scale = op.getScale().convertToDouble();
    Type f32 = b.getF32Type();
    auto outType = cast<RankedTensorType>(op.getOut().getType());
    const bool wantStates = !op.getBoundaryStates().use_empty();

    Value tokens = tensor::DimOp::create(b, loc, op.getQ(), 0);
    Value cC = cstIndex(b, loc, c);
    Value chunks = arith::DivUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, tokens, cstIndex(b, loc, c - 1)), cC);
    Value out = empty(b, loc, sizesOf(b, loc, op.getV()), outType.getElementType());
    SmallVector<OpFoldResult> statesSizes{chunks};
    llvm::append_range(statesSizes, attrs(b, {hv, dk, dv}));
    Value states = empty(b, loc, statesSizes, f32);

    AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
               d2 = getAffineDimExpr(2, ctx), d3 = getAffineDimExpr(3, ctx);
    // Per-row tiles are [C, HV, ·] over loops (row, head, channel); q/k
    // tiles are [C, H, K], read at head / group (GVA).
    AffineMap rows3 = identity(ctx, 3), keys3 = map(ctx, 3, {d0, d1.floorDiv(group), d2}),
              beta3 = map(ctx, 3, {d0, d1}), ref3 = map(ctx, 3, {d0.floorDiv(bs), d1, d2}),
              head3 = map(ctx, 3, {d1, d2});
    SmallVector<IT> par3(3, IT::parallel);

    SmallVector<Value> inits{op.getInitialState(), out};
    if (wantStates)
      inits.push_back(states);
    auto loop = scf::ForOp::create(
        b, loc, cstIndex(b, loc, 0), chunks, cstIndex(b, loc, 1), inits,
        [&](OpBuilder &bodyBuilder, Location l, Value n, ValueRange iter) {
          OpBuilder &ib = bodyBuilder;
          Value start = arith::MulIOp::create(ib, l, n, cC);
          Value len = arith::MinUIOp::create(
              ib, l, cC, arith::SubIOp::create(ib, l, tokens, start));
          Value q = paddedRows(ib, l, op.getQ(), start, len, c),
                k = paddedRows(ib, l, op.getK(), start, len, c),
                v = paddedRows(ib, l, op.getV(), start, len, c),
                g = paddedRows(ib, l, op.getG(), start, len, c),
                beta = paddedRows(ib, l, op.getBeta(), start, len, c);

          // G: inclusive cumulative sum over the chunk's rows, as a running
          // [HV, K] row carried by the loop and stored into G row by row
          // (reading G's previous row while writing G would make
          // bufferization copy it every step).
          SmallVector<OpFoldResult> hk = attrs(ib, {hv, dk});
          auto cum = scf::ForOp::create(
              ib, l, cstIndex(ib, l, 0), cC, cstIndex(ib, l, 1),
              ValueRange{zeros(ib, l, hk), zeros(ib, l, attrs(ib, {c, hv, dk}))},
              [&](OpBuilder &cb, Location cl, Value r, ValueRange it) {
                Value sum = generic(cb, cl, row(cb, cl, g, r), it[0],
                                    {identity(ctx, 2), identity(ctx, 2)},
                                    {IT::parallel, IT::parallel},
                                    [](OpBuilder &bb, Location bl, ValueRange a) {
                                      return SmallVector<Value>{add(bb, bl, a[0], a[1])};
                                    })
                                .front();
                scf::YieldOp::create(cb, cl, ValueRange{sum, setRow(cb, cl, sum, it[1], r)});
              });
          Value G = cum.getResult(1);
          Value gLast = row(ib, l, G, ib.getIndexAttr(c - 1));
          // The reference rows: G at the first row of every sub-chunk.
          Value gRef = tensor::ExtractSliceOp::create(
              ib, l, RankedTensorType::get({numSub, hv, dk}, f32), G, attrs(ib, {0, 0, 0}),
              attrs(ib, {numSub, hv, dk}), attrs(ib, {bs, 1, 1}));

          // Row-wise factors over loops (row, head, channel), stored
          // head-major [HV, C, ·] so that every tile below is a contiguous
          // [rows, columns] block of one head: Qg = scale·q⊙e^G,
          // Kn = −β·k⊙e^G (negated: the solve then yields −W and Δ is an
          // accumulation), Kd = k⊙e^{G_last−G}, and the sub-chunk-relative
          // left factors Ql = scale·q⊙e^{G−Gref}, Kl = β·k⊙e^{G−Gref}.
          SmallVector<OpFoldResult> hck = attrs(ib, {hv, c, dk}), hcv = attrs(ib, {hv, c, dv});
          AffineMap headMajor3 = map(ctx, 3, {d1, d0, d2});
          // e^G = e^{Gref}·e^{G−Gref}: one exponential per reference row
          // instead of per row (if e^{Gref} underflows, so does e^G ≤ it).
          Value eRef = elementwise(ib, l, gRef, cast<RankedTensorType>(gRef.getType()),
                                   [](OpBuilder &bb, Location bl, ValueRange a) {
                                     return exp(bb, bl, a[0]);
                                   });
          // (The safe form forms L and Aqk without Ql and Kl.)
          const int64_t outputs = factored ? 5 : 3;
          SmallVector<Value> fInits;
          SmallVector<AffineMap> fMaps{keys3, keys3, beta3, rows3, ref3, head3, ref3};
          for (int64_t i = 0; i < outputs; ++i) {
            fInits.push_back(empty(ib, l, hck, f32));
            fMaps.push_back(headMajor3);
          }
          SmallVector<Value> f = generic(
              ib, l, {q, k, beta, G, gRef, gLast, eRef}, fInits, fMaps, par3,
              [&](OpBuilder &bb, Location bl, ValueRange a) {
                Value sq = mul(bb, bl, a[0], cst(bb, bl, scale)), bk = mul(bb, bl, a[2], a[1]);
                Value eRel = exp(bb, bl, sub(bb, bl, a[3], a[4]));
                Value eG = mul(bb, bl, a[6], eRel);
                Value eTail = exp(bb, bl, sub(bb, bl, a[5], a[3]));
                Value negBk = arith::NegFOp::create(bb, bl, bk);
                SmallVector<Value> r{mul(bb, bl, sq, eG), mul(bb, bl, negBk, eG),
                                     mul(bb, bl, a[1], eTail)};
                if (factored)
                  r.append({mul(bb, bl, sq, eRel), mul(bb, bl, bk, eRel)});
                return r;
              });
          Value qg = f[0], kn = f[1], kd = f[2];
          Value vb = generic(ib, l, {v, beta}, empty(ib, l, hcv, f32),
                             {rows3, beta3, headMajor3}, par3,
                             [](OpBuilder &bb, Location bl, ValueRange a) {
                               return SmallVector<Value>{mul(bb, bl, a[0], a[1])};
                             })
                         .front();

          // L and Aqk: the safe form row by row from products of the
          // per-token decays (safeChunkMatrices), the factored form as
          // matmul-shaped products of factors per pair of sub-chunks.
          Value L, A;
          if (!factored) {
            std::tie(L, A) = safeChunkMatrices(ib, l, q, k, g, beta, hv, dk, c, group, scale);
          } else {
            // Right factors Kr[a, s] = k_s ⊙ e^{Gref_a − G_s}, stored
            // [numSub, HV, K, C] (s contiguous, the tile columns below), kept
            // for the rows s before sub-chunk a (exponent ≤ 0) and those of
            // sub-chunk a itself (exponent ≤ (B−1)|lb|). Later rows could
            // overflow and are selected away. The loops run in the result's
            // order (a, head, channel, s): each thread of the CPU's parallel
            // loop then writes whole rows of s. In the inputs' order (s
            // before the head), the two threads of a 16-row chunk wrote
            // alternate halves of every 64-byte row, and the lines bounced
            // between the cores: 27x the one-thread time of this loop.
            Value kr = generic(
                           ib, l, {k, gRef, G}, empty(ib, l, attrs(ib, {numSub, hv, dk, c}), f32),
                           {map(ctx, 4, {d3, d1.floorDiv(group), d2}), map(ctx, 4, {d0, d1, d2}),
                            map(ctx, 4, {d3, d1, d2}), identity(ctx, 4)},
                           SmallVector<IT>(4, IT::parallel),
                           [&](OpBuilder &bb, Location bl, ValueRange a) {
                             Value limit = arith::MulIOp::create(
                                 bb, bl,
                                 arith::AddIOp::create(bb, bl, loopIndex(bb, bl, 0),
                                                       cstIndex(bb, bl, 1)),
                                 cstIndex(bb, bl, bs));
                             Value inside = cmp(bb, bl, arith::CmpIPredicate::ult,
                                                loopIndex(bb, bl, 3), limit);
                             Value term = mul(bb, bl, a[0], exp(bb, bl, sub(bb, bl, a[1], a[2])));
                             return SmallVector<Value>{keep(bb, bl, inside, term)};
                           })
                           .front();

            // L[h, r, s] (s < r) and Aqk[h, r, s] (s ≤ r), with r = a·B + rr:
            // contractions over the channel in loops (head, a, rr, channel, s)
            // on [HV, numSub, B, ·] views, tiled like the sequential part.
            // The products are finite (left factors ≤ 1, right factors
            // bounded by the gate or zeroed), so the reductions stay unmasked; the
            // triangle is selected afterwards.
            SmallVector<OpFoldResult> hcc = attrs(ib, {hv, c, c});
            SmallVector<ReassociationIndices> splitRows{{0}, {1, 2}, {3}};
            auto rowsBySub = [&](Value x, int64_t width) {
              return tensor::ExpandShapeOp::create(
                  ib, l, RankedTensorType::get({hv, numSub, bs, width}, f32), x, splitRows);
            };
            AffineExpr d4 = getAffineDimExpr(4, ctx);
            SmallVector<IT> pairIts{IT::parallel, IT::parallel, IT::parallel, IT::reduction,
                                    IT::parallel};
            auto pairs = [&](Value left) {
              Value acc = zeros(ib, l, attrs(ib, {hv, numSub, bs, c}));
              Value r = tiled(generic(ib, l, {rowsBySub(left, dk), kr}, acc,
                                      {map(ctx, 5, {d0, d1, d2, d3}), map(ctx, 5, {d1, d0, d3, d4}),
                                       map(ctx, 5, {d0, d1, d2, d4})},
                                      pairIts, multiplyAccumulate)
                                  .front(),
                              {1, 1, fit(bs, 4), 1, fit(c, 16)});
              return tensor::CollapseShapeOp::create(ib, l, r, splitRows);
            };
            Value lRaw = pairs(f[4]), aRaw = pairs(f[3]);
            SmallVector<Value> la = generic(
                ib, l, {lRaw, aRaw}, {empty(ib, l, hcc, f32), empty(ib, l, hcc, f32)},
                {rows3, rows3, rows3, rows3}, par3,
                [&](OpBuilder &bb, Location bl, ValueRange a) {
                  Value r = loopIndex(bb, bl, 1), s = loopIndex(bb, bl, 2);
                  Value below = cmp(bb, bl, arith::CmpIPredicate::ult, s, r),
                        onOrBelow = cmp(bb, bl, arith::CmpIPredicate::ule, s, r);
                  return SmallVector<Value>{keep(bb, bl, below, a[0]),
                                            keep(bb, bl, onOrBelow, a[1])};
                });
            L = la[0];
            A = la[1];
          }

          // −W and U by forward substitution, column by column: once row s
          // is final, rows r > s lose L[r, s]·row s. Row s is copied into a
          // fresh tensor first so that the in-place update of the later rows
          // does not make bufferization copy them.
          auto solve = scf::ForOp::create(
              ib, l, cstIndex(ib, l, 0), cstIndex(ib, l, c - 1), cstIndex(ib, l, 1),
              ValueRange{kn, vb},
              [&](OpBuilder &sb, Location sl, Value s, ValueRange it) {
                Value below = arith::AddIOp::create(sb, sl, s, cstIndex(sb, sl, 1));
                Value rest = arith::SubIOp::create(sb, sl, cC, below);
                Value lCol = tensor::ExtractSliceOp::create(
                    sb, sl, RankedTensorType::get({hv, ShapedType::kDynamic}, f32), L,
                    SmallVector<OpFoldResult>{sb.getIndexAttr(0), below, s},
                    SmallVector<OpFoldResult>{sb.getIndexAttr(hv), rest, sb.getIndexAttr(1)},
                    attrs(sb, {1, 1, 1}));
                SmallVector<Value> next;
                for (Value x : it) {
                  int64_t width = cast<RankedTensorType>(x.getType()).getDimSize(2);
                  Value rowS = tensor::ExtractSliceOp::create(
                      sb, sl, RankedTensorType::get({hv, width}, f32), x,
                      SmallVector<OpFoldResult>{sb.getIndexAttr(0), s, sb.getIndexAttr(0)},
                      attrs(sb, {hv, 1, width}), attrs(sb, {1, 1, 1}));
                  Value done = elementwise(sb, sl, rowS, RankedTensorType::get({hv, width}, f32),
                                           [](OpBuilder &, Location, ValueRange a) { return a[0]; });
                  SmallVector<OpFoldResult> offsets{sb.getIndexAttr(0), below, sb.getIndexAttr(0)},
                      sizes{sb.getIndexAttr(hv), rest, sb.getIndexAttr(width)};
                  Value later = tensor::ExtractSliceOp::create(sb, sl, x, offsets, sizes,
                                                               attrs(sb, {1, 1, 1}));
                  // Loops (head, r, column): the column is innermost.
                  Value updated =
                      generic(sb, sl, {lCol, done}, later,
                              {map(ctx, 3, {d0, d1}), map(ctx, 3, {d0, d2}), rows3}, par3,
                              [](OpBuilder &bb, Location bl, ValueRange a) {
                                return SmallVector<Value>{
                                    sub(bb, bl, a[2], mul(bb, bl, a[0], a[1]))};
                              })
                          .front();
                  next.push_back(tensor::InsertSliceOp::create(sb, sl, updated, x, offsets, sizes,
                                                               attrs(sb, {1, 1, 1})));
                }
                scf::YieldOp::create(sb, sl, next);
              });
          Value negW = solve.getResult(0), U = solve.getResult(1);

          // The sequential part against the incoming state S [HV, K, V],
          // over loops (head, reduction, row, column) unless noted, each in
          // register tiles of 4 rows × 16 columns with the reduction
          // innermost (k3-tile-contractions).
          Value S = iter[0];
          const int64_t rt = fit(c, 4), ct = fit(dv, 16), kt = fit(dk, 4);
          SmallVector<int64_t> seqTile{1, 1, rt, ct};
          SmallVector<IT> seq{IT::parallel, IT::reduction, IT::parallel, IT::parallel};
          AffineMap rowRed = map(ctx, 4, {d0, d2, d1}), state4 = map(ctx, 4, {d0, d1, d3}),
                    rowOut = map(ctx, 4, {d0, d2, d3});
          // Δ = U + (−W) S.
          Value delta =
              tiled(generic(ib, l, {negW, S}, U, {rowRed, state4, rowOut}, seq, multiplyAccumulate).front(),
                    seqTile);
          // O = (scale Q⊙e^G) S + Aqk Δ; the second term over loops
          // (head, s, r, column).
          Value o = tiled(generic(ib, l, {qg, S}, zeros(ib, l, hcv), {rowRed, state4, rowOut},
                                  seq, multiplyAccumulate)
                              .front(),
                          seqTile);
          o = tiled(generic(ib, l, {A, delta}, o,
                            {map(ctx, 4, {d0, d2, d1}), map(ctx, 4, {d0, d1, d3}), rowOut}, seq,
                            multiplyAccumulate)
                        .front(),
                    seqTile);
          // S ← Diag(e^{G_last}) S + (K⊙e^{G_last−G})ᵀ Δ, updated in place;
          // loops (head, i, row, column) with the row reduced.
          Value eLast = elementwise(ib, l, gLast, cast<RankedTensorType>(gLast.getType()),
                                    [](OpBuilder &bb, Location bl, ValueRange a) {
                                      return exp(bb, bl, a[0]);
                                    });
          Value decayed = generic(ib, l, eLast, S, {map(ctx, 3, {d0, d1}), rows3}, par3,
                                  [](OpBuilder &bb, Location bl, ValueRange a) {
                                    return SmallVector<Value>{mul(bb, bl, a[1], a[0])};
                                  })
                              .front();
          Value next = tiled(generic(ib, l, {kd, delta}, decayed,
                                     {map(ctx, 4, {d0, d2, d1}), map(ctx, 4, {d0, d2, d3}),
                                      map(ctx, 4, {d0, d1, d3})},
                                     {IT::parallel, IT::parallel, IT::reduction, IT::parallel},
                                     multiplyAccumulate)
                                 .front(),
                             {1, kt, 1, ct});
          // O back to token-major rows.
          o = generic(ib, l, o, empty(ib, l, attrs(ib, {c, hv, dv}), f32),
                      {headMajor3, rows3}, par3,
                      [](OpBuilder &, Location, ValueRange a) { return SmallVector<Value>{a[0]}; })
                  .front();

          // The real rows of O into the output; the state into its slot.
          Value real = tensor::ExtractSliceOp::create(
              ib, l, o, attrs(ib, {0, 0, 0}),
              SmallVector<OpFoldResult>{len, ib.getIndexAttr(hv), ib.getIndexAttr(dv)},
              attrs(ib, {1, 1, 1}));
          real = withElementType(ib, l, real, outType.getElementType());
          SmallVector<Value> yields{next};
          yields.push_back(tensor::InsertSliceOp::create(
              ib, l, real, iter[1],
              SmallVector<OpFoldResult>{start, ib.getIndexAttr(0), ib.getIndexAttr(0)},
              SmallVector<OpFoldResult>{len, ib.getIndexAttr(hv), ib.getIndexAttr(dv)},
              attrs(ib, {1, 1, 1})));
          if (wantStates)
            yields.push_back(setRow(ib, l, next, iter[2], n));
          scf::YieldOp::create(ib, l, yields);
        });
    Value finalStates = wantStates ? loop.getResult(2) : states;
    // Static result shapes refine the dynamic ones built here.
    SmallVector<Value> results{loop.getResult(1), loop.getResult(0), finalStates};
    for (auto [value, result] : llvm::zip(results, op->getResults()))
      if (value.getType() != result.getType())
        value = tensor::CastOp::create(b, loc, result.getType(), value);
    b.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::k3::lowering::populateKdaChunkedPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerKdaChunked>(patterns.getContext());
}
