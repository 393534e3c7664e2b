//===- CpuTarget.cpp - LLVM dialect → host shared object ------------------===//
//
// Part of k3. Translates the lowered module to LLVM IR, adds one packed entry
// `void k3_entry_<name>(void **args)` per function (args[0] is the result
// struct, then one memref descriptor per argument), optimises at O2 for the
// host CPU, emits a PIC object and links it into a shared object with the
// host C compiler (`cc -shared`).
//
//===----------------------------------------------------------------------===//

#include "lib/Target/Cpu/CpuTarget.h"
#include "CommOpsHeader.h"
#include "EmulationSource.h"
#include "GpuOpsHeader.h"
#include "runtime/include/k3rt/k3rt.h"
#include "runtime/src/CpuLevel.h"

#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassInstrumentation.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/IR/CFG.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/Transforms/IPO/AlwaysInliner.h"
#include "llvm/Transforms/IPO/GlobalDCE.h"
#include "llvm/Transforms/InstCombine/InstCombine.h"
#include "llvm/Transforms/Scalar/EarlyCSE.h"
#include "llvm/Transforms/Scalar/SROA.h"
#include "llvm/Transforms/Scalar/SimplifyCFG.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#include <fstream>
#include <functional>
#include <sstream>

using namespace mlir;

namespace {

/// `void k3_entry_<name>(ptr args)` calling `_mlir_ciface_<name>` with
/// args[0..n): a fixed signature the runtime can call for any arity.
void addPackedEntry(llvm::Module &m, llvm::Function &ciface, StringRef name) {
  llvm::LLVMContext &ctx = m.getContext();
  auto *ptrTy = llvm::PointerType::get(ctx, 0);
  auto *fnTy = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptrTy}, false);
  auto *entry = llvm::Function::Create(fnTy, llvm::GlobalValue::ExternalLinkage,
                                       ("k3_entry_" + name).str(), m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
  // The support code's k3_enter: the thread count for this call's loops.
  b.CreateCall(m.getOrInsertFunction("k3_enter", llvm::FunctionType::get(
                                                     llvm::Type::getVoidTy(ctx), false)));
  SmallVector<llvm::Value *> args;
  for (unsigned i = 0; i < ciface.arg_size(); ++i) {
    llvm::Value *slot = b.CreateConstGEP1_64(ptrTy, entry->getArg(0), i);
    args.push_back(b.CreateLoad(ptrTy, slot));
  }
  b.CreateCall(&ciface, args);
  b.CreateRetVoid();
}

/// The runtime helpers the lowered code calls: a strided copy with the
/// ABI of MLIR's `memrefCopy` (element size, then unranked source and
/// destination descriptors). Compiled into every kernel object, so the
/// runtime needs no MLIR library.
constexpr const char *kSupportC = R"c(
#include <stdint.h>
#include <string.h>
typedef struct { int64_t rank; void *descriptor; } Unranked;
typedef struct { char *base; char *data; int64_t offset; int64_t rest[]; } Ranked;
void memrefCopy(int64_t size, Unranked *src, Unranked *dst) {
  Ranked *s = (Ranked *)src->descriptor, *d = (Ranked *)dst->descriptor;
  int64_t rank = src->rank;
  const int64_t *sizes = s->rest, *ss = s->rest + rank, *ds = d->rest + rank;
  char *sp = s->data + s->offset * size, *dp = d->data + d->offset * size;
  if (rank == 0) {
    memcpy(dp, sp, (size_t)size);
    return;
  }
  for (int64_t i = 0; i < rank; ++i)
    if (sizes[i] == 0)
      return;
  /* Rows of the innermost dimension; one memcpy per row when both sides
     are unit-strided there. The outer indices advance as an odometer. */
  int64_t inner = sizes[rank - 1], si = ss[rank - 1], di = ds[rank - 1];
  int runs = si == 1 && di == 1;
  int64_t idx[rank];
  for (int64_t i = 0; i < rank; ++i)
    idx[i] = 0;
  int64_t so = 0, dof = 0;
  for (;;) {
    if (runs)
      memcpy(dp + dof * size, sp + so * size, (size_t)(inner * size));
    else
      for (int64_t e = 0; e < inner; ++e)
        memcpy(dp + (dof + e * di) * size, sp + (so + e * si) * size, (size_t)size);
    int64_t k = rank - 2;
    for (; k >= 0; --k) {
      so += ss[k];
      dof += ds[k];
      if (++idx[k] < sizes[k])
        break;
      so -= ss[k] * sizes[k];
      dof -= ds[k] * sizes[k];
      idx[k] = 0;
    }
    if (k < 0)
      return;
  }
}
/* The kernels' thread count (k3rt_set_threads). libomp keeps it per calling
   thread, so every packed entry point applies it first; weak, so that a
   program without parallel loops needs no libomp. */
