//===- GpuMergeLaunches.cpp - Independent kernels as one launch ------------===//
//
// Part of k3. Implements k3-gpu-merge-launches: gpu.launch ops that touch
// no common buffer one of them writes become one launch whose grid is the
// concatenation of theirs. A decode layer's projections of one normed row
// (KDA's q, k, v, gate and beta; the MoE's router, latent down projection
// and shared expert; MLA's q_a and kv_a) are such launches: each a handful
// of blocks, the GPU idle between them. Merged, each block runs the body of
// the launch its linear block id falls in:
//
//   gpu.launch blocks(a, 1, 1) threads(128) { A }
//   gpu.launch blocks(b, 2, 1) threads(32)  { B }
//   // becomes
//   gpu.launch blocks(a + 2b, 1, 1) threads(128) {
//     if (bid < a) { A }                              // block (bid, 0, 0)
//     else { if (tid < 32) { B } }                    // ((bid-a) % b, (bid-a) / b, 0)
//   }
//
// The branch is uniform over a block, so a body's barriers stay legal; a
// body with a barrier or a warp-wide op keeps its own block size, so it
// merges only with launches of the same block size or smaller barrier-free
// ones. Bodies declaring the same workgroup buffers share them (one body
// runs in a block); different ones sit side by side.
//
// A segment is a run of launches with only side-effect-free host ops,
// allocations, or frees of buffers the segment does not use between them
// (anything else, a host read, a copy, a call, ends it). Its launches get
// levels by dependence and each level is merged, all after the segment's
// last launch: a launch only ever moves later, past host ops it does not
// depend on. Buffers are compared by their root through views and casts;
// the pass tells apart allocations and function arguments only (a select
// of two buffers, a loop-carried one, a global keep the launch alone).
// Arguments are distinct buffers: k3's entry points get one buffer per
// input from the runtime, and the pass checks every call (a function called
// with one buffer for two arguments, and what it calls, is left alone).
// wgmma kernels merge only with each other: they are sized for their
// registers.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/Transforms/BufferRoot.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3GPUMERGELAUNCHESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {


/// What one launch reads and writes, by root; `opaque` when some op of its
/// body has effects the pass cannot place (it is never merged).
struct LaunchInfo {
  gpu::LaunchOp op;
  llvm::SmallPtrSet<Value, 8> reads, writes;
  bool opaque = false;
  bool synchronises = false; ///< a barrier, shuffle or warp-wide op
  bool wgmma = false;        ///< a warpgroup tensor-core kernel
  int64_t threads = 0;
  int64_t sharedBytes = 0;  ///< its workgroup attributions
  int64_t dynamicBytes = 0; ///< its dynamic shared memory
  llvm::SetVector<Value> captured; ///< the values its body uses from above
};

/// The bytes of kernel parameters outlining makes of `values`: a memref is
/// its descriptor (pointers, offset, sizes and strides), a scalar one slot.
int64_t parameterBytes(ArrayRef<Value> values) {
  int64_t bytes = 0;
  for (Value v : values)
    if (auto m = dyn_cast<MemRefType>(v.getType()))
      bytes += 8 * (3 + 2 * m.getRank());
    else
      bytes += 8;
  return bytes;
}

/// A kernel's parameters may take 4 KiB (PTX ISA 8.0 and earlier); some
/// room is left for what outlining adds.
constexpr int64_t kParameterBytes = 3 << 10;

/// The static shared memory a block may declare without opting in.
constexpr int64_t kStaticSharedBytes = 48 << 10;

