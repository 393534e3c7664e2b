//===- Mxfp4.cpp - MXFP4 weights and MX rounding inside the GEMMs ---------===//
//
// Part of k3. How the CPU GEMMs read MXFP4 weights (MOE_MXFP4.md §1-4):
// the codes stay packed (two per byte, low nibble first) and are decoded
// where they are used, either inside a dot product's inner loop
// (`contractWeight`, each byte's two codes in adjacent iterations) or into a small
// [K, 16] panel that a register-tiled GEMM reuses for every row of an
// expert's token group (`weightPanel`). Neither builds a dequantized copy
// of a weight.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Conversion/K3ToLinalg/Common.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::k3::lowering {

namespace {

using IT = utils::IteratorType;

/// `[..., K]` → `[..., K/32, 16, 2]` or `[..., K/32, 32]` (block, then the
/// position in the block), for maps that name the block and the nibble.
Value splitLast(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> tail) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<OpFoldResult> sizes = sizesOf(b, loc, v);
  sizes.pop_back();
  SmallVector<int64_t> shape(type.getShape().drop_back());
  int64_t k = type.getShape().back(), inner = 1;
  for (int64_t t : tail)
    inner *= t;
  shape.push_back(k / inner);
  sizes.push_back(b.getIndexAttr(k / inner));
  for (int64_t t : tail) {
    shape.push_back(t);
    sizes.push_back(b.getIndexAttr(t));
  }
  SmallVector<ReassociationIndices> re;
  for (int64_t i = 0; i + 1 < type.getRank(); ++i)
    re.push_back({i});
  ReassociationIndices last;
  for (size_t i = 0; i <= tail.size(); ++i)
    last.push_back(type.getRank() - 1 + i);
  re.push_back(last);
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), v, re, sizes);
}

/// Rows [n0, n0 + nt) of a 2-D tensor.
Value rows(OpBuilder &b, Location loc, Value m, Value n0, int64_t nt) {
  int64_t cols = cast<RankedTensorType>(m.getType()).getDimSize(1);
  return tensor::ExtractSliceOp::create(b, loc, m, {n0, b.getIndexAttr(0)},
                                        {b.getIndexAttr(nt), b.getIndexAttr(cols)},
                                        ones(b, 2));
}

Value i32c(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 32);
}

} // namespace

FailureOr<GemmWeight> gemmWeight(PatternRewriter &b, Operation *op, Value w, Value scales) {
  if (!scales) {
    // k3-pack-weight-panels' form: [..., N/P, K, P] unpacked to [..., N, K]
    // along N (a matrix, or experts stacked in front).
    auto unpack = w.getDefiningOp<linalg::UnPackOp>();
    // Whole panels only: an unpack may also drop the last panel's tail
    // rows, which the panel GEMMs would compute and return.
    if (unpack && unpack.getOuterDimsPerm().empty() && unpack.getStaticInnerTiles().size() == 1 &&
        !ShapedType::isDynamic(unpack.getStaticInnerTiles()[0]) &&
        unpack.getSourceType().hasStaticShape()) {
      const int64_t r = unpack.getDestType().getRank(), p = unpack.getStaticInnerTiles()[0];
      if ((r == 2 || r == 3) && int64_t(unpack.getSourceRank()) == r + 1 &&
          unpack.getInnerDimsPos() == ArrayRef<int64_t>{r - 2} &&
          unpack.getDestType().getDimSize(r - 2) == unpack.getSourceType().getDimSize(r - 2) * p)
        return GemmWeight{unpack.getSource(), Value(), p};
    }
    return GemmWeight{w, Value()};
  }
  auto unpack = w.getDefiningOp<UnpackE2m1Op>();
  if (!unpack)
    return b.notifyMatchFailure(op, "MXFP4 codes must be the packed bytes of a "
                                    "k3.unpack_e2m1 (k3-outline-weights inserts it)");
  return GemmWeight{unpack.getBytes(), scales};
}

GemmWeight expertOf(OpBuilder &b, Location loc, const GemmWeight &w, Value e) {
  // Rank-reduced slice [e, 0, ...] of the leading (expert) dimension.
  auto matrix = [&](Value v) -> Value {
    if (!v)
      return v;
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0)), sizes;
    offsets[0] = e;
    sizes.push_back(b.getIndexAttr(1));
    for (int64_t d : type.getShape().drop_front())
      sizes.push_back(b.getIndexAttr(d));
    return tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(type.getShape().drop_front(), type.getElementType()),
        v, offsets, sizes, ones(b, type.getRank()));
  };
  return GemmWeight{matrix(w.data), matrix(w.scales), w.panel};
}

