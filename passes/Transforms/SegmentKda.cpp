//===- SegmentKda.cpp - KDA as composed independent segments --------------===//
//
// Part of k3. Implements k3-segment-kda: each multi-token k3.kda becomes
// `segments` independent pairs of k3.kda ops (zero state; identity state
// with zero values) plus the affine composition of their summaries.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "k3-segment-kda"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3SEGMENTKDAPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;
using namespace mlir::k3;

namespace {

using IT = utils::IteratorType;

Value index(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// A linalg.generic over `inits`' loops whose body is `fn(args) -> value`.
Value generic(OpBuilder &b, Location loc, ValueRange ins, Value init,
              ArrayRef<AffineMap> maps, ArrayRef<IT> its,
              function_ref<Value(OpBuilder &, Location, ValueRange)> fn) {
  return linalg::GenericOp::create(
             b, loc, init.getType(), ins, init, maps, its,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(nb, nl, fn(nb, nl, args));
             })
      .getResult(0);
}

/// An f32 tensor of `shape` (one dynamic leading extent `rows` if given)
/// filled with `value`.
Value filled(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Value rows, double value) {
  Value empty = tensor::EmptyOp::create(b, loc, shape, b.getF32Type(),
                                        rows ? ValueRange{rows} : ValueRange{});
  Value v = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  return linalg::FillOp::create(b, loc, v, empty).getResult(0);
}

/// Rows [start, start + len) of a [T, ...] tensor.
Value rowsOf(OpBuilder &b, Location loc, Value src, Value start, Value len) {
  auto type = cast<RankedTensorType>(src.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0)), sizes{len},
      strides(type.getRank(), b.getIndexAttr(1));
  offsets[0] = start;
  for (int64_t d : type.getShape().drop_front())
    sizes.push_back(b.getIndexAttr(d));
  return tensor::ExtractSliceOp::create(b, loc, src, offsets, sizes, strides);
}

