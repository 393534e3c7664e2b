//===- MmaMoePattern.cpp - k3.moe's MXFP4 experts on tensor cores ---------===//
//
// Part of k3. The routed experts of k3.moe (`moe-dispatch=mma`, the GPU
// default) as one `k3.moe_experts`, which k3-gpu-moe-experts builds into
// kernels that sort the routing slots by expert and run both expert GEMMs
// on mma.sync with the MXFP4 codes decoded to bf16 in registers, the GLU
// and the routing weights in the GEMMs' epilogues (MOE_MXFP4.md §4, §7).
// The combine left here is a plain sum over each token's k slots, in f32:
//
//   y [T·k, Dl] = k3.moe_experts(z, indices, weights, w1, w3, w2)
//   u [T, Dl]   = Σ_j y[t·k + j]
//
// It applies to packed MXFP4 experts of static shape whose widths are
// multiples of 32 (whole scale blocks), without `mxfp8_inputs` (the
// kernels' inputs are bf16: W4A16). Everything else takes the slot GEMMs
// (SlotMoePattern.cpp, lower benefit).
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

struct MmaMoeExperts : OpRewritePattern<MoeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MoeOp op, PatternRewriter &b) const override {
    GemmWeight w1, w3, w2;
    if (failed(moeWeights(b, op, w1, w3, w2)))
      return failure();
    // Experts in the CPU GEMM's panels (k3-pack-weight-panels, CPU only):
    // the per-token form reads them.
    if (w1.panel || w3.panel || w2.panel)
      return b.notifyMatchFailure(op, "expert weights stored as CPU GEMM panels");
    if (!w1.packed() || !w3.packed() || !w2.packed())
      return b.notifyMatchFailure(op, "the tensor-core experts take MXFP4 codes");
    if (op.getMxfp8Inputs())
      return b.notifyMatchFailure(op, "the tensor-core experts read bf16 inputs, not MXFP8");
    auto w1Type = cast<RankedTensorType>(op.getW1().getType());
    auto w2Type = cast<RankedTensorType>(op.getW2().getType());
    const int64_t k = cast<RankedTensorType>(op.getIndices().getType()).getDimSize(1);
    if (!w1Type.hasStaticShape() || !w2Type.hasStaticShape() ||
        !cast<RankedTensorType>(op.getW3().getType()).hasStaticShape() ||
        ShapedType::isDynamic(k) || k < 1)
      return b.notifyMatchFailure(op, "the tensor-core experts need static shapes and top-k");
    const int64_t experts = w1Type.getDimSize(0), ie = w1Type.getDimSize(1),
                  dl = w1Type.getDimSize(2);
    if (ie % 32 || dl % 32)
      return b.notifyMatchFailure(op, "the tensor-core experts need whole MXFP4 blocks");

    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    Value z = moeLatentInput(b, op);
    Value tokens = tensor::DimOp::create(b, loc, op.getX(), 0);
    Value slots = arith::MulIOp::create(b, loc, tokens, cstIndex(b, loc, k));
    Value y = empty(b, loc, {OpFoldResult(slots), b.getIndexAttr(dl)}, b.getF32Type());
    Value h = empty(b, loc, {OpFoldResult(slots), b.getIndexAttr(ie)}, b.getF32Type());
    Value orderSize = arith::AddIOp::create(b, loc, slots, cstIndex(b, loc, 3 * experts));
    Value order = empty(b, loc, {OpFoldResult(orderSize)}, b.getI32Type());
    auto moe = MoeExpertsOp::create(
        b, loc, TypeRange{y.getType(), h.getType(), order.getType()}, z, op.getIndices(),
        op.getWeights(), w1.data, w3.data, w2.data, w1.scales, w3.scales, w2.scales, y, h, order,
        op.getActivationAttr(), op.getBeta1Attr(), op.getBeta2Attr());

    // The combine (t, m, j) over y as [T, k, Dl]: the weights are already
    // applied.
    Value bySlot = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({ShapedType::kDynamic, k, dl}, b.getF32Type()),
        moe.getResult(0), ArrayRef<ReassociationIndices>{{0, 1}, {2}},
        ArrayRef<OpFoldResult>{tokens, b.getIndexAttr(k), b.getIndexAttr(dl)});
    Value u = generic(b, loc, {bySlot},
                      zeros(b, loc, {OpFoldResult(tokens), b.getIndexAttr(dl)}),
                      {project(ctx, 3, {0, 2, 1}), project(ctx, 3, {0, 1})},
                      {IT::parallel, IT::parallel, IT::reduction},
                      [&](OpBuilder &nb, Location nl, ValueRange a) -> SmallVector<Value> {
                        return {arith::AddFOp::create(nb, nl, a[1], a[0])};
                      })
                  .front();
    finishMoe(b, op, u);
    return success();
  }
};

} // namespace

void mlir::k3::lowering::populateMmaMoePattern(RewritePatternSet &patterns) {
  // Over the slot GEMMs (benefit 1), which take what it declines.
  patterns.add<MmaMoeExperts>(patterns.getContext(), /*benefit=*/2);
}
