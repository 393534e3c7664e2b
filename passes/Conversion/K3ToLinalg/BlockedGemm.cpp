//===- BlockedGemm.cpp - k3.linear as a cache-blocked GEMM on the CPU -----===//
//
// Part of k3. The CPU form of a prompt's projections (`linear=blocked`):
// y[M, N] = x[M, K] · W[N, K]ᵀ in the loop order of GotoBLAS-style GEMMs,
//
//   for each block of kRowBlock rows          (x block: rows × K)
//     for each block of kDepth along K        (x block: rows × kc, in L2)
//       forall P-column panels of W           (the CPU's threads)
//         panel W[n0:P, k0:kc] as [kc, P]: in place where k3-pack-weight-
//           panels stored W so (bf16 widened in registers), else packed
//           and widened to f32 (in L1)
//         for each 6-row tile: y[6, P] += x[6, kc] · panel   (registers)
//         the last rows % 6 as 1-row tiles
//
// P, the panel width, is two vector registers of f32: 16 for AVX2, 32 for
// AVX-512 (convert-k3-to-linalg's panel-columns, from k3-compile --cpu).
//
// The dot-product form (`contractWeight`) streams all of W once per row of
// x and a whole row of x per output: at K = 9216 neither stays in cache.
// Here W is read once per row block, each packed panel serves every row
// tile of the block, and the x block is reused by all panels. The 6 × P
// tile (k3-tile-contractions) keeps 12 vector accumulators in registers over
// kc multiply-adds, loaded and stored once per K block. A model's float
// projections and lm_head come as panels [N/P, K, P] (k3-pack-weight-panels,
// laid out once by the bundle writer): the micro-kernel reads them in place,
// and so do the decode GEMVs (`panelRows`). A weight in the [N, K] layout
// (the experts unless k3-compile --panel-experts, op-level modules) has
// its panels packed per call, a transposing copy of 1/rows of the
// multiply-adds' work.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/K3ToLinalg/Common.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::k3::lowering {

namespace {

/// Rows of a register tile: 6 × P is 12 accumulators (of AVX2's 16 vector
/// registers, or AVX-512's 32), plus two panel rows and a broadcast. An FMA
/// takes 4 to 5 cycles on two pipes, so 10 or more independent accumulators
/// keep both busy; 4 × 16's 8 did not (about 80 % of the peak at best).
constexpr int64_t kTileRows = 6;
/// Rows per block, a multiple of kTileRows: x's block of kRowBlock × kDepth
/// f32 is 240 KiB, which stays in a core's L2 while every panel reads it.
constexpr int64_t kRowBlock = 240;
/// K per block: a [kDepth, 16] f32 panel is 16 KiB, a [kDepth, 32] one
/// 32 KiB, in L1 on Zen 5 and recent Intel cores (48 KiB). Halving kc for
/// 32 columns (a 16 KiB panel) measured 7-10 % slower there; on 32 KiB-L1
/// AVX-512 parts (Zen 4, Skylake-SP) it may be the better choice, untested.
constexpr int64_t kDepth = 256;

/// The panel width for N = `n`: `width`, or 16 where `width` does not
/// divide N (0 where neither does).
int64_t panelFor(int64_t n, int64_t width) {
  return n % width == 0 ? width : n % 16 == 0 ? 16 : 0;
}

/// kc for `k`: the largest power of two up to kDepth dividing it, at least
/// 16 (a shallower block repacks panels and reloads tiles for too few
/// multiply-adds) and one MXFP4 block of 32 when packed; 0 when none fits.
int64_t depthFor(int64_t k, bool packed) {
  int64_t kc = fit(k, kDepth);
  return kc < (packed ? 32 : 16) ? 0 : kc;
}

/// One row block: `c` [rows, N] += x [rows, K] · Wᵀ, K block by K block.
Value rowBlock(OpBuilder &b, Location loc, Value x, const GemmWeight &w, Value c, int64_t n,
               int64_t k, int64_t kc, int64_t width) {
  Value rows = tensor::DimOp::create(b, loc, x, 0);
  // Rows in whole tiles, then the rest one by one.
  Value main = arith::SubIOp::create(
      b, loc, rows, arith::RemUIOp::create(b, loc, rows, cstIndex(b, loc, kTileRows)));
  return loop(b, loc, cstIndex(b, loc, k), kc, c,
              [&](OpBuilder &kb, Location kl, Value k0, ValueRange it) -> SmallVector<Value> {
                GemmWeight wk = reductionBlock(kb, kl, w, k0, kc);
                Value xk = tensor::ExtractSliceOp::create(
                    kb, kl, x, {kb.getIndexAttr(0), OpFoldResult(k0)},
                    {OpFoldResult(rows), kb.getIndexAttr(kc)}, ones(kb, 2));
                return {panels(
                    kb, kl, it[0], n, width,
                    [&](OpBuilder &nb, Location nl, Value n0, Value block) -> Value {
                      Value panel = weightPanel(nb, nl, wk, n0, width);
                      auto tiles = [&](Value from, Value to, int64_t height, Value into) {
                        return loop(nb, nl, from, to, cstIndex(nb, nl, height), into,
                                    [&](OpBuilder &mb, Location ml, Value m0,
                                        ValueRange acc) -> SmallVector<Value> {
                                      Value a = tile(mb, ml, xk, m0, mb.getIndexAttr(0), height, kc);
                                      Value old = tile(mb, ml, acc[0], m0, mb.getIndexAttr(0),
                                                       height, width);
                                      Value y = panelProduct(mb, ml, a, panel, old);
                                      return {place(mb, ml, y, acc[0], m0, mb.getIndexAttr(0))};
                                    })
                            .getResult(0);
                      };
                      Value done = tiles(cstIndex(nb, nl, 0), main, kTileRows, block);
                      return tiles(main, rows, 1, done);
                    })};
              })
      .getResult(0);
}

} // namespace