void segment(KdaOp op, int64_t n) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  auto sType = cast<RankedTensorType>(op.getInitialState().getType());
  auto outType = cast<RankedTensorType>(op.getOut().getType());
  const int64_t hv = sType.getDimSize(0), dk = sType.getDimSize(1), dv = sType.getDimSize(2);
  const int64_t dyn = ShapedType::kDynamic;
  Type f32 = b.getF32Type();
  AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
             d2 = getAffineDimExpr(2, ctx), d3 = getAffineDimExpr(3, ctx);

  Value tokens = tensor::DimOp::create(b, loc, op.getQ(), 0);
  Value len = arith::DivUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, tokens, index(b, loc, n - 1)), index(b, loc, n));
  Value zeroState = filled(b, loc, {hv, dk, dv}, Value(), 0.0);
  // I per value head, [HV, K, K].
  Value identity = generic(
      b, loc, {}, tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{hv, dk, dk}, f32),
      {AffineMap::getMultiDimIdentityMap(3, ctx)}, {IT::parallel, IT::parallel, IT::parallel},
      [](OpBuilder &nb, Location nl, ValueRange) {
        Value same = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq,
                                           linalg::IndexOp::create(nb, nl, 1),
                                           linalg::IndexOp::create(nb, nl, 2));
        return Value(arith::SelectOp::create(
            nb, nl, same, arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(1.0)),
            arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0.0))));
      });

  // Every segment's two runs depend on nothing but its own inputs.
  struct Summary {
    Value start, len, o0, b, qt, p;
  };
  SmallVector<Summary> parts;
  auto f32Rows = [&](int64_t width) {
    return RankedTensorType::get({dyn, hv, width}, f32);
  };
  for (int64_t i = 0; i < n; ++i) {
    Value start = arith::MinUIOp::create(
        b, loc, arith::MulIOp::create(b, loc, index(b, loc, i), len), tokens);
    Value size = arith::MinUIOp::create(b, loc, len, arith::SubIOp::create(b, loc, tokens, start));
    Value q = rowsOf(b, loc, op.getQ(), start, size), k = rowsOf(b, loc, op.getK(), start, size),
          v = rowsOf(b, loc, op.getV(), start, size), g = rowsOf(b, loc, op.getG(), start, size),
          beta = rowsOf(b, loc, op.getBeta(), start, size);
    auto zero = KdaOp::create(b, loc, f32Rows(dv), sType, Type(), q, k, v, g, beta, zeroState,
                              op.getScaleAttr(), IntegerAttr());
    Value noValues = filled(b, loc, {dyn, hv, dk}, size, 0.0);
    auto trans = KdaOp::create(b, loc, f32Rows(dk), RankedTensorType::get({hv, dk, dk}, f32),
                               Type(), q, k, noValues, g, beta, identity, op.getScaleAttr(),
                               IntegerAttr());
    parts.push_back({start, size, zero.getOut(), zero.getFinalState(), trans.getOut(),
                     trans.getFinalState()});
  }

  // The scan: O_i = O0_i + Q̃_i S_i, S_{i+1} = P_i S_i + B_i.
  auto fma = [](OpBuilder &nb, Location nl, ValueRange a) {
    return Value(arith::AddFOp::create(nb, nl, a[2], arith::MulFOp::create(nb, nl, a[0], a[1])));
  };
  Value state = op.getInitialState();
  Value out = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{dyn, hv, dv},
                                      outType.getElementType(), ValueRange{tokens});
  for (const Summary &s : parts) {
    // Loops (t, h, a, j): o[t, h, j] += q̃[t, h, a] · S[h, a, j].
    Value o = generic(b, loc, {s.qt, state}, s.o0,
                      {AffineMap::get(4, 0, {d0, d1, d2}, ctx), AffineMap::get(4, 0, {d1, d2, d3}, ctx),
                       AffineMap::get(4, 0, {d0, d1, d3}, ctx)},
                      {IT::parallel, IT::parallel, IT::reduction, IT::parallel}, fma);
    if (outType.getElementType() != f32)
      o = generic(b, loc, o,
                  tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{dyn, hv, dv},
                                          outType.getElementType(), ValueRange{s.len}),
                  {AffineMap::getMultiDimIdentityMap(3, ctx), AffineMap::getMultiDimIdentityMap(3, ctx)},
                  {IT::parallel, IT::parallel, IT::parallel},
                  [&](OpBuilder &nb, Location nl, ValueRange a) {
                    return Value(arith::TruncFOp::create(nb, nl, outType.getElementType(), a[0]));
                  });
    SmallVector<OpFoldResult> offsets{s.start, b.getIndexAttr(0), b.getIndexAttr(0)},
        sizes{s.len, b.getIndexAttr(hv), b.getIndexAttr(dv)}, ones(3, b.getIndexAttr(1));
    out = tensor::InsertSliceOp::create(b, loc, o, out, offsets, sizes, ones);
    // Loops (h, a, b, j): S'[h, a, j] = B[h, a, j] + Σ_b P[h, a, b] · S[h, b, j].
    state = generic(b, loc, {s.p, state}, s.b,
                    {AffineMap::get(4, 0, {d0, d1, d2}, ctx), AffineMap::get(4, 0, {d0, d2, d3}, ctx),
                     AffineMap::get(4, 0, {d0, d1, d3}, ctx)},
                    {IT::parallel, IT::parallel, IT::reduction, IT::parallel}, fma);
  }
  if (out.getType() != outType) // a static token count
    out = tensor::CastOp::create(b, loc, outType, out);
  op.getOut().replaceAllUsesWith(out);
  op.getFinalState().replaceAllUsesWith(state);
  op.erase();
}

struct K3SegmentKdaPass : k3::impl::K3SegmentKdaPassBase<K3SegmentKdaPass> {
  using Base::Base;

  void runOnOperation() override {
    if (segments < 1 || segments > 1024) {
      getOperation()->emitError() << "k3-segment-kda: segments " << int64_t(segments)
                                  << " must be in [1, 1024]";
      return signalPassFailure();
    }
    if (segments == 1)
      return;
    SmallVector<KdaOp> ops;
    getOperation()->walk([&](KdaOp op) {
      auto q = cast<RankedTensorType>(op.getQ().getType());
      auto s = cast<RankedTensorType>(op.getInitialState().getType());
      // One token is one step (decode); the composition needs static head
      // shapes for its state algebra. Snapshots stay with the one-sequence
      // form (segment-local boundaries would need the scan's states).
      if (q.getDimSize(0) != 1 && s.hasStaticShape() && !op.getSnapshots())
        ops.push_back(op);
    });
    for (KdaOp op : ops)
      segment(op, segments);
  }
};

} // namespace