/// `v`'s value when folding its defining ops from constants gives one: a
/// launch's sizes are still affine.apply and muli of constants here (a
/// canonicalisation before this pass would settle them, but it also
/// reshapes the hand-built kernels' bodies: ptxas then spilled the KDA
/// step).
std::optional<int64_t> foldedIndex(Value v, int depth = 0) {
  if (std::optional<int64_t> c = getConstantIntValue(v))
    return c;
  Operation *def = v.getDefiningOp();
  if (!def || depth > 8 || def->getNumRegions())
    return std::nullopt;
  SmallVector<Attribute> operands;
  for (Value o : def->getOperands()) {
    std::optional<int64_t> c = foldedIndex(o, depth + 1);
    if (!c || !o.getType().isIntOrIndex())
      return std::nullopt;
    operands.push_back(IntegerAttr::get(o.getType(), *c));
  }
  SmallVector<OpFoldResult> results;
  if (failed(def->fold(operands, results)) || results.size() != def->getNumResults())
    return std::nullopt;
  OpFoldResult r = results[cast<OpResult>(v).getResultNumber()];
  // A fold may give one of the operands back (x ceildiv 1 is x).
  if (auto same = dyn_cast<Value>(r))
    return same == v ? std::nullopt : foldedIndex(same, depth + 1);
  auto attr = dyn_cast_if_present<IntegerAttr>(dyn_cast<Attribute>(r));
  if (!attr)
    return std::nullopt;
  return attr.getInt();
}

bool definedInside(Value v, gpu::LaunchOp launch) {
  Region *r = v.getParentRegion();
  return r && launch.getBody().isAncestor(r);
}

/// Whether a root outside the kernels is a buffer the pass can tell apart
/// from every other: an allocation, or an argument of the function (all
/// distinct, see runOnOperation). Anything else (a select of two buffers,
/// a loop-carried buffer, a global, a call's result) may be any of them.
bool isKnownBuffer(Value root) {
  if (auto arg = dyn_cast<BlockArgument>(root))
    return arg.getOwner()->isEntryBlock() && isa<func::FuncOp>(arg.getOwner()->getParentOp());
  return isa_and_present<memref::AllocOp>(root.getDefiningOp());
}

/// Whether a root inside `launch` is the kernel's own memory: a workgroup
/// or private attribution, the dynamic shared buffer, a local allocation.
bool isKernelMemory(Value root, gpu::LaunchOp launch) {
  if (auto arg = dyn_cast<BlockArgument>(root))
    return arg.getOwner() == &launch.getBody().front() &&
           arg.getArgNumber() >= launch.getNumConfigRegionAttributes();
  return isa_and_present<gpu::DynamicSharedMemoryOp, memref::AllocaOp, memref::AllocOp>(
      root.getDefiningOp());
}

/// Ops that read the launch's own coordinates other than through its body's
/// arguments: in a merged launch they would read the merged one's.
bool readsLaunchIds(Operation *op) {
  if (isa<gpu::BlockIdOp, gpu::GridDimOp, gpu::BlockDimOp, gpu::ThreadIdOp, gpu::GlobalIdOp,
          gpu::ClusterIdOp, gpu::ClusterDimOp, gpu::ClusterBlockIdOp, gpu::ClusterDimBlocksOp,
          gpu::NumSubgroupsOp>(op))
    return true;
  return op->getName().getStringRef().starts_with("nvvm.read.ptx.sreg.");
}

/// Whether `op` (in a kernel body) acts on the whole block or warp: the
/// body keeps its block size.
bool isCollective(Operation *op) {
  if (isa<gpu::BarrierOp, gpu::ShuffleOp, gpu::AllReduceOp, gpu::SubgroupReduceOp>(op))
    return true;
  // NVVM's barriers, fences, warp MMAs and shuffles.
  return op->getDialect() && op->getDialect()->getNamespace() == "nvvm";
}

