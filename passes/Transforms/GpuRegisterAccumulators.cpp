//===- GpuRegisterAccumulators.cpp - Loop-carried accumulators ------------===//
//
// Part of k3. Implements k3-gpu-register-accumulators: a reduction loop's
// load / combine / store of one output element becomes a value carried by
// the loop (see the pass description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
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

/// Whether `op` is already inside a GPU kernel (a launch or a kernel
/// module): the pass leaves those alone.
bool inKernel(Operation *op) {
  return op->getParentOfType<gpu::LaunchOp>() || op->getParentOfType<gpu::GPUModuleOp>();
}

/// Whether `root` is a buffer of its own: a function's argument, an
/// allocation or a global. Anything else (a select, a loop's iter_arg, a
/// view op that is not view-like) may be any buffer.
bool isDistinctRoot(Value root) {
  if (auto arg = dyn_cast<BlockArgument>(root))
    return arg.getOwner()->isEntryBlock() &&
           isa<FunctionOpInterface>(arg.getOwner()->getParentOp());
  return root.getDefiningOp<memref::AllocOp>() || root.getDefiningOp<memref::AllocaOp>() ||
         root.getDefiningOp<memref::GetGlobalOp>();
}

/// Whether two roots may be the same buffer: the same value, the same
/// global read twice, or either not a buffer of its own.
bool sameRoot(Value a, Value b) {
  if (a == b || !isDistinctRoot(a) || !isDistinctRoot(b))
    return true;
  auto ga = a.getDefiningOp<memref::GetGlobalOp>(), gb = b.getDefiningOp<memref::GetGlobalOp>();
  return ga && gb && ga.getName() == gb.getName();
}

/// Whether `indices` name an element that belongs to one iteration of the
/// parallel loops around `op`: every induction variable of every enclosing
/// scf.parallel is one of them (so no two iterations share the element),
/// and each of them is such a variable or a constant. A constant alone
/// inside an scf.parallel is shared by all its iterations.
bool isOwnedElement(ValueRange indices, Operation *op) {
  for (Value index : indices) {
    auto arg = dyn_cast<BlockArgument>(index);
    auto parallel = arg ? dyn_cast<scf::ParallelOp>(arg.getOwner()->getParentOp()) : nullptr;
    if (!matchPattern(index, m_Constant()) && !(parallel && parallel->isProperAncestor(op)))
      return false;
  }
  for (auto parallel = op->getParentOfType<scf::ParallelOp>(); parallel;
       parallel = parallel->getParentOfType<scf::ParallelOp>())
    for (Value iv : parallel.getInductionVars())
      if (!llvm::is_contained(indices, iv))
        return false;
  return true;
}

