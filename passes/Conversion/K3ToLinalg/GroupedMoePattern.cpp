//===- GroupedMoePattern.cpp - k3.moe as grouped expert GEMMs -------------===//
//
// Part of k3. The routed experts of k3.moe as one GEMM per expert over the
// tokens routed to it (MOE_MXFP4.md §7, the padded align-block scheme):
//
//   counts[e]  = #pairs (t, j) with indices[t, j] = e      one pass over T·k
//   offsets    = exclusive prefix sum of counts rounded up to 4
//   sorted[]   = pair ids p = t·k + j grouped by expert, each group padded
//                with the sentinel p = T·k (token T: a zero row, weight 0)
//
// Then, per expert with tokens, the latent rows z[p / k] of its group are
// gathered once, and its two GEMMs run over the group in register tiles of
// 4 rows × P columns (k3-tile-contractions) against [K, P] weight panels,
// each decoded once per expert from MXFP4, or read in place where
// k3-pack-weight-panels stored float experts as panels [E, N/P, K, P]
// (else converted from bf16/f32 [E, N, K] per expert and call):
//
//   GEMM1: for each P-column panel of w1 and w3, h = glu(z·w1ᵀ, z·w3ᵀ)
//          right on the tile (the SiTU-GLU or SwiGLU epilogue);
//   GEMM2: for each P-column panel of w2, u[t] += w[p] · (h·w2ᵀ) per row
//          of the tile, in f32 (the routing-weight epilogue and combine).
//
// P is two vector registers of f32 (panel-columns: 16 for AVX2, 32 for
// AVX-512), or the largest power of two dividing the dimension below it.
//
// No loop runs per token outside the two O(T·k) metadata passes and the
// gather; the padding costs at most 3 rows per expert. An op with a static
// token count below 4 (a decode step) is left to the per-token form; with a
// dynamic one (prefill, decode_batch) the choice is made at run time. Each GEMM's column
// panels are an scf.forall (disjoint columns of h and of the combine): the
// CPU runs them on its threads; the experts stay in turn, since two experts
// add into the same token's row.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Conversion/K3ToLinalg/Common.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::k3;
using namespace mlir::k3::lowering;

namespace {

/// Rows per register tile; expert groups are padded to a multiple of it.
constexpr int64_t kTileRows = 4;

/// Marks the MoE form a run-time choice picked for an op ("per-token" or
/// "grouped").
constexpr StringLiteral kFormAttr = "k3.moe_form";

Value at(OpBuilder &b, Location loc, Value t, ValueRange pos) {
  return tensor::ExtractOp::create(b, loc, t, pos);
}

Value put(OpBuilder &b, Location loc, Value v, Value t, ValueRange pos) {
  return tensor::InsertOp::create(b, loc, v, t, pos);
}

/// An index tensor of `size` filled with `value`.
Value filled(OpBuilder &b, Location loc, OpFoldResult size, Value value) {
  Value e = tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{size}, b.getIndexType());
  return linalg::FillOp::create(b, loc, value, e).getResult(0);
}

struct LowerMoeGrouped : OpRewritePattern<MoeOp> {
  LowerMoeGrouped(MLIRContext *ctx, int64_t panel)
      : OpRewritePattern(ctx, /*benefit=*/1), panel(panel) {}

