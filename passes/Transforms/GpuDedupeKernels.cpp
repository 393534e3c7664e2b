//===- GpuDedupeKernels.cpp - Identical outlined kernels become one -------===//
//
// Part of k3. Implements k3-gpu-dedupe-kernels: after gpu-kernel-outlining
// (a gpu.module per launch), the modules that differ only in their names
// become one, and every launch of them launches the first.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

#define DEBUG_TYPE "k3-gpu-dedupe-kernels"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3GPUDEDUPEKERNELSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

/// The text of `module` with its own name and its functions' names left
/// out: equal for two modules exactly when either can serve the other's
/// launches. Empty when a function's name is used inside the module (a
/// call between its functions), which the renaming would not see.
std::string structuralKey(gpu::GPUModuleOp module) {
  SmallVector<std::pair<Operation *, StringAttr>> names{{module, module.getSymNameAttr()}};
  for (Operation &op : module.getBody()->getOperations())
    if (auto sym = dyn_cast<SymbolOpInterface>(op)) {
      if (!SymbolTable::symbolKnownUseEmpty(sym, module))
        return "";
      names.push_back({&op, sym.getNameAttr()});
    }
  MLIRContext *ctx = module.getContext();
  for (auto [i, entry] : llvm::enumerate(names))
    SymbolTable::setSymbolName(entry.first, StringAttr::get(ctx, "k" + std::to_string(i)));
  OpPrintingFlags flags;
  // Local scope: value numbers start at 0 in the module.
  flags.assumeVerified().printGenericOpForm().useLocalScope();
  std::string key;
  llvm::raw_string_ostream os(key);
  module->print(os, flags);
  for (auto [op, name] : names)
    SymbolTable::setSymbolName(op, name);
  return key;
}

struct K3GpuDedupeKernelsPass : k3::impl::K3GpuDedupeKernelsPassBase<K3GpuDedupeKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp top = getOperation();
    // Key → the module kept; the modules to drop → the module kept.
    std::map<std::string, gpu::GPUModuleOp> kept;
    llvm::DenseMap<StringAttr, StringAttr> replacement;
    SmallVector<gpu::GPUModuleOp> dropped;
    for (auto module : top.getOps<gpu::GPUModuleOp>()) {
      std::string key = structuralKey(module);
      if (key.empty())
        continue;
      auto [it, fresh] = kept.try_emplace(std::move(key), module);
      if (fresh)
        continue;
      replacement[module.getSymNameAttr()] = it->second.getSymNameAttr();
      dropped.push_back(module);
    }
    if (dropped.empty())
      return;
    // A launch names @module::@function; the kept module's function of the
    // same position has the same body (the keys matched in order).
    WalkResult result = top.walk([&](gpu::LaunchFuncOp launch) {
      SymbolRefAttr kernel = launch.getKernel();
      auto to = replacement.find(kernel.getRootReference());
      if (to == replacement.end())
        return WalkResult::advance();
      auto from = top.lookupSymbol<gpu::GPUModuleOp>(kernel.getRootReference());
      auto into = top.lookupSymbol<gpu::GPUModuleOp>(to->second);
      // The function's index in its module names its twin in the kept one.
      unsigned index = 0;
      Operation *twin = nullptr;
      for (Operation &op : from.getBody()->getOperations()) {
        if (!isa<SymbolOpInterface>(op))
          continue;
        if (cast<SymbolOpInterface>(op).getNameAttr() == kernel.getLeafReference()) {
          unsigned i = 0;
          for (Operation &other : into.getBody()->getOperations())
            if (isa<SymbolOpInterface>(other) && i++ == index)
              twin = &other;
          break;
        }
        ++index;
      }
      if (!twin) {
        launch.emitOpError() << "k3-gpu-dedupe-kernels: no kernel in '" << to->second.getValue()
                             << "' for " << kernel;
        return WalkResult::interrupt();
      }
      launch.setKernelAttr(SymbolRefAttr::get(
          to->second, {FlatSymbolRefAttr::get(cast<SymbolOpInterface>(twin).getNameAttr())}));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    for (gpu::GPUModuleOp module : dropped)
      module.erase();
  }
};

} // namespace
