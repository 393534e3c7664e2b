//===- GpuAsyncLaunches.cpp - Launches that do not wait for each other ----===//
//
// Part of k3. Implements k3-gpu-async-launches: the host program's kernel
// launches are chained on one stream with async tokens, and the host waits
// only where it does something the kernels could observe or disturb.
//
// The runtime executes a GPU program on one in-order stream (runtime/src/
// CudaDevice.cpp), so consecutive launches need no synchronisation between
// them; frees are pool bookkeeping, ordered on the stream after the launches
// that use the buffer. What needs a wait is the host touching memory: a load
// or store, a copy or a call (once before an scf loop or branch whose body
// does, and in a body that launches, per iteration), an op with regions this
// pass does not know, and a return or branch. scf yields do not wait, nor
// do a call to a private function whose host code only launches, allocates
// and frees (a layer function of k3-outline-layers) and that function's
// return: its kernels queue on the same stream as the caller's. An entry
// point whose host code, through all its calls, does nothing but launch,
// allocate, free and wait gets `k3.graph_capturable`: the runtime may
// capture it as a CUDA graph and replay it.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/Transforms/HostLocal.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#define DEBUG_TYPE "k3-gpu-async-launches"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3GPUASYNCLAUNCHESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;
using mlir::k3::HostLocal;
using mlir::k3::launchesInside;

namespace {

/// The free k3-share-host-memory emits: `%s = gpu.wait async`,
/// `%f = gpu.dealloc async [%s] %buffer`, `gpu.wait [%f]`. Returns the
/// dealloc when `wait` starts one.
gpu::DeallocOp freeStartingAt(gpu::WaitOp wait) {
  if (!wait.getAsyncToken() || !wait.getAsyncDependencies().empty() ||
      !wait.getAsyncToken().hasOneUse())
    return nullptr;
  // Adjacent, as emitted: nothing in between may need the chain.
  auto dealloc = dyn_cast_or_null<gpu::DeallocOp>(wait->getNextNode());
  if (!dealloc || *wait.getAsyncToken().getUsers().begin() != dealloc ||
      !dealloc.getAsyncToken() || !dealloc.getAsyncToken().hasOneUse())
    return nullptr;
  auto end = dyn_cast_or_null<gpu::WaitOp>(dealloc->getNextNode());
  if (!end || *dealloc.getAsyncToken().getUsers().begin() != end || end.getAsyncToken())
    return nullptr;
  return dealloc;
}

/// True when host code in `op`'s regions may touch memory a kernel may use
/// (what the chain below would wait for).
bool touchesMemoryInside(Operation *op, const HostLocal &hostLocal) {
  bool found = false;
  op->walk([&](Operation *inner) {
    if (inner == op || inner->getNumRegions() != 0 ||
        isa<gpu::LaunchFuncOp, gpu::DeallocOp, gpu::AllocOp, gpu::WaitOp>(inner) ||
        inner->hasTrait<OpTrait::IsTerminator>())
      return;
    if (!isMemoryEffectFree(inner) && !hostLocal.onlyTouchesLocal(inner))
      found = true;
  });
  return found;
}

/// Whether `fn`'s host code, through every call, only launches, allocates
/// and frees device buffers and waits: nothing a replay of its launches
/// (a CUDA graph) would leave out. No host memory access at all, not even
/// to host-local buffers, no copy, no fill, no call into the runtime.
bool launchesOnly(func::FuncOp fn, ModuleOp module, llvm::DenseMap<Operation *, bool> &memo) {
  auto [it, inserted] = memo.try_emplace(fn, false); // a recursive call: no
  if (!inserted)
    return it->second;
  bool ok = !fn.isExternal();
  fn.walk([&](Operation *inner) {
    if (!ok || inner == fn || inner->getNumRegions() != 0 ||
        isa<gpu::LaunchFuncOp, gpu::DeallocOp, gpu::AllocOp, gpu::WaitOp>(inner) ||
        inner->hasTrait<OpTrait::IsTerminator>())
      return;
    if (auto call = dyn_cast<func::CallOp>(inner)) {
      auto callee = module.lookupSymbol<func::FuncOp>(call.getCalleeAttr());
      ok = callee && launchesOnly(callee, module, memo);
      return;
    }
    ok = isMemoryEffectFree(inner);
  });
  return memo[fn] = ok;
}

/// The control flow whose bodies are chained on their own.
bool structured(Operation *op) {
  return isa<scf::ForOp, scf::WhileOp, scf::IfOp, scf::IndexSwitchOp, scf::ExecuteRegionOp>(op);
}

/// Rewrites one host function. `pending` is whether the stream may still
/// run work the host has not waited for; a wait syncs the whole stream, so
/// work queued in an enclosing block (or a loop's previous iteration) is
/// covered by the first wait in a nested one.
class Chainer {
public:
  /// `launchOnly`: the functions whose host code touches no memory (a
  /// layer function: launches, allocations and frees); a call to one needs
  /// no wait before it, and its return none (the caller waits where it
  /// must). `returnWaits`: whether this function's return waits.
  Chainer(MLIRContext *ctx, const llvm::SmallPtrSetImpl<Operation *> &launchOnly,
          const HostLocal &hostLocal, bool returnWaits)
      : b(ctx), tokenType(gpu::AsyncTokenType::get(ctx)), launchOnly(launchOnly),
        hostLocal(hostLocal), returnWaits(returnWaits) {}

