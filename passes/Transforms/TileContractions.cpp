//===- TileContractions.cpp - Register tiles for marked contractions ------===//
//
// Part of k3. Implements k3-tile-contractions: the `k3.tile` generics are
// tiled (parallel tiles as one scf.forall, reductions innermost), vectorised, their accumulators hoisted out
// of the reduction loop, and the vector contractions lowered to outer
// products.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

#define DEBUG_TYPE "k3-tile-contractions"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3TILECONTRACTIONSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

constexpr const char *kTileAttr = "k3.tile";

/// Whether every non-zero size divides its static loop extent, so that every
/// tile has the same static shape (no masks, no partial tiles).
bool tilesEvenly(linalg::GenericOp op, ArrayRef<int64_t> sizes) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ranges.size() != sizes.size())
    return false;
  for (auto [range, size] : llvm::zip(ranges, sizes))
    if (ShapedType::isDynamic(range) || (size != 0 && range % size != 0))
      return false;
  return true;
}

struct K3TileContractionsPass
    : k3::impl::K3TileContractionsPassBase<K3TileContractionsPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    SmallVector<linalg::GenericOp> marked;
    getOperation()->walk([&](linalg::GenericOp op) {
      if (op->hasAttr(kTileAttr))
        marked.push_back(op);
    });
    IRRewriter rewriter(ctx);
    for (linalg::GenericOp op : marked) {
      auto sizes = dyn_cast<DenseI64ArrayAttr>(op->getAttr(kTileAttr));
      op->removeAttr(kTileAttr);
      if (!sizes || !op.hasPureTensorSemantics() || !tilesEvenly(op, sizes.asArrayRef()))
        continue;
      // Parallel tile loops outside, as one scf.forall (the tiles are
      // independent: k3-cpu-parallel-loops runs them on the thread pool),
      // reduction tile loops inside as scf.for: the accumulator tile is then
      // invariant in the innermost loop.
      ArrayRef<int64_t> all = sizes.asArrayRef();
      SmallVector<utils::IteratorType> its = op.getIteratorTypesArray();
      SmallVector<int64_t> outer(all), inner(all);
      bool anyOuter = false, anyInner = false;
      for (auto [i, it] : llvm::enumerate(its)) {
        bool reduction = it == utils::IteratorType::reduction;
        (reduction ? outer : inner)[i] = 0;
        (reduction ? anyInner : anyOuter) |= all[i] != 0;
      }
      rewriter.setInsertionPoint(op);
      TilingInterface current = cast<TilingInterface>(op.getOperation());
      SmallVector<Operation *> tiledOps;
      if (anyOuter) {
        scf::SCFTilingOptions options;
        options.setTileSizes(getAsIndexOpFoldResult(ctx, outer));
        options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
        FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(rewriter, current, options);
        if (failed(tiled))
          continue;
        rewriter.replaceOp(current, tiled->replacements);
        tiledOps = tiled->tiledOps;
      }
      if (!anyOuter)
        tiledOps.push_back(op);
      if (anyInner && tiledOps.size() == 1) {
        auto t = cast<TilingInterface>(tiledOps.front());
        rewriter.setInsertionPoint(t);
        scf::SCFTilingOptions options;
        options.setTileSizes(getAsIndexOpFoldResult(ctx, inner));
        FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(rewriter, t, options);
        if (succeeded(tiled)) {
          rewriter.replaceOp(t, tiled->replacements);
          tiledOps = tiled->tiledOps;
        } else if (!anyOuter) {
          continue; // not tiled at all: left as it is
        }
      }
      for (Operation *t : tiledOps) {
        rewriter.setInsertionPoint(t);
        FailureOr<linalg::VectorizationResult> v = linalg::vectorize(rewriter, t);
        if (succeeded(v))
          rewriter.replaceOp(t, v->replacements);
      }
    }
    if (marked.empty())
      return;

    // Fold the unit-extent reduction into a contraction, then hoist each
    // accumulator (a transfer_read/transfer_write pair on the loop's
    // iteration argument) out of its reduction loop.
    {
      RewritePatternSet patterns(ctx);
      vector::populateVectorMultiReductionLoweringPatterns(
          patterns, vector::VectorMultiReductionLowering::InnerParallel);
      vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
      vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
      vector::populateDropUnitDimWithShapeCastPatterns(patterns);
      vector::populateVectorTransferDropUnitDimsPatterns(patterns);
      vector::TransferReadOp::getCanonicalizationPatterns(patterns, ctx);
      vector::TransferWriteOp::getCanonicalizationPatterns(patterns, ctx);
      tensor::ExtractSliceOp::getCanonicalizationPatterns(patterns, ctx);
      if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
        return signalPassFailure();
    }
    getOperation()->walk([&](scf::ForOp loop) {
      rewriter.setInsertionPoint(loop);
      hoistLoopInvariantSubsets(rewriter, loop);
    });
    {
      RewritePatternSet patterns(ctx);
      vector::populateVectorContractLoweringPatterns(
          patterns, vector::VectorContractLowering::OuterProduct);
      vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
      vector::populateVectorMultiReductionLoweringPatterns(
          patterns, vector::VectorMultiReductionLowering::InnerParallel);
      vector::populateVectorBroadcastLoweringPatterns(patterns);
      vector::populateVectorTransposeLoweringPatterns(patterns,
                                                      vector::VectorTransposeLowering::EltWise);
      if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
        return signalPassFailure();
    }
  }
};

} // namespace
