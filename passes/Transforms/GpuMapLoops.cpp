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

/// Outer loop: its innermost dimension on blockIdx.x, then y and z going
/// outwards (x allows 2^31 − 1 blocks, y and z 65535: the tile count of the
/// innermost dimension is the one that can be large); the rest sequential.
void mapOuter(scf::ParallelOp loop) {
  MLIRContext *ctx = loop.getContext();
  const gpu::Processor blocks[] = {gpu::Processor::BlockX, gpu::Processor::BlockY,
                                   gpu::Processor::BlockZ};
  unsigned n = loop.getNumLoops();
  SmallVector<gpu::ParallelLoopDimMappingAttr> mapping;
  for (unsigned i = 0; i < n; ++i) {
    unsigned fromInner = n - 1 - i;
    mapping.push_back(dim(ctx, fromInner < 3 ? blocks[fromInner] : gpu::Processor::Sequential));
  }
  (void)gpu::setMappingAttr(loop, mapping);
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

struct K3GpuMapLoopsPass : k3::impl::K3GpuMapLoopsPassBase<K3GpuMapLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (threads < 1 || threads > 1024) {
      getOperation()->emitError() << "k3-gpu-map-loops: threads=" << threads.getValue()
                                  << " is outside [1, 1024]";
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
      Value lb = loop.getLowerBound()[n - 1], ub = loop.getUpperBound()[n - 1],
            step = loop.getStep()[n - 1];
      APInt l, u, s;
      if (matchPattern(lb, m_ConstantInt(&l)) && matchPattern(ub, m_ConstantInt(&u)) &&
          matchPattern(step, m_ConstantInt(&s)) && s.getSExtValue() > 0) {
        int64_t trip = llvm::divideCeil(u.getSExtValue() - l.getSExtValue(), s.getSExtValue());
        tile = std::max<int64_t>(1, std::min<int64_t>(tile, trip));
      }
      SmallVector<int64_t> sizes(n, 1);
      sizes.back() = tile;
      // No min/max bounds: the tile loop keeps a constant trip count (the
      // block size) and a guard inside skips the elements past the end.
      auto [outer, inner] = scf::tileParallelLoop(loop, sizes, /*noMinMaxBounds=*/true);
      mapOuter(outer);
      mapInner(inner);
    }
  }
};

} // namespace
