//===- PackWeightPanels.cpp - CPU GEMM weights in the panel layout ---------===//
//
// Part of k3. Implements k3-pack-weight-panels: the float weights that only
// k3.linear and k3.lm_head read, and with `experts` the float experts only
// k3.moe reads (routed, shared, latent projections), are stored in the
// layout of the CPU GEMM's micro-kernel, so that no call transposes or
// widens them again. The pass decides and the bundle writer computes (as
// for k3-quantize-mxfp4): the values live in the checkpoint, so the
// replacement weight is named after the stored one plus the layout,
// `W#panels<P>`.
//
// The layout is upstream's `linalg.pack` of W [N, K] with inner tile P on
// the output dimension: [N/P, K, P], panel j holding rows jP..jP+P−1 of W
// transposed; stacked experts [E, N, K] the same per expert, [E, N/P, K, P]
// (inner tile on dimension 1). The IR says so with the inverse, a
// `linalg.unpack` back to [N, K] in front of the users, which
// convert-k3-to-linalg looks through (GemmWeight::panel) and which is never
// lowered itself.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "k3-pack-weight-panels"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3PACKWEIGHTPANELSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;
using namespace mlir::k3;

namespace {

/// Whether `use` is one of `moe`'s optional operands that its lowering
/// multiplies as the weight of a k3.linear of the 2-D tokens: the latent
/// projections and the shared experts.
bool moeLinear(MoeOp moe, OpOperand &use) {
  for (MutableOperandRange range :
       {moe.getLatentDownMutable(), moe.getLatentUpMutable(), moe.getSharedGateMutable(),
        moe.getSharedUpMutable(), moe.getSharedDownMutable()})
    if (range.size() == 1 && &range[0] == &use)
      return true;
  return false;
}

/// Whether every user reads `w` as the [N, K] weight of a float GEMM that
/// convert-k3-to-linalg lowers on panels: k3.linear of a 2-D x without
/// scales (as the weight, not as x), k3.lm_head, or with `experts` the
/// linears k3.moe lowers to (`moeLinear`); for a stacked [E, N, K] weight,
/// k3.moe as one of its expert matrices (float experts have no scales).
bool onlyGemms(WeightOp w, bool stacked, bool experts) {
  if (w->use_empty())
    return false;
  for (OpOperand &use : w->getUses()) {
    Operation *user = use.getOwner();
    if (stacked) {
      auto moe = dyn_cast<MoeOp>(user);
      if (!moe || (&use != &moe.getW1Mutable() && &use != &moe.getW3Mutable() &&
                   &use != &moe.getW2Mutable()))
        return false;
    } else if (auto linear = dyn_cast<LinearOp>(user)) {
      // The panel GEMMs take x as [M, K], as the importer writes it.
      if (linear.getScales() || &use != &linear.getWeightMutable() ||
          cast<RankedTensorType>(linear.getX().getType()).getRank() != 2)
        return false;
    } else if (auto moe = dyn_cast<MoeOp>(user)) {
      if (!experts || !moeLinear(moe, use))
        return false;
    } else if (auto head = dyn_cast<LmHeadOp>(user)) {
      if (&use != &head.getWeightMutable())
        return false;
    } else {
      return false;
    }
  }
  return true;
}

struct K3PackWeightPanelsPass : k3::impl::K3PackWeightPanelsPassBase<K3PackWeightPanelsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (columns != 16 && columns != 32) {
      getOperation().emitError() << "k3-pack-weight-panels: columns must be 16 or 32, got "
                                 << int64_t(columns);
      return signalPassFailure();
    }
    SmallVector<WeightOp> weights;
    getOperation().walk([&](WeightOp op) {
      auto type = cast<RankedTensorType>(op.getType());
      // Matrices, and the experts stacked along a leading dimension ({e});
      // derived weights (#…) keep their layout: a name holds one derivation.
      bool stacked = op.getName().contains("{e}");
      if ((!stacked || experts) && type.getRank() == (stacked ? 3 : 2) &&
          type.hasStaticShape() &&
          isa<Float32Type, BFloat16Type, Float16Type>(type.getElementType()) &&
          !op.getName().contains('#') && onlyGemms(op, stacked, experts))
        weights.push_back(op);
    });
    for (WeightOp op : weights) {
      auto type = cast<RankedTensorType>(op.getType());
      // N and K are the last two dimensions (after the experts' E).
      const int64_t nDim = type.getRank() - 2;
      int64_t n = type.getDimSize(nDim), k = type.getDimSize(nDim + 1);
      // The GEMM's panel width (convert-k3-to-linalg's panelFor): two
      // vector registers, or 16 columns where that does not divide N.
      int64_t p = n % columns == 0 ? int64_t(columns) : n % 16 == 0 ? 16 : 0;
      if (p == 0)
        continue; // read as stored, by the dot-product form
      OpBuilder b(op);
      Location loc = op.getLoc();
      // A rank's block of a split weight packs to the same block: E, N and
      // K keep their dimensions, and a block of N is whole panels.
      SmallVector<int64_t> shape(type.getShape().take_front(nDim));
      shape.append({n / p, k, p});
      auto packed = WeightOp::create(
          b, loc, RankedTensorType::get(shape, type.getElementType()),
          (op.getName() + "#panels" + Twine(p)).str(), op.getSplitDimAttr(),
          op.getSplitAxesAttr());
      // One unpack in front of each user: wherever k3-outline-layers puts
      // the user, its unpack goes with it (and never crosses a call).
      for (OpOperand &use : llvm::make_early_inc_range(op->getUses())) {
        OpBuilder ub(use.getOwner());
        Location at = use.getOwner()->getLoc();
        Value dest = tensor::EmptyOp::create(ub, at, type.getShape(), type.getElementType());
        use.set(linalg::UnPackOp::create(ub, at, packed, dest, /*innerDimsPos=*/{nDim},
                                         /*innerTiles=*/{ub.getIndexAttr(p)}));
      }
      op.erase();
    }
  }
};

} // namespace
