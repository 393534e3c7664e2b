//===- GpuRegisterAccumulators.cpp - Loop-carried accumulators ------------===//
//
// Part of k3. Implements k3-gpu-register-accumulators: a reduction loop's
// load / combine / store of one output element becomes a value carried by
// the loop (see the pass description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#define DEBUG_TYPE "k3-gpu-register-accumulators"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3GPUREGISTERACCUMULATORSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

/// The allocation or argument `memref` is a view of (through subviews,
/// casts, reshapes).
Value rootOf(Value memref) {
  while (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
    memref = view.getViewSource();
  return memref;
}

/// Whether two roots may be the same buffer: the same value, or the same
/// global read twice.
bool sameRoot(Value a, Value b) {
  if (a == b)
    return true;
  auto ga = a.getDefiningOp<memref::GetGlobalOp>(), gb = b.getDefiningOp<memref::GetGlobalOp>();
  return ga && gb && ga.getName() == gb.getName();
}

/// Whether `index` names one element per iteration of the parallel loops
/// around `op`: a constant, or an induction variable of an enclosing
/// scf.parallel. Then the element is in bounds wherever `op` is reached,
/// even when a loop inside runs no iteration (a lowered reduction's output
/// indices), and no other iteration of those loops owns it.
bool isOwnedIndex(Value index, Operation *op) {
  if (matchPattern(index, m_Constant()))
    return true;
  auto arg = dyn_cast<BlockArgument>(index);
  auto parallel = arg ? dyn_cast<scf::ParallelOp>(arg.getOwner()->getParentOp()) : nullptr;
  return parallel && parallel->isProperAncestor(op);
}

/// Whether `op` (or an op nested in it) may touch a memref with root
/// `root` other than through `load` and `store`, or has effects this pass
/// cannot see.
bool touchesOtherwise(Operation *op, Value root, Operation *load, Operation *store) {
  WalkResult r = op->walk([&](Operation *inner) {
    if (inner == load || inner == store)
      return WalkResult::advance();
    auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
    if (!effects) {
      // Ops that only hold regions (loops, ifs) are looked through; any
      // other op without the interface may do anything.
      return inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>() ? WalkResult::advance()
                                                                     : WalkResult::interrupt();
    }
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (const MemoryEffects::EffectInstance &e : list) {
      if (isa<MemoryEffects::Allocate>(e.getEffect()))
        continue;
      // No value, or a pointer rather than a memref: it may be anything.
      Value v = e.getValue();
      if (!v || !isa<BaseMemRefType>(v.getType()) || sameRoot(rootOf(v), root))
        return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return r.wasInterrupted();
}

/// A load and a later store of one element in `loop`'s own block that
/// nothing else in the loop touches; {nullptr, nullptr} if there is none.
std::pair<memref::LoadOp, memref::StoreOp> findAccumulator(scf::ForOp loop) {
  Block *body = loop.getBody();
  for (auto load : body->getOps<memref::LoadOp>()) {
    Value memref = load.getMemRef();
    if (!loop.isDefinedOutsideOfLoop(memref) ||
        !llvm::all_of(load.getIndices(), [&](Value i) { return isOwnedIndex(i, loop); }))
      continue;
    for (Operation *op = load->getNextNode(); op; op = op->getNextNode()) {
      auto store = dyn_cast<memref::StoreOp>(op);
      if (!store || store.getMemRef() != memref || store.getIndices() != load.getIndices())
        continue;
      if (!touchesOtherwise(loop, rootOf(memref), load, store))
        return {load, store};
      break;
    }
  }
  return {nullptr, nullptr};
}

struct K3GpuRegisterAccumulatorsPass
    : k3::impl::K3GpuRegisterAccumulatorsPassBase<K3GpuRegisterAccumulatorsPass> {
  using Base::Base;

  void runOnOperation() override {
    // Post-order: inner loops first, so that an outer loop then finds the
    // element's load and store in its own block.
    SmallVector<scf::ForOp> loops;
    getOperation()->walk([&](scf::ForOp loop) { loops.push_back(loop); });
    IRRewriter rewriter(&getContext());
    for (scf::ForOp loop : loops) {
      while (true) {
        auto [load, store] = findAccumulator(loop);
        if (!load)
          break;
        rewriter.setInsertionPoint(loop);
        // Hoisted, the load runs even for a loop of no iterations: it
        // reads the element the loop would have left as it was, and the
        // store after the loop writes that value back. Both are safe: the
        // indices are owned (isOwnedIndex), so the element exists and no
        // other iteration writes it.
        auto init = memref::LoadOp::create(rewriter, load.getLoc(), load.getMemRef(),
                                           load.getIndices());
        auto like = cast<LoopLikeOpInterface>(loop.getOperation());
        FailureOr<LoopLikeOpInterface> grown = like.replaceWithAdditionalYields(
            rewriter, ValueRange{init.getResult()}, /*replaceInitOperandUsesInLoop=*/false,
            [&](OpBuilder &, Location, ArrayRef<BlockArgument> args) {
              // After the replacement: a loop storing the value it loaded
              // yields the carried value, not the load about to go.
              rewriter.replaceAllUsesWith(load.getResult(), args.front());
              return SmallVector<Value>{store.getValueToStore()};
            });
        if (failed(grown)) {
          signalPassFailure();
          return;
        }
        loop = cast<scf::ForOp>(grown->getOperation());
        rewriter.eraseOp(store);
        rewriter.eraseOp(load);
        rewriter.setInsertionPointAfter(loop);
        memref::StoreOp::create(rewriter, init.getLoc(), loop.getResults().back(),
                                init.getMemRef(), init.getIndices());
      }
    }
  }
};

} // namespace
