//===- SimplifyDeallocations.cpp - Dealloc simplification per function ----===//
//
// Part of k3. Implements k3-simplify-deallocations: upstream's
// buffer-deallocation-simplification, run on each function except the
// entry points that sequence layer calls.
//
// Such an entry point's one deallocation lists the base buffer of every
// layer call's result and retains every returned one: for K3, 301 memrefs
// and 300 retained values. Upstream's patterns ask the buffer-origin
// analysis about every pair, split and rebuild the operation one memref at
// a time, and a call's results have no origin it can see: on K3's 93 layers
// it spent 17 of the GPU phase's 20 seconds there and left the operation as
// it found it. The lowered deallocation checks those aliases at run time
// instead (a loop over memrefs × retained values per call, microseconds).
// The layer functions, where the allocations are, are simplified as before;
// so is an entry point that calls no function (--unroll-layers, one-op test
// modules).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3SIMPLIFYDEALLOCATIONSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

/// An entry point that calls functions of the module: its deallocation
/// holds their results.
bool sequencesCalls(func::FuncOp fn) {
  if (!fn.isPublic())
    return false;
  bool calls = false;
  fn.walk([&](func::CallOp) {
    calls = true;
    return WalkResult::interrupt();
  });
  return calls;
}

struct K3SimplifyDeallocationsPass
    : k3::impl::K3SimplifyDeallocationsPassBase<K3SimplifyDeallocationsPass> {
  using Base::Base;

  void runOnOperation() override {
    OpPassManager pm(func::FuncOp::getOperationName());
    pm.addPass(bufferization::createBufferDeallocationSimplificationPass());
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal() || sequencesCalls(fn))
        continue;
      if (failed(runPipeline(pm, fn)))
        return signalPassFailure();
    }
  }
};

} // namespace