  /// Chains `block`; returns whether work is pending at its end.
  bool chain(Block &block, bool pending) {
    Value token; // the block's last launch or free
    auto chainFrom = [&](Location loc) {
      if (!token) // gpu.wait async: the runtime's one stream
        token = gpu::WaitOp::create(b, loc, tokenType, ValueRange()).getAsyncToken();
      return token;
    };
    auto wait = [&](Location loc) {
      if (pending)
        gpu::WaitOp::create(b, loc, Type(), ValueRange{chainFrom(loc)});
      pending = false;
      token = nullptr;
    };
    for (Operation &op : llvm::make_early_inc_range(block)) {
      b.setInsertionPoint(&op);
      if (auto dealloc = dyn_cast<gpu::DeallocOp>(op);
          dealloc && token && dealloc.getAsyncToken() == token)
        continue; // a free joined to the chain below
      if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op); launch && !launch.getAsyncToken()) {
        auto async = gpu::LaunchFuncOp::create(
            b, launch.getLoc(), launch.getKernelAttr(), launch.getGridSizeOperandValues(),
            launch.getBlockSizeOperandValues(), launch.getDynamicSharedMemorySize(),
            launch.getKernelOperands(), tokenType, ValueRange{chainFrom(launch.getLoc())},
            launch.hasClusterSize() ? std::optional(launch.getClusterSizeOperandValues())
                                    : std::nullopt);
        token = async.getAsyncToken();
        pending = true;
        launch.erase();
        continue;
      }
      if (auto start = dyn_cast<gpu::WaitOp>(op)) {
        if (gpu::DeallocOp dealloc = freeStartingAt(start)) {
          // The free joins the chain; its own synchronising wait goes.
          auto end = cast<gpu::WaitOp>(*dealloc.getAsyncToken().getUsers().begin());
          dealloc.getAsyncDependenciesMutable().assign(chainFrom(start.getLoc()));
          start.erase();
          end.erase();
          token = dealloc.getAsyncToken();
          pending = true;
          continue;
        }
      }
      // Allocations are host bookkeeping; they touch no memory a launch uses.
      if (auto alloc = dyn_cast<gpu::AllocOp>(op); alloc && !alloc.getAsyncToken())
        continue;
      if (structured(&op)) {
        // Each body chained on its own; a loop's body starts with its
        // previous iteration's work pending. Work queued before a body that
        // touches memory is waited for once, here, not in every iteration.
        if (pending && touchesMemoryInside(&op, hostLocal))
          wait(op.getLoc());
        bool loop = isa<scf::ForOp, scf::WhileOp>(op), inside = launchesInside(&op);
        bool after = pending || inside;
        for (Region &region : op.getRegions())
          for (Block &body : region)
            // A block after a region's first is reached by a branch.
            after |= chain(body, pending || (loop && inside) || &body != &region.front());
        b.setInsertionPoint(&op);
        pending = after;
        continue;
      }
      if (op.hasTrait<OpTrait::IsTerminator>()) {
        // The yields of the control flow above hand values, not memory, to
        // the host; any other terminator (a return hands its buffers to the
        // caller, a branch leaves the chained block) waits, but the return
        // of a launch-only function, whose caller queues on the same stream.
        if (!isa<scf::YieldOp, scf::ConditionOp>(op) &&
            (returnWaits || !isa<func::ReturnOp>(op)))
          wait(op.getLoc());
        continue;
      }
      if (auto call = dyn_cast<func::CallOp>(op)) {
        auto callee = SymbolTable::lookupNearestSymbolFrom(call, call.getCalleeAttr());
        if (callee && launchOnly.count(callee)) {
          // Its launches queue behind the pending work, on the one stream.
          pending = true;
          token = nullptr;
          continue;
        }
      }
      if (op.getNumRegions() == 0 && (isMemoryEffectFree(&op) || hostLocal.onlyTouchesLocal(&op)))
        continue;
      // Host memory use, a call, or regions this pass does not know.
      wait(op.getLoc());
      // Async GPU work the pass did not make (none today): queued, so
      // pending afterwards.
      if (auto async = dyn_cast<gpu::AsyncOpInterface>(op); async && async.getAsyncToken()) {
        pending = true;
        continue;
      }
      if (op.getNumRegions() != 0) {
        for (Region &region : op.getRegions())
          for (Block &body : region)
            chain(body, false);
        b.setInsertionPointAfter(&op);
        pending = launchesInside(&op);
        if (pending) // its work is waited for before anything else
          wait(op.getLoc());
      }
    }
    return pending;
  }

