//===- KdaChunkwise.cpp - KDA token recurrence → chunked form -------------===//
//
// Part of k3. Implements k3-kda-chunkwise: k3.kda → k3.kda_chunked, choosing
// the factored tile form only where the gate proves the decay bounded
// (KDA.md §6.3).
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/Format.h"

#include <cmath>

#define DEBUG_TYPE "k3-kda-chunkwise"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3KDACHUNKWISEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;
using namespace mlir::k3;

namespace {

/// The largest cumulative log-decay magnitude the factored form may meet
/// in one sub-chunk: e^80 ≈ 5.5e34 is finite in fp32 and bf16 (max e^88.7)
/// and e^-80 is still a normal fp32 number (KDA.md §6.3, FLA PR #701).
constexpr double kMaxFactoredExponent = 80.0;

/// Returns the factored form when `g`'s producer proves every sub-chunk's
/// cumulative decay stays within kMaxFactoredExponent; otherwise the safe
/// form, with `why` saying what is missing.
KdaTileForm chooseForm(Value g, int64_t subChunk, std::string &why) {
  auto gate = g.getDefiningOp<KdaGateOp>();
  if (!gate) {
    why = "the decay is not produced by k3.kda_gate, so no lower bound is known";
    return KdaTileForm::safe;
  }
  if (gate.getForm() == KdaGateForm::softplus) {
    why = "the softplus gate is unbounded below";
    return KdaTileForm::safe;
  }
  double lb = gate.getLbAttr() ? gate.getLbAttr().getValueAsDouble() : -INFINITY;
  double reach = lb * static_cast<double>(subChunk);
  if (!(reach >= -kMaxFactoredExponent)) {
    llvm::raw_string_ostream os(why);
    os << "lower bound " << llvm::format("%g", lb) << " over " << subChunk
       << "-token sub-chunks reaches " << llvm::format("%g", reach) << " < -"
       << llvm::format("%g", kMaxFactoredExponent) << " (e^" << llvm::format("%g", -reach)
       << " overflows fp32)";
    return KdaTileForm::safe;
  }
  return KdaTileForm::factored;
}

struct K3KdaChunkwisePass : k3::impl::K3KdaChunkwisePassBase<K3KdaChunkwisePass> {
  using Base::Base;

  void runOnOperation() override {
    if (chunkSize <= 0 || subChunk <= 0 || chunkSize % subChunk != 0) {
      getOperation()->emitError()
          << "k3-kda-chunkwise: chunk-size " << int64_t(chunkSize)
          << " must be a positive multiple of sub-chunk " << int64_t(subChunk);
      return signalPassFailure();
    }
    SmallVector<KdaOp> ops;
    getOperation()->walk([&](KdaOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (KdaOp op : ops) {
      // Decode: one token is one recurrent step; chunking would only add
      // work (and a length-1 chunk kernel is where vLLM #50649 broke).
      if (cast<RankedTensorType>(op.getQ().getType()).getDimSize(0) == 1)
        continue;
      std::string why;
      KdaTileForm form = chooseForm(op.getG(), subChunk, why);
      if (form == KdaTileForm::safe)
        op.emitRemark() << "k3-kda-chunkwise: safe tile form (exact pairwise "
                           "exponents on the diagonal sub-chunks): "
                        << why;
      auto s0Type = cast<RankedTensorType>(op.getInitialState().getType());
      int64_t t = cast<RankedTensorType>(op.getQ().getType()).getDimSize(0);
      int64_t chunks = ShapedType::isDynamic(t) ? ShapedType::kDynamic
                                                : (t + chunkSize - 1) / chunkSize;
      SmallVector<int64_t> statesShape{chunks};
      llvm::append_range(statesShape, s0Type.getShape());
      rewriter.setInsertionPoint(op);
      auto chunked = KdaChunkedOp::create(
          rewriter, op.getLoc(), op.getOut().getType(), op.getFinalState().getType(),
          RankedTensorType::get(statesShape, s0Type.getElementType()), op.getQ(),
          op.getK(), op.getV(), op.getG(), op.getBeta(), op.getInitialState(),
          op.getScaleAttr(), rewriter.getI64IntegerAttr(chunkSize),
          rewriter.getI64IntegerAttr(subChunk),
          KdaTileFormAttr::get(&getContext(), form));
      rewriter.replaceOp(op, {chunked.getOut(), chunked.getFinalState()});
    }
  }
};

} // namespace
