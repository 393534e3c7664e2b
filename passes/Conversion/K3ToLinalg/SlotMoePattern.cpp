//===- SlotMoePattern.cpp - k3.moe as slot-parallel expert GEMMs ----------===//
//
// Part of k3. The routed experts of k3.moe with one loop nest per GEMM over
// every routing slot s = t·k + j at once (`moe-dispatch=slots`, the GPU
// form; MOE_MXFP4.md §7):
//
//   g, up [S, I]  = z[s / k] · W1[e(s)]ᵀ, z[s / k] · W3[e(s)]ᵀ   one nest, two results
//   h             = glu(g, up) (situ_glu or swiglu)              (MXFP8-rounded if asked)
//   y [S, Dl]     = h[s] · W2[e(s)]ᵀ
//   u [T, Dl]     = Σ_j w[t, j] · y[t·k + j]   over the valid picks
//
// e(s) is read inside the loop body (a gather), and MXFP4 codes are decoded
// there, in the dot product's inner loop: no dequantized copy of a weight
// and no data-dependent host control. The grouped form (GroupedMoePattern)
// is the CPU's: its per-expert loops and 4 × 16 register tiles drive a host
// loop per tile, which on a GPU is a kernel launch per tile, hundreds of
// thousands per layer. Here a MoE layer is a fixed handful of kernels
// whatever the routing, each output element one thread's dot product. A
// slot routed outside [0, E) reads expert 0 and is dropped by the combine
// (a select, so even a non-finite product cannot leak through weight 0).
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Conversion/K3ToLinalg/Common.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::k3;
using namespace mlir::k3::lowering;

namespace {

using IT = utils::IteratorType;

/// The expert of a slot, clamped to 0 when outside [0, E) (the combine
/// drops those slots), and whether it was valid.
std::pair<Value, Value> slotExpert(OpBuilder &b, Location loc, Value id, int64_t experts) {
  Value e = arith::IndexCastOp::create(b, loc, b.getIndexType(), id);
  // Negative indices wrap to large unsigned values: one compare covers both.
  Value valid =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, e, cstIndex(b, loc, experts));
  return {arith::SelectOp::create(b, loc, valid, e, cstIndex(b, loc, 0)), valid};
}

/// Element (n, c) of expert e's matrix, in f32: decoded from the packed
/// byte and its block's scale for MXFP4.
Value weightAt(OpBuilder &b, Location loc, const GemmWeight &w, Value e, Value n,
               Value c) {
  if (!w.packed())
    return f32(b, loc, tensor::ExtractOp::create(b, loc, w.data, ValueRange{e, n, c}));
  Value byteIdx = arith::ShRUIOp::create(b, loc, c, cstIndex(b, loc, 1));
  Value blockIdx = arith::ShRUIOp::create(b, loc, c, cstIndex(b, loc, 5));
  Value byte = tensor::ExtractOp::create(b, loc, w.data, ValueRange{e, n, byteIdx});
  Value scale =
      f32(b, loc, tensor::ExtractOp::create(b, loc, w.scales, ValueRange{e, n, blockIdx}));
  Value high = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne,
      arith::AndIOp::create(b, loc, c, cstIndex(b, loc, 1)), cstIndex(b, loc, 0));
  return decodeE2m1(b, loc, byte, high, scale);
}

struct LowerMoeSlots : OpRewritePattern<MoeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MoeOp op, PatternRewriter &b) const override {
    GemmWeight w1, w3, w2;
    if (failed(moeWeights(b, op, w1, w3, w2)))
      return failure();
    // Experts in the CPU GEMM's panels (k3-pack-weight-panels, CPU only):
    // the per-token form reads them.
    if (w1.panel || w3.panel || w2.panel)
      return b.notifyMatchFailure(op, "expert weights stored as CPU GEMM panels");
    auto w1Type = cast<RankedTensorType>(op.getW1().getType());
    if (!w1Type.hasStaticShape())
      return b.notifyMatchFailure(op, "slot GEMMs need static expert shapes");
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    const int64_t experts = w1Type.getDimSize(0), ie = w1Type.getDimSize(1),
                  dl = w1Type.getDimSize(2);
    const int64_t k = cast<RankedTensorType>(op.getIndices().getType()).getDimSize(1);
    // The slot maps are affine in k (s floordiv k, t·k + j).
    if (ShapedType::isDynamic(k) || k < 1)
      return b.notifyMatchFailure(op, "slot GEMMs need a static top-k of at least 1");