bool blockedContractApplies(Value x, const GemmWeight &w, int64_t width) {
  auto xType = dyn_cast<RankedTensorType>(x.getType());
  auto wType = dyn_cast<RankedTensorType>(w.data.getType());
  if (!xType || !wType || xType.getRank() != 2 || wType.getRank() != (w.panel ? 3 : 2) ||
      !wType.hasStaticShape() || ShapedType::isDynamic(xType.getDimSize(1)))
    return false;
  int64_t n = wType.getDimSize(0) * (w.panel ? w.panel : 1), k = xType.getDimSize(1);
  // A panel weight's panels are the tiles' columns, whatever `width` says.
  return (w.panel || panelFor(n, width) > 0) && depthFor(k, w.packed()) > 0;
}

Value blockedContract(OpBuilder &b, Location loc, Value x, const GemmWeight &w,
                      int64_t width) {
  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(w.data.getType());
  const int64_t n = wType.getDimSize(0) * (w.panel ? w.panel : 1), k = xType.getDimSize(1),
                kc = depthFor(k, w.packed());
  width = w.panel ? w.panel : panelFor(n, width);
  // A static row count below one tile (a decode step) gains nothing from
  // packing panels: the weight is read once either way.
  if (!ShapedType::isDynamic(xType.getDimSize(0)) && xType.getDimSize(0) < kTileRows)
    return contractWeight(b, loc, x, w);
  Value m = tensor::DimOp::create(b, loc, x, 0);
  auto blocked = [&](OpBuilder &bb, Location bl) -> Value {
    // Sized as x's rows: a static row count keeps a static result type.
    Value y0 = zeros(bb, bl, {sizesOf(bb, bl, x)[0], bb.getIndexAttr(n)});
    return loop(bb, bl, cstIndex(bb, bl, 0), m, cstIndex(bb, bl, kRowBlock), y0,
                [&](OpBuilder &rb, Location rl, Value r0, ValueRange it) -> SmallVector<Value> {
                  Value rows = arith::MinUIOp::create(
                      rb, rl, cstIndex(rb, rl, kRowBlock), arith::SubIOp::create(rb, rl, m, r0));
                  SmallVector<OpFoldResult> at{OpFoldResult(r0), rb.getIndexAttr(0)};
                  Value xr = tensor::ExtractSliceOp::create(
                      rb, rl, x, at, {OpFoldResult(rows), rb.getIndexAttr(k)}, ones(rb, 2));
                  Value cr = tensor::ExtractSliceOp::create(
                      rb, rl, it[0], at, {OpFoldResult(rows), rb.getIndexAttr(n)}, ones(rb, 2));
                  Value done = rowBlock(rb, rl, xr, w, cr, n, k, kc, width);
                  return {place(rb, rl, done, it[0], r0, rb.getIndexAttr(0))};
                })
        .getResult(0);
  };
  if (!ShapedType::isDynamic(xType.getDimSize(0)))
    return blocked(b, loc);
  // A dynamic row count (a prompt, or a decode step of one token through a
  // prompt-shaped function): fewer rows than a tile take the dot products.
  Value few = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, m,
                                    cstIndex(b, loc, kTileRows));
  auto choice = scf::IfOp::create(
      b, loc, few,
      [&](OpBuilder &tb, Location tl) {
        scf::YieldOp::create(tb, tl, contractWeight(tb, tl, x, w));
      },
      [&](OpBuilder &eb, Location el) { scf::YieldOp::create(eb, el, blocked(eb, el)); });
  return choice.getResult(0);
}