private:
  OpBuilder b;
  Type tokenType;
  const llvm::SmallPtrSetImpl<Operation *> &launchOnly;
  const HostLocal &hostLocal;
  bool returnWaits;
};

struct K3GpuAsyncLaunchesPass
    : k3::impl::K3GpuAsyncLaunchesPassBase<K3GpuAsyncLaunchesPass> {
  using Base::Base;

  void runOnOperation() override {
    // A loop nest k3-gpu-map-loops mapped that is still in the host program
    // did not become a kernel (convert-parallel-loops-to-gpu leaves what it
    // cannot convert, e.g. a nest with a buffer allocated inside): it would
    // run serially on the host over managed memory. The last host-program
    // pass of the stage reports it rather than let it pass silently.
    WalkResult unmapped = getOperation().walk([&](scf::ParallelOp loop) {
      if (!loop->hasAttr(gpu::getMappingAttrName()) || loop->getParentOfType<gpu::GPUModuleOp>())
        return WalkResult::advance();
      loop.emitError() << "k3-gpu-async-launches: a loop nest mapped to blocks and threads did "
                          "not become a kernel (it would run serially on the host)";
      return WalkResult::interrupt();
    });
    if (unmapped.wasInterrupted())
      return signalPassFailure();
    // Private functions whose host code touches no memory (the layer
    // functions of k3-outline-layers).
    HostLocal hostLocal(getOperation());
    llvm::SmallPtrSet<Operation *, 8> launchOnly;
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (fn.isPrivate() && !fn.isExternal() && !touchesMemoryInside(fn, hostLocal))
        launchOnly.insert(fn);
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal())
        Chainer(&getContext(), launchOnly, hostLocal, !launchOnly.count(fn))
            .chain(fn.getBody().front(), /*pending=*/false);
    // Entry points a CUDA graph may capture (the runtime's CudaDevice): the
    // bundle records them (EntryPoint.graph_capturable).
    llvm::DenseMap<Operation *, bool> memo;
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (fn.isPublic() && launchesOnly(fn, getOperation(), memo))
        fn->setAttr("k3.graph_capturable", UnitAttr::get(&getContext()));
  }
};

} // namespace
