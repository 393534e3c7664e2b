//===- ShareHostMemory.cpp - Host buffers of a GPU program in managed memory ===//
//
// Part of k3. Implements k3-share-host-memory: after outlining, host
// allocations and constants become `gpu.alloc host_shared` buffers that the
// kernels can reach too. Buffers no kernel can reach (HostLocal.h: the
// deallocation's alias-check arrays) stay host allocations: the host
// writes them without waiting for the stream, which a pool buffer freed on
// the stream a moment ago, and still read by a queued kernel, must not be.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/Transforms/HostLocal.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "k3-share-host-memory"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3SHAREHOSTMEMORYPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

/// A shared buffer of `type` with the dynamic sizes `sizes`: gpu.alloc
/// without async tokens (the allocation is synchronous).
Value sharedAlloc(OpBuilder &b, Location loc, MemRefType type, ValueRange sizes) {
  auto alloc = gpu::AllocOp::create(b, loc, type, /*asyncToken=*/Type(),
                                    /*asyncDependencies=*/ValueRange(), sizes,
                                    /*symbolOperands=*/ValueRange(), /*hostShared=*/true);
  return alloc.getMemref();
}

/// Frees `buffer`. gpu-to-llvm lowers gpu.dealloc only in its async form:
/// on a fresh stream (mgpuStreamCreate), waited for and destroyed at once.
void sharedFree(OpBuilder &b, Location loc, Value buffer) {
  Type token = gpu::AsyncTokenType::get(b.getContext());
  Value stream = gpu::WaitOp::create(b, loc, token, ValueRange()).getAsyncToken();
  Value freed = gpu::DeallocOp::create(b, loc, token, ValueRange{stream}, buffer).getAsyncToken();
  gpu::WaitOp::create(b, loc, Type(), ValueRange{freed});
}

struct K3ShareHostMemoryPass : k3::impl::K3ShareHostMemoryPassBase<K3ShareHostMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<Operation *> work;
    k3::HostLocal hostLocal(getOperation());
    getOperation()->walk([&](Operation *op) {
      if (op->getParentOfType<gpu::GPUModuleOp>() || op->getParentOfType<gpu::LaunchOp>())
        return;
      if (auto alloc = dyn_cast<memref::AllocOp>(op); alloc && hostLocal.isLocal(alloc))
        return;
      if (auto dealloc = dyn_cast<memref::DeallocOp>(op);
          dealloc && hostLocal.isLocal(dealloc.getMemref()))
        return;
      if (isa<memref::AllocOp, memref::DeallocOp, memref::GetGlobalOp>(op))
        work.push_back(op);
    });
    bool failedAny = false;
    for (Operation *op : work) {
      OpBuilder b(op);
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        if (!alloc.getType().getLayout().isIdentity() || !alloc.getSymbolOperands().empty()) {
          alloc.emitError() << "k3-share-host-memory: cannot share a buffer of type "
                            << alloc.getType() << " (needs an identity layout)";
          failedAny = true;
          continue;
        }
        alloc.replaceAllUsesWith(
            sharedAlloc(b, alloc.getLoc(), alloc.getType(), alloc.getDynamicSizes()));
        alloc.erase();
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        sharedFree(b, dealloc.getLoc(), dealloc.getMemref());
        dealloc.erase();
      } else {
        auto global = cast<memref::GetGlobalOp>(op);
        // Constants are small tables (masks, lookup tables): a copy per
        // use keeps them next to the code that reads them. Weights never
        // get here: k3-outline-weights made them arguments.
        Block *block = global->getBlock();
        if (llvm::any_of(global->getUsers(), [](Operation *user) {
              return user->hasTrait<OpTrait::IsTerminator>();
            })) {
          global.emitError() << "k3-share-host-memory: constant '" << global.getName()
                             << "' leaves its block; cannot copy it to shared memory";
          failedAny = true;
          continue;
        }
        auto type = cast<MemRefType>(global.getType());
        Value shared = sharedAlloc(b, global.getLoc(), type, ValueRange());
        b.setInsertionPointAfter(global);
        memref::CopyOp::create(b, global.getLoc(), global.getResult(), shared);
        global.getResult().replaceUsesWithIf(
            shared, [&](OpOperand &use) { return !isa<memref::CopyOp>(use.getOwner()); });
        b.setInsertionPoint(block->getTerminator());
        sharedFree(b, global.getLoc(), shared);
      }
    }
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace
