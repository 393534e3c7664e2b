//===- GpuLaunchesToOpenMP.cpp - Run gpu.launch bodies on the host --------===//
//
// Part of k3. Implements k3-gpu-launches-to-openmp: GPU kernels run on a
// CPU, for the lit tests of the hand-built kernels and for whole models
// (`k3-compile --target=sm_* --emulate`, the gpu stage up to this pass,
// then the CPU's lowering). Each gpu.launch becomes a loop over its
// blocks, each block one OpenMP team with a thread per GPU thread, so that
// barriers, shared memory and warp-wide MMA keep their meaning and the
// kernel's index arithmetic runs unchanged on a CPU.
//
//   gpu.barrier            -> omp.barrier (the team is the block)
//   shared memory          -> one host arena per launch, aligned to 2^18
//                             bytes as the shared window's addresses are
//                             (a wgmma descriptor keeps address bits 4-17),
//                             reused by every block (they run one after
//                             the other): the workgroup buffers, then the
//                             dynamic buffer, each 128-byte aligned
//   nvvm.mma.sync m16n8k16 -> each lane deposits its fragments
//     (bf16, row.col)         (k3emu_mma_put), barrier, each lane reads its
//                             accumulators (k3emu_mma_get), barrier
//   nvvm.wgmma.mma_async   -> k3emu_wgmma on the thread's accumulators:
//     m64nNk16, bf16          both operands are in the arena, read through
//                             their descriptors; its fences, commit and
//                             wait, and fence.proxy, are no-ops (the call
//                             completes before it returns)
//
// The functions live in lib/Target/Cpu/k3emu.c. Under mlir-runner the
// teams are libomp's; in an `--emulate` binary k3emu.c also defines the
// OpenMP entry points the teams call and runs a block's threads as fibers
// on one OS thread (a barrier is a switch, not a wake-up). A warp-wide op needs every
// thread of the block to reach it together: true of k3's kernels, whose
// MMAs are block-uniform. Anything else a kernel may hold (shuffles, other
// shapes or types) is reported on the op.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3GPULAUNCHESTOOPENMPPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

/// `t` without a GPU memory space (shared memory becomes host memory).
Type hostType(Type t) {
  auto m = dyn_cast<MemRefType>(t);
  if (!m || !isa_and_nonnull<gpu::AddressSpaceAttr>(m.getMemorySpace()))
    return t;
  return MemRefType::get(m.getShape(), m.getElementType(), m.getLayout());
}

func::FuncOp declare(ModuleOp module, StringRef name, FunctionType type) {
  if (auto f = module.lookupSymbol<func::FuncOp>(name))
    return f;
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto f = func::FuncOp::create(b, module.getLoc(), name, type);
  f.setPrivate();
  return f;
}

