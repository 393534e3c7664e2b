//===- QuantizeMxfp4.cpp - Float routed experts to MXFP4 ------------------===//
//
// Part of k3. Implements k3-quantize-mxfp4. The pass decides and the bundle
// writer computes: the values live in the checkpoint, so the replacement
// weights are named after the float ones plus the rule (BundleWriter.cpp
// quantizes them with lib/Model/Numerics, the scalar reference's encoder).
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "k3-quantize-mxfp4"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3QUANTIZEMXFP4PASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;
using namespace mlir::k3;

namespace {

struct K3QuantizeMxfp4Pass : k3::impl::K3QuantizeMxfp4PassBase<K3QuantizeMxfp4Pass> {
  using Base::Base;

  /// MXFP4 codes and scales for the float weight `w` of `moe`; null after
  /// reporting an error on `moe`.
  std::pair<Value, Value> quantize(MoeOp moe, Value w, StringRef which) {
    auto weight = w.getDefiningOp<WeightOp>();
    if (!weight) {
      moe.emitOpError() << "k3-quantize-mxfp4: expert matrix " << which
                        << " is not a checkpoint weight (k3.weight); only those are quantized";
      return {};
    }
    auto type = cast<RankedTensorType>(w.getType());
    int64_t k = type.getShape().back();
    if (ShapedType::isDynamic(k) || k % 32 != 0) {
      moe.emitOpError() << "k3-quantize-mxfp4: " << which << " input dimension " << k
                        << " is not a multiple of the MXFP4 block size 32";
      return {};
    }
    OpBuilder b(weight);
    std::string base = (weight.getName() + "#mxfp4." + scaleRule).str();
    SmallVector<int64_t> scaleShape(type.getShape());
    scaleShape.back() = k / 32;
    // A rank's block of split experts quantizes to the same block.
    Value codes = WeightOp::create(b, weight.getLoc(), type.clone(b.getType<Float4E2M1FNType>()),
                                   base + ".codes", weight.getSplitDimAttr(),
                                   weight.getSplitAxesAttr());
    Value scales = WeightOp::create(
        b, weight.getLoc(), RankedTensorType::get(scaleShape, b.getType<Float8E8M0FNUType>()),
        base + ".scales", weight.getSplitDimAttr(), weight.getSplitAxesAttr());
    return {codes, scales};
  }

  void runOnOperation() override {
    if (scaleRule != "floor" && scaleRule != "ceil") {
      emitError(getOperation().getLoc())
          << "k3-quantize-mxfp4: scale-rule must be floor or ceil, got '" << scaleRule << "'";
      return signalPassFailure();
    }
    if (inputs != "none" && inputs != "mxfp8") {
      emitError(getOperation().getLoc())
          << "k3-quantize-mxfp4: inputs must be none or mxfp8, got '" << inputs << "'";
      return signalPassFailure();
    }
    bool failed = false;
    getOperation().walk([&](MoeOp moe) {
      if (inputs == "mxfp8")
        moe.setMxfp8Inputs(true);
      if (!weights || moe.getW1Scale())
        return; // asked for inputs only, or already MXFP4
      auto [c1, s1] = quantize(moe, moe.getW1(), "w1");
      auto [c3, s3] = c1 ? quantize(moe, moe.getW3(), "w3") : std::pair<Value, Value>();
      auto [c2, s2] = c3 ? quantize(moe, moe.getW2(), "w2") : std::pair<Value, Value>();
      if (!c2) {
        failed = true;
        return;
      }
      SmallVector<Operation *> old{moe.getW1().getDefiningOp(), moe.getW3().getDefiningOp(),
                                   moe.getW2().getDefiningOp()};
      moe.getW1Mutable().assign(c1);
      moe.getW3Mutable().assign(c3);
      moe.getW2Mutable().assign(c2);
      moe.getW1ScaleMutable().assign(s1);
      moe.getW3ScaleMutable().assign(s3);
      moe.getW2ScaleMutable().assign(s2);
      for (Operation *op : old)
        if (op->use_empty())
          op->erase();
    });
    if (failed)
      signalPassFailure();
  }
};

} // namespace
