//===- GpuMapLoops.cpp - Host parallel loops to GPU blocks and threads ----===//
//
// Part of k3. Implements k3-gpu-map-loops: tiles the innermost dimension of
// every outermost host `scf.parallel` and writes the mapping attributes that
// `convert-parallel-loops-to-gpu` turns into a launch.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

#include <numeric>
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Matchers.h"

#define DEBUG_TYPE "k3-gpu-map-loops"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3GPUMAPLOOPSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

gpu::ParallelLoopDimMappingAttr dim(MLIRContext *ctx, gpu::Processor p) {
  AffineMap id = AffineMap::getMultiDimIdentityMap(1, ctx);
  return gpu::ParallelLoopDimMappingAttr::get(ctx, p, id, id);
}

/// Outer loop, collapsed to one dimension: blockIdx.x (up to 2^31 - 1
/// blocks; y and z would stop at 65535, e.g. at 65536 tokens).
void mapOuter(scf::ParallelOp loop) {
  (void)gpu::setMappingAttr(loop, {dim(loop.getContext(), gpu::Processor::BlockX)});
}

/// Inner (tile) loop: only its last dimension has more than one iteration.
void mapInner(scf::ParallelOp loop) {
  MLIRContext *ctx = loop.getContext();
  unsigned n = loop.getNumLoops();
  SmallVector<gpu::ParallelLoopDimMappingAttr> mapping;
  for (unsigned i = 0; i < n; ++i)
    mapping.push_back(dim(ctx, i + 1 == n ? gpu::Processor::ThreadX
                                          : gpu::Processor::Sequential));
  (void)gpu::setMappingAttr(loop, mapping);
}

/// Threads of a warp: the smallest block `min-blocks` shrinks to.
constexpr int64_t kWarp = 32;

/// Dimension `i`'s trip count, if its bounds and step are constants.
std::optional<int64_t> staticTripCount(scf::ParallelOp loop, unsigned i) {
  APInt l, u, s;
  if (!matchPattern(loop.getLowerBound()[i], m_ConstantInt(&l)) ||
      !matchPattern(loop.getUpperBound()[i], m_ConstantInt(&u)) ||
      !matchPattern(loop.getStep()[i], m_ConstantInt(&s)) || s.getSExtValue() <= 0)
    return std::nullopt;
  return std::max<int64_t>(0, llvm::divideCeil(u.getSExtValue() - l.getSExtValue(),
                                               s.getSExtValue()));
}

struct K3GpuMapLoopsPass : k3::impl::K3GpuMapLoopsPassBase<K3GpuMapLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (threads < 1 || threads > 1024) {
      getOperation()->emitError() << "k3-gpu-map-loops: threads=" << threads.getValue()
                                  << " is outside [1, 1024]";
      return signalPassFailure();
    }
    if (minBlocks < 0) {
      getOperation()->emitError() << "k3-gpu-map-loops: min-blocks=" << minBlocks.getValue()
                                  << " is negative";
      return signalPassFailure();
    }
    SmallVector<scf::ParallelOp> roots;
    getOperation()->walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>() &&
          !loop->getParentOfType<gpu::LaunchOp>() &&
          !loop->getParentOfType<gpu::GPUModuleOp>() && !loop->hasAttr(gpu::getMappingAttrName()))
        roots.push_back(loop);
    });
    for (scf::ParallelOp loop : roots) {
      unsigned n = loop.getNumLoops();
      // A small static extent gets a block of exactly that many threads.
      int64_t tile = threads;
      SmallVector<std::optional<int64_t>> trips;
      for (unsigned i = 0; i < n; ++i)
        trips.push_back(staticTripCount(loop, i));
      if (trips.back())
        tile = std::max<int64_t>(1, std::min<int64_t>(tile, *trips.back()));
      if (minBlocks > 0 && llvm::all_of(trips, [](auto t) { return t.has_value(); })) {
        int64_t outer = 1;
        for (unsigned i = 0; i + 1 < n; ++i)
          outer *= *trips[i];
        while (tile > kWarp && outer * int64_t(llvm::divideCeil(*trips.back(), tile)) < minBlocks)
          tile = std::max<int64_t>(kWarp, llvm::alignTo(tile / 2, kWarp));
      }
      SmallVector<int64_t> sizes(n, 1);
      sizes.back() = tile;
      // No min/max bounds: the tile loop keeps a constant trip count (the
      // block size) and a guard inside skips the elements past the end.
      auto [outer, inner] = scf::tileParallelLoop(loop, sizes, /*noMinMaxBounds=*/true);
      if (outer.getNumLoops() > 1) {
        IRRewriter rewriter(outer.getContext());
        rewriter.setInsertionPoint(outer);
        std::vector<unsigned> all(outer.getNumLoops());
        std::iota(all.begin(), all.end(), 0u);
        collapseParallelLoops(rewriter, outer, {all});
        outer = cast<scf::ParallelOp>(inner->getParentOp());
      }
      mapOuter(outer);
      mapInner(inner);
    }
  }
};

} // namespace
