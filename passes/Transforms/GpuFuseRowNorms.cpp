//===- GpuFuseRowNorms.cpp - RMSNorm rows in their producer's kernel -------===//
//
// Part of k3. Implements k3-gpu-fuse-row-norms: on tensors, a `k3.row_norm`
// (no gate) takes its producer's work into its kernel, or goes into the
// producer's, where the producer is
//
//   - a `k3.attn_res_mix` whose only use it is and whose mix is f32: the
//     mix op gets the norm as `then_norm` and writes the norm's destination
//     (AttnRes then the sublayer's input norm, every MoE and dense MLP);
//   - a `linalg.generic` summing an f32 [R, K, D] over K from a fill of 0.0
//     (the MoE's combine over each token's picks, before its latent norm),
//     whose only use it is: the norm reads the [R, K, D] rows and sums
//     them itself.
//
// Each is one kernel fewer and one [R, D] round trip through memory less,
// with the same arithmetic in the same order: the mix is f32 either way
// and the norm's team is the mix's (rowNormTeam is attnResTeam), and the
// pick sum starts from 0.0 and adds K = 0, 1, ... as the generic's loop
// does.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3GPUFUSEROWNORMSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

bool isF32(Value v) { return cast<ShapedType>(v.getType()).getElementType().isF32(); }

/// row_norm(attn_res_mix(...)) as one attn_res_mix with then_norm.
struct NormIntoMix : OpRewritePattern<k3::RowNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(k3::RowNormOp norm, PatternRewriter &b) const override {
    if (norm.getGate() || !isa<RankedTensorType>(norm.getX().getType()))
      return b.notifyMatchFailure(norm, "gated, or not on tensors");
    auto mix = norm.getX().getDefiningOp<k3::AttnResMixOp>();
    if (!mix || mix.getThenNorm() || !norm.getX().hasOneUse() || !isF32(norm.getX()))
      return b.notifyMatchFailure(norm, "x is not an f32 mix used only here");
    // In another block (a norm in a loop) the fused mix would run as often
    // as the norm.
    if (mix->getBlock() != norm->getBlock())
      return b.notifyMatchFailure(norm, "the mix is in another block");
    auto fused = k3::AttnResMixOp::create(
        b, mix.getLoc(), norm->getResultTypes(), mix.getSources(), mix.getNormWeight(),
        mix.getQuery(), norm.getWeight(), norm.getOutInit(), mix.getEpsAttr(), norm.getEpsAttr());
    b.replaceOp(norm, fused->getResults());
    b.eraseOp(mix);
    return success();
  }
};

/// Whether `generic` is out[r, d] = Σ_k in[r, k, d] over f32 from a fill of
/// +0.0, the sum in order of k; returns its [R, K, D] input, or null.
Value pickSum(linalg::GenericOp generic) {
  if (!generic || generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      !generic.hasPureTensorSemantics())
    return {};
  using IT = utils::IteratorType;
  if (generic.getIteratorTypesArray() != SmallVector<IT>{IT::parallel, IT::parallel, IT::reduction})
    return {};
  MLIRContext *ctx = generic.getContext();
  AffineExpr r, d, k;
  bindDims(ctx, r, d, k);
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (maps[0] != AffineMap::get(3, 0, {r, k, d}, ctx) ||
      maps[1] != AffineMap::get(3, 0, {r, d}, ctx))
    return {};
  Value in = generic.getDpsInputs()[0], init = generic.getDpsInits()[0];
  if (!isF32(in) || !isF32(init))
    return {};
  Block &body = generic.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!add || add->getBlock() != &body || body.getOperations().size() != 2)
    return {};
  // a + b is b + a in IEEE arithmetic: either operand order is the sum.
  Value inArg = body.getArgument(0), accArg = body.getArgument(1);
  if (!((add.getLhs() == inArg && add.getRhs() == accArg) ||
        (add.getLhs() == accArg && add.getRhs() == inArg)))
    return {};
  auto fill = init.getDefiningOp<linalg::FillOp>();
  FloatAttr zero;
  if (!fill || !matchPattern(fill.getInputs()[0], m_Constant(&zero)) ||
      !zero.getValue().isPosZero())
    return {};
  return in;
}

/// row_norm(Σ_k y[r, k, d]) as a row_norm of the [R, K, D] rows.
struct PicksIntoNorm : OpRewritePattern<k3::RowNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(k3::RowNormOp norm, PatternRewriter &b) const override {
    if (norm.getGate() || !norm.getX().hasOneUse())
      return b.notifyMatchFailure(norm, "gated, or x has other uses");
    auto sum = norm.getX().getDefiningOp<linalg::GenericOp>();
    Value rows = sum && sum->getBlock() == norm->getBlock() ? pickSum(sum) : Value();
    if (!rows)
      return b.notifyMatchFailure(norm, "x is not an f32 sum over picks");
    b.modifyOpInPlace(norm, [&] { norm.getXMutable().assign(rows); });
    return success();
  }
};

struct K3GpuFuseRowNormsPass : k3::impl::K3GpuFuseRowNormsPassBase<K3GpuFuseRowNormsPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<NormIntoMix, PicksIntoNorm>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
