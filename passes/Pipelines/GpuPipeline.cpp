//===- GpuPipeline.cpp - k3 tiles to NVVM kernels and a host program -----===//
//
// Part of k3. The GPU path after the shared `k3` stage, one stage per named
// phase of DESIGN.md §2, and the named pipeline `k3-gpu-to-nvvm`:
//
//   tiles: convert-k3-to-linalg, convert-elementwise-to-linalg, canonicalize
//          (the CPU's tiles stage without k3-tile-contractions: that pass is
//          the CPU's register mapping of the `k3.tile` marks; by default
//          LinalgForms::gpu(): the MoE's MXFP4 experts as k3.moe_experts
//          (float experts as slot GEMMs), the KDA decode step as
//          k3.kda_step, AttnRes as k3.attn_res_mix, RMSNorm of [R, D]
//          rows as k3.row_norm, KDA prefill as two
//          chunk kernels and MLA
//          decode's keys in parts side by side, the forms without
//          data-dependent or per-head host loops), then
//          k3-gpu-batch-kda-step (decode_batch's loop of KDA steps as
//          one batched step), k3-gpu-fuse-elementwise (one kernel per
//          elementwise chain), k3-gpu-fuse-row-norms (an input norm in its
//          AttnRes kernel, the MoE's combine over picks in its latent
//          norm's),
//          k3-lower-collectives (a sharded binary's shard ops, as on the CPU)
//   gpu:   eliminate-empty-tensors (a result inserted into a larger
//          tensor is computed in that one's buffer where bufferization
//          finds it safe: no copy kernel then), then
//          one-shot bufferization (an argument updated in place returned
//          as itself: k3-return-arguments; layer results freed after
//          their last use: k3-entry-deallocations), collectives as host calls on
//          the kernels' (managed) buffers (k3-comm-to-calls: NCCL at run
//          time; k3-gpu-async-launches waits for the stream before each,
//          as before any call), scf.forall as scf.parallel (mapped like
//          the rest), contractions on tensor cores
//          (k3-gpu-mma-contractions: wgmma on sm_90a, mma.sync on sm_80;
//          an elementwise op on a fresh result in the kernel's epilogue),
//          a fused MLA decode's parts as one kernel (k3-gpu-attend-parts),
//          KDA prefill's chunks as two kernels (k3-gpu-kda-chunks), the
//          KDA decode step as one (k3-gpu-kda-step), AttnRes as one
//          (k3-gpu-attn-res), RMSNorm rows as one (k3-gpu-row-norm), the
//          MXFP4 experts as three (k3-gpu-moe-experts),
//          buffer copies as linalg (k3-gpu-device-copies), reductions
//          to loops accumulating in registers, a zero fill before one
//          folded into it (k3-gpu-register-accumulators), the rest of
//          linalg → scf.parallel,
//          k3-gpu-map-loops (blocks and threads; a static nest with fewer
//          blocks than SMs gets smaller ones, down to a warp),
//          convert-parallel-loops-to-gpu, k3-gpu-merge-launches
//          (independent launches side by side in one: a decode layer's
//          projections of one row),
//          gpu-kernel-outlining, k3-gpu-dedupe-kernels (one kernel for
//          identical outlined ones: the layer kinds share theirs),
//          k3-share-host-memory, k3-gpu-async-launches:
//          a host program of chained async `gpu.launch_func`s (waits only
//          before host memory use) and one `gpu.module` per kernel. The
//          async pass runs last: canonicalize drops a wait on a fresh
//          `gpu.wait async` token, which upstream reads as an empty stream
//          but on the runtime's one stream is a full synchronisation.
//   ptx:   the kernels to NVVM (math functions become libdevice calls,
//          linked from the CUDA toolkit), then LLVM's NVPTX backend
//          (gpu-module-to-binary, format=isa: PTX text in `gpu.binary`)
//   host:  the host program to the LLVM dialect (gpu-to-llvm: launches
//          become mgpu* calls, which the runtime's CUDA device implements)
//
// `--emulate` replaces everything after the gpu stage's launches: they run
// on the CPU as OpenMP teams (k3-gpu-launches-to-openmp), and the program is
// lowered as the CPU's cpu stage lowers (kEmulationLlvmStage).
//
// k3-compile runs ptxas between `ptx` and `host` (lib/Target/Gpu). bf16
// conversions are expanded to integer ops on both sides (the host needs it,
// see CpuPipeline.cpp; on the device it is a handful of integer ops).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"