Value panelRows(OpBuilder &b, Location loc, Value x, const GemmWeight &w) {
  MLIRContext *ctx = b.getContext();
  auto wType = cast<RankedTensorType>(w.data.getType());
  const int64_t p = w.panel, np = wType.getDimSize(0), n = np * p, k = wType.getDimSize(1);
  // Groups of g panels a register tile: g × 2 accumulators, g independent
  // FMA chains a k (one panel's two chains wait on the FMA latency: 2.3×
  // slower than the dot products for a 9216 × 2304 GEMV). At least 16
  // groups, though: they are what the threads share (a 128-row projection
  // in one group ran decode on one thread).
  auto fits = [&](int64_t g) { return np % g == 0 && np / g >= 16; };
  const int64_t g = fits(4) ? 4 : fits(2) ? 2 : 1;
  Value m = tensor::DimOp::create(b, loc, x, 0);
  // No K blocks: the panels are read in place (nothing to keep in L1), and
  // a few rows of x stay in cache whole. One thread region per GEMV.
  Value y0 = zeros(b, loc, {sizesOf(b, loc, x)[0], b.getIndexAttr(n)});
  return panels(b, loc, y0, n, g * p, [&](OpBuilder &nb, Location nl, Value n0, Value block) -> Value {
    Value j0 = arith::DivUIOp::create(nb, nl, n0, cstIndex(nb, nl, p));
    Value group = tensor::ExtractSliceOp::create(
        nb, nl, w.data, {OpFoldResult(j0), nb.getIndexAttr(0), nb.getIndexAttr(0)},
        {nb.getIndexAttr(g), nb.getIndexAttr(k), nb.getIndexAttr(p)}, ones(nb, 3));
    return loop(nb, nl, cstIndex(nb, nl, 0), m, cstIndex(nb, nl, 1), block,
                [&](OpBuilder &mb, Location ml, Value m0, ValueRange acc) -> SmallVector<Value> {
                  Value a = tile(mb, ml, x, m0, mb.getIndexAttr(0), 1, k);
                  Value old = tile(mb, ml, acc[0], m0, mb.getIndexAttr(0), 1, g * p);
                  Value old3 = tensor::ExpandShapeOp::create(
                      mb, ml, RankedTensorType::get({1, g, p}, mb.getF32Type()), old,
                      ArrayRef<ReassociationIndices>{{0}, {1, 2}});
                  // Loops (row, panel, column, k): y[0, j, q] += x[0, k] · P[j, k, q].
                  Value y3 = generic(mb, ml, {a, group}, old3,
                                     {project(ctx, 4, {0, 3}), project(ctx, 4, {1, 3, 2}),
                                      project(ctx, 4, {0, 1, 2})},
                                     {utils::IteratorType::parallel, utils::IteratorType::parallel,
                                      utils::IteratorType::parallel, utils::IteratorType::reduction},
                                     multiplyAccumulate)
                                 .front();
                  y3.getDefiningOp()->setAttr("k3.tile", DenseI64ArrayAttr::get(ctx, {1, g, p, 1}));
                  Value y = tensor::CollapseShapeOp::create(
                      mb, ml, y3, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
                  return {place(mb, ml, y, acc[0], m0, mb.getIndexAttr(0))};
                })
        .getResult(0);
  });
}

} // namespace mlir::k3::lowering