extern void omp_set_num_threads(int) __attribute__((weak));
static int k3_threads;
void k3_set_threads(int n) { __atomic_store_n(&k3_threads, n, __ATOMIC_RELAXED); }
void k3_enter(void) {
  int n = __atomic_load_n(&k3_threads, __ATOMIC_RELAXED);
  if (n > 0 && omp_set_num_threads)
    omp_set_num_threads(n);
}
)c";

/// A sharded binary's communication (k3-comm-to-calls, k3-lower-collectives):
/// each call forwards to the table the runtime attaches with
/// `k3_comm_attach` (K3CommOps, runtime/include/k3rt/k3rt_comm.h, embedded
/// before this text), so the object needs no MPI or NCCL symbol. The
/// runtime refuses to run a sharded binary without attaching it.
constexpr const char *kCommSupportC = R"c(
static const K3CommOps *k3_comm;
void k3_comm_attach(const K3CommOps *ops) { k3_comm = ops; }
void k3_comm_collective(int32_t kind, int64_t input, int64_t output, int64_t count,
                        int32_t dtype, int64_t axes) {
  k3_comm->collective(k3_comm->ctx, kind, (void *)(intptr_t)input, (void *)(intptr_t)output,
                      count, dtype, axes);
}
int64_t k3_comm_index(int64_t axis) { return k3_comm->index(k3_comm->ctx, axis); }
)c";

/// A GPU host program's runtime interface. The lowered launches call MLIR's
/// mgpu* functions (gpu-to-llvm's ABI); here each forwards to the table the
/// runtime attaches with `k3_gpu_attach`, so the object needs no symbol
/// from the process that loads it. The table, `K3GpuOps`, is
/// runtime/include/k3rt/k3rt_gpu.h, embedded before this text
/// (kGpuOpsHeader). Kernel modules load in `k3_gpu_attach` (what would have
/// been global constructors: they need the table) and unload in
/// `k3_gpu_detach`.
constexpr const char *kGpuSupportC = R"c(
static const K3GpuOps *k3ops;
void k3_gpu_load_modules(void);
void k3_gpu_unload_modules(void);
void k3_gpu_attach(const K3GpuOps *ops) { k3ops = ops; k3_gpu_load_modules(); }
void k3_gpu_detach(void) { k3_gpu_unload_modules(); k3ops = 0; }
void *mgpuModuleLoad(void *data, size_t size) { return k3ops->moduleLoad(k3ops->ctx, data, size); }
void mgpuModuleUnload(void *m) { k3ops->moduleUnload(k3ops->ctx, m); }
void *mgpuModuleGetFunction(void *m, const char *name) {
  return k3ops->moduleGetFunction(k3ops->ctx, m, name);
}
void *mgpuStreamCreate(void) { return k3ops->streamCreate(k3ops->ctx); }
void mgpuStreamSynchronize(void *s) { k3ops->streamSynchronize(k3ops->ctx, s); }
void mgpuStreamDestroy(void *s) { k3ops->streamDestroy(k3ops->ctx, s); }
void mgpuLaunchKernel(void *f, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by,
                      intptr_t bz, int32_t smem, void *s, void **params, void **extra,
                      size_t n) {
  k3ops->launchKernel(k3ops->ctx, f, gx, gy, gz, bx, by, bz, smem, s, params, extra, n);
}
void *mgpuMemAlloc(uint64_t bytes, void *s, bool hostShared) {
  return k3ops->memAlloc(k3ops->ctx, bytes, s, hostShared);
}
void mgpuMemFree(void *p, void *s) { k3ops->memFree(k3ops->ctx, p, s); }
void mgpuMemcpy(void *d, void *src, size_t bytes, void *s) {
  k3ops->memcpy(k3ops->ctx, d, src, bytes, s);
}
void mgpuMemset32(void *d, unsigned v, size_t n, void *s) {
  k3ops->memset32(k3ops->ctx, d, v, n, s);
}
)c";