Value decodeE2m1(OpBuilder &b, Location loc, Value byte, Value high, Value scale) {
  // Assembled from the code's bits, not read from a 16-entry table:
  // vectorised, a table read is a gather (vgatherdps), the bits a few
  // lane-wise integer ops (k3-tiny's grouped MoE panels: 5 % more decode
  // tokens/s). For the magnitude code u = e1 e0 m ≥ 2, the f32 with
  // exponent 126 + (u >> 1) and mantissa m: the bits (u << 22) +
  // (126 << 23); for u < 2 (0 and the subnormal 0.5), u · 0.5. The sign
  // moves from bit 3 to bit 31. Exact either way.
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  auto c = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, v, 32).getResult(); };
  Value wide = arith::ExtUIOp::create(b, loc, i32, byte);
  Value code = arith::SelectOp::create(b, loc, high, arith::ShRUIOp::create(b, loc, wide, c(4)),
                                       wide);
  Value u = arith::AndIOp::create(b, loc, code, c(7));
  Value normal = arith::AddIOp::create(b, loc, arith::ShLIOp::create(b, loc, u, c(22)),
                                       c(126 << 23));
  Value small = arith::MulFOp::create(
      b, loc, arith::UIToFPOp::create(b, loc, f32, u),
      arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(0.5f)));
  Value magnitude = arith::SelectOp::create(
      b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, u, c(2)),
      arith::BitcastOp::create(b, loc, i32, small), normal);
  Value sign = arith::ShLIOp::create(b, loc, arith::AndIOp::create(b, loc, code, c(8)), c(28));
  Value value = arith::BitcastOp::create(b, loc, f32, arith::OrIOp::create(b, loc, magnitude, sign));
  // Exact: a 2-bit significand times a power of two. (Scale byte 0x00,
  // 2^-127, widens to 0 through arith-expand; the kernels flush subnormals
  // anyway, so it would be 0 either way.)
  return arith::MulFOp::create(b, loc, value, scale);
}

Value contractWeight(OpBuilder &b, Location loc, Value x, const GemmWeight &w) {
  if (w.panel)
    return panelRows(b, loc, x, w);
  if (!w.packed())
    return contract(b, loc, x, w.data);
  MLIRContext *ctx = b.getContext();
  auto xType = cast<RankedTensorType>(x.getType());
  unsigned r = xType.getRank();
  // Loops: leading..., n, block, pair, nibble.
  unsigned n = r - 1, blk = r, pair = r + 1, nib = r + 2, loops = r + 3;
  SmallVector<unsigned> xDims, outDims;
  for (unsigned i = 0; i + 1 < r; ++i) {
    xDims.push_back(i);
    outDims.push_back(i);
  }
  outDims.push_back(n);
  xDims.append({blk, pair, nib});
  SmallVector<OpFoldResult> sizes = sizesOf(b, loc, x);
  sizes.back() = sizesOf(b, loc, w.data).front();
  Value acc = zeros(b, loc, sizes);
  SmallVector<IT> its(loops, IT::parallel);
  its[blk] = its[pair] = its[nib] = IT::reduction;
  return generic(b, loc,
                 {splitLast(b, loc, x, {16, 2}), splitLast(b, loc, w.data, {16}), w.scales},
                 acc,
                 {project(ctx, loops, xDims), project(ctx, loops, {n, blk, pair}),
                  project(ctx, loops, {n, blk}), project(ctx, loops, outDims)},
                 its,
                 [&](OpBuilder &nb, Location nl, ValueRange a) {
                   Value high = arith::CmpIOp::create(
                       nb, nl, arith::CmpIPredicate::ne, linalg::IndexOp::create(nb, nl, nib),
                       cstIndex(nb, nl, 0));
                   Value wv = decodeE2m1(nb, nl, a[1], high, a[2]);
                   return multiplyAccumulate(nb, nl, {a[0], wv, a[3]});
                 })
      .front();
}

