//===- ScratchToStack.cpp - Small per-iteration temporaries on the stack --===//
//
// Part of k3. Implements k3-scratch-to-stack: a small fixed-size
// `memref.alloc` that is freed in its own block and never leaves it becomes
// a `memref.alloca` at the top of the function, or of the omp.parallel
// region around it.
//
// Bufferization gives every tensor temporary its own heap buffer where it is
// made, and deallocation frees it at the end of that block. Inside a
// sequential loop that is one malloc/free pair per iteration: the CPU MoE's
// per-token form allocates five [1, 32] rows per (token, pick), and k3-tiny's
// batched decode step made about 2,800 heap calls at batch 16. A slot in the
// entry block costs nothing at run time (LLVM folds entry-block allocas into
// the frame). Reusing one slot across iterations is sound because the
// buffer is freed in the block that made it: no two instances are ever
// alive at once, and a fresh heap buffer's contents were undefined anyway.
//
// It runs after convert-scf-to-openmp, before convert-scf-to-cf. A slot
// goes to the function's entry block, or, inside a parallel loop, to the top
// of its omp.parallel region: that region runs once per thread, so each
// thread has its own slot, reused by the iterations the thread takes. Only
// sequential structure (scf.for/while/if/index_switch/execute_region,
// omp.wsloop/loop_nest) may lie in between. Not earlier, in the body of an
// scf.forall: convert-scf-to-openmp wraps a body holding allocas in a
// memref.alloca_scope, which convert-scf-to-cf then breaks (a loop inside it
// becomes several blocks, and the scope's region takes one). Size limits
// keep the frame small on any thread's stack (libomp's workers: 4 MiB).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3SCRATCHTOSTACKPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

/// Bytes of a statically shaped buffer of byte-sized elements, or nothing.
std::optional<int64_t> staticBytes(MemRefType type) {
  if (!type.hasStaticShape() || !type.getLayout().isIdentity() || type.getMemorySpace())
    return std::nullopt;
  Type element = type.getElementType();
  if (!element.isIntOrIndexOrFloat() || element.isIndex() ||
      element.getIntOrFloatBitWidth() % 8 != 0)
    return std::nullopt;
  // Checked: a shape whose byte count wraps must not pass the limits.
  int64_t bytes = element.getIntOrFloatBitWidth() / 8;
  for (int64_t extent : type.getShape())
    if (llvm::MulOverflow(bytes, extent, bytes))
      return std::nullopt;
  return bytes;
}

/// Whether every use of `value` (through views) stays in place: no return,
/// yield, call or other op that could hand the buffer on. Counts the
/// deallocations of `value` itself in `deallocs`.
bool staysLocal(Value value, SmallVectorImpl<memref::DeallocOp> &deallocs, bool isRoot) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
      if (!isRoot)
        return false;
      deallocs.push_back(dealloc);
      continue;
    }
    if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
      if (view.getViewSource() != value)
        return false;
      for (Value result : user->getResults())
        if (!staysLocal(result, deallocs, /*isRoot=*/false))
          return false;
      continue;
    }
    if (user->hasTrait<OpTrait::IsTerminator>() || isa<CallOpInterface>(user))
      return false;
    // An op that makes a memref from its operands (other than a view, above)
    // could alias it under a name this walk does not follow.
    if (llvm::any_of(user->getResultTypes(), llvm::IsaPred<BaseMemRefType>))
      return false;
  }
  return true;
}

/// The op whose entry block `op`'s slot goes to: `fn`, or the nearest
/// omp.parallel (its region runs once per thread: a slot there is the
/// thread's own, reused by every iteration the thread takes), with only
/// sequential control flow between; null where anything else lies between.
/// A worksharing loop's iterations are sequential on their thread.
Operation *slotOwner(Operation *op, func::FuncOp fn) {
  for (Operation *parent = op->getParentOp();; parent = parent->getParentOp()) {
    if (parent == fn.getOperation() || isa<omp::ParallelOp>(parent))
      return parent;
    if (!isa<scf::ForOp, scf::WhileOp, scf::IfOp, scf::IndexSwitchOp, scf::ExecuteRegionOp,
             omp::WsloopOp, omp::LoopNestOp>(parent))
      return nullptr;
    // order(concurrent) lets a thread run its iterations at once.
    if (auto wsloop = dyn_cast<omp::WsloopOp>(parent); wsloop && wsloop.getOrderAttr())
      return nullptr;
  }
}

struct K3ScratchToStackPass : k3::impl::K3ScratchToStackPassBase<K3ScratchToStackPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal())
      return;
    // Per owner (the function or a parallel loop), in walk order.
    llvm::MapVector<Operation *, SmallVector<std::pair<memref::AllocOp, memref::DeallocOp>>>
        moves;
    llvm::DenseMap<Operation *, int64_t> frame;
    fn.walk([&](memref::AllocOp alloc) {
      std::optional<int64_t> bytes = staticBytes(alloc.getType());
      if (!bytes || *bytes > maxBytes)
        return;
      Operation *owner = slotOwner(alloc, fn);
      if (!owner || frame[owner] + *bytes > maxFunctionBytes)
        return;
      SmallVector<memref::DeallocOp, 1> deallocs;
      if (!staysLocal(alloc.getResult(), deallocs, /*isRoot=*/true) || deallocs.size() != 1 ||
          deallocs.front()->getBlock() != alloc->getBlock())
        return;
      frame[owner] += *bytes;
      moves[owner].push_back({alloc, deallocs.front()});
    });

    for (auto &[owner, buffers] : moves) {
      OpBuilder b = OpBuilder::atBlockBegin(&owner->getRegion(0).front());
      for (auto [alloc, dealloc] : buffers) {
        auto slot = memref::AllocaOp::create(b, alloc.getLoc(), alloc.getType(),
                                             alloc.getAlignmentAttr());
        alloc.getResult().replaceAllUsesWith(slot.getResult());
        dealloc.erase();
        alloc.erase();
      }
    }
  }
};

} // namespace