/// Whether hoisting `loop`'s accumulator at `indices` out of it is safe
/// even when the loop runs no iteration: the element is owned
/// (isOwnedElement), the indices are defined before the loop, and the
/// loop's bounds do not depend on the enclosing parallel loops, so its
/// trip count cannot be what keeps one iteration from an element it may
/// not touch (a lowered linalg op's bounds are its operands' sizes).
bool isHoistable(ValueRange indices, scf::ForOp loop) {
  if (!isOwnedElement(indices, loop) ||
      !llvm::all_of(indices, [&](Value i) { return loop.isDefinedOutsideOfLoop(i); }))
    return false;
  auto outermost = loop->getParentOfType<scf::ParallelOp>();
  for (auto p = outermost; p; p = p->getParentOfType<scf::ParallelOp>())
    outermost = p;
  return !outermost ||
         llvm::all_of(ValueRange{loop.getLowerBound(), loop.getUpperBound(), loop.getStep()},
                      [&](Value b) { return outermost.isDefinedOutsideOfLoop(b); });
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
    if (!loop.isDefinedOutsideOfLoop(memref) || !isHoistable(load.getIndices(), loop))
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

/// A reduction's output filled with a constant before it (only other such
/// fills and allocations in between): the fill, and the loop nest the
/// reduction became.
struct FilledReduction {
  linalg::FillOp fill;
  Operation *nest;
};

/// Lowers each reduction `linalg.generic` on buffers (outside GPU kernels)
/// to loops, as convert-linalg-to-parallel-loops would, and returns those
/// that a `linalg.fill` of one of their outputs precedes with nothing but
/// other such fills and allocations in between. Every
/// element of such an output is stored by exactly one iteration of the
/// nest's parallel loops (its map is a projected permutation of them), so
/// once its accumulator is loaded outside the reduction loops, that load
/// can take the fill's value instead (foldFill).
SmallVector<FilledReduction> lowerReductions(Operation *root, IRRewriter &rewriter) {
  SmallVector<std::pair<linalg::GenericOp, SmallVector<linalg::FillOp>>> work;
  root->walk([&](linalg::GenericOp op) {
    if (!op.hasPureBufferSemantics() || op.getNumReductionLoops() == 0 || inKernel(op))
      return;
    SmallVector<linalg::FillOp> fills;
    // A reduction without parallel loops (a 0-d output) lowers to a bare
    // scf.for, which the accumulator rewrite below replaces by a new loop:
    // the nest recorded here would dangle, and its hoisted load would land
    // outside it anyway. Its fill stays.
    for (Operation *prev = op.getNumParallelLoops() ? op->getPrevNode() : nullptr; prev;
         prev = prev->getPrevNode()) {
      // An allocation in between (another output's buffer) makes a new
      // buffer and cannot touch the filled one: look past it.
      if (isa<memref::AllocOp, memref::AllocaOp>(prev))
        continue;
      auto fill = dyn_cast<linalg::FillOp>(prev);
      if (!fill)
        break;
      OpOperand *out = nullptr;
      for (OpOperand &init : op.getDpsInitsMutable())
        if (init.get() == fill.getDpsInitOperand(0)->get())
          out = &init;
      if (!out || !fill.hasPureBufferSemantics() ||
          fill.getInputs()[0].getType() != getElementTypeOrSelf(out->get().getType()))
        break;
      // One element per parallel iteration (every parallel loop indexes
      // the output); no input reads the buffer.
      AffineMap map = op.getMatchingIndexingMap(out);
      bool owned = map.isProjectedPermutation() &&
                   map.getNumResults() == op.getNumParallelLoops() &&
                   llvm::all_of(map.getResults(), [&](AffineExpr e) {
                     return linalg::isParallelIterator(
                         op.getIteratorTypesArray()[cast<AffineDimExpr>(e).getPosition()]);
                   });
      Value outRoot = rootOf(out->get());
      for (Value in : op.getDpsInputs())
        if (isa<BaseMemRefType>(in.getType()) && sameRoot(rootOf(in), outRoot))
          owned = false;
      if (!owned)
        break;
      fills.push_back(fill);
    }
    work.push_back({op, fills});
  });
  SmallVector<FilledReduction> result;
  for (auto &[op, fills] : work) {
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::LinalgLoops> loops = linalg::linalgOpToParallelLoops(rewriter, op);
    if (failed(loops) || loops->empty())
      continue;
    rewriter.eraseOp(op);
    // Loads and stores index through one-dimension identity affine.apply
    // ops (convert-linalg-to-parallel-loops folds them): use the loops'
    // values, so that an output's load and store have the same indices.
    SmallVector<affine::AffineApplyOp> applies;
    loops->front()->walk([&](affine::AffineApplyOp apply) {
      if (apply.getAffineMap().isIdentity() && apply.getMapOperands().size() == 1)
        applies.push_back(apply);
    });
    for (affine::AffineApplyOp apply : applies)
      rewriter.replaceOp(apply, apply.getMapOperands().front());
    for (linalg::FillOp fill : fills)
      result.push_back({fill, loops->front()});
  }
  return result;
}

/// If the only access to the fill's buffer in `nest` other than stores is
/// one load outside every scf.for (a hoisted accumulator) at owned indices,
/// that load becomes the fill's value and the fill goes.
void foldFill(FilledReduction r, IRRewriter &rewriter) {
  Value buffer = r.fill.getDpsInitOperand(0)->get();
  SmallVector<memref::LoadOp> loads;
  bool other = false;
  r.nest->walk([&](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op); load && load.getMemRef() == buffer)
      loads.push_back(load);
    else if (auto store = dyn_cast<memref::StoreOp>(op); store && store.getMemRef() == buffer)
      return;
    else if (auto effects = dyn_cast<MemoryEffectOpInterface>(op)) {
      SmallVector<MemoryEffects::EffectInstance> list;
      effects.getEffects(list);
      for (const MemoryEffects::EffectInstance &e : list)
        if (Value v = e.getValue(); v && isa<BaseMemRefType>(v.getType()) &&
                                    sameRoot(rootOf(v), rootOf(buffer)) && v != buffer)
          other = true;
    }
  });
  if (other || loads.size() != 1)
    return;
  if (auto loop = loads.front()->getParentOfType<scf::ForOp>(); loop && r.nest->isAncestor(loop))
    return;
  memref::LoadOp load = loads.front();
  if (!isOwnedElement(load.getIndices(), load))
    return;
  rewriter.replaceOp(load, r.fill.getInputs()[0]);
  rewriter.eraseOp(r.fill);
}

struct K3GpuRegisterAccumulatorsPass
    : k3::impl::K3GpuRegisterAccumulatorsPassBase<K3GpuRegisterAccumulatorsPass> {
  using Base::Base;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<FilledReduction> filled = lowerReductions(getOperation(), rewriter);
    // Post-order: inner loops first, so that an outer loop then finds the
    // element's load and store in its own block.
    SmallVector<scf::ForOp> loops;
    // Loops already in kernels (the tensor-core ones) are left alone: there
    // no scf.parallel says which thread owns an element.
    getOperation()->walk([&](scf::ForOp loop) {
      if (!inKernel(loop))
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops) {
      while (true) {
        auto [load, store] = findAccumulator(loop);
        if (!load)
          break;
        rewriter.setInsertionPoint(loop);
        // Hoisted, the load runs even for a loop of no iterations: it
        // reads the element the loop would have left as it was, and the
        // store after the loop writes that value back. Both are safe: the
        // indices are owned (isHoistable), so the element exists and no
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
    for (FilledReduction r : filled)
      foldFill(r, rewriter);
  }
};

} // namespace