/// Replaces the global constructor (destructor) list `list` with a function
/// `name` calling its entries in order; returns whether there was one.
bool listToFunction(llvm::Module &m, StringRef list, StringRef name) {
  llvm::LLVMContext &ctx = m.getContext();
  auto *fnTy = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), false);
  auto *fn = llvm::Function::Create(fnTy, llvm::GlobalValue::ExternalLinkage, name, m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  bool found = false;
  if (llvm::GlobalVariable *g = m.getGlobalVariable(list)) {
    SmallVector<std::pair<uint64_t, llvm::Function *>> calls;
    if (auto *init = dyn_cast<llvm::ConstantArray>(g->getInitializer()))
      for (llvm::Value *op : init->operands()) {
        auto *entry = cast<llvm::ConstantStruct>(op);
        calls.push_back({cast<llvm::ConstantInt>(entry->getOperand(0))->getZExtValue(),
                         cast<llvm::Function>(entry->getOperand(1))});
      }
    llvm::stable_sort(calls, [](auto &a, auto &c) { return a.first < c.first; });
    for (auto &[priority, callee] : calls)
      b.CreateCall(callee);
    g->eraseFromParent();
    found = true;
  }
  b.CreateRetVoid();
  return found;
}

/// gpu-to-llvm builds each launch's parameter array with an alloca at the
/// launch, so a launch inside a loop (KDA's chunk loop) grows the stack on
/// every iteration: 8 MiB are gone after ~4000 tokens. The arrays are filled
/// and consumed in their block by one launch call (cuLaunchKernel copies the
/// parameters when called, asynchronous launches included), so one slot per
/// site in the entry block serves every iteration. Allocas used outside
/// their block are left alone.
void hoistStaticAllocas(llvm::Module &m) {
  for (llvm::Function &f : m) {
    if (f.isDeclaration())
      continue;
    llvm::BasicBlock &entry = f.getEntryBlock();
    SmallVector<llvm::AllocaInst *> moves;
    for (llvm::BasicBlock &bb : f)
      if (&bb != &entry)
        for (llvm::Instruction &i : bb)
          if (auto *a = dyn_cast<llvm::AllocaInst>(&i);
              a && !a->isStaticAlloca() && isa<llvm::ConstantInt>(a->getArraySize()) &&
              llvm::all_of(a->users(), [&](llvm::User *u) {
                // Used within its own block only: nothing carries its
                // address from one iteration to the next.
                auto *ui = dyn_cast<llvm::Instruction>(u);
                return ui && ui->getParent() == &bb;
              }))
            moves.push_back(a);
    for (llvm::AllocaInst *a : moves)
      a->moveBefore(entry.getFirstInsertionPt());
  }
}

/// Runs `mpm` on `m` with `pb`'s analyses.
void runPipeline(llvm::Module &m, llvm::PassBuilder &pb, llvm::ModulePassManager &mpm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  mpm.run(m, mam);
}

/// LLVM's O2 module pipeline (what mlir::makeOptimizingTransformer runs)
/// without CalledValuePropagation: that pass only annotates indirect calls,
/// which k3's code has none of, and its solver grows with the product of
/// call sites and pointer arguments: on K3's 93 layer calls, each passing a
/// layer's weights as memref descriptors, it took 87 of the 92 seconds the
/// pipeline ran (opt -time-passes).
void optimize(llvm::Module &m, llvm::TargetMachine &tm) {
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = true;
  tuning.LoopInterleaving = true;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassInstrumentationCallbacks callbacks;
  callbacks.registerShouldRunOptionalPassCallback(
      [](llvm::StringRef pass, llvm::Any) { return pass != "CalledValuePropagationPass"; });
  llvm::PassBuilder pb(&tm, tuning, std::nullopt, &callbacks);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  runPipeline(m, pb, mpm);
}

/// Whether `f` branches back to a block at or before the branch (the
/// lowered loops' back edges: MLIR emits a loop's blocks in order).
bool hasLoop(llvm::Function &f) {
  llvm::DenseMap<llvm::BasicBlock *, unsigned> order;
  for (llvm::BasicBlock &bb : f)
    order[&bb] = order.size();
  for (llvm::BasicBlock &bb : f)
    for (llvm::BasicBlock *succ : llvm::successors(&bb))
      if (order.lookup(succ) <= order.lookup(&bb))
        return true;
  return false;
}