struct K3GpuLaunchesToOpenMPPass
    : k3::impl::K3GpuLaunchesToOpenMPPassBase<K3GpuLaunchesToOpenMPPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::LaunchOp> launches;
    module.walk([&](gpu::LaunchOp l) { launches.push_back(l); });
    for (gpu::LaunchOp launch : launches)
      if (failed(convert(module, launch)))
        return signalPassFailure();
  }

  LogicalResult convert(ModuleOp module, gpu::LaunchOp launch) {
    if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty() ||
        launch.hasClusterSize())
      return launch.emitOpError() << "k3-gpu-launches-to-openmp: async or clustered launches "
                                     "are not emulated";
    OpBuilder b(launch);
    Location loc = launch.getLoc();
    MLIRContext *ctx = b.getContext();
    Type i32 = b.getI32Type(), f32 = b.getF32Type(), i64 = b.getI64Type(),
         index = b.getIndexType();
    auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues(),
                    block = launch.getBlockSizeOperandValues();
    Value threads = arith::MulIOp::create(
        b, loc, arith::MulIOp::create(b, loc, block.x, block.y), block.z);

    // Shared memory: one arena for the workgroup attributions and the
    // dynamic buffer, allocated once for all blocks (see the file comment).
    auto align = [](int64_t v) { return (v + 127) / 128 * 128; };
    SmallVector<int64_t> offsets;
    int64_t staticBytes = 0;
    for (BlockArgument a : launch.getWorkgroupAttributions()) {
      auto type = cast<MemRefType>(hostType(a.getType()));
      if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
          !type.getElementType().isIntOrFloat())
        return launch.emitOpError()
               << "k3-gpu-launches-to-openmp: a workgroup buffer of type " << type
               << " (static, identity layout, scalar elements only)";
      offsets.push_back(staticBytes);
      staticBytes = align(staticBytes + type.getNumElements() *
                                            llvm::divideCeil(type.getElementTypeBitWidth(), 8));
    }
    Value arenaBytes = idx(staticBytes);
    if (Value bytes = launch.getDynamicSharedMemorySize())
      arenaBytes = arith::AddIOp::create(b, loc, arenaBytes,
                                         arith::IndexCastUIOp::create(b, loc, index, bytes));
    auto bytesType = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
    Value arena = memref::AllocOp::create(b, loc, bytesType, ValueRange{arenaBytes},
                                          b.getI64IntegerAttr(int64_t(1) << 18));
    Value dynamicShared;
    if (Value bytes = launch.getDynamicSharedMemorySize())
      dynamicShared = memref::ViewOp::create(
          b, loc, bytesType, arena, idx(staticBytes),
          ValueRange{arith::IndexCastUIOp::create(b, loc, index, bytes)});
    SmallVector<Value> workgroup;
    for (auto [a, offset] : llvm::zip_equal(launch.getWorkgroupAttributions(), offsets))
      workgroup.push_back(memref::ViewOp::create(b, loc, cast<MemRefType>(hostType(a.getType())),
                                                 arena, idx(offset), ValueRange()));
    Value arenaAddress = arith::IndexCastUIOp::create(
        b, loc, i64, memref::ExtractAlignedPointerAsIndexOp::create(b, loc, arena));
    Value arenaBytes64 = arith::IndexCastUIOp::create(b, loc, i64, arenaBytes);

    Value zero = idx(0), one = idx(1);
    auto z = scf::ForOp::create(b, loc, zero, grid.z, one);
    b.setInsertionPointToStart(z.getBody());
    auto y = scf::ForOp::create(b, loc, zero, grid.y, one);
    b.setInsertionPointToStart(y.getBody());
    auto x = scf::ForOp::create(b, loc, zero, grid.x, one);
    b.setInsertionPointToStart(x.getBody());
    omp::ParallelOperands clauses;
    clauses.numThreads = arith::IndexCastUIOp::create(b, loc, i32, threads);
    auto team = omp::ParallelOp::create(b, loc, clauses);
    Block *body = b.createBlock(&team.getRegion());
    b.setInsertionPointToStart(body);

    auto threadNum = declare(module, "omp_get_thread_num", FunctionType::get(ctx, {}, {i32}));
    Value t = arith::IndexCastUIOp::create(
        b, loc, index, func::CallOp::create(b, loc, threadNum, ValueRange()).getResult(0));
    // A team smaller than the block (an OpenMP thread limit) would break
    // every barrier: k3emu_team stops the run with one line instead.
    auto teamSize = declare(module, "omp_get_num_threads", FunctionType::get(ctx, {}, {i32}));
    auto check = declare(module, "k3emu_team", FunctionType::get(ctx, {i64, i32}, {}));
    func::CallOp::create(
        b, loc, check,
        ValueRange{arith::IndexCastUIOp::create(b, loc, i64, threads),
                   func::CallOp::create(b, loc, teamSize, ValueRange()).getResult(0)});
    Value tx = arith::RemUIOp::create(b, loc, t, block.x);
    Value rest = arith::DivUIOp::create(b, loc, t, block.x);
    Value ty = arith::RemUIOp::create(b, loc, rest, block.y);
    Value tz = arith::DivUIOp::create(b, loc, rest, block.y);

    // The launch body's arguments: block ids, thread ids, grid and block
    // sizes (gpu.launch's order), then the workgroup attributions.
    Block &launchBody = launch.getBody().front();
    IRMapping map;
    SmallVector<Value> args{x.getInductionVar(), y.getInductionVar(), z.getInductionVar(),
                            tx, ty, tz, grid.x, grid.y, grid.z, block.x, block.y, block.z};
    args.append(workgroup.begin(), workgroup.end());
    if (launchBody.getNumArguments() != args.size() + launch.getPrivateAttributions().size())
      return launch.emitOpError() << "k3-gpu-launches-to-openmp: unexpected body arguments";
    for (BlockArgument a : launch.getPrivateAttributions())
      args.push_back(memref::AllocaOp::create(b, loc, cast<MemRefType>(hostType(a.getType()))));
    for (auto [from, to] : llvm::zip(launchBody.getArguments(), args))
      map.map(from, to);
    if (!llvm::hasSingleElement(launch.getBody()))
      return launch.emitOpError() << "k3-gpu-launches-to-openmp: the body must be one block";

    auto put = declare(module, "k3emu_mma_put",
                       FunctionType::get(ctx, {i64, i32, i32, i32, i32, i32, i32}, {}));
    auto get = declare(module, "k3emu_mma_get",
                       FunctionType::get(ctx, {i64, f32, f32, f32, f32, i64}, {}));
    Value tid64 = arith::IndexCastUIOp::create(b, loc, i64, t);
    // Each thread's 4 accumulators read back from the exchange (one
    // buffer on the thread's stack for all its MMAs).
    Value out = memref::AllocaOp::create(b, loc, MemRefType::get({4}, f32));
    // A wgmma's accumulators (at most N / 2 = 128), likewise.
    Value accs = memref::AllocaOp::create(b, loc, MemRefType::get({128}, f32));
    LogicalResult result = success();
    // Clone the whole body first, then rewrite the copy (a rewrite during
    // the cloning would leave the mapping pointing at erased values).
    SmallVector<Operation *> copies;
    for (Operation &op : launchBody.without_terminator())
      copies.push_back(b.clone(op, map));
    SmallVector<Operation *> inner;
    for (Operation *copy : copies)
      copy->walk([&](Operation *o) {
        for (Value r : o->getResults())
          r.setType(hostType(r.getType()));
        for (Region &region : o->getRegions())
          for (Block &blk : region)
            for (BlockArgument a : blk.getArguments())
              a.setType(hostType(a.getType()));
        if (isa<NVVM::NVVMDialect, gpu::GPUDialect>(o->getDialect()))
          inner.push_back(o);
      });
    // Only the ops rewritten here are visited: an MMA's rewrite erases
    // its llvm.extractvalue users.
    for (Operation *o : inner) {
      OpBuilder ib(o);
      Location l = o->getLoc();
      if (isa<gpu::BarrierOp>(o)) {
        omp::BarrierOp::create(ib, l);
        o->erase();
      } else if (auto d = dyn_cast<gpu::DynamicSharedMemoryOp>(o)) {
        if (!dynamicShared) {
          result = o->emitOpError() << "without a dynamic shared memory size on the launch";
          continue;
        }
        d.getResult().replaceAllUsesWith(dynamicShared);
        o->erase();
      } else if (auto id = dyn_cast<gpu::ThreadIdOp>(o)) {
        Value v = id.getDimension() == gpu::Dimension::x   ? tx
                  : id.getDimension() == gpu::Dimension::y ? ty
                                                           : tz;
        id.getResult().replaceAllUsesWith(v);
        o->erase();
      } else if (auto mma = dyn_cast<NVVM::MmaOp>(o)) {
        if (failed(emulateMma(ib, mma, put, get, tid64, out)))
          result = failure();
      } else if (auto wgmma = dyn_cast<NVVM::WgmmaMmaAsyncOp>(o)) {
        if (failed(emulateWgmma(module, ib, wgmma, tid64, arenaAddress, arenaBytes64, accs)))
          result = failure();
      } else if (isa<NVVM::WgmmaFenceAlignedOp, NVVM::WgmmaGroupSyncAlignedOp,
                     NVVM::WgmmaWaitGroupSyncOp, NVVM::FenceProxyOp>(o)) {
        // The emulated wgmma has completed when its call returns, and its
        // operands are ordinary memory: nothing to fence or wait for.
        o->erase();
      } else if (isa<NVVM::NVVMDialect, gpu::GPUDialect>(o->getDialect())) {
        result = o->emitOpError() << "is not emulated by k3-gpu-launches-to-openmp";
      }
    }
    omp::TerminatorOp::create(b, loc);
    b.setInsertionPointAfter(z);
    memref::DeallocOp::create(b, loc, arena);
    launch.erase();
    return result;
  }

  /// The lane deposits A and B, the team waits, the lane reads D = A·B + C
  /// (computed from all 32 lanes' fragments), the team waits again before
  /// the exchange is reused.
  LogicalResult emulateMma(OpBuilder &b, NVVM::MmaOp mma, func::FuncOp put, func::FuncOp get,
                           Value tid, Value out) {
    Location loc = mma.getLoc();
    auto shape = mma.getShapeAttr();
    if (shape.getM() != 16 || shape.getN() != 8 || shape.getK() != 16 ||
        mma.getMultiplicandAPtxType() != NVVM::MMATypes::bf16 ||
        mma.getLayoutA() != NVVM::MMALayout::row || mma.getLayoutB() != NVVM::MMALayout::col ||
        mma.getOperandA().size() != 4 || mma.getOperandB().size() != 2 ||
        mma.getOperandC().size() != 4)
      return mma.emitOpError() << "k3-gpu-launches-to-openmp emulates bf16 m16n8k16 row.col only";
    SmallVector<Value> putArgs{tid};
    putArgs.append(mma.getOperandA().begin(), mma.getOperandA().end());
    putArgs.append(mma.getOperandB().begin(), mma.getOperandB().end());
    func::CallOp::create(b, loc, put, putArgs);
    omp::BarrierOp::create(b, loc);
    Value address = arith::IndexCastUIOp::create(
        b, loc, b.getI64Type(), memref::ExtractAlignedPointerAsIndexOp::create(b, loc, out));
    SmallVector<Value> getArgs{tid};
    getArgs.append(mma.getOperandC().begin(), mma.getOperandC().end());
    getArgs.push_back(address);
    func::CallOp::create(b, loc, get, getArgs);
    omp::BarrierOp::create(b, loc);
    for (Operation *user : llvm::make_early_inc_range(mma.getRes().getUsers())) {
      auto extract = dyn_cast<LLVM::ExtractValueOp>(user);
      if (!extract || extract.getPosition().size() != 1)
        return user->emitOpError() << "reads an emulated mma.sync's result other than by "
                                      "llvm.extractvalue";
      OpBuilder eb(extract);
      Value v = memref::LoadOp::create(
          eb, loc, out, ValueRange{arith::ConstantIndexOp::create(eb, loc, extract.getPosition()[0])});
      extract.getResult().replaceAllUsesWith(v);
      extract.erase();
    }
    mma.erase();
    return success();
  }

  /// The thread's accumulators go to a stack buffer, k3emu_wgmma updates
  /// them from the arena's tiles, and the struct is rebuilt from it.
  LogicalResult emulateWgmma(ModuleOp module, OpBuilder &b, NVVM::WgmmaMmaAsyncOp op, Value tid,
                             Value arena, Value arenaBytes, Value buffer) {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    auto shape = op.getShape();
    auto accType = dyn_cast<LLVM::LLVMStructType>(op.getInouts().getType());
    Type f32 = b.getF32Type(), i64 = b.getI64Type(), i32 = b.getI32Type();
    if (shape.getM() != 64 || shape.getK() != 16 || shape.getN() > 256 || op.getTypeA() != NVVM::WGMMATypes::bf16 ||
        op.getTypeB() != NVVM::WGMMATypes::bf16 || op.getTypeD() != NVVM::WGMMATypes::f32 ||
        op.getLayoutA() != NVVM::MMALayout::row || op.getLayoutB() != NVVM::MMALayout::col ||
        op.getScaleA() != NVVM::WGMMAScaleIn::one || op.getScaleB() != NVVM::WGMMAScaleIn::one ||
        op.getSatfiniteAttr() || !accType ||
        accType.getBody().size() != size_t(shape.getN() / 2) ||
        llvm::any_of(accType.getBody(), [&](Type t) { return t != f32; }))
      return op.emitOpError() << "k3-gpu-launches-to-openmp emulates bf16 m64nNk16 row.col "
                                 "with f32 accumulators, unscaled and unsaturated, only";
    auto fn = declare(module, "k3emu_wgmma",
                      FunctionType::get(ctx, {i64, i64, i64, i64, i64, i64, i32, i64}, {}));
    int64_t n = shape.getN();
    for (int64_t i = 0; i < n / 2; ++i)
      memref::StoreOp::create(b, loc, LLVM::ExtractValueOp::create(b, loc, op.getInouts(), i),
                              buffer, ValueRange{arith::ConstantIndexOp::create(b, loc, i)});
    Value address = arith::IndexCastUIOp::create(
        b, loc, i64, memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer));
    Value scaleD = arith::ConstantIntOp::create(
        b, loc, i32, op.getScaleD() == NVVM::WGMMAScaleOut::one ? 1 : 0);
    func::CallOp::create(b, loc, fn,
                         ValueRange{tid, op.getDescriptorA(), op.getDescriptorB(), arena,
                                    arenaBytes, arith::ConstantIntOp::create(b, loc, i64, n),
                                    scaleD, address});
    Value acc = LLVM::PoisonOp::create(b, loc, accType);
    for (int64_t i = 0; i < n / 2; ++i)
      acc = LLVM::InsertValueOp::create(
          b, loc, acc,
          memref::LoadOp::create(b, loc, buffer,
                                 ValueRange{arith::ConstantIndexOp::create(b, loc, i)}),
          i);
    op.getResult().replaceAllUsesWith(acc);
    op.erase();
    return success();
  }
};

} // namespace
