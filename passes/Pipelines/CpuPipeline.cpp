//===- CpuPipeline.cpp - k3 ops to LLVM for the host CPU ------------------===//
//
// Part of k3. The CPU path as three stages, one per named phase of
// DESIGN.md §2, and the named pipeline `k3-cpu-to-llvm` running all three:
//
//   k3:    [a grid's import: sharding-propagation, shard-partition,
//          k3-merge-all-reduces,]
//          k3-decompose-mlp, [k3-segment-kda,] k3-fuse-kda-decode,
//          k3-kda-chunkwise, k3-mla-absorb, [k3-quantize-mxfp4,]
//          k3-dequantize-weights, [k3-pack-weight-panels,]
//          k3-outline-weights, k3-outline-layers
//          (each layer kind one private function, called per layer),
//          k3-pack-layer-weights (its weights one buffer per call)
//   tiles: [k3-split-kda-heads,] convert-k3-to-linalg, k3-tile-contractions,
//          convert-elementwise-to-linalg, canonicalize
//          (linalg on tensors: what each tile computes, target independent)
//   cpu:   one-shot bufferization → parallel loops → OpenMP → LLVM dialect
//          (every loop nest a linalg op or a contraction's tiles make is an
//          scf.parallel; k3-cpu-parallel-loops keeps the outermost of each
//          nest that does enough work and serialises the rest, and
//          convert-scf-to-openmp runs what is left on libomp's pool;
//          k3-scratch-to-stack then puts small temporaries on the stack)
//
// The cpu stage's order is the usual one for linalg on tensors: bufferize
// before lowering linalg to loops, expand strided metadata (and lower the
// affine maps it leaves) before the memref → LLVM conversion, reconcile casts
// last. log1p goes to libm: the LLVM-dialect expansion log(1 + x) rounds
// softplus(-30) to 0. Strided memref copies call `memrefCopy`, which
// lib/Target/Cpu links into each kernel object itself (the runtime loads
// kernels without MLIR's runner library). A layer function's state
// arguments are updated in place and dropped from its results
// (drop-equivalent-buffer-results, after canonicalize has folded the
// branches that yield them). Temporaries are freed by the ownership-based
// deallocation, spelled out as upstream's pipeline is, so that
// k3-return-arguments runs before the deallocations are lowered: an entry
// point returns an argument updated in place (a KDA state) as itself rather
// than as the deallocation's clone of it; k3-entry-deallocations then frees
// each layer call's result after its last use instead of at the end. bf16 conversions are expanded to
// integer ops (round to nearest even): on a CPU without AVX512-BF16, LLVM
// would otherwise call __truncsfbf2, which Debian 12's libgcc lacks.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"

namespace {

constexpr const char *kTilesStage =
    "{8}convert-k3-to-linalg{{moe-dispatch={0} kda-decode={1} kda-prefill={2} router={3} mla-split-keys={4} linear={6} panel-columns={7}},{5}k3-tile-contractions,"
    "convert-elementwise-to-linalg,canonicalize,k3-lower-collectives";

constexpr const char *kCpuStage =
    "k3-approximate-exp,"
    "one-shot-bufferize{{bufferize-function-boundaries "
    "allow-return-allocs-from-loops "
    "function-boundary-type-conversion=identity-layout-map},"
    "cse,canonicalize,drop-equivalent-buffer-results,func.func(buffer-loop-hoisting),"
    "ownership-based-buffer-deallocation,canonicalize,k3-simplify-deallocations,"
    "k3-return-arguments,k3-entry-deallocations,bufferization-lower-deallocations,cse,canonicalize,convert-bufferization-to-memref,k3-comm-to-calls,"
    // The foralls as scf.parallel before the register accumulators (as on
    // the GPU): their legality reads the enclosing parallel loops.
    "convert-vector-to-scf{{full-unroll=true},scf-forall-to-parallel,{0}"
    "convert-linalg-to-parallel-loops,k3-cpu-parallel-loops,convert-scf-to-openmp,canonicalize,func.func(k3-scratch-to-stack),"
    "convert-scf-to-cf,expand-strided-metadata,"
    "lower-affine,"
    "arith-expand{{include-bf16=true include-f8e8m0=true},"
    "convert-math-to-llvm{{approximate-log1p=false},convert-math-to-libm,"
    // After the bf16 expansion: it converts the arith ops inside its regions.
    "convert-openmp-to-llvm,"
    "convert-vector-to-llvm,finalize-memref-to-llvm,"
    "convert-arith-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,convert-ub-to-llvm,"
    "reconcile-unrealized-casts";

/// The pipeline texts name registered passes only: parsing cannot fail
/// unless registration is broken, which the lit tests would show.
void add(mlir::OpPassManager &pm, const char *pipeline) {
  (void)mlir::parsePassPipeline(pipeline, pm);
}

} // namespace