  LogicalResult matchAndRewrite(MoeOp op, PatternRewriter &b) const override {
    auto form = op->getAttrOfType<StringAttr>(kFormAttr);
    if (form && form.getValue() == "per-token")
      return b.notifyMatchFailure(op, "the per-token branch of a run-time choice");
    GemmWeight w1, w3, w2;
    if (failed(moeWeights(b, op, w1, w3, w2)))
      return failure();
    Location loc = op.getLoc();
    auto w1Type = cast<RankedTensorType>(op.getW1().getType());
    if (!w1Type.hasStaticShape())
      return b.notifyMatchFailure(op, "grouped GEMMs need static expert shapes");
    const int64_t experts = w1Type.getDimSize(0), ie = w1Type.getDimSize(1),
                  dl = w1Type.getDimSize(2);
    // A static token count below one tile (a decode step): each picked
    // expert is read once either way, and the per-token matrix-vector
    // products read its packed weight straight into the dot products
    // instead of decoding [K, 16] f32 panels of it for a 4-row tile of one
    // real row (k3-small decode: 1.5x tokens/s).
    int64_t staticTokens = cast<RankedTensorType>(op.getX().getType()).getDimSize(0);
    if (!ShapedType::isDynamic(staticTokens) && staticTokens < kTileRows)
      return b.notifyMatchFailure(op, "fewer tokens than a tile: the per-token form");
    const int64_t k = cast<RankedTensorType>(op.getIndices().getType()).getDimSize(1);
    if (ShapedType::isDynamic(k) || k < 1)
      return b.notifyMatchFailure(op, "grouped GEMMs need a static top-k of at least 1");
    // Panels stored by k3-pack-weight-panels are read in place at their
    // width; w1 and w3 share the GLU's tiles, so they must agree.
    if (w1.panel != w3.panel)
      return b.notifyMatchFailure(op, "w1 and w3 are stored in panels of different widths");
    // A dynamic token count is decided at run time: with fewer (token,
    // expert) pairs than one 4-row tile per expert on average (a
    // decode_batch of a few requests: Kimi-Linear-small's 32 experts and 4
    // picks make it below 32 tokens), most tiles would be padding and each
    // expert's panels decoded for a row or two, so the per-token form reads
    // the picked experts in place instead (Kimi-Linear-small, batch 16:
    // 1.27x tokens/s); from there on this one. The op is cloned into both
    // branches, each marked with its form.
    if (!form && ShapedType::isDynamic(staticTokens)) {
      Value tokens = tensor::DimOp::create(b, loc, op.getX(), 0);
      Value pairs = arith::MulIOp::create(b, loc, tokens, cstIndex(b, loc, k));
      Value few = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, pairs,
                                        cstIndex(b, loc, kTileRows * experts));
      auto branch = [&](OpBuilder &nb, Location nl, StringRef name) {
        Operation *clone = nb.clone(*op);
        clone->setAttr(kFormAttr, nb.getStringAttr(name));
        scf::YieldOp::create(nb, nl, clone->getResults());
      };
      auto choice = scf::IfOp::create(
          b, loc, few,
          [&](OpBuilder &nb, Location nl) { branch(nb, nl, "per-token"); },
          [&](OpBuilder &nb, Location nl) { branch(nb, nl, "grouped"); });
      b.replaceOp(op, choice.getResults());
      return success();
    }
    const int64_t nt1 = w1.panel ? w1.panel : fit(ie, panel),
                  nt2 = w2.panel ? w2.panel : fit(dl, panel);
    const bool mxfp8 = op.getMxfp8Inputs();
    Type f32 = b.getF32Type(), idx = b.getIndexType();