LaunchInfo analyse(gpu::LaunchOp launch) {
  LaunchInfo info;
  info.op = launch;
  auto constant = [](Value v) { return foldedIndex(v); };
  gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
  std::optional<int64_t> bx = constant(block.x), by = constant(block.y), bz = constant(block.z);
  if (!bx || by != 1 || bz != 1 || launch.getAsyncToken() ||
      !launch.getAsyncDependencies().empty() || launch.hasClusterSize() ||
      launch.getNumPrivateAttributions() ||
      !launch.getBody().hasOneBlock()) {
    info.opaque = true;
    return info;
  }
  info.threads = *bx;
  if (Value dynamic = launch.getDynamicSharedMemorySize()) {
    std::optional<int64_t> bytes = foldedIndex(dynamic);
    if (!bytes) {
      info.opaque = true;
      return info;
    }
    info.dynamicBytes = *bytes;
  }
  for (BlockArgument a : launch.getWorkgroupAttributions()) {
    auto type = cast<MemRefType>(a.getType());
    if (!type.hasStaticShape() || !type.getElementType().isIntOrFloat()) {
      info.opaque = true;
      return info;
    }
    info.sharedBytes +=
        type.getNumElements() * ((type.getElementType().getIntOrFloatBitWidth() + 7) / 8);
  }
  // A buffer the body reads or writes, by root: the kernel's own memory is
  // skipped; a root the pass cannot tell apart from others keeps the
  // launch alone.
  auto touch = [&](Value v, bool write) {
    Value root = k3::bufferRoot(v);
    if (definedInside(root, launch)) {
      if (!isKernelMemory(root, launch))
        info.opaque = true;
      return;
    }
    if (!isKnownBuffer(root)) {
      info.opaque = true;
      return;
    }
    info.reads.insert(root);
    if (write)
      info.writes.insert(root);
  };
  getUsedValuesDefinedAbove(launch.getBody(), info.captured);
  launch.getBody().walk([&](Operation *op) {
    if (isCollective(op))
      info.synchronises = true;
    // Ids read as ops, not the body's arguments, would see the merged
    // launch's; a pointer made from an integer is memory the pass cannot
    // place: such a body stays alone.
    if (readsLaunchIds(op) || op->getName().getStringRef() == "llvm.inttoptr")
      info.opaque = true;
    // A warpgroup tensor-core kernel (k3-gpu-mma-contractions on sm_90a)
    // is sized for its registers and occupancy; merged with another kind,
    // every block of the launch would be compiled to the heaviest body's
    // registers (ptxas spilled such a pair). It merges with its own kind
    // only (only k3-gpu-mma-contractions emits wgmma): the same 64
    // accumulators a thread and staging tile, bodies differing in their
    // epilogues at most, so the merged kernel needs the registers of its
    // heaviest member (a decode batch's projections of one row: fits()).
    if (op->getDialect() && op->getDialect()->getNamespace() == "nvvm" &&
        op->getName().getStringRef().contains("wgmma"))
      info.wgmma = true;
    // A buffer's address leaves the memref world: read and written.
    if (auto ptr = dyn_cast<memref::ExtractAlignedPointerAsIndexOp>(op)) {
      touch(ptr.getSource(), /*write=*/true);
      return;
    }
    if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return; // its body's ops are visited
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects) {
      // No effects declared: harmless without memrefs (an NVVM register
      // op), else unknown.
      for (Value v : op->getOperands())
        if (isa<BaseMemRefType, LLVM::LLVMPointerType>(v.getType()) &&
            !isKernelMemory(k3::bufferRoot(v), launch))
          info.opaque = true;
      return;
    }
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (const MemoryEffects::EffectInstance &e : list) {
      Value v = e.getValue();
      if (!v) {
        if (!isCollective(op))
          info.opaque = true;
        continue;
      }
      if (!isa<BaseMemRefType>(v.getType())) {
        info.opaque = true; // an LLVM pointer: memory the pass cannot place
        continue;
      }
      touch(v, /*write=*/!isa<MemoryEffects::Read>(e.getEffect()));
    }
  });
  return info;
}

SmallVector<Type> workgroupTypes(gpu::LaunchOp launch) {
  SmallVector<Type> types;
  for (BlockArgument a : launch.getWorkgroupAttributions())
    types.push_back(a.getType());
  return types;
}

/// The workgroup buffers every member that has any declares alike (the
/// tensor-core GEMVs' staging tile), or none when two members differ. Only
/// one body runs in a block, so such members share the buffers; otherwise
/// each member's buffers sit side by side.
std::optional<SmallVector<Type>> sharedWorkgroup(ArrayRef<gpu::LaunchOp> members) {
  SmallVector<Type> common;
  for (gpu::LaunchOp l : members) {
    SmallVector<Type> types = workgroupTypes(l);
    if (types.empty())
      continue;
    if (!common.empty() && common != types)
      return std::nullopt;
    common = types;
  }
  return common;
}