void mlir::k3::buildCpuK3Stage(OpPassManager &pm, const CpuK3Options &options) {
  if (options.partition)
    add(pm, "func.func(sharding-propagation,cse,shard-partition,canonicalize,cse,"
            "k3-merge-all-reduces)");
  pm.addPass(createK3DecomposeMlpPass());
  if (options.kdaSegments > 1)
    pm.addPass(createK3SegmentKdaPass(K3SegmentKdaPassOptions{options.kdaSegments}));
  pm.addPass(createK3FuseKdaDecodePass());
  if (options.kdaChunked)
    pm.addPass(createK3KdaChunkwisePass(
        K3KdaChunkwisePassOptions{options.kdaChunk, options.kdaSubChunk}));
  pm.addPass(createK3MlaAbsorbPass(
      K3MlaAbsorbPassOptions{options.mlaDecodeSplits, options.mlaPrefill, options.mlaDecode}));
  if (options.quantizeExperts == "mxfp4" || options.expertInputs == "mxfp8")
    pm.addPass(createK3QuantizeMxfp4Pass(K3QuantizeMxfp4PassOptions{
        options.scaleRule, options.expertInputs, options.quantizeExperts == "mxfp4"}));
  if (options.dequantize)
    pm.addPass(createK3DequantizeWeightsPass(
        K3DequantizeWeightsPassOptions{options.quantizeExperts == "none"}));
  if (options.panelColumns > 0)
    pm.addPass(createK3PackWeightPanelsPass(
        K3PackWeightPanelsPassOptions{options.panelColumns, options.panelExperts}));
  pm.addPass(createK3OutlineWeightsPass());
  if (options.layerFunctions) {
    pm.addPass(createK3OutlineLayersPass());
    pm.addPass(createK3PackLayerWeightsPass());
  }
}

void mlir::k3::buildCpuTilesStage(OpPassManager &pm, const LinalgForms &forms) {
  add(pm, llvm::formatv(kTilesStage, forms.moeDispatch, forms.kdaDecode, forms.kdaPrefill,
                        forms.router, forms.mlaSplitKeys,
                        forms.bf16ContractionInputs ? "k3-round-contraction-inputs," : "",
                        forms.linear, forms.panelColumns,
                        // The loops form's chunk loop runs per head on one
                        // thread (the scan form is one forall already).
                        forms.kdaPrefill == "loops" ? "k3-split-kda-heads," : "")
              .str()
              .c_str());
}

void mlir::k3::buildCpuLlvmStage(OpPassManager &pm) {
  // Reductions keep their accumulators in registers, as on the GPU: a
  // reduction loop's load and store of its output element each iteration
  // (a chain through memory, which also kept LLVM from vectorising an
  // AttnRes score or a norm's sum of squares) become one load before the
  // loop and one store after. k3-tiny decode at batch 16: 11 % more
  // tokens/s; Kimi-Linear-small unchanged.
  add(pm, llvm::formatv(kCpuStage, "k3-gpu-register-accumulators,").str().c_str());
}

namespace {
/// The lowering forms of `k3-cpu-to-llvm` (convert-k3-to-linalg's options,
/// which diagnose bad values): the CPU's by default, any of the GPU's on
/// request, so that lit tests run those on the CPU too.
struct CpuPipelineOptions : mlir::PassPipelineOptions<CpuPipelineOptions> {
  Option<std::string> moeDispatch{*this, "moe-dispatch",
                                  llvm::cl::desc("grouped, slots or per-token"),
                                  llvm::cl::init(mlir::k3::LinalgForms::cpu().moeDispatch)};
  Option<std::string> kdaDecode{*this, "kda-decode", llvm::cl::desc("heads, per-head or batched"),
                                llvm::cl::init(mlir::k3::LinalgForms::cpu().kdaDecode)};
  Option<std::string> kdaPrefill{*this, "kda-prefill", llvm::cl::desc("loops or scan"),
                                 llvm::cl::init(mlir::k3::LinalgForms::cpu().kdaPrefill)};
  Option<std::string> router{*this, "router", llvm::cl::desc("loops or picks"),
                             llvm::cl::init(mlir::k3::LinalgForms::cpu().router)};
  Option<int64_t> mlaSplitKeys{*this, "mla-split-keys",
                               llvm::cl::desc("0 (the op's splits) or a key part length"),
                               llvm::cl::init(mlir::k3::LinalgForms::cpu().mlaSplitKeys)};
  Option<std::string> linear{*this, "linear", llvm::cl::desc("blocked or dot"),
                             llvm::cl::init(mlir::k3::LinalgForms::cpu().linear)};
  Option<int64_t> panelColumns{*this, "panel-columns", llvm::cl::desc("16 or 32"),
                               llvm::cl::init(mlir::k3::LinalgForms::cpu().panelColumns)};
};
} // namespace

void mlir::k3::registerK3Pipelines() {
  PassPipelineRegistration<CpuPipelineOptions>(
      "k3-cpu-to-llvm",
      "Lower k3 ops through linalg and bufferization to the LLVM dialect for "
      "the host CPU (the k3, tiles and cpu stages)",
      [](OpPassManager &pm, const CpuPipelineOptions &options) {
        CpuK3Options k3Options;
        // The blocked GEMMs read their weights as panels; the dot form
        // reads them as stored.
        if (options.linear == "blocked")
          k3Options.panelColumns = options.panelColumns;
        buildCpuK3Stage(pm, k3Options);
        LinalgForms forms{options.moeDispatch, options.kdaDecode, options.kdaPrefill,
                          options.router, options.mlaSplitKeys};
        forms.linear = options.linear;
        forms.panelColumns = options.panelColumns;
        buildCpuTilesStage(pm, forms);
        buildCpuLlvmStage(pm);
      });
}
