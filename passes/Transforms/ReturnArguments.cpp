//===- ReturnArguments.cpp - Return updated arguments, not their clones ---===//
//
// Part of k3. Implements k3-return-arguments: after ownership-based buffer
// deallocation, an entry point that returns one of its arguments (a KDA
// state updated in place) returns a `bufferization.clone` of it, because
// deallocation hands callers owned results. The runtime is the only caller
// of an entry point, owns its arguments and never frees a result that is an
// input's buffer (CpuExecutable::freeResults), so the clone, a copy of the
// whole state per call (a kernel on the GPU), is not needed: the argument
// is returned itself. It runs before the deallocations are lowered: a
// deallocation that retains the clone (with calls to layer functions, the
// entry's deallocation checks aliases at run time) retains the argument.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define DEBUG_TYPE "k3-return-arguments"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3RETURNARGUMENTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

/// Whether `op` writes no buffer: clones (they write only their fresh
/// result) and deallocations, or an op without regions whose declared
/// effects have no write (metadata such as memref.extract_strided_metadata).
bool writesNoBuffer(Operation *op) {
  if (isa<bufferization::CloneOp, memref::DeallocOp, bufferization::DeallocOp>(op))
    return true;
  auto iface = dyn_cast<MemoryEffectOpInterface>(op);
  if (!iface || op->getNumRegions())
    return false;
  SmallVector<MemoryEffects::EffectInstance> effects;
  iface.getEffects(effects);
  return llvm::none_of(effects, [](const MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Write>(e.getEffect());
  });
}

/// Whether nothing that writes a buffer lies between `clone` and the return
/// `ret` of its block (deallocation puts clones and frees there): the
/// argument then holds at the return what the clone copied.
bool nothingWritesBetween(bufferization::CloneOp clone, func::ReturnOp ret) {
  for (Operation *op = clone->getNextNode(); op && op != ret.getOperation(); op = op->getNextNode())
    if (!writesNoBuffer(op))
      return false;
  return true;
}

/// Whether `clone` is used by one return and otherwise only as a value
/// deallocations retain (with calls to layer functions, whose results may
/// alias anything the entry returns, the deallocation keeps a retained list
/// and checks aliases at run time).
bool onlyReturnedOrRetained(bufferization::CloneOp clone) {
  unsigned returns = 0;
  for (OpOperand &use : clone->getUses()) {
    if (isa<func::ReturnOp>(use.getOwner()))
      ++returns;
    else if (auto dealloc = dyn_cast<bufferization::DeallocOp>(use.getOwner());
             !dealloc || !llvm::is_contained(dealloc.getRetained(), clone.getResult()))
      return false;
  }
  return returns == 1;
}

struct K3ReturnArgumentsPass : k3::impl::K3ReturnArgumentsPassBase<K3ReturnArgumentsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : module.getOps<func::FuncOp>()) {
      // Only entry points: public definitions that nothing in the module
      // calls (a caller in the module would free the result it owns).
      if (!func.isPublic() || func.isExternal() ||
          !SymbolTable::symbolKnownUseEmpty(func, module))
        continue;
      func.walk([&](func::ReturnOp ret) {
        // An argument returned twice keeps its second clone: two results
        // sharing one buffer would become two state tensors the next call
        // updates in place over each other.
        llvm::SmallPtrSet<Value, 4> returned;
        for (Value v : ret.getOperands())
          if (isa<BlockArgument>(v))
            returned.insert(v);
        for (OpOperand &operand : ret->getOpOperands()) {
          auto clone = operand.get().getDefiningOp<bufferization::CloneOp>();
          auto arg = clone ? dyn_cast<BlockArgument>(clone.getInput()) : nullptr;
          if (!arg || arg.getOwner() != &func.getBody().front() || !onlyReturnedOrRetained(clone) ||
              clone.getInput().getType() != clone.getType() ||
              clone->getBlock() != ret->getBlock() || !nothingWritesBetween(clone, ret) ||
              !returned.insert(arg).second)
            continue;
          // A deallocation that retains the clone (it must not free what
          // is returned) retains the argument instead.
          clone.getResult().replaceAllUsesWith(arg);
          clone.erase();
        }
      });
    }
  }
};

} // namespace