bool intersects(const llvm::SmallPtrSet<Value, 8> &a, const llvm::SmallPtrSet<Value, 8> &b) {
  for (Value v : a)
    if (b.contains(v))
      return true;
  return false;
}

bool conflicts(const LaunchInfo &a, const LaunchInfo &b) {
  return intersects(a.writes, b.reads) || intersects(a.writes, b.writes) ||
         intersects(a.reads, b.writes);
}

/// The group's launches as one, at the last one's place.
void merge(MutableArrayRef<LaunchInfo> group, Operation *before) {
  OpBuilder b(before);
  Location loc = group.back().op.getLoc();
  auto idx = [&](int64_t v) { return Value(arith::ConstantIndexOp::create(b, loc, v)); };
  int64_t threads = 0;
  Value shared;
  SmallVector<Value> starts{idx(0)};
  for (LaunchInfo &l : group) {
    threads = std::max(threads, l.threads);
    gpu::KernelDim3 g = l.op.getGridSizeOperandValues();
    Value count = arith::MulIOp::create(b, loc, arith::MulIOp::create(b, loc, g.x, g.y), g.z);
    starts.push_back(arith::AddIOp::create(b, loc, starts.back(), count));
    if (Value s = l.op.getDynamicSharedMemorySize())
      shared = shared ? Value(arith::MaxUIOp::create(b, loc, shared, s)) : s;
  }
  Value one = idx(1);
  SmallVector<gpu::LaunchOp> members;
  for (LaunchInfo &l : group)
    members.push_back(l.op);
  std::optional<SmallVector<Type>> common = sharedWorkgroup(members);
  SmallVector<Type> workgroup;
  if (common)
    workgroup = *common;
  else
    for (LaunchInfo &l : group)
      llvm::append_range(workgroup, workgroupTypes(l.op));
  auto merged = gpu::LaunchOp::create(b, loc, starts.back(), one, one, idx(threads), one, one,
                                      shared, /*asyncTokenType=*/nullptr, ValueRange(),
                                      workgroup);
  ArrayRef<BlockArgument> mergedWorkgroup = merged.getWorkgroupAttributions();
  Block &body = merged.getBody().front();
  b.setInsertionPointToStart(&body);
  Value bid = merged.getBlockIds().x, tid = merged.getThreadIds().x;
  // An if-else chain, not a row of ifs: no path runs two bodies, so LLVM
  // sees nothing redundant between them to hoist (a row of ifs had GVN-PRE
  // load the shared input's MMA fragments once before them all, live
  // across every body: ptxas spilled).
  OpBuilder chain = b;
  for (auto [i, l] : llvm::enumerate(group)) {
    Value lo = starts[i], hi = starts[i + 1];
    OpBuilder ib = chain;
    if (i + 1 < group.size()) {
      auto branch = scf::IfOp::create(
          chain, loc, arith::CmpIOp::create(chain, loc, arith::CmpIPredicate::ult, bid, hi),
          /*withElseRegion=*/true);
      ib = OpBuilder::atBlockBegin(branch.thenBlock());
      chain = OpBuilder::atBlockBegin(branch.elseBlock());
    }
    // The launch's own block coordinates from its share of the grid.
    gpu::KernelDim3 g = l.op.getGridSizeOperandValues();
    Value local = arith::SubIOp::create(ib, loc, bid, lo);
    Value x = arith::RemUIOp::create(ib, loc, local, g.x);
    Value rest = arith::DivUIOp::create(ib, loc, local, g.x);
    Value y = arith::RemUIOp::create(ib, loc, rest, g.y);
    Value z = arith::DivUIOp::create(ib, loc, rest, g.y);
    if (l.threads < threads) {
      // Barrier-free (merge() is only given such groups): the extra
      // threads skip it.
      Value active = arith::CmpIOp::create(ib, loc, arith::CmpIPredicate::ult, tid,
                                           arith::ConstantIndexOp::create(ib, loc, l.threads));
      auto guard = scf::IfOp::create(ib, loc, active, /*withElseRegion=*/false);
      ib.setInsertionPointToStart(guard.thenBlock());
    }
    IRMapping map;
    gpu::KernelDim3 ids = l.op.getBlockIds(), tids = l.op.getThreadIds(),
               grid = l.op.getGridSize(), blk = l.op.getBlockSize();
    map.map(ids.x, x);
    map.map(ids.y, y);
    map.map(ids.z, z);
    map.map(tids.x, tid);
    map.map(tids.y, merged.getThreadIds().y);
    map.map(tids.z, merged.getThreadIds().z);
    map.map(grid.x, g.x);
    map.map(grid.y, g.y);
    map.map(grid.z, g.z);
    gpu::KernelDim3 ownBlock = l.op.getBlockSizeOperandValues();
    map.map(blk.x, ownBlock.x);
    map.map(blk.y, ownBlock.y);
    map.map(blk.z, ownBlock.z);
    ArrayRef<BlockArgument> own = l.op.getWorkgroupAttributions();
    for (auto [k, a] : llvm::enumerate(own))
      map.map(a, mergedWorkgroup[k]);
    if (!common)
      mergedWorkgroup = mergedWorkgroup.drop_front(own.size());
    for (Operation &op : l.op.getBody().front().without_terminator())
      ib.clone(op, map);
  }
  b.setInsertionPointToEnd(&body);
  gpu::TerminatorOp::create(b, loc);
  for (LaunchInfo &l : group)
    l.op.erase();
}

