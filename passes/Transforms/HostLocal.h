//===- HostLocal.h - Buffers of a GPU host program no kernel uses -*- C++ -*-===//
//
// Part of k3. The buffers of a GPU host program that only host code uses:
// the deallocation's run-time alias checks (arrays of pointers and of
// ownership bits, passed to its private helper). k3-share-host-memory
// leaves them in host memory, and k3-gpu-async-launches lets the host
// touch them without waiting for the stream. The two go together: a buffer
// of the device pool, freed on the stream a moment ago, may still be read
// by a queued kernel, so the host may write to it only after a wait.
//
//===----------------------------------------------------------------------===//

#ifndef PASSES_TRANSFORMS_HOSTLOCAL_H
#define PASSES_TRANSFORMS_HOSTLOCAL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::k3 {

/// True when `op`'s regions launch kernels or free buffers on the stream.
bool launchesInside(Operation *op);

/// The host-only buffers of a module: allocations whose every use, through
/// casts and views, is a host load or store, a free, a pointer or metadata
/// read, or a call to a private function that launches, frees on the
/// stream and calls nothing. Computed
/// once; rewriting the allocations afterwards does not update it.
class HostLocal {
public:
  explicit HostLocal(ModuleOp module);

  /// Whether `v` is such a buffer, or a cast or view of one.
  bool isLocal(Value v) const;
  /// Whether `op` (without regions) touches memory only in host-local
  /// buffers: a load, a store, an allocation, a free or such a call, every
  /// memref operand (or the allocated buffer) local.
  bool onlyTouchesLocal(Operation *op) const;

private:
  bool quietCallee(func::CallOp call) const;
  bool onlyHostUses(Value v) const;

  llvm::DenseSet<Value> local;
};

} // namespace mlir::k3

#endif // PASSES_TRANSFORMS_HOSTLOCAL_H
