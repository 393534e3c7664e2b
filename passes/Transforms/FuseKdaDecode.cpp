//===- FuseKdaDecode.cpp - One-token KDA chain → k3.kda_decode ------------===//
//
// Part of k3. Implements k3-fuse-kda-decode by matching the importer's
// decode chain around each one-token k3.kda.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "k3-fuse-kda-decode"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3FUSEKDADECODEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;
using namespace mlir::k3;

namespace {

/// The SiLU short_conv whose output, reshaped [1, P] → [1, H, D], is `v`
/// (and has no other use).
ShortConvOp convBehind(Value v) {
  auto expand = v.getDefiningOp<tensor::ExpandShapeOp>();
  if (!expand || !expand->hasOneUse())
    return {};
  auto conv = expand.getSrc().getDefiningOp<ShortConvOp>();
  if (!conv || !conv.getSilu() || !conv.getY().hasOneUse())
    return {};
  return conv;
}

/// The l2_norm producing `v` with the kernel's eps (1e-6), used only here.
L2NormOp normBehind(Value v) {
  auto norm = v.getDefiningOp<L2NormOp>();
  if (!norm || !norm->hasOneUse() || norm.getEps().convertToFloat() != 1e-6f)
    return {};
  return norm;
}

bool fuse(KdaOp op) {
  if (op.getSnapshots() || !op.getOut().hasOneUse())
    return false;
  L2NormOp qn = normBehind(op.getQ()), kn = normBehind(op.getK());
  if (!qn || !kn)
    return false;
  ShortConvOp cq = convBehind(qn.getX()), ck = convBehind(kn.getX()), cv = convBehind(op.getV());
  auto gate = op.getG().getDefiningOp<KdaGateOp>();
  auto beta = op.getBeta().getDefiningOp<SigmoidOp>();
  auto norm = dyn_cast<RmsNormOp>(*op.getOut().getUsers().begin());
  if (!cq || !ck || !cv || !gate || !gate->hasOneUse() || !beta || !beta->hasOneUse() ||
      !norm || !norm.getGate() || norm.getX() != op.getOut())
    return false;
  // The fused op has one conv width and keeps each window's type.
  int64_t width = cast<RankedTensorType>(cq.getWeight().getType()).getDimSize(1);
  for (ShortConvOp conv : {cq, ck, cv})
    if (cast<RankedTensorType>(conv.getWeight().getType()).getDimSize(1) != width ||
        ShapedType::isDynamic(width) ||
        conv.getNewState().getType() != conv.getState().getType())
      return false;
  OpBuilder b(norm);
  auto fused = KdaDecodeOp::create(
      b, op.getLoc(), norm.getY().getType(), cq.getNewState().getType(),
      ck.getNewState().getType(), cv.getNewState().getType(), op.getFinalState().getType(),
      cq.getX(), ck.getX(), cv.getX(), cq.getWeight(), ck.getWeight(), cv.getWeight(),
      cq.getState(), ck.getState(), cv.getState(), gate.getX(), gate.getALog(),
      gate.getDtBias(), beta.getX(), op.getInitialState(), norm.getWeight(), norm.getGate(),
      gate.getFormAttr(), gate.getLbAttr(), op.getScaleAttr(), norm.getEpsAttr());
  norm.getY().replaceAllUsesWith(fused.getOut());
  cq.getNewState().replaceAllUsesWith(fused.getNewCq());
  ck.getNewState().replaceAllUsesWith(fused.getNewCk());
  cv.getNewState().replaceAllUsesWith(fused.getNewCv());
  op.getFinalState().replaceAllUsesWith(fused.getNewState());
  // The chain is dead now, consumers first.
  SmallVector<Operation *> dead{norm, op, qn, kn, gate, beta};
  for (ShortConvOp conv : {cq, ck, cv}) {
    dead.push_back(*conv.getY().getUsers().begin());
    dead.push_back(conv);
  }
  for (Operation *d : dead)
    d->erase();
  return true;
}

struct K3FuseKdaDecodePass : k3::impl::K3FuseKdaDecodePassBase<K3FuseKdaDecodePass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<KdaOp> ops;
    getOperation()->walk([&](KdaOp op) {
      if (cast<RankedTensorType>(op.getQ().getType()).getDimSize(0) == 1)
        ops.push_back(op);
    });
    for (KdaOp op : ops)
      fuse(op);
  }
};

} // namespace