struct K3GpuMergeLaunchesPass
    : k3::impl::K3GpuMergeLaunchesPassBase<K3GpuMergeLaunchesPass> {
  using Base::Base;

  /// Functions some call passes one buffer for two arguments.
  llvm::DenseSet<Operation *> sharedArguments;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    module.walk([&](func::CallOp call) {
      llvm::SmallPtrSet<Value, 8> seen;
      for (Value v : call.getOperands())
        if (isa<BaseMemRefType>(v.getType()) && !seen.insert(k3::bufferRoot(v)).second)
          if (auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee()))
            sharedArguments.insert(callee);
    });
    // A function whose arguments may alias passes them on: its callees'
    // may too.
    SmallVector<Operation *> work(sharedArguments.begin(), sharedArguments.end());
    while (!work.empty()) {
      Operation *f = work.pop_back_val();
      f->walk([&](func::CallOp call) {
        if (auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee()))
          if (sharedArguments.insert(callee).second)
            work.push_back(callee);
      });
    }
    module.walk([&](func::FuncOp f) {
      if (sharedArguments.contains(f))
        return;
      SmallVector<Block *> blocks;
      // Not the blocks inside kernels: merging erases them.
      f.walk([&](Block *block) {
        Operation *parent = block->getParentOp();
        if (!isa<gpu::LaunchOp>(parent) && !parent->getParentOfType<gpu::LaunchOp>())
          blocks.push_back(block);
      });
      // No pass Statistic counts the merges: libMLIR.so is built with
      // NDEBUG, where llvm::Statistic is a no-op of another layout, and a
      // Debug build of k3 reads fields the library's constructor never
      // wrote (UBSan).
      for (Block *block : blocks)
        mergeIn(*block);
    });
  }

  /// Merges the launches directly in `block`, a segment at a time (its
  /// launches and the host ops between them that let them move: see the
  /// file comment).
  void mergeIn(Block &block) {
    SmallVector<SmallVector<LaunchInfo, 8>, 4> segments;
    SmallVector<LaunchInfo, 8> segment;
    auto flush = [&] {
      if (segment.size() > 1)
        segments.push_back(segment);
      segment.clear();
    };
    auto usesSegmentBuffer = [&](Value v) {
      Value root = k3::bufferRoot(v);
      for (LaunchInfo &l : segment)
        if (l.reads.contains(root) || l.writes.contains(root))
          return true;
      return false;
    };
    for (Operation &op : block) {
      if (auto launch = dyn_cast<gpu::LaunchOp>(op)) {
        LaunchInfo info = analyse(launch);
        if (info.opaque) {
          flush();
          continue;
        }
        segment.push_back(std::move(info));
        continue;
      }
      if (segment.empty() || isMemoryEffectFree(&op) || isa<memref::AllocOp>(op))
        continue;
      if (auto dealloc = dyn_cast<memref::DeallocOp>(op))
        if (isKnownBuffer(k3::bufferRoot(dealloc.getMemref())) &&
            !usesSegmentBuffer(dealloc.getMemref()))
          continue;
      flush();
    }
    flush();
    for (SmallVector<LaunchInfo, 8> &s : segments)
      schedule(s);
  }

  /// A segment's launches by level (a launch's level is one more than
  /// that of the latest earlier launch it conflicts with, so a level's
  /// launches are independent and every dependence goes to a later level),
  /// each level as few launches as the block sizes allow, all in level
  /// order after the segment's last launch.
  static void schedule(MutableArrayRef<LaunchInfo> segment) {
    SmallVector<int64_t> level(segment.size(), 0);
    int64_t levels = 0;
    for (size_t i = 0; i < segment.size(); ++i) {
      for (size_t j = 0; j < i; ++j)
        if (conflicts(segment[j], segment[i]))
          level[i] = std::max(level[i], level[j] + 1);
      levels = std::max(levels, level[i] + 1);
    }
    if (levels == int64_t(segment.size()))
      return; // a chain: nothing to merge
    Operation *end = segment.back().op->getNextNode();
    for (int64_t l = 0; l < levels; ++l) {
      SmallVector<SmallVector<LaunchInfo, 4>, 4> groups;
      for (size_t i = 0; i < segment.size(); ++i) {
        if (level[i] != l)
          continue;
        auto fitting = llvm::find_if(
            groups, [&](ArrayRef<LaunchInfo> g) { return fits(g, segment[i]); });
        if (fitting != groups.end())
          fitting->push_back(segment[i]);
        else
          groups.emplace_back().push_back(segment[i]);
      }
      for (SmallVector<LaunchInfo, 4> &g : groups) {
        if (g.size() == 1) {
          g.front().op->moveBefore(end);
          continue;
        }
        merge(g, end);
      }
    }
  }

  /// Whether `next` may join `group`: independent of each member, and the
  /// members that synchronise their block keep its size.
  static bool fits(ArrayRef<LaunchInfo> group, const LaunchInfo &next) {
    if (group.empty())
      return true;
    int64_t threads = next.threads, sharedBytes = next.sharedBytes,
            dynamicBytes = next.dynamicBytes,
            largest = next.sharedBytes + next.dynamicBytes;
    SmallVector<gpu::LaunchOp> members{next.op};
    llvm::SetVector<Value> captured = next.captured;
    for (const LaunchInfo &l : group) {
      captured.insert(l.captured.begin(), l.captured.end());
      if (conflicts(l, next) || l.wgmma != next.wgmma)
        return false;
      threads = std::max(threads, l.threads);
      sharedBytes += l.sharedBytes;
      dynamicBytes = std::max(dynamicBytes, l.dynamicBytes);
      largest = std::max(largest, l.sharedBytes + l.dynamicBytes);
      members.push_back(l.op);
    }
    if (parameterBytes(captured.getArrayRef()) > kParameterBytes)
      return false;
    // Members declaring the same buffers share them (merge()).
    if (sharedWorkgroup(members)) {
      sharedBytes = 0;
      for (const LaunchInfo &l : group)
        sharedBytes = std::max(sharedBytes, l.sharedBytes);
      sharedBytes = std::max(sharedBytes, next.sharedBytes);
    }
    // The merged block holds every member's workgroup buffers and the
    // largest dynamic buffer: no more than a block may declare statically,
    // or than the largest member already asked for.
    if (sharedBytes > kStaticSharedBytes ||
        sharedBytes + dynamicBytes > std::max(largest, kStaticSharedBytes))
      return false;
    if (next.synchronises && next.threads != threads)
      return false;
    for (const LaunchInfo &l : group)
      if (l.synchronises && l.threads != threads)
        return false;
    return true;
  }
};

} // namespace
