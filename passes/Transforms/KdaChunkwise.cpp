//===- KdaChunkwise.cpp - KDA token recurrence → chunked form -------------===//
//
// Part of k3. Implements k3-kda-chunkwise: k3.kda → k3.kda_chunked, choosing
// the factored tile form only where the gate proves the decay bounded
// (KDA.md §6.3).
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <numeric>

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
  // Slices and casts of a gate's output (k3-segment-kda's segments) keep
  // its bound.
  while (Operation *def = g.getDefiningOp()) {
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def))
      g = slice.getSource();
    else if (auto cast = dyn_cast<tensor::CastOp>(def))
      g = cast.getSource();
    else
      break;
  }
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
    if (chunkSize <= 0 || subChunk <= 0 || chunkSize % subChunk != 0 || chunkSize > 1024) {
      getOperation()->emitError()
          << "k3-kda-chunkwise: chunk-size " << int64_t(chunkSize)
          << " must be a positive multiple of sub-chunk " << int64_t(subChunk)
          << " and at most 1024";
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
      // Snapshots every N tokens must fall on chunk boundaries: the chunk
      // shrinks to gcd(chunk-size, N) (and the sub-chunk to divide it).
      int64_t chunk = chunkSize, sub = subChunk;
      if (std::optional<int64_t> every = op.getSnapshotInterval();
          every && *every % chunk != 0) {
        chunk = std::gcd(chunk, *every);
        sub = std::gcd(sub, chunk);
        op.emitRemark() << "k3-kda-chunkwise: chunks of " << chunk << " (sub-chunks of " << sub
                        << ") so that the snapshots every " << *every
                        << " tokens fall on chunk boundaries";
      }
      std::string why;
      KdaTileForm form = chooseForm(op.getG(), sub, why);
      if (form == KdaTileForm::safe)
        op.emitRemark() << "k3-kda-chunkwise: safe tile form (exact pairwise decays, no factor "
                           "above 1): "
                        << why;
      auto s0Type = cast<RankedTensorType>(op.getInitialState().getType());
      int64_t t = cast<RankedTensorType>(op.getQ().getType()).getDimSize(0);
      int64_t chunks =
          ShapedType::isDynamic(t) ? ShapedType::kDynamic : (t + chunk - 1) / chunk;
      SmallVector<int64_t> statesShape{chunks};
      llvm::append_range(statesShape, s0Type.getShape());
      rewriter.setInsertionPoint(op);
      auto chunked = KdaChunkedOp::create(
          rewriter, op.getLoc(), op.getOut().getType(), op.getFinalState().getType(),
          RankedTensorType::get(statesShape, s0Type.getElementType()), op.getQ(),
          op.getK(), op.getV(), op.getG(), op.getBeta(), op.getInitialState(),
          op.getScaleAttr(), rewriter.getI64IntegerAttr(chunk), rewriter.getI64IntegerAttr(sub),
          KdaTileFormAttr::get(&getContext(), form));
      Value snapshots;
      if (std::optional<int64_t> every = op.getSnapshotInterval()) {
        // Every N-th token is a chunk boundary: take every (N / chunk)-th
        // boundary state, from the (N / chunk − 1)-th on.
        int64_t step = *every / chunk;
        Location loc = op.getLoc();
        Value tokens = tensor::DimOp::create(rewriter, loc, op.getQ(), 0);
        Value count = arith::DivUIOp::create(
            rewriter, loc, tokens, arith::ConstantIndexOp::create(rewriter, loc, *every));
        auto snapType = cast<RankedTensorType>(op.getSnapshots().getType());
        SmallVector<OpFoldResult> offsets{rewriter.getIndexAttr(step - 1)}, sizes{count},
            strides{rewriter.getIndexAttr(step)};
        for (int64_t d : s0Type.getShape()) {
          offsets.push_back(rewriter.getIndexAttr(0));
          sizes.push_back(rewriter.getIndexAttr(d));
          strides.push_back(rewriter.getIndexAttr(1));
        }
        // A static count of zero has no slice to take (its offset would
        // lie past the boundary states).
        if (!ShapedType::isDynamic(t) && t / *every == 0)
          snapshots = tensor::EmptyOp::create(rewriter, loc, snapType.getShape(),
                                              snapType.getElementType());
        else
          snapshots = tensor::ExtractSliceOp::create(rewriter, loc, chunked.getBoundaryStates(),
                                                     offsets, sizes, strides);
        if (snapshots.getType() != snapType)
          snapshots = tensor::CastOp::create(rewriter, loc, snapType, snapshots);
      }
      SmallVector<Value> results{chunked.getOut(), chunked.getFinalState()};
      if (snapshots)
        results.push_back(snapshots);
      rewriter.replaceOp(op, results);
    }
  }
};

} // namespace