Value weightPanel(OpBuilder &b, Location loc, const GemmWeight &w, Value n0, int64_t nt) {
  MLIRContext *ctx = b.getContext();
  if (w.panel) {
    // Panel n0 / nt of [N/nt, K, nt], as [K, nt] (rank-reduced, no copy).
    auto type = cast<RankedTensorType>(w.data.getType());
    Value j = arith::DivUIOp::create(b, loc, n0, cstIndex(b, loc, nt));
    return tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({type.getDimSize(1), nt}, type.getElementType()), w.data,
        {OpFoldResult(j), b.getIndexAttr(0), b.getIndexAttr(0)},
        {b.getIndexAttr(1), b.getIndexAttr(type.getDimSize(1)), b.getIndexAttr(nt)}, ones(b, 3));
  }
  Value data = rows(b, loc, w.data, n0, nt);
  if (!w.packed()) {
    int64_t k = cast<RankedTensorType>(data.getType()).getDimSize(1);
    Value out = empty(b, loc, {b.getIndexAttr(k), b.getIndexAttr(nt)}, b.getF32Type());
    return generic(b, loc, data, out, {project(ctx, 2, {1, 0}), identity(ctx, 2)},
                   {IT::parallel, IT::parallel},
                   [](OpBuilder &, Location, ValueRange a) { return SmallVector<Value>{a[0]}; })
        .front();
  }
  // Loops (block, pair, nibble, n) over the panel [K/32, 16, 2, nt]: the
  // writes run along n (one row of the panel), each byte feeds two rows.
  int64_t k = 2 * cast<RankedTensorType>(data.getType()).getDimSize(1);
  Value out = empty(b, loc,
                    {b.getIndexAttr(k / 32), b.getIndexAttr(16), b.getIndexAttr(2),
                     b.getIndexAttr(nt)},
                    b.getF32Type());
  Value panel =
      generic(b, loc, {splitLast(b, loc, data, {16}), rows(b, loc, w.scales, n0, nt)}, out,
              {project(ctx, 4, {3, 0, 1}), project(ctx, 4, {3, 0}), identity(ctx, 4)},
              SmallVector<IT>(4, IT::parallel),
              [&](OpBuilder &nb, Location nl, ValueRange a) {
                Value high = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ne,
                                                   linalg::IndexOp::create(nb, nl, 2),
                                                   cstIndex(nb, nl, 0));
                return SmallVector<Value>{decodeE2m1(nb, nl, a[0], high, a[1])};
              })
          .front();
  return tensor::CollapseShapeOp::create(b, loc, panel,
                                         ArrayRef<ReassociationIndices>{{0, 1, 2}, {3}});
}

Value panelProduct(OpBuilder &b, Location loc, Value a, Value panel, Value acc) {
  MLIRContext *ctx = b.getContext();
  int64_t m = cast<RankedTensorType>(a.getType()).getDimSize(0);
  int64_t nt = cast<RankedTensorType>(panel.getType()).getDimSize(1);
  if (!acc)
    acc = zeros(b, loc, {b.getIndexAttr(m), b.getIndexAttr(nt)});
  Value y = generic(b, loc, {a, panel}, acc,
                    {project(ctx, 3, {0, 2}), project(ctx, 3, {2, 1}), project(ctx, 3, {0, 1})},
                    {IT::parallel, IT::parallel, IT::reduction}, multiplyAccumulate)
                .front();
  y.getDefiningOp()->setAttr("k3.tile", DenseI64ArrayAttr::get(ctx, {m, nt, 1}));
  return y;
}

GemmWeight reductionBlock(OpBuilder &b, Location loc, const GemmWeight &w, Value k0, int64_t kc) {
  // Packed: two codes a byte and one scale per 32 codes along K.
  auto cols = [&](Value m, int64_t per) -> Value {
    int64_t n = cast<RankedTensorType>(m.getType()).getDimSize(0);
    Value from = arith::DivUIOp::create(b, loc, k0, cstIndex(b, loc, per));
    return tensor::ExtractSliceOp::create(b, loc, m, {b.getIndexAttr(0), OpFoldResult(from)},
                                          {b.getIndexAttr(n), b.getIndexAttr(kc / per)},
                                          ones(b, 2));
  };
  if (w.panel) {
    // The panels' K is dimension 1 of [N/P, K, P].
    auto type = cast<RankedTensorType>(w.data.getType());
    Value block = tensor::ExtractSliceOp::create(
        b, loc, w.data, {b.getIndexAttr(0), OpFoldResult(k0), b.getIndexAttr(0)},
        {b.getIndexAttr(type.getDimSize(0)), b.getIndexAttr(kc), b.getIndexAttr(w.panel)},
        ones(b, 3));
    return GemmWeight{block, Value(), w.panel};
  }
  if (!w.packed())
    return GemmWeight{cols(w.data, 1), Value()};
  return GemmWeight{cols(w.data, 2), cols(w.scales, 32)};
}

