//===- GpuDedupeKernels.cpp - Identical outlined kernels become one -------===//
//
// Part of k3. Implements k3-gpu-dedupe-kernels: after gpu-kernel-outlining
// (a gpu.module per launch), the modules that differ only in their names
// become one, and every launch of them launches the first. A kernel
// argument's static offset is made dynamic first where only loads and
// stores read the argument: the copies into the AttnRes blocks' stack at
// each seal (K3: 8 of them per decode step) differ only in that offset,
// which load/store folding had baked into their types.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
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

/// Makes the static offset of every strided memref argument of a kernel
/// dynamic where the kernel only loads, stores or asks its sizes (ops that
/// take any layout), and casts the launches' operands to match: the offset
/// then arrives with the descriptor, as every other field does.
void dynamicOffsets(ModuleOp top) {
  MLIRContext *ctx = top.getContext();
  bool any = false;
  for (auto module : top.getOps<gpu::GPUModuleOp>())
    for (auto fn : module.getOps<gpu::GPUFuncOp>()) {
      if (!fn.isKernel())
        continue;
      SmallVector<Type> types(fn.getArgumentTypes());
      bool changed = false;
      for (BlockArgument arg : fn.getArguments()) {
        auto type = dyn_cast<MemRefType>(arg.getType());
        auto strided = type ? dyn_cast<StridedLayoutAttr>(type.getLayout()) : nullptr;
        if (!strided || ShapedType::isDynamic(strided.getOffset()) ||
            !llvm::all_of(arg.getUsers(), [](Operation *user) {
              return isa<memref::LoadOp, memref::StoreOp, memref::DimOp>(user);
            }))
          continue;
        auto dynamic = MemRefType::get(
            type.getShape(), type.getElementType(),
            StridedLayoutAttr::get(ctx, ShapedType::kDynamic, strided.getStrides()),
            type.getMemorySpace());
        arg.setType(dynamic);
        types[arg.getArgNumber()] = dynamic;
        changed = true;
      }
      if (changed)
        fn.setFunctionType(FunctionType::get(ctx, types, {}));
      any |= changed;
    }
  if (!any)
    return;
  top.walk([&](gpu::LaunchFuncOp launch) {
    auto fn = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(launch, launch.getKernel());
    if (!fn)
      return;
    MutableOperandRange operands = launch.getKernelOperandsMutable();
    OpBuilder b(launch);
    for (unsigned i = 0; i < operands.size() && i < fn.getNumArguments(); ++i) {
      Value v = operands[i].get();
      Type want = fn.getArgumentTypes()[i];
      if (v.getType() != want && isa<MemRefType>(want))
        operands[i].set(memref::CastOp::create(b, launch.getLoc(), want, v));
    }
  });
}

struct K3GpuDedupeKernelsPass : k3::impl::K3GpuDedupeKernelsPassBase<K3GpuDedupeKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp top = getOperation();
    dynamicOffsets(top);
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
