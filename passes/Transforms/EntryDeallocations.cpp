//===- EntryDeallocations.cpp - Free an entry point's buffers early -------===//
//
// Part of k3. Implements k3-entry-deallocations: ownership-based buffer
// deallocation frees an entry point's buffers at the end of its block, in
// one `bufferization.dealloc` of every layer call's results that checks at
// run time which of them alias what the entry returns. With layer
// functions that holds every layer's hidden state until the step ends (K3's
// prefill: some 280 buffers of [T, 7168] f32, 33 GB at T = 4096) and makes
// the check's code, and its compile time, grow with the depth. A layer
// function returns buffers it allocated, each its own: such a result (or an
// allocation of the entry point itself, the AttnRes blocks' stack) that
// the entry point does not return is freed right after its last use. One
// it returns was never freed by the deallocation (it aliases a retained
// value) and leaves it too, so the deallocation keeps only what cannot be
// told apart before run time.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/Transforms/BufferRoot.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SetVector.h"

#define DEBUG_TYPE "k3-entry-deallocations"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3ENTRYDEALLOCATIONSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {


/// Whether result `index` of every call to `callee` is a buffer of its own:
/// each return of `callee` returns a distinct `memref.alloc` there, one no
/// other result of that return is.
bool returnsOwnAllocation(func::FuncOp callee, unsigned index) {
  if (callee.isExternal())
    return false;
  bool own = true;
  callee.walk([&](func::ReturnOp ret) {
    Value v = ret.getOperand(index);
    if (!v.getDefiningOp<memref::AllocOp>() ||
        llvm::count(ret.getOperands(), v) != 1)
      own = false;
  });
  return own;
}

struct K3EntryDeallocationsPass
    : k3::impl::K3EntryDeallocationsPassBase<K3EntryDeallocationsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (!fn.isPublic() || fn.isExternal() || !fn.getBody().hasOneBlock())
        continue;
      Block &block = fn.getBody().front();
      auto ret = dyn_cast<func::ReturnOp>(block.getTerminator());
      auto dealloc = ret ? dyn_cast_or_null<bufferization::DeallocOp>(ret->getPrevNode())
                         : nullptr;
      if (!dealloc)
        continue;
      // Every buffer involved must be one the pass can tell apart from the
      // others: an argument of the entry point, an allocation of its block,
      // or a call's own allocation. A call result that may be anything
      // else (a callee returning its argument) could be an early-freed
      // buffer under another name: then the function keeps its deallocation.
      auto ownResult = [&](Value buffer) {
        auto result = dyn_cast<OpResult>(buffer);
        Operation *def = result ? result.getOwner() : nullptr;
        if (!def || def->getBlock() != &block)
          return false;
        if (isa<memref::AllocOp>(def))
          return true;
        auto call = dyn_cast<func::CallOp>(def);
        auto callee = call ? symbols.lookup<func::FuncOp>(call.getCallee()) : nullptr;
        return callee && returnsOwnAllocation(callee, result.getResultNumber());
      };
      auto known = [&](Value buffer) {
        auto arg = dyn_cast<BlockArgument>(buffer);
        return (arg && arg.getOwner() == &block) || ownResult(buffer);
      };
      // And every op of the block that makes a buffer is a view, a cast,
      // an allocation or such a call, with no regions (whose values might
      // alias anything): the early frees then see every alias.
      bool allKnown = true;
      for (Operation &op : block) {
        if (op.getNumRegions()) {
          allKnown = false;
          break;
        }
        if (isa<ViewLikeOpInterface, memref::CastOp, memref::ExtractStridedMetadataOp,
                memref::AllocOp>(op))
          continue;
        for (Value r : op.getResults())
          if (isa<BaseMemRefType>(r.getType()) &&
              !(isa<func::CallOp>(op) && ownResult(r)))
            allKnown = false;
      }
      for (Value v : llvm::concat<Value>(dealloc.getMemrefs(), dealloc.getRetained(),
                                          ret.getOperands()))
        if (isa<BaseMemRefType>(v.getType()) && !known(k3::bufferRoot(v)))
          allKnown = false;
      if (!allKnown)
        continue;
      llvm::DenseSet<Value> retained;
      for (Value r : dealloc.getRetained())
        retained.insert(k3::bufferRoot(r));
      for (Value r : ret.getOperands())
        retained.insert(k3::bufferRoot(r));

      // A buffer the deallocation frees unconditionally that is an
      // allocation of this block, or a call's own allocation, and is not
      // returned: freed early. One that is returned (the same buffer as a
      // retained value) is never freed by it: when nothing reads the
      // deallocation's ownership results, it leaves the list.
      const bool resultsUnused = dealloc->use_empty();
      llvm::SetVector<Value> early;
      for (auto [m, c] : llvm::zip(dealloc.getMemrefs(), dealloc.getConditions())) {
        Value buffer = k3::bufferRoot(m);
        if (!retained.contains(buffer) && matchPattern(c, m_One()) && ownResult(buffer))
          early.insert(buffer);
      }
      // Every entry of an early buffer leaves the deallocation, whatever
      // its condition: a buffer listed twice is still freed once.
      SmallVector<Value> memrefs, conditions;
      for (auto [m, c] : llvm::zip(dealloc.getMemrefs(), dealloc.getConditions())) {
        Value buffer = k3::bufferRoot(m);
        if (early.contains(buffer) || (retained.contains(buffer) && resultsUnused))
          continue;
        memrefs.push_back(m);
        conditions.push_back(c);
      }
      if (early.empty() && memrefs.size() == dealloc.getMemrefs().size())
        continue;

      // Each freed after the last op of the block that uses it or a view of
      // it (the end-of-block deallocation and the metadata reads feeding it
      // aside).
      for (Value buffer : early) {
        Operation *last = buffer.getDefiningOp();
        SmallVector<Value> work{buffer};
        while (!work.empty()) {
          Value v = work.pop_back_val();
          for (Operation *user : v.getUsers()) {
            if (user == dealloc.getOperation())
              continue;
            Operation *inBlock = block.findAncestorOpInBlock(*user);
            if (!inBlock)
              continue;
            if (isa<ViewLikeOpInterface, memref::CastOp, memref::ExtractStridedMetadataOp>(user)) {
              for (Value r : user->getResults())
                if (isa<BaseMemRefType>(r.getType()))
                  work.push_back(r);
              // A metadata read only for the end-of-block deallocation is
              // not a use.
              if (isa<memref::ExtractStridedMetadataOp>(user))
                continue;
            }
            if (last->isBeforeInBlock(inBlock))
              last = inBlock;
          }
        }
        OpBuilder b(last->getBlock(), std::next(last->getIterator()));
        memref::DeallocOp::create(b, buffer.getLoc(), buffer);
      }

      if (memrefs.empty() && resultsUnused) {
        dealloc.erase();
      } else {
        OpBuilder b(dealloc);
        auto next = bufferization::DeallocOp::create(b, dealloc.getLoc(), memrefs, conditions,
                                                     dealloc.getRetained());
        dealloc.replaceAllUsesWith(next.getResults());
        dealloc.erase();
      }
      // The metadata reads that fed only the old deallocation.
      for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
        if (isa<memref::ExtractStridedMetadataOp>(op) && op.use_empty())
          op.erase();
    }
  }
};

} // namespace