namespace {

constexpr const char *kGpuTilesStage =
    "convert-k3-to-linalg{{moe-dispatch={0} kda-decode={1} kda-prefill={2} router={3} mla-split-keys={4} mla-decode={5} attn-res={6} mla-paged={7} norm={8}},"
    "convert-elementwise-to-linalg,canonicalize,k3-gpu-batch-kda-step,"
    "k3-gpu-fuse-elementwise,canonicalize,k3-gpu-fuse-row-norms,k3-lower-collectives";

constexpr const char *kGpuStage =
    "eliminate-empty-tensors,one-shot-bufferize{{bufferize-function-boundaries "
    "allow-return-allocs-from-loops "
    "function-boundary-type-conversion=identity-layout-map},"
    "cse,canonicalize,drop-equivalent-buffer-results,func.func(buffer-loop-hoisting),"
    "ownership-based-buffer-deallocation,canonicalize,k3-simplify-deallocations,"
    "k3-return-arguments,k3-entry-deallocations,bufferization-lower-deallocations,cse,canonicalize,"
    "convert-bufferization-to-memref,k3-comm-to-calls,scf-forall-to-parallel,k3-gpu-mma-contractions{{wgmma={1}},k3-gpu-attend-parts,k3-gpu-kda-chunks,k3-gpu-kda-step,k3-gpu-attn-res,k3-gpu-row-norm,k3-gpu-paged-attend{{split-keys={3} sms={2}},k3-gpu-moe-experts,"
    "k3-gpu-device-copies,"
    "k3-gpu-register-accumulators,convert-linalg-to-parallel-loops,"
    "k3-gpu-map-loops{{threads={0} min-blocks={2}},convert-parallel-loops-to-gpu,gpu-launch-sink-index-computations,"
    "k3-gpu-merge-launches";

/// The kernels into modules of their own, a host program of launches.
constexpr const char *kOutlineStage =
    "gpu-kernel-outlining,k3-gpu-dedupe-kernels,"
    "k3-share-host-memory,canonicalize,cse,k3-gpu-async-launches";

/// --emulate's cpu phase: the teams' program to the LLVM dialect, as the
/// CPU's cpu stage lowers after its loops (CpuPipeline.cpp).
constexpr const char *kEmulationLlvmStage =
    "convert-scf-to-cf,expand-strided-metadata,lower-affine,"
    "arith-expand{include-bf16=true include-f8e8m0=true},"
    "convert-math-to-llvm{approximate-log1p=false},convert-math-to-libm,"
    "convert-openmp-to-llvm,convert-vector-to-llvm,finalize-memref-to-llvm,"
    "convert-arith-to-llvm,convert-index-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,"
    "convert-ub-to-llvm,reconcile-unrealized-casts";

constexpr const char *kPtxStage =
    "arith-expand{{include-bf16=true include-f8e8m0=true},convert-scf-to-cf,"
    "expand-strided-metadata,lower-affine,"
    "nvvm-attach-target{{chip={0} features={1} O=3},"
    "gpu.module(convert-gpu-to-nvvm,convert-nvvm-to-llvm,canonicalize,cse,reconcile-unrealized-casts),"
    "gpu-module-to-binary{{format=isa toolkit={2}}";

constexpr const char *kHostStage =
    "convert-math-to-llvm{approximate-log1p=false},convert-math-to-libm,"
    "finalize-memref-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,"
    "gpu-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,convert-ub-to-llvm,"
    "reconcile-unrealized-casts";

/// The pipeline texts name registered passes only (see CpuPipeline.cpp).
void add(mlir::OpPassManager &pm, const std::string &pipeline) {
  (void)mlir::parsePassPipeline(pipeline, pm);
}

} // namespace

void mlir::k3::buildGpuTilesStage(OpPassManager &pm, const LinalgForms &forms) {
  add(pm, llvm::formatv(kGpuTilesStage, forms.moeDispatch, forms.kdaDecode, forms.kdaPrefill,
                        forms.router, forms.mlaSplitKeys, forms.mlaDecode, forms.attnRes, forms.mlaPaged, forms.norm)
              .str());
}

void mlir::k3::buildGpuStage(OpPassManager &pm, const GpuChip &chip, int64_t threads,
                             int64_t pagedSplitKeys) {
  add(pm, llvm::formatv(kGpuStage, threads, chip.wgmma, chip.sms, pagedSplitKeys).str());
  add(pm, kOutlineStage);
}

void mlir::k3::buildGpuEmulationStage(OpPassManager &pm, const GpuChip &chip, int64_t threads,
                                      int64_t pagedSplitKeys) {
  add(pm, llvm::formatv(kGpuStage, threads, chip.wgmma, chip.sms, pagedSplitKeys).str());
  add(pm, "k3-gpu-launches-to-openmp,canonicalize,cse");
}

void mlir::k3::buildEmulationLlvmStage(OpPassManager &pm) { add(pm, kEmulationLlvmStage); }

void mlir::k3::buildPtxStage(OpPassManager &pm, const GpuChip &chip) {
  add(pm, llvm::formatv(kPtxStage, chip.chip, chip.features, chip.toolkit).str());
}

void mlir::k3::buildGpuHostStage(OpPassManager &pm) { add(pm, kHostStage); }

std::optional<mlir::k3::GpuChip> mlir::k3::gpuChip(llvm::StringRef target) {
  // PTX ISA 8.0 (CUDA 12.0) is the first with sm_90a; LLVM's default
  // (+ptx60) cannot target it. sm_80 uses the same ISA version.
  if (target == "sm_90a")
    return GpuChip{"sm_90a", "+ptx80", /*wgmma=*/true, /*sms=*/132};
  if (target == "sm_80")
    return GpuChip{"sm_80", "+ptx80", /*wgmma=*/false, /*sms=*/108};
  return std::nullopt;
}

void mlir::k3::registerK3GpuPipeline() {
  PassPipelineRegistration<>(
      "k3-gpu-to-nvvm",
      "Lower k3 ops to sm_90a kernels (PTX in gpu.binary ops) and a host "
      "program in the LLVM dialect (the k3, tiles, gpu, ptx and host stages)",
      [](OpPassManager &pm) {
        buildCpuK3Stage(pm, CpuK3Options{});
        buildGpuTilesStage(pm);
        buildGpuStage(pm, *gpuChip("sm_90a"));
        buildPtxStage(pm, *gpuChip("sm_90a"));
        buildGpuHostStage(pm);
      });
}