/// Moves `entries` (the entry points, their C wrappers and packed entries)
/// out of `m` into a module of their own and returns it. What they use from
/// `m` stays there, made visible to the linker (hidden: not exported from
/// the shared object).
std::unique_ptr<llvm::Module> splitEntries(llvm::Module &m,
                                           const llvm::SmallPtrSetImpl<llvm::Function *> &entries) {
  // The globals an entry reads, directly or inside constants.
  llvm::SmallPtrSet<llvm::Constant *, 32> seen;
  std::function<void(llvm::Value *)> expose = [&](llvm::Value *v) {
    if (auto *gv = dyn_cast<llvm::GlobalValue>(v)) {
      auto *f = dyn_cast<llvm::Function>(gv);
      if (gv->hasLocalLinkage() && !(f && entries.contains(f))) {
        // An unnamed global (OpenMP's source locations) would get a
        // different made-up name in each object: name it.
        if (!gv->hasName())
          gv->setName("k3.shared");
        gv->setLinkage(llvm::GlobalValue::ExternalLinkage);
        gv->setVisibility(llvm::GlobalValue::HiddenVisibility);
      }
    } else if (auto *c = dyn_cast<llvm::Constant>(v)) {
      // Constant expressions, structs and arrays (a global's descriptor
      // folded into a constant struct) hold globals too.
      if (seen.insert(c).second)
        for (llvm::Value *op : c->operands())
          expose(op);
    }
  };
  for (llvm::Function *f : entries)
    for (llvm::Instruction &i : llvm::instructions(*f))
      for (llvm::Value *v : i.operands())
        expose(v);
  llvm::ValueToValueMapTy map;
  std::unique_ptr<llvm::Module> host = llvm::CloneModule(
      m, map, [&](const llvm::GlobalValue *gv) {
        auto *f = dyn_cast<llvm::Function>(gv);
        return f && entries.contains(f);
      });
  for (llvm::Function *f : entries)
    f->dropAllReferences();
  for (llvm::Function *f : entries)
    f->eraseFromParent();
  return host;
}

/// Whether `v` is an argument of its function or an address computed from
/// one, reading at most `reads` pointers on the way: the packed entry's
/// argument holds the descriptors' addresses (one read), a descriptor holds
/// the buffer's (a second read would be the buffer's data, which a call may
/// write).
bool fromArgument(llvm::Value *v, int reads) {
  while (true) {
    if (auto *gep = dyn_cast<llvm::GetElementPtrInst>(v)) {
      v = gep->getPointerOperand();
    } else if (auto *load = dyn_cast<llvm::LoadInst>(v); load && reads-- > 0) {
      v = load->getPointerOperand();
    } else {
      return isa<llvm::Argument>(v);
    }
  }
}

/// Moves each read of an argument's memref descriptor (and the address it
/// reads) out of the entry block to just before its uses, when they all
/// lie in one later block. The wrapper reads every descriptor up front:
/// K3's prefill, tens of thousands of loads in one block, one DAG for the
/// instruction selector. The descriptors are the runtime's and nothing in
/// the entry point writes them (the layer calls get their fields, never
/// their addresses), so a read may move past the calls before its use.
void sinkDescriptorReads(llvm::Function &f) {
  llvm::BasicBlock &entry = f.getEntryBlock();
  // Descriptor fields: at the argument (the C wrapper) or one read below it
  // (the packed entry, the wrapper inlined).
  const int reads = f.getName().starts_with("k3_entry_") ? 1 : 0;
  SmallVector<llvm::Instruction *> candidates;
  for (llvm::Instruction &i : entry)
    if ((isa<llvm::LoadInst>(i) && cast<llvm::LoadInst>(i).isSimple() &&
         fromArgument(cast<llvm::LoadInst>(i).getPointerOperand(), reads)) ||
        (isa<llvm::GetElementPtrInst>(i) && fromArgument(&i, reads)))
      candidates.push_back(&i);
  // Last first: an address moves after the read that uses it.
  for (llvm::Instruction *i : llvm::reverse(candidates)) {
    llvm::BasicBlock *target = nullptr;
    bool movable = !i->use_empty();
    for (llvm::User *u : i->users()) {
      auto *user = dyn_cast<llvm::Instruction>(u);
      if (!user || isa<llvm::PHINode>(user) || user->getParent() == &entry ||
          (target && user->getParent() != target)) {
        movable = false;
        break;
      }
      target = user->getParent();
    }
    if (!movable)
      continue;
    llvm::Instruction *first = nullptr;
    for (llvm::Instruction &j : *target)
      if (llvm::is_contained(i->users(), &j)) {
        first = &j;
        break;
      }
    i->moveBefore(first->getIterator());
  }
}

