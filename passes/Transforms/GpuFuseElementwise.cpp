//===- GpuFuseElementwise.cpp - One kernel per chain of elementwise ops ---===//
//
// Part of k3. Implements k3-gpu-fuse-elementwise: on the GPU path every
// linalg op becomes a kernel, so a norm's scale, a gate's sigmoid and the
// multiply after it are three launches and two round trips through memory.
// Upstream's elementwise fusion merges such chains into one linalg.generic;
// here it is limited to all-parallel producers and consumers, so that
// contractions keep the plain body k3-gpu-mma-contractions puts on tensor
// cores. A producer with other users fuses only when they all come after
// the consumer: upstream then recomputes the producer's elementwise body
// in the fused op and keeps the producer for the others, which no longer
// wait for the consumer (the router's sigmoid feeds both the biased scores
// and the top-k: two independent kernels, one launch after
// k3-gpu-merge-launches, where they were a chain of two).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "k3-gpu-fuse-elementwise"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3GPUFUSEELEMENTWISEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

bool allParallel(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  return generic && generic.getNumReductionLoops() == 0;
}

struct K3GpuFuseElementwisePass
    : k3::impl::K3GpuFuseElementwisePassBase<K3GpuFuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, [](OpOperand *operand) {
      Operation *producer = operand->get().getDefiningOp();
      Operation *consumer = operand->getOwner();
      if (!allParallel(producer) || !allParallel(consumer))
        return false;
      // A producer with other users: only when they all come after the
      // consumer in its block (see the file comment).
      for (Operation *user : producer->getUsers()) {
        // (A user inside a later op's region counts as that op: the top-k
        // reads the scores with tensor.extract in its body.)
        Operation *at = consumer->getBlock()->findAncestorOpInBlock(*user);
        if (at != consumer && (!at || !consumer->isBeforeInBlock(at)))
          return false;
      }
      return true;
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