    Value z = moeLatentInput(b, op);
    if (op.getMxfp8Inputs())
      z = roundToMxfp8(b, loc, z);
    Value tokens = tensor::DimOp::create(b, loc, op.getX(), 0);
    OpFoldResult slots = OpFoldResult(
        arith::MulIOp::create(b, loc, tokens, cstIndex(b, loc, k)).getResult());
    Value ids = tensor::CollapseShapeOp::create(b, loc, op.getIndices(),
                                                ArrayRef<ReassociationIndices>{{0, 1}});
    AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
               d2 = getAffineDimExpr(2, ctx);

    // GEMM1, both halves in one nest (s, n, c): z's row is the slot's token.
    SmallVector<IT> gemm{IT::parallel, IT::parallel, IT::reduction};
    // Two accumulators: one shared init would make bufferization copy it.
    SmallVector<OpFoldResult> guSizes{slots, b.getIndexAttr(ie)};
    SmallVector<Value> gu = generic(
        b, loc, {z, ids}, {zeros(b, loc, guSizes), zeros(b, loc, guSizes)},
        {AffineMap::get(3, 0, {d0.floorDiv(k), d2}, ctx), project(ctx, 3, {0}),
         project(ctx, 3, {0, 1}), project(ctx, 3, {0, 1})},
        gemm, [&](OpBuilder &nb, Location nl, ValueRange a) -> SmallVector<Value> {
          Value e = slotExpert(nb, nl, a[1], experts).first;
          Value n = linalg::IndexOp::create(nb, nl, 1), c = linalg::IndexOp::create(nb, nl, 2);
          Value x1 = weightAt(nb, nl, w1, e, n, c);
          Value x3 = weightAt(nb, nl, w3, e, n, c);
          return {multiplyAccumulate(nb, nl, {a[0], x1, a[2]}).front(),
                  multiplyAccumulate(nb, nl, {a[0], x3, a[3]}).front()};
        });
    Value h = createGlu(b, loc, gu[0].getType(), gu[0], gu[1], op.getGlu(), op.getBeta1Attr(),
                                op.getBeta2Attr());
    if (op.getMxfp8Inputs())
      h = roundToMxfp8(b, loc, h);

    // GEMM2 (s, m, n).
    Value y = generic(
                  b, loc, {h, ids}, zeros(b, loc, {slots, b.getIndexAttr(dl)}),
                  {project(ctx, 3, {0, 2}), project(ctx, 3, {0}), project(ctx, 3, {0, 1})},
                  gemm,
                  [&](OpBuilder &nb, Location nl, ValueRange a) -> SmallVector<Value> {
                    Value e = slotExpert(nb, nl, a[1], experts).first;
                    Value m = linalg::IndexOp::create(nb, nl, 1),
                          n = linalg::IndexOp::create(nb, nl, 2);
                    return multiplyAccumulate(nb, nl, {a[0], weightAt(nb, nl, w2, e, m, n),
                                                       a[2]});
                  })
                  .front();

    // The combine (t, m, j): the routing-weight epilogue, in f32.
    Value u = generic(
                  b, loc, {y, op.getIndices(), op.getWeights()},
                  zeros(b, loc, {OpFoldResult(tokens), b.getIndexAttr(dl)}),
                  {AffineMap::get(3, 0, {d0 * k + d2, d1}, ctx), project(ctx, 3, {0, 2}),
                   project(ctx, 3, {0, 2}), project(ctx, 3, {0, 1})},
                  {IT::parallel, IT::parallel, IT::reduction},
                  [&](OpBuilder &nb, Location nl, ValueRange a) -> SmallVector<Value> {
                    Value valid = slotExpert(nb, nl, a[1], experts).second;
                    Value sum = arith::AddFOp::create(
                        nb, nl, a[3], arith::MulFOp::create(nb, nl, a[2], a[0]));
                    return {arith::SelectOp::create(nb, nl, valid, sum, a[3])};
                  })
                  .front();
    finishMoe(b, op, u);
    return success();
  }
};

} // namespace

void mlir::k3::lowering::populateSlotMoePattern(RewritePatternSet &patterns) {
  patterns.add<LowerMoeSlots>(patterns.getContext(), /*benefit=*/1);
}
