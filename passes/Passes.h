//===- Passes.h - K3 passes -------------------------------------*- C++ -*-===//
//
// Part of k3. Declarations and registration of every K3 pass.
//
//===----------------------------------------------------------------------===//

#ifndef PASSES_PASSES_H
#define PASSES_PASSES_H

#include "dialects/K3/K3Dialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

#include <optional>
#include <string>

namespace mlir::k3 {

/// k3-gpu-paged-attend's default keys per split block (GpuPagedAttend.cpp;
/// the pass option's default, so before the declarations).
inline constexpr int64_t kPagedSplitKeys = 1024;

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Registers the named pipelines (`k3-cpu-to-llvm`).
void registerK3Pipelines();

/// What the CPU path's `k3` stage does: decode MXFP4 weights to bf16, and
/// rewrite multi-token KDA into chunks of `kdaChunk` tokens (sub-chunks of
/// `kdaSubChunk`) or keep its token recurrence.
struct CpuK3Options {
  /// A grid's import (a `shard.grid` and annotations, lib/Import): first
  /// sharding-propagation and shard-partition, to one rank's program.
  bool partition = false;
  bool dequantize = true;
  /// Routed experts: keep the checkpoint's format, quantize float experts
  /// to MXFP4 (k3-quantize-mxfp4 with `scaleRule`), or decode MXFP4 ones to
  /// bf16 ("none"). `expertInputs` "mxfp8" rounds the expert GEMMs' inputs.
  std::string quantizeExperts = "keep";
  std::string scaleRule = "floor";
  std::string expertInputs = "none";
  bool kdaChunked = true;
  int64_t kdaChunk = 16;
  int64_t kdaSubChunk = 16;
  /// > 1: KDA as that many composed segments (k3-segment-kda).
  int64_t kdaSegments = 1;
  /// k3-mla-absorb: multi-token MLA form (cost, absorbed, expanded) and the
  /// key splits of a decode step.
  std::string mlaPrefill = "cost";
  std::string mlaDecode = "absorbed";
  int64_t mlaDecodeSplits = 1;
  /// Each layer kind as one private function called per layer
  /// (k3-outline-layers); false keeps the entry points unrolled.
  bool layerFunctions = true;
  /// > 0: the CPU GEMMs' float weights stored as panels of that many
  /// columns (k3-pack-weight-panels); 0 keeps the checkpoint's layout.
  int64_t panelColumns = 0;
  /// With panelColumns: the stacked float experts as panels too.
  bool panelExperts = false;
};

/// The CPU path's stages (passes/Pipelines/CpuPipeline.cpp), one per phase:
/// `k3` (decompose, chunk KDA, dequantize MXFP4 when asked, outline
/// weights, then each layer kind as one function: k3-outline-layers), `tiles` (linalg on tensors) and `cpu` (bufferized, LLVM
/// dialect).
void buildCpuK3Stage(OpPassManager &pm, const CpuK3Options &options);
/// The forms convert-k3-to-linalg picks where there is a choice: the CPU's
/// (grouped MoE, per-head KDA decode, KDA prefill and the router as host
/// loops) or the GPU's (MXFP4 experts as k3.moe_experts and float ones as
/// slot GEMMs, batched decode, KDA prefill as two chunk kernels, pairwise
/// for an unbounded decay, and a column scan where they do not fit, the
/// router per (token, pick): no data-dependent, per-token or
/// per-head host loops), and MLA decode's key parts: the op's `splits` in
/// turn (0) or parts of that many keys side by side (the GPU's split-K).
struct LinalgForms {
  std::string moeDispatch, kdaDecode, kdaPrefill, router;
  int64_t mlaSplitKeys = 0;
  /// `parts` or `fused` (k3.attend_parts: one kernel, the GPU default).
  std::string mlaDecode = "parts";
  /// k3-round-contraction-inputs after the lowering (CPU builds only).
  bool bf16ContractionInputs = false;
  /// convert-k3-to-linalg's `linear`: `blocked` (the CPU's GEMMs) or `dot`.
  std::string linear = "dot";
  /// convert-k3-to-linalg's `panel-columns`: 16 (two AVX2 vectors of f32)
  /// or 32 (two AVX-512 vectors).
  int64_t panelColumns = 16;
  /// convert-k3-to-linalg's `attn-res`: `linalg` or `kernel`
  /// (k3.attn_res_mix, one kernel on a GPU).
  std::string attnRes = "linalg";
  /// convert-k3-to-linalg's `mla-paged`: `loops` or `kernel`
  /// (k3.paged_attend, one kernel on a GPU).
  std::string mlaPaged = "loops";
  /// convert-k3-to-linalg's `norm`: `linalg` or `kernel` (k3.row_norm, one
  /// kernel on a GPU).
  std::string norm = "linalg";
  static LinalgForms cpu() {
    LinalgForms forms{"grouped", "heads", "loops", "loops", 0, "parts"};
    forms.linear = "blocked";
    return forms;
  }
  static LinalgForms gpu() {
    LinalgForms forms{"mma", "kernel", "chunks", "picks", 256, "fused"};
    forms.attnRes = "kernel";
    forms.mlaPaged = "kernel";
    forms.norm = "kernel";
    return forms;
  }
};
void buildCpuTilesStage(OpPassManager &pm, const LinalgForms &forms = LinalgForms::cpu());
/// Bufferization, the loops (reductions carrying their accumulators, fills
/// folded in: k3-gpu-register-accumulators, as on the GPU), OpenMP, LLVM.
void buildCpuLlvmStage(OpPassManager &pm);

/// The bounds of attnResTeam (and rowNormTeam): threads a block, and
/// channels a thread keeps in registers.
inline constexpr int64_t kRowTeamMaxThreads = 256;
inline constexpr int64_t kRowTeamMaxChannels = 32;
/// k3-gpu-attn-res's threads a block for rows of `d` values: the largest
/// power of two up to 256 that divides d, if it is at least 32 and leaves a
/// thread at most 32 channels (kept in registers); else 0 (the op stays
/// linalg).
int64_t attnResTeam(int64_t d);
/// k3-gpu-row-norm's threads a block for rows of `d` values: attnResTeam's
/// rule (a thread keeps its channels in registers between the sum and the
/// scaling).
inline int64_t rowNormTeam(int64_t d) { return attnResTeam(d); }

/// k3-gpu-paged-attend's threads a block for a latent width `l`: the
/// largest power of two up to 128 that divides l, if it is at least 32 and
/// leaves a thread at most 16 columns; else 0 (k3.mla_paged keeps the
/// loop form).
int64_t pagedAttendTeam(int64_t l);

/// Whether k3-gpu-attend-parts builds its kernel for rows of `d` values
/// and `l` value columns (registers and shared memory); else `why` says
/// what is too large.
bool attendPartsKernelFits(int64_t d, int64_t l, std::string *why = nullptr);

/// Whether k3-gpu-kda-chunks builds its kernels for `dk` key and `dv` value
/// channels per head (registers and shared memory); else `why` says what
/// is too large.
bool kdaChunksKernelFits(int64_t dk, int64_t dv, std::string *why = nullptr);
/// 32-bit words per (chunk, value head) record of k3.kda_chunks' workspace
/// (k3-gpu-kda-chunks' layout).
int64_t kdaChunksWorkspaceWords(int64_t dk, int64_t dv);

/// A GPU target: the NVPTX chip and PTX features, whether contractions use
/// warpgroup MMA (sm_90a) or mma.sync, and the CUDA toolkit whose libdevice
/// the kernels' math functions link against.
struct GpuChip {
  std::string chip;
  std::string features;
  bool wgmma = false;
  /// Streaming multiprocessors of the chip's largest parts (H100/H200: 132,
  /// A100: 108): loops with fewer blocks leave SMs idle (k3-gpu-map-loops).
  int64_t sms = 0;
  std::string toolkit = "/usr/local/cuda";
};
/// `sm_90a` or `sm_80`; nullopt for anything else.
std::optional<GpuChip> gpuChip(llvm::StringRef target);

/// The GPU path's stages (passes/Pipelines/GpuPipeline.cpp): `tiles`
/// (linalg on tensors, contractions untiled), `gpu` (host program +
/// gpu.module kernels, `threads` per block), `ptx` (kernels as PTX in
/// gpu.binary ops) and the host program to the LLVM dialect.
void buildGpuTilesStage(OpPassManager &pm, const LinalgForms &forms = LinalgForms::gpu());
/// `pagedSplitKeys`: keys per block of decode_batch's paged MLA attention
/// (k3-gpu-paged-attend's split-keys; 0: one block per head and request).
void buildGpuStage(OpPassManager &pm, const GpuChip &chip, int64_t threads = 128,
                   int64_t pagedSplitKeys = kPagedSplitKeys);
/// `k3-compile --emulate`: the gpu stage's kernels up to their launches,
/// which then run on the CPU as OpenMP teams (k3-gpu-launches-to-openmp);
/// then that program to the LLVM dialect, as the CPU's cpu stage lowers.
void buildGpuEmulationStage(OpPassManager &pm, const GpuChip &chip, int64_t threads = 128,
                            int64_t pagedSplitKeys = kPagedSplitKeys);
void buildEmulationLlvmStage(OpPassManager &pm);
void buildPtxStage(OpPassManager &pm, const GpuChip &chip);
void buildGpuHostStage(OpPassManager &pm);
/// Registers `k3-gpu-to-nvvm`.
void registerK3GpuPipeline();

} // namespace mlir::k3

#endif // PASSES_PASSES_H
