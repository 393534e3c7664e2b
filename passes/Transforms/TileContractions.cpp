//===- TileContractions.cpp - Register tiles for marked contractions ------===//
//
// Part of k3. Implements k3-tile-contractions: the `k3.tile` generics are
// tiled (reductions innermost), vectorised, their accumulators hoisted out
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
      // Parallel tile loops outside, reduction tile loops inside: the
      // accumulator tile is then invariant in the innermost loop.
      SmallVector<int64_t> order;
      SmallVector<utils::IteratorType> its = op.getIteratorTypesArray();
      for (bool reduction : {false, true})
        for (auto [i, it] : llvm::enumerate(its))
          if ((it == utils::IteratorType::reduction) == reduction)
            order.push_back(i);
      scf::SCFTilingOptions options;
      options.setTileSizes(getAsIndexOpFoldResult(ctx, sizes.asArrayRef()));
      options.setInterchange(order);
      rewriter.setInsertionPoint(op);
      FailureOr<scf::SCFTilingResult> tiled =
          scf::tileUsingSCF(rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled))
        continue;
      rewriter.replaceOp(op, tiled->replacements);
      for (Operation *t : tiled->tiledOps) {
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
