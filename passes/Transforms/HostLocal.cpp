//===- HostLocal.cpp - Buffers of a GPU host program no kernel uses -------===//
//
// Part of k3. See HostLocal.h.
//
//===----------------------------------------------------------------------===//

#include "passes/Transforms/HostLocal.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace mlir::k3 {

bool launchesInside(Operation *op) {
  bool found = false;
  op->walk([&](Operation *inner) {
    if (inner != op && isa<gpu::LaunchFuncOp, gpu::DeallocOp>(inner))
      found = true;
  });
  return found;
}

HostLocal::HostLocal(ModuleOp module) {
  module.walk([&](Operation *op) {
    if (!isa<memref::AllocOp, memref::AllocaOp, gpu::AllocOp>(op))
      return;
    for (Value buffer : op->getResults()) // not gpu.alloc's async token
      if (isa<MemRefType>(buffer.getType()) && onlyHostUses(buffer))
        local.insert(buffer);
  });
}

bool HostLocal::onlyTouchesLocal(Operation *op) const {
  // The host allocation and free of a local buffer (k3-share-host-memory
  // leaves them as memref ops).
  if (auto alloc = dyn_cast<memref::AllocOp>(op))
    return isLocal(alloc);
  if (!isa<memref::LoadOp, memref::StoreOp, memref::DeallocOp, func::CallOp>(op))
    return false;
  if (auto call = dyn_cast<func::CallOp>(op); call && !quietCallee(call))
    return false;
  bool any = false;
  for (Value v : op->getOperands())
    if (isa<MemRefType>(v.getType())) {
      if (!isLocal(v))
        return false;
      any = true;
    }
  return any;
}

bool HostLocal::quietCallee(func::CallOp call) const {
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(call, call.getCalleeAttr());
  if (!callee || !callee.isPrivate() || callee.isExternal() || launchesInside(callee))
    return false;
  // A call inside could pass the buffer on to a launch: a buffer that
  // reaches one must not be host memory, so such a callee is not quiet
  // (the deallocation's helper calls nothing).
  return !callee.walk([](func::CallOp) { return WalkResult::interrupt(); }).wasInterrupted();
}

bool HostLocal::isLocal(Value v) const {
  while (true) {
    if (local.count(v))
      return true;
    Operation *def = v.getDefiningOp();
    if (auto cast = dyn_cast_or_null<memref::CastOp>(def))
      v = cast.getSource();
    else if (auto view = dyn_cast_or_null<ViewLikeOpInterface>(def))
      v = view.getViewSource();
    else
      return false;
  }
}

bool HostLocal::onlyHostUses(Value v) const {
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (isa<memref::LoadOp, memref::StoreOp, memref::DeallocOp, gpu::DeallocOp,
            memref::ExtractAlignedPointerAsIndexOp, memref::DimOp>(user))
      continue;
    auto view = dyn_cast<ViewLikeOpInterface>(user);
    if (isa<memref::CastOp>(user) || (view && view.getViewSource() == v)) {
      for (Value r : user->getResults())
        if (!onlyHostUses(r))
          return false;
      continue;
    }
    if (auto call = dyn_cast<func::CallOp>(user); call && quietCallee(call))
      continue;
    return false;
  }
  return true;
}

} // namespace mlir::k3