/// What the entry points need before instruction selection: the core
/// inlined into its wrapper, and the descriptors that inlining packs and
/// unpacks folded away (SROA, instcombine). Nothing that grows faster than
/// the code.
void tidyEntries(llvm::Module &m, llvm::TargetMachine &tm) {
  llvm::PassBuilder pb(&tm);
  llvm::ModulePassManager mpm;
  mpm.addPass(llvm::AlwaysInlinerPass());
  llvm::FunctionPassManager fpm;
  fpm.addPass(llvm::SROAPass(llvm::SROAOptions::ModifyCFG));
  fpm.addPass(llvm::EarlyCSEPass());
  fpm.addPass(llvm::InstCombinePass());
  fpm.addPass(llvm::SimplifyCFGPass());
  mpm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(fpm)));
  mpm.addPass(llvm::GlobalDCEPass());
  runPipeline(m, pb, mpm);
  // Then one block per call: the instruction selector builds one DAG per
  // block and its scheduler grows faster than linearly in it (a K3 entry
  // point is one block of 93 layer calls, each passing hundreds of scalar
  // descriptor fields); blocks of one call keep it linear in the depth.
  for (llvm::Function &f : m) {
    SmallVector<llvm::Instruction *> splits;
    for (llvm::Instruction &i : llvm::instructions(f))
      if (isa<llvm::CallInst>(i) && !i.isTerminator() && !i.getNextNode()->isTerminator())
        splits.push_back(i.getNextNode());
    for (llvm::Instruction *at : splits)
      llvm::SplitBlock(at->getParent(), at);
    if (!f.isDeclaration())
      sinkDescriptorReads(f);
  }
}

/// Writes `m`'s object code to a new temporary file.
bool emitObject(llvm::Module &m, llvm::TargetMachine &tm, SmallString<128> &path,
                std::string &error) {
  int fd;
  if (llvm::sys::fs::createTemporaryFile("k3-cpu", "o", fd, path)) {
    error = "cannot create temporary files for the object";
    return false;
  }
  llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, out, nullptr, llvm::CodeGenFileType::ObjectFile)) {
    error = "the target cannot emit objects";
    return false;
  }
  pm.run(m);
  return true;
}

} // namespace

std::string mlir::k3::cpuLevel(StringRef requested, std::string &error) {
  bool x86 = llvm::Triple(llvm::sys::getProcessTriple()).getArch() == llvm::Triple::x86_64;
  if (requested == "host") {
    // A named level rather than the build machine's exact CPU, so that a
    // binary runs on other machines of the same level; the runtime checks
    // the level before loading. The level is the runtime's own
    // (k3rt_cpu_level: x86-64-v4 with AVX-512 F/BW/CD/DQ/VL, whose full-width
    // FMA units run the blocked GEMMs up to 2x faster on Zen 5 and Intel
    // server cores; else v3 with AVX2, FMA and BMI2; else x86-64), capped by
    // K3RT_CPU_LEVEL for both, so that a lesser machine's builds and runs can
    // be checked on this one.
    if (!x86)
      return "generic";
    error = k3rt::cpuLevelCapError();
    return error.empty() ? k3rt_cpu_level() : "";
  }
  if (k3rt::namedCpuLevel(requested.str())) {
    if (x86)
      return requested.str();
    error = "--cpu=" + requested.str() + ": this machine is not x86-64";
    return "";
  }
  error = "--cpu=" + requested.str() + ": expected host, x86-64, x86-64-v3 or x86-64-v4";
  return "";
}

int64_t mlir::k3::cpuVectorLanes(StringRef level) {
  return level == "x86-64-v4" ? 16 : level == "x86-64-v3" ? 8 : 4;
}