Value roundToMxfp8(OpBuilder &b, Location loc, Value x) {
  MLIRContext *ctx = b.getContext();
  Value blocks = splitLast(b, loc, x, {32}); // [R, K/32, 32]
  SmallVector<OpFoldResult> sizes = sizesOf(b, loc, blocks);
  sizes.pop_back();
  Value amax = generic(b, loc, blocks, zeros(b, loc, sizes),
                       {identity(ctx, 3), leading(ctx, 3)},
                       {IT::parallel, IT::parallel, IT::reduction},
                       [](OpBuilder &nb, Location nl, ValueRange a) {
                         return SmallVector<Value>{arith::MaximumFOp::create(
                             nb, nl, a[1], math::AbsFOp::create(nb, nl, a[0]))};
                       })
                   .front();
  Value out = empty(b, loc, sizesOf(b, loc, blocks), b.getF32Type());
  Value rounded =
      generic(b, loc, {blocks, amax}, out, {identity(ctx, 3), leading(ctx, 3), identity(ctx, 3)},
              SmallVector<IT>(3, IT::parallel),
              [&](OpBuilder &nb, Location nl, ValueRange a) {
                // Bit-level, so no fast-math rewrite can change it.
                Type i32 = nb.getI32Type();
                auto bits = [&](Value f) { return arith::BitcastOp::create(nb, nl, i32, f); };
                auto flt = [&](Value i) {
                  return arith::BitcastOp::create(nb, nl, nb.getF32Type(), i);
                };
                auto c = [&](int64_t v) { return i32c(nb, nl, v); };
                // Biased exponent of X = 2^(floor(log2 amax) − 8), at least 1.
                Value ea = arith::ShRUIOp::create(nb, nl, bits(a[1]), c(23));
                Value sx = arith::MaxSIOp::create(nb, nl, arith::SubIOp::create(nb, nl, ea, c(8)),
                                                  c(1));
                Value vb = bits(a[0]);
                Value sign = arith::AndIOp::create(nb, nl, vb, c(0x80000000LL));
                Value mag = arith::AndIOp::create(nb, nl, vb, c(0x7FFFFFFF));
                Value ev = arith::ShRUIOp::create(nb, nl, mag, c(23));
                // E4M3 normals (|v| ≥ 2^-6 X) keep 3 mantissa bits: drop 20,
                // rounding to nearest even.
                Value odd = arith::AndIOp::create(
                    nb, nl, arith::ShRUIOp::create(nb, nl, mag, c(20)), c(1));
                Value normal = arith::AndIOp::create(
                    nb, nl,
                    arith::AddIOp::create(nb, nl, mag,
                                          arith::AddIOp::create(nb, nl, c(0x7FFFF), odd)),
                    c(0xFFF00000LL));
                // Below, multiples of 2^-9 X: adding 1.5·2^23 quanta rounds
                // to nearest even in the f32 adder.
                Value magic = flt(arith::OrIOp::create(
                    nb, nl, arith::ShLIOp::create(nb, nl, arith::AddIOp::create(nb, nl, sx, c(14)),
                                                  c(23)),
                    c(0x400000)));
                Value sub = bits(arith::SubFOp::create(
                    nb, nl, arith::AddFOp::create(nb, nl, flt(mag), magic), magic));
                Value isNormal = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sge, ev,
                                                       arith::SubIOp::create(nb, nl, sx, c(6)));
                Value r = arith::SelectOp::create(nb, nl, isNormal, normal, sub);
                // Saturate at 448·X = 1.75·2^8·X.
                Value top = arith::OrIOp::create(
                    nb, nl, arith::ShLIOp::create(nb, nl, arith::AddIOp::create(nb, nl, sx, c(8)),
                                                  c(23)),
                    c(0x600000));
                r = arith::MinUIOp::create(nb, nl, r, top);
                // Blocks with amax outside [2^-100, 2^121) (and non-finite
                // ones) pass through unrounded: keeps every constant above a
                // normal f32, and lets Inf and NaN propagate as they would
                // without MXFP8.
                Value inRange = arith::AndIOp::create(
                    nb, nl, arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sge, ea, c(27)),
                    arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sle, ea, c(247)));
                Value rounded = flt(arith::OrIOp::create(nb, nl, r, sign));
                return SmallVector<Value>{arith::SelectOp::create(nb, nl, inRange, rounded, a[0])};
              })
          .front();
  return tensor::CollapseShapeOp::create(b, loc, rounded,
                                         ArrayRef<ReassociationIndices>{{0}, {1, 2}});
}

} // namespace mlir::k3::lowering