    Value z = moeLatentInput(b, op);
    Value tokens = tensor::DimOp::create(b, loc, op.getX(), 0);
    Value kc = cstIndex(b, loc, k), c0 = cstIndex(b, loc, 0), c1 = cstIndex(b, loc, 1);
    Value pairs = arith::MulIOp::create(b, loc, tokens, kc);
    auto flat = [&](Value v) {
      return tensor::CollapseShapeOp::create(b, loc, v,
                                             ArrayRef<ReassociationIndices>{{0, 1}});
    };
    Value ids = flat(op.getIndices()), wts = flat(op.getWeights());
    auto expertOfPair = [&](OpBuilder &nb, Location nl, Value p) {
      return arith::IndexCastOp::create(nb, nl, idx, at(nb, nl, ids, p)).getResult();
    };
    // `update(e)` for a pair routed to expert e in [0, E); a pair with any
    // other index (negative ones wrap to large unsigned) is dropped.
    auto routed = [&](OpBuilder &nb, Location nl, Value p, ValueRange it,
                      function_ref<SmallVector<Value>(OpBuilder &, Location, Value)> update) {
      Value e = expertOfPair(nb, nl, p);
      Value valid = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult, e,
                                          cstIndex(nb, nl, experts));
      auto guard = scf::IfOp::create(
          nb, nl, valid,
          [&](OpBuilder &tb, Location tl) { scf::YieldOp::create(tb, tl, update(tb, tl, e)); },
          [&](OpBuilder &fb, Location fl) { scf::YieldOp::create(fb, fl, it); });
      return SmallVector<Value>(guard.getResults());
    };

    // Dispatch metadata: counts, padded offsets, pair ids grouped by expert.
    Value counts =
        loop(b, loc, pairs, 1, filled(b, loc, b.getIndexAttr(experts), c0),
             [&](OpBuilder &nb, Location nl, Value p, ValueRange it) {
               return routed(nb, nl, p, it,
                             [&](OpBuilder &tb, Location tl, Value e) -> SmallVector<Value> {
                               Value n = arith::AddIOp::create(tb, tl, at(tb, tl, it[0], e),
                                                               cstIndex(tb, tl, 1));
                               return {put(tb, tl, n, it[0], e)};
                             });
             })
            .getResult(0);
    Value offsets =
        loop(b, loc, cstIndex(b, loc, experts), 1,
             filled(b, loc, b.getIndexAttr(experts + 1), c0),
             [&](OpBuilder &nb, Location nl, Value e, ValueRange it) -> SmallVector<Value> {
               Value n = at(nb, nl, counts, e);
               Value padded = arith::AndIOp::create(
                   nb, nl, arith::AddIOp::create(nb, nl, n, cstIndex(nb, nl, kTileRows - 1)),
                   cstIndex(nb, nl, ~(kTileRows - 1)));
               Value next = arith::AddIOp::create(nb, nl, at(nb, nl, it[0], e), padded);
               return {put(nb, nl, next, it[0],
                           arith::AddIOp::create(nb, nl, e, cstIndex(nb, nl, 1)).getResult())};
             })
            .getResult(0);
    Value total = at(b, loc, offsets, cstIndex(b, loc, experts));
    Value cursor0 = tensor::ExtractSliceOp::create(b, loc, offsets, {b.getIndexAttr(0)},
                                                   {b.getIndexAttr(experts)}, ones(b, 1));
    Value sorted =
        loop(b, loc, pairs, 1, ValueRange{filled(b, loc, total, pairs), cursor0},
             [&](OpBuilder &nb, Location nl, Value p, ValueRange it) {
               return routed(nb, nl, p, it,
                             [&](OpBuilder &tb, Location tl, Value e) -> SmallVector<Value> {
                               Value pos = at(tb, tl, it[1], e);
                               return {put(tb, tl, p, it[0], pos),
                                       put(tb, tl,
                                           arith::AddIOp::create(tb, tl, pos, cstIndex(tb, tl, 1)),
                                           it[1], e)};
                             });
             })
            .getResult(0);

    // The sentinel pair T·k reads token T: a zero row of z with weight 0,
    // and writes the scratch row T of the combine.
    Value zExt = concatRows(b, loc, z, zeros(b, loc, {b.getIndexAttr(1), b.getIndexAttr(dl)}));
    Value pairsPlus = arith::AddIOp::create(b, loc, pairs, c1);
    Value wExt = tensor::InsertSliceOp::create(b, loc, wts, zeros(b, loc, {OpFoldResult(pairsPlus)}),
                                               {b.getIndexAttr(0)}, sizesOf(b, loc, wts),
                                               ones(b, 1));
    Value tokensPlus = arith::AddIOp::create(b, loc, tokens, c1);
    Value u0 = zeros(b, loc, {OpFoldResult(tokensPlus), b.getIndexAttr(dl)});

    // One expert's group of `rows` pair ids from sorted[start].
    auto expertGemms = [&](OpBuilder &b1, Location l1, Value e, Value start, Value rows,
                           Value u) -> Value {
      GemmWeight e1 = expertOf(b1, l1, w1, e), e3 = expertOf(b1, l1, w3, e),
                 e2 = expertOf(b1, l1, w2, e);
      auto tokenOf = [&](OpBuilder &nb, Location nl, Value p) {
        return arith::DivUIOp::create(nb, nl, p, kc).getResult();
      };
      // Gather the group's latent rows once.
      Value a = loop(b1, l1, rows, 1, empty(b1, l1, {OpFoldResult(rows), b1.getIndexAttr(dl)}, f32),
                     [&](OpBuilder &nb, Location nl, Value r, ValueRange it) -> SmallVector<Value> {
                       Value p = at(nb, nl, sorted, arith::AddIOp::create(nb, nl, start, r).getResult());
                       Value row = tile(nb, nl, zExt, tokenOf(nb, nl, p), nb.getIndexAttr(0), 1, dl);
                       return {place(nb, nl, row, it[0], r, nb.getIndexAttr(0))};
                     })
                    .getResult(0);
      if (mxfp8)
        a = roundToMxfp8(b1, l1, a);

      // GEMM1 with the GLU epilogue, one w1/w3 panel pair at a time.
      Value h0 = empty(b1, l1, {OpFoldResult(rows), b1.getIndexAttr(ie)}, f32);
      Value h = panels(
          b1, l1, h0, ie, nt1, [&](OpBuilder &nb, Location nl, Value n0, Value block) -> Value {
            Value p1 = weightPanel(nb, nl, e1, n0, nt1), p3 = weightPanel(nb, nl, e3, n0, nt1);
            return loop(nb, nl, rows, kTileRows, block,
                        [&](OpBuilder &mb, Location ml, Value m0,
                            ValueRange it2) -> SmallVector<Value> {
                          Value x = tile(mb, ml, a, m0, mb.getIndexAttr(0), kTileRows, dl);
                          Value g = panelProduct(mb, ml, x, p1);
                          Value up = panelProduct(mb, ml, x, p3);
                          Value act = createGlu(mb, ml, g.getType(), g, up, op.getGlu(),
                                                op.getBeta1Attr(), op.getBeta2Attr());
                          return {place(mb, ml, act, it2[0], m0, mb.getIndexAttr(0))};
                        })
                .getResult(0);
          });
      if (mxfp8)
        h = roundToMxfp8(b1, l1, h);

      // GEMM2 with the routing-weight epilogue: each tile row goes, times
      // its pair's weight, into its token's row of the f32 combine.
      return panels(
          b1, l1, u, dl, nt2, [&](OpBuilder &nb, Location nl, Value n0, Value block) -> Value {
                    Value p2 = weightPanel(nb, nl, e2, n0, nt2);
                    return loop(nb, nl, rows, kTileRows, block,
                                 [&](OpBuilder &mb, Location ml, Value m0,
                                     ValueRange it2) -> SmallVector<Value> {
                                   Value x = tile(mb, ml, h, m0, mb.getIndexAttr(0), kTileRows, ie);
                                   Value y = panelProduct(mb, ml, x, p2);
                                   Value acc = it2[0];
                                   for (int64_t r = 0; r < kTileRows; ++r) {
                                     Value row = arith::AddIOp::create(
                                         mb, ml, arith::AddIOp::create(mb, ml, start, m0),
                                         cstIndex(mb, ml, r));
                                     Value p = at(mb, ml, sorted, row);
                                     Value wt = at(mb, ml, wExt, p);
                                     Value t = tokenOf(mb, ml, p);
                                     Value old = tile(mb, ml, acc, t, mb.getIndexAttr(0), 1, nt2);
                                     Value yr = tile(mb, ml, y, mb.getIndexAttr(r),
                                                     mb.getIndexAttr(0), 1, nt2);
                                     Value sum = elementwise(
                                         mb, ml, {old, yr}, cast<RankedTensorType>(old.getType()),
                                         [&](OpBuilder &bb, Location bl, ValueRange v) {
                                           return Value(arith::AddFOp::create(
                                               bb, bl, v[0], arith::MulFOp::create(bb, bl, wt, v[1])));
                                         });
                                     acc = place(mb, ml, sum, acc, t, mb.getIndexAttr(0));
                                   }
                                   return {acc};
                                 })
                                .getResult(0);
          });
    };

    auto perExpert = loop(
        b, loc, cstIndex(b, loc, experts), 1, u0,
        [&](OpBuilder &eb, Location el, Value e, ValueRange it) -> SmallVector<Value> {
          Value start = at(eb, el, offsets, e);
          Value end = at(eb, el, offsets, arith::AddIOp::create(eb, el, e, cstIndex(eb, el, 1)).getResult());
          Value rows = arith::SubIOp::create(eb, el, end, start);
          Value any = arith::CmpIOp::create(eb, el, arith::CmpIPredicate::ugt, rows,
                                            cstIndex(eb, el, 0));
          // Experts without tokens decode nothing.
          auto ifOp = scf::IfOp::create(
              eb, el, any,
              [&](OpBuilder &b1, Location l1) {
                scf::YieldOp::create(b1, l1, expertGemms(b1, l1, e, start, rows, it[0]));
              },
              [&](OpBuilder &b1, Location l1) { scf::YieldOp::create(b1, l1, it[0]); });
          return {ifOp.getResult(0)};
        });
    Value u = tensor::ExtractSliceOp::create(
        b, loc, perExpert.getResult(0), {b.getIndexAttr(0), b.getIndexAttr(0)},
        {OpFoldResult(tokens), b.getIndexAttr(dl)}, ones(b, 2));
    finishMoe(b, op, u);
    return success();
  }

private:
  int64_t panel;
};

} // namespace

void mlir::k3::lowering::populateGroupedMoePattern(RewritePatternSet &patterns,
                                                    int64_t panelColumns) {
  patterns.add<LowerMoeGrouped>(patterns.getContext(), panelColumns);
}