bool mlir::k3::emitHostSharedObject(ModuleOp module, std::vector<uint8_t> &so,
                                    const std::string &cpu, std::string &error, bool gpuHost) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  DialectRegistry registry;
  registerAllToLLVMIRTranslations(registry);
  module->getContext()->appendDialectRegistry(registry);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> m = translateModuleToLLVMIR(module, llvmContext);
  if (!m) {
    error = "translation to LLVM IR failed";
    return false;
  }
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string lookupError;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target) {
    error = "no LLVM target for " + triple.str() + ": " + lookupError;
    return false;
  }
  // Multiply-adds fuse into FMAs wherever the backend finds them (the
  // vectorised contractions' broadcast-multiply-accumulate rows): one
  // rounding instead of two, within every numeric threshold of the tests.
  llvm::TargetOptions options;
  options.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, "", options, llvm::Reloc::PIC_));
  m->setDataLayout(tm->createDataLayout());
  m->setTargetTriple(triple);

  SmallVector<std::pair<llvm::Function *, std::string>> entries;
  for (llvm::Function &f : *m)
    if (f.getName().starts_with("_mlir_ciface_") && !f.isDeclaration())
      entries.push_back({&f, f.getName().drop_front(13).str()});
  if (entries.empty()) {
    error = "the module has no entry points (llvm.emit_c_interface)";
    return false;
  }
  llvm::SmallPtrSet<llvm::Function *, 8> entrySet;
  for (auto &[fn, name] : entries) {
    addPackedEntry(*m, *fn, name);
    // The runtime calls k3_entry_<name> only: the C wrapper goes into it,
    // and with it its call passing every descriptor's address (K3: 1,500),
    // whose reads then move to their uses (sinkDescriptorReads).
    fn->setLinkage(llvm::GlobalValue::InternalLinkage);
    fn->removeFnAttr(llvm::Attribute::NoInline);
    fn->addFnAttr(llvm::Attribute::AlwaysInline);
    // The entry point itself takes every memref descriptor expanded into
    // scalars (K3's prefill: over 15,000), and its C wrapper calls it with
    // them all: one call LLVM's instruction selection takes minutes over
    // (its DAG grows with the square of the arguments). Inlined into the
    // wrapper, which reads the descriptors where they are used, that call
    // and those arguments are gone; nothing else calls the entry point.
    if (llvm::Function *core = m->getFunction(name); core && !core->isDeclaration()) {
      core->setLinkage(llvm::GlobalValue::InternalLinkage);
      core->removeFnAttr(llvm::Attribute::NoInline);
      core->addFnAttr(llvm::Attribute::AlwaysInline);
    }
    // An entry point with loops of its own (--unroll-layers, a test's
    // single-op function) is compute: it stays with the kernels, at O2.
    llvm::Function *core = m->getFunction(name);
    if (core && !core->isDeclaration() && hasLoop(*core))
      continue;
    // Likewise one another public function calls: it stays where its
    // caller is.
    SmallVector<llvm::Function *, 3> group{fn, m->getFunction("k3_entry_" + name)};
    if (core && !core->isDeclaration())
      group.push_back(core);
    bool alone = llvm::all_of(group, [&](llvm::Function *f) {
      return llvm::all_of(f->users(), [&](llvm::User *u) {
        auto *call = dyn_cast<llvm::Instruction>(u);
        return call && llvm::is_contained(group, call->getFunction());
      });
    });
    if (alone)
      entrySet.insert(group.begin(), group.end());
  }
  // A GPU host program (one without a launch too): its kernel modules load
  // when the runtime attaches its device, not at dlopen.
  if (gpuHost) {
    listToFunction(*m, "llvm.global_ctors", "k3_gpu_load_modules");
    listToFunction(*m, "llvm.global_dtors", "k3_gpu_unload_modules");
    hoistStaticAllocas(*m);
  }

  // The entry points only sequence calls (the embedding, each layer, the
  // output; launches on a GPU host) and the AttnRes stack's copies: they
  // grow with the depth, and LLVM's optimising pipeline and instruction
  // selector grow faster than that on them (the selector with the square of
  // a block's call arguments: K3's 93 layer calls, each passing its weights
  // as descriptors). They are compiled apart, tidied and then selected
  // without optimisation (fast instruction selection and register
  // allocation, linear in their size); the kernels and layer functions get
  // the O2 pipeline.
  // The parallel loops (k3-cpu-parallel-loops) call into libomp.
  bool openMP = m->getFunction("__kmpc_fork_call") != nullptr;
  bool comm = m->getFunction("k3_comm_collective") || m->getFunction("k3_comm_index");
  // GPU kernels run on the CPU (k3-gpu-launches-to-openmp, which checks
  // every block's team with k3emu_team): the tensor cores' instructions.
  bool emulated = m->getFunction("k3emu_team") != nullptr;
  // Its teams run as fibers on k3emu.c's own definitions of the OpenMP
  // entry points they call; a call to any other would reach libomp from a
  // fiber, with a thread id libomp never gave out.
  if (emulated)
    for (llvm::Function &f : *m) {
      llvm::StringRef name = f.getName();
      if (f.isDeclaration() && (name.starts_with("__kmpc_") || name.starts_with("omp_")) &&
          !llvm::is_contained({"__kmpc_fork_call", "__kmpc_push_num_threads", "__kmpc_barrier",
                               "__kmpc_global_thread_num", "omp_get_thread_num",
                               "omp_get_num_threads"},
                              name)) {
        error = "the emulated kernels call the OpenMP runtime's " + name.str() +
                ", which the emulation (lib/Target/Cpu/k3emu.c) does not provide";
        return false;
      }
    }
  std::unique_ptr<llvm::Module> host = splitEntries(*m, entrySet);
  std::unique_ptr<llvm::TargetMachine> hostTm(target->createTargetMachine(
      triple, cpu, "", options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::None));
  // x86-64-v4's tuning prefers 256-bit vectors (Skylake-era cores lower
  // their clock under 512-bit work), so LLVM's vectorisers would fill only
  // half of each AVX-512 register: the decode GEMVs' rows measured 23-26
  // GB/s on one Zen 5 core at 256 bits, 27-29 at 512.
  if (cpu == "x86-64-v4" && !gpuHost)
    for (llvm::Function &f : *m)
      if (!f.isDeclaration())
        f.addFnAttr("prefer-vector-width", "512");
  optimize(*m, *tm);
  tidyEntries(*host, *hostTm);

  // Every temporary file goes when this function returns, on every path.
  SmallString<128> objPath, hostObjPath, soPath, supportPath;
  std::vector<std::unique_ptr<llvm::FileRemover>> removers;
  auto removeLater = [&](const SmallString<128> &path) {
    removers.push_back(std::make_unique<llvm::FileRemover>(path));
  };
  if (llvm::sys::fs::createTemporaryFile("k3-cpu", "so", soPath) ||
      llvm::sys::fs::createTemporaryFile("k3-cpu-support", "c", supportPath)) {
    error = "cannot create temporary files for the object";
    return false;
  }
  removeLater(soPath);
  removeLater(supportPath);
  {
    std::ofstream support(supportPath.str().str());
    support << kSupportC;
    if (comm)
      support << kCommOpsHeader << kCommSupportC;
    if (gpuHost)
      support << kGpuOpsHeader << kGpuSupportC;
    if (emulated)
      support << kEmulationSource;
  }
  bool emitted = emitObject(*m, *tm, objPath, error);
  if (!objPath.empty())
    removeLater(objPath);
  if (!emitted)
    return false;
  emitted = emitObject(*host, *hostTm, hostObjPath, error);
  if (!hostObjPath.empty())
    removeLater(hostObjPath);
  if (!emitted)
    return false;
  // Link with the host C compiler: libm for the math calls (libm lowering).
  auto cc = llvm::sys::findProgramByName("cc");
  if (!cc) {
    error = "no host C compiler ('cc') to link the CPU kernels";
    return false;
  }
  std::string ccPath = *cc;
  SmallVector<StringRef> argv{ccPath, "-shared", "-fPIC", "-O2", "-o", soPath,
                              objPath, hostObjPath, supportPath, "-lm"};
  if (openMP)
    argv.push_back("-l:libomp.so.5"); // Debian's libomp5 (libomp-dev)
  std::string linkError;
  int rc = llvm::sys::ExecuteAndWait(ccPath, argv, std::nullopt, {}, 0, 0, &linkError);
  if (rc != 0) {
    error = "linking the CPU kernels failed (cc exited " + std::to_string(rc) +
            (linkError.empty() ? "" : ": " + linkError) + ")";
    return false;
  }
  std::ifstream in(soPath.str().str(), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string bytes = ss.str();
  so.assign(bytes.begin(), bytes.end());
  return true;
}
