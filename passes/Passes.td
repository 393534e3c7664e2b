//===- Passes.td - K3 passes -----------------------------------*- tablegen -*-===//
//
// Part of k3. Keep the definitions alphabetical; defs end in `Pass`, arguments
// are `k3-<verb>-<noun>` (STYLE §4).
//
//===----------------------------------------------------------------------===//

#ifndef K3_PASSES_TD
#define K3_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertK3ToLinalgPass : Pass<"convert-k3-to-linalg"> {
  let summary = "Lower k3 ops to linalg, tensor, arith and math on tensors";
  let description = [{
    The CPU path's first lowering: each k3 op becomes `linalg.generic`s on
    tensors (f32 statistics and accumulation, results converted to the op's
    element type), ready for one-shot bufferization: every k3 op but
    `k3.mlp` (run `k3-decompose-mlp` first) and `k3.unpack_e2m1` (read by
    its users, then dead). Ops without a lowering are left in place, so a
    later stage reports them.

    `k3.moe` becomes grouped expert GEMMs (GroupedMoePattern.cpp: dispatch by
    counts, offsets and a permutation of the (token, expert) pairs, then one
    register-tiled GEMM pair per expert with its MXFP4 weights decoded into
    [K, 16] panels); with `moe-dispatch=slots`, one loop nest per GEMM over
    every routing slot (token, pick) at once, the expert read and MXFP4
    decoded inside the dot product (SlotMoePattern.cpp: no data-dependent
    host loops); with `moe-dispatch=mma` (the GPU form), packed MXFP4
    experts as one `k3.moe_experts` (tensor-core kernels on a GPU:
    k3-gpu-moe-experts; MmaMoePattern.cpp), a sum over each token's slots
    and the rest as slots; or, with `moe-dispatch=per-token`, one
    matrix-vector product per token and selected expert (the benchmark's
    baseline). `k3.kda_decode` loops over value heads (`kda-decode=heads`:
    as an `scf.forall`, the CPU's threads), or with
    `kda-decode=batched` runs each step for all heads at once, or with
    `kda-decode=kernel` becomes one `k3.kda_step` (one kernel on a GPU:
    k3-gpu-kda-step; KdaStepPattern.cpp). With
    `kda-prefill=scan`, `k3.kda` and `k3.kda_chunked` become one
    `scf.forall` over the state's columns, each scanning all tokens
    (KdaScanPattern.cpp); with `kda-prefill=chunks`, a factored
    `k3.kda_chunked` becomes one `k3.kda_chunks` (two kernels on a GPU:
    k3-gpu-kda-chunks; KdaChunksPattern.cpp) and the rest the scan.
    `k3.router` loops over tokens, or with
    `router=picks` is one loop nest over (token, pick). `k3.mla_absorbed`
    attends over its `splits` key parts in turn; with `mla-split-keys = n`
    (the GPU form) an op with a static token count (decode) cuts its keys
    into parts of n keys side by side (a batch dimension: the parts run as
    blocks of the same kernels) plus one part for the rest, merged by LSE;
    with `mla-decode=fused` as well, the parts are one `k3.attend_parts`
    (one kernel on a GPU: k3-gpu-attend-parts) whose last part is short.
    MXFP4 linear weights are decoded inside the dot products' inner loop
    (with `linear=blocked`, into each K block's weight panels); MXFP4 codes
    must be the bytes of a `k3.unpack_e2m1`. With `attn-res=kernel`,
    `k3.attn_res` becomes one `k3.attn_res_mix` (one kernel on a GPU:
    k3-gpu-attn-res; AttnResMixPattern.cpp) where attnResTeam allows;
    with `norm=kernel`, a `k3.rms_norm` of [R, D] rows becomes one
    `k3.row_norm` (k3-gpu-row-norm; RowNormPattern.cpp) where rowNormTeam
    allows.
  }];
  let options = [
    Option<"moeDispatch", "moe-dispatch", "std::string", [{"grouped"}],
           "How k3.moe runs its experts: grouped (one GEMM per expert over "
           "its tokens), slots (one GEMM over all routing slots), mma (MXFP4 "
           "experts as k3.moe_experts, for k3-gpu-moe-experts; the rest as "
           "slots) or per-token">,
    Option<"kdaDecode", "kda-decode", "std::string", [{"per-head"}],
           "How k3.kda_decode runs: per-head (an scf.for over value heads), "
           "heads (an scf.forall over them: the CPU form), "
           "batched (every step once for all heads) or kernel (k3.kda_step, "
           "for k3-gpu-kda-step: the GPU form)">,
    Option<"attnRes", "attn-res", "std::string", [{"linalg"}],
           "How k3.attn_res runs: linalg (loop nests per candidate) or kernel "
           "(k3.attn_res_mix, for k3-gpu-attn-res: the GPU form, where the "
           "row width allows)">,
    Option<"norm", "norm", "std::string", [{"linalg"}],
           "How k3.rms_norm runs: linalg (the sums of squares, then the "
           "scaling) or kernel (k3.row_norm, for k3-gpu-row-norm: the GPU "
           "form, for [R, D] rows whose width allows)">,
    Option<"mlaPaged", "mla-paged", "std::string", [{"loops"}],
           "How k3.mla_paged attends: loops (per request an scf.for over its "
           "pages, each page a part of an online softmax: the CPU form) or "
           "kernel (k3.paged_attend, for k3-gpu-paged-attend: the GPU form)">,
    Option<"kdaPrefill", "kda-prefill", "std::string", [{"loops"}],
           "How k3.kda and k3.kda_chunked run: loops (a loop over tokens or "
           "chunks, each step a loop nest), scan (one loop nest over the "
           "state's columns, each scanning every token) or chunks (k3.kda_chunked "
           "as k3.kda_chunks, for k3-gpu-kda-chunks, pairwise unless the form "
           "is factored over 16-token multiples; scan where the kernels do not "
           "fit)">,
    Option<"router", "router", "std::string", [{"loops"}],
           "How k3.router picks its top-k: loops (a loop over tokens) or "
           "picks (one loop nest over (token, pick): the GPU form)">,
    Option<"mlaSplitKeys", "mla-split-keys", "int64_t", /*default=*/"0",
           "k3.mla_absorbed with a static token count: 0 runs the op's "
           "splits in turn; n > 0 runs parts of n keys side by side (the GPU "
           "form)">,
    Option<"mlaDecode", "mla-decode", "std::string", [{"parts"}],
           "With mla-split-keys > 0, a decode step's parts: parts (linalg: "
           "scores, softmax and values as separate loop nests) or fused (one "
           "k3.attend_parts, for k3-gpu-attend-parts)">,
    Option<"linear", "linear", "std::string", [{"dot"}],
           "How a 2-D k3.linear runs: dot (one dot product per output, the "
           "form the GPU's contraction kernels match) or blocked (a "
           "cache-blocked GEMM of packed weight panels of panel-columns "
           "columns and 6-row register tiles for 6 rows or more, "
           "BlockedGemm.cpp: the CPU form)">,
    Option<"panelColumns", "panel-columns", "int64_t", /*default=*/"16",
           "Columns of the CPU GEMMs' weight panels and register tiles (the "
           "blocked linear's and the grouped MoE's): 16, two AVX2 vectors of "
           "f32, or 32, two AVX-512 vectors (k3-compile picks it from --cpu)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def K3ApproximateExpPass : Pass<"k3-approximate-exp"> {
  let summary = "Replace f32 math.exp, math.log1p, math.log and math.tanh by MLIR's polynomial approximations";
  let description = [{
    Rewrites `math.exp` on f32 scalars and vectors with the upstream
    polynomial approximation (range reduction by ln 2, a polynomial, and an
    exponent insert; a few ulp, exact handling of overflow to +inf and of
    underflow to 0). Unlike a libm `expf` call, the result is plain
    arithmetic that the vectorisers (MLIR's and LLVM's) turn into SIMD code;
    the chunked KDA takes several exponentials per state element.

    `math.log1p` too (Kahan's `x·log(u)/(u − 1)` with `u = 1 + x`, and `x`
    itself where `u` rounds to 1, over the polynomial log): the softplus
    decay gate of Kimi Linear takes one per channel and token, and as a
    libm call it cost as much as the whole bounded chunked KDA (k3-bench kda
    --gate=softplus: the recurrent form 107 → 61 ms at T = 4096). Unlike
    `log(1 + x)` it keeps softplus(−30) ≈ 9.4e-14 from rounding to 0.
    (`math.log` itself appears only inside that expansion.)

    `math.tanh` too (a rational approximation, the input clamped to ±7.99,
    where tanh is within 2.3e-7 of 1; `x` itself below 4e-4): SiTU
    (`β·tanh(z/β)`, the K3 activations) takes one or two per element, and
    left to the backend each was a scalar `tanhf` call that itself calls
    `expm1f`, 8 % of k3-small's 512-token prefill on two threads.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def K3DecomposeMlpPass : Pass<"k3-decompose-mlp"> {
  let summary = "Split k3.mlp into linear, GLU (situ_glu or swiglu) and linear ops";
  let description = [{
    Rewrites the dense gated MLP

    ```mlir
    %y = k3.mlp %x, %wg, %wu, %wd {beta1 = 4.0 : f32, beta2 = 25.0 : f32} : ...
    ```

    into its three projections and the activation:

    ```mlir
    %g = k3.linear %x, %wg : ...
    %u = k3.linear %x, %wu : ...
    %h = k3.situ_glu %g, %u {beta1 = 4.0 : f32, beta2 = 25.0 : f32} : ...
    %y = k3.linear %h, %wd : ...
    ```

    (`k3.swiglu %g, %u` for `activation silu`). The intermediate activations keep the element type of `x`, so the
    rewrite changes no rounding point of a bf16 model. Backends that fuse
    the GLU into the first GEMM's epilogue start from this form.
  }];
  let dependentDialects = ["::mlir::k3::K3Dialect"];
}

def K3DequantizeWeightsPass : Pass<"k3-dequantize-weights", "::mlir::ModuleOp"> {
  let summary = "Decode at bundle time the MXFP4 weights that no GEMM reads";
  let description = [{
    `k3.linear` and `k3.moe` read MXFP4 weights packed and decode them in
    their GEMMs. A packed weight that the importer widens with
    `arith.scaling_extf` instead (a checkpoint storing, say, a dense MLP
    matrix packed) is replaced by `k3.weight "W#bf16"` of the same logical
    shape in bf16 (exact: an E2M1 value times a power of two), which the
    bundle writer decodes from the codes and their scales. Weights with no
    other users, and their scales, then die.

    With `all`, every MXFP4 weight is decoded so (its `k3.linear` and
    `k3.moe` users drop their scales): `k3-compile --quantize-experts=none`.
  }];
  let options = [
    Option<"all", "all", "bool", "false",
           "Decode every MXFP4 weight, also those the GEMMs could read packed">
  ];
}

def K3PackWeightPanelsPass : Pass<"k3-pack-weight-panels", "::mlir::ModuleOp"> {
  let summary = "Store the CPU GEMMs' float weights in their micro-kernel's panel layout";
  let description = [{
    Every 2-D float `k3.weight` W [N, K] whose only users are `k3.linear`
    (as its weight, without scales) and `k3.lm_head` becomes
    `k3.weight "W#panels<P>"` [N/P, K, P], each user reading it through a
    `linalg.unpack` to [N, K] of its own, placed in front of it (inner tile
    P on dimension 0): panel j holds rows jP to jP+P−1
    of W transposed, the B operand the CPU GEMM's register tile reads one
    P-wide row at a time. The bundle writer lays the bytes out so from the
    checkpoint, once, at compile time; convert-k3-to-linalg reads the panels
    in place (bf16 widened in registers) for prompts and decode steps alike,
    and the unpack dies unlowered.

    P is `columns` (16 or 32: two vector registers of f32), or 16 where
    `columns` does not divide N; a weight that neither divides stays as it
    is. Derived weights (`#`) keep their layout.

    With `experts`, the weights only `k3.moe` reads are packed too: stacked
    float experts (`{e}`, [E, N, K]) become [E, N/P, K, P] (inner tile on
    dimension 1), and the shared experts and latent projections (the
    linears `k3.moe` lowers to) [N/P, K, P]. Without it, the default, they
    keep their layout: on the 2-core AVX-512 machine (2026-12-06)
    Kimi-Linear-small's prefill gained nothing measurable (the grouped GEMMs
    pack each expert's panels once a call for about 64 rows), while its
    decode steps were slower: the panel GEMVs of a decode step's experts,
    read from memory, took 20-45 % more perf samples than the dot products
    over [N, K] rows (against the same run's lm_head), though on weights in
    cache (`k3-bench gemm --shape=256x1024 --m=1`) they are 1.5x faster.
    MXFP4 experts stay MXFP4 (decoded into f32 panels per expert and call,
    4.25 bits a weight in memory); with `--quantize-experts=none` they are
    derived `#bf16` weights, which this pass leaves alone. The pass decides
    per weight: were w1 packed and w3 not (w3 read elsewhere too), the
    grouped GEMMs would decline and the per-token form run the prompt.
    A split weight's block packs to the same block (E, N and K keep their
    dimensions; a rank's block of N is whole panels where P divides it).

    Example (columns = 16):
    ```mlir
    %w = k3.weight "o_proj.weight" : tensor<64x32xbf16>
    // becomes
    %p = k3.weight "o_proj.weight#panels16" : tensor<4x32x16xbf16>
    %e = tensor.empty() : tensor<64x32xbf16>
    %w = linalg.unpack %p inner_dims_pos = [0] inner_tiles = [16] into %e
        : tensor<4x32x16xbf16> -> tensor<64x32xbf16>
    ```
  }];
  let options = [
    Option<"columns", "columns", "int64_t", /*default=*/"16",
           "Panel width: 16 (AVX2) or 32 (AVX-512), as convert-k3-to-linalg's panel-columns">,
    Option<"experts", "experts", "bool", /*default=*/"false",
           "Also store as panels the float weights only k3.moe reads (experts, shared, latent)">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"];
}

def K3FuseKdaDecodePass : Pass<"k3-fuse-kda-decode"> {
  let summary = "Fuse a one-token KDA layer's mixing chain into k3.kda_decode";
  let description = [{
    In a function with one token (decode), the chain the importer builds for
    a KDA layer, from the q/k/v projections to the gated output norm,

    ```
    short_conv(silu) ×3 → expand_shape → l2_norm (q, k)
    kda_gate(f), sigmoid(b) → k3.kda → rms_norm(gate(out_gate))
    ```

    becomes one `k3.kda_decode` (KDA.md §7's fused step). The chain must be
    private: every intermediate has its single use in it, the L2 norms use
    eps 1e-6, and the recurrence takes no snapshots; anything else is left
    alone. The projections stay outside (GEMVs on the layer input).
  }];
  let dependentDialects = ["::mlir::k3::K3Dialect"];
}

def K3GpuAsyncLaunchesPass : Pass<"k3-gpu-async-launches", "::mlir::ModuleOp"> {
  let summary = "Chain a GPU program's launches on one stream; wait only before host memory use";
  let description = [{
    After outlining and k3-share-host-memory, every `gpu.launch_func` of the
    host program is synchronous: gpu-to-llvm follows each with a stream
    synchronisation. The runtime runs a program on one in-order stream, so
    this pass makes launches async and chains them with tokens (`gpu.wait
    async` starts a chain), joins k3-share-host-memory's frees to the chain
    (dropping their own waits: a free is pool bookkeeping, ordered after the
    launches before it), and inserts a `gpu.wait` only before host code
    that could observe or disturb the kernels' memory: an op with memory
    effects (loads, stores, copies, calls), an scf loop or branch whose body
    has such ops (once, before it; a body that launches is chained on its
    own, and starts with its previous iteration's work pending), a return or
    branch out of the block. Allocations, pure ops and scf yields do not
    wait. A wait with nothing of its own block to wait for syncs on a fresh
    `gpu.wait async` token: on the runtime's one stream that is the whole
    stream, while upstream canonicalisation treats it as empty and deletes
    it, so this pass runs after the last canonicalize of the stage. A
    mapped `scf.parallel` still in the host program (one the conversion to
    kernels left, e.g. with an allocation inside) is an error: it would run
    serially on the host.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def K3GpuAttendPartsPass : Pass<"k3-gpu-attend-parts"> {
  let summary = "Run a bufferized k3.attend_parts as one split-K attention kernel on mma.sync";
  let description = [{
    Rewrites each `k3.attend_parts` on memrefs (absorbed MLA decode's
    parts, `--mla-decode-kernel=fused`) into one `gpu.launch`: block
    (p, r) takes part p and query rows [64 r, 64 r + 64); 8 warps, 256
    threads. The query rows sit in shared memory as bf16 for the whole
    part. Per tile of 16 keys: the block copies the tile's rows to shared
    memory (bf16 rows a multiple of 8 wide as 16-byte loads, the next
    tile's issued before this tile's math and kept in registers, so that
    the copy overlaps the tensor-core work; other rows as pairs rounded to
    bf16, loaded when needed), each warp
    computes one 16 × 8 block of the 64 × 16 scores (`nvvm.mma.sync`
    m16n8k16, bf16, f32 accumulation), one thread per row updates the
    running max and sum (online softmax) and writes the tile's
    probabilities as bf16, and each warp adds P (64 × 16) · V (16 × its
    columns) into f32 accumulators rescaled by the change of the row's
    max. Each key row is read from memory once, for its score and its
    value; no score leaves the chip. The kernel stores the part's max, sum
    and unnormalised output; the merge by log-sum-exp stays linalg.
    Dynamic shared memory (about 100 KB for K3's 576-wide rows: the
    runtime raises the kernel's limit). At most 512 value columns (128
    accumulators per thread), 256 for rows not a multiple of 8 wide, and
    at most 163 KiB of shared memory (sm_80's limit): convert-k3-to-linalg
    keeps the parts form for other shapes, and this pass reports them.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"
  ];
}

def K3GpuDeviceCopiesPass : Pass<"k3-gpu-device-copies"> {
  let summary = "Run a GPU program's buffer copies as kernels (memref.copy to linalg.copy)";
  let description = [{
    Bufferization leaves `memref.copy` between buffers in the host program
    (KDA's chunk slices, cache windows). On the host each would be a CPU
    copy through managed memory, with a synchronisation before it; as
    `linalg.copy` the GPU stage maps it to a kernel chained with the others.
    Copies inside kernels are left alone.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def K3GpuFuseElementwisePass : Pass<"k3-gpu-fuse-elementwise"> {
  let summary = "Fuse chains of elementwise linalg ops into one (one kernel on the GPU path)";
  let description = [{
    Upstream's elementwise fusion (linalg::populateElementwiseOpsFusionPatterns)
    on tensors, limited to an all-parallel `linalg.generic` producer with one
    use feeding an all-parallel consumer: norms' scales, gates and their
    products become one generic each, so one kernel each, while
    contractions keep the bodies k3-gpu-mma-contractions matches and no
    value is computed twice.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def K3GpuFuseRowNormsPass : Pass<"k3-gpu-fuse-row-norms"> {
  let summary = "Fold a k3.row_norm into its AttnRes producer, or its producer's pick sum into it";
  let description = [{
    On tensors, a `k3.row_norm` without a gate whose x is used only by it:
    of an f32 `k3.attn_res_mix`, the mix gets the norm as `then_norm` and
    writes the norm's destination (one kernel, k3-gpu-attn-res); of an f32
    `linalg.generic` that sums [R, K, D] over K from 0.0 (the MoE's combine
    over each token's picks), the norm reads the [R, K, D] rows itself (one
    kernel, k3-gpu-row-norm). Same arithmetic in the same order.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def K3GpuKdaChunksPass : Pass<"k3-gpu-kda-chunks"> {
  let summary = "Run a bufferized k3.kda_chunks as one chunked KDA kernel on mma.sync";
  let description = [{
    Rewrites each `k3.kda_chunks` on memrefs (KDA prefill,
    `--kda-prefill-form=chunks`) into two `gpu.launch`es (FlashKDA's split).
    The first, a block of 128 threads per (16-token chunk, value head),
    prepares each chunk at once in shared memory: the cumulative decay, the
    factors of the chunk matrices against the decay at row 8 (or, with the
    op's `pairwise`, for any gate, exact exponents e^{G_r − G_s} per entry
    and channel on and below the diagonal), L and Aqk as f32 dot products,
    the UT transform by forward substitution in f32; and
    writes the chunk's record to the workspace (the tensor-core operands as
    bf16 pairs in fragment order). The second, block (h, j) per value head
    h and value channels [64 j, 64 j + 64) (fewer for narrow heads), one
    warp per 16 channels, walks the chunks with its slice of the state in
    f32 registers: on `nvvm.mma.sync` m16n8k16 (bf16, f32 accumulation)
    the deltas, the output (inter- and intra-chunk) and the state update,
    chained through registers, the operands read straight from the records.
    Two launches for any T; the state is read and written once. With
    `split-operands` the state and the deltas enter the tensor cores as two
    bf16 terms, and Q e^G's bf16 rounding remainder as one more product. At
    most 128 key channels; convert-k3-to-linalg keeps the
    column scan otherwise, and this pass reports such shapes.
  }];
  let options = [
    Option<"splitOperands", "split-operands", "bool", /*default=*/"true",
           "Feed the state and the deltas to the tensor cores as bf16 hi + lo "
           "(twice their MMAs) instead of one bf16 rounding">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def K3GpuKdaStepPass : Pass<"k3-gpu-kda-step"> {
  let summary = "Run a bufferized k3.kda_step (the fused one-token KDA step) as one kernel";
  let description = [{
    Rewrites each `k3.kda_step` on memrefs (KDA decode,
    `--kda-decode-form=kernel`) into one `gpu.launch`: a block per value
    head, a team of 32 to 128 threads (a power of two). The team convolves
    the head's q, k (its q/k head under GVA) and v channels with SiLU, forms
    the decay e^g and keeps them in shared memory, writes the shifted
    windows (q/k by the first block of each group), L2-normalises q and k
    by block reductions; each thread then owns state columns, loads a
    column's rows at once into registers (up to 128 rows), predicts from
    the decayed rows and writes the update in place while summing the read,
    f32 throughout; a last reduction gives the gated RMS norm of the
    output. One launch per step instead of the batched form's dozen; the
    state is read once and written once for K ≤ 128. The new windows must not be
    the old windows' buffers when value heads share q/k heads, which this
    pass reports.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def K3GpuBatchKdaStepPass : Pass<"k3-gpu-batch-kda-step"> {
  let summary = "Fold decode_batch's loop of KDA steps into one batched k3.kda_step";
  let description = [{
    decode_batch runs each request's KDA step in an `scf.forall` over the
    B requests (its rows of the projections, windows and state in, the new
    ones inserted back at its row). On tensors, after convert-k3-to-linalg
    (`kda-decode=kernel`), a loop that is exactly that — one unbatched
    `k3.kda_step` whose per-token operands and windows are the request's
    rows of tensors defined outside the loop, whose weights are defined
    outside, whose state is the request's row of a shared output, and
    whose results are each inserted once at the request's row of a shared
    output — becomes one `k3.kda_step` on the whole [B, ...] tensors, with
    fresh output and window destinations and the state updated in place.
    k3-gpu-kda-step then builds it as one kernel (a block per value head
    and request) in place of a loop of launches. Any other loop is left
    as it is.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def K3GpuPagedAttendPass : Pass<"k3-gpu-paged-attend"> {
  let summary = "Run a bufferized k3.paged_attend (MLA over the paged cache) as one kernel";
  let description = [{
    Rewrites each `k3.paged_attend` on memrefs (`mla-paged=kernel`, the
    attention of decode_batch's `k3.mla_paged`) into one `gpu.launch`: block
    (h, b) for query head h of request b, a team of `pagedAttendTeam(L)`
    threads. The request's length and block table are read on the device;
    its keys (its first min(length, MB·PT) rows, read in place from their
    pages, then its own new row) go by in chunks of one key a thread: the
    thread's whole score, the chunk's maximum and sum of exponentials
    reduced in shared memory (an online softmax), then the chunk's rows'
    latent columns weighted and accumulated in registers, thread t owning
    columns t, t + n, ... No launch for zero requests.

    With `split-keys` P > 0 and a table of MB pages of PT rows, the keys
    are split where S = min(⌈MB·PT / P⌉, ⌈2·sms / (B·H)⌉) > 1: block
    (b·S + s, h) takes keys [s·C, (s + 1)·C), C = ⌈(MB·PT + 1) / S⌉, and
    writes its partial softmax (maximum, sum, weighted rows) to a
    workspace; then a merge kernel, block (h, b), weighs each split by
    e^{m_s − max}. S comes from the table's width and the batch, which the
    host knows (and a CUDA graph's signature holds): short tables and
    batches whose blocks already fill the chip keep the one kernel.
  }];
  let options = [
    Option<"splitKeys", "split-keys", "int64_t", /*default=*/"::mlir::k3::kPagedSplitKeys",
           "Keys per block of a split at least (0: one block per head and request)">,
    Option<"sms", "sms", "int64_t", /*default=*/"132",
           "Streaming multiprocessors: splits stop where the blocks fill them twice">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def K3GpuAttnResPass : Pass<"k3-gpu-attn-res"> {
  let summary = "Run a bufferized k3.attn_res_mix (Attention Residuals) as one kernel";
  let description = [{
    Rewrites each `k3.attn_res_mix` on memrefs (`attn-res=kernel`) into one
    `gpu.launch`: a block per token, a team of `attnResTeam(D)` threads (a
    power of two, 32 to 256, dividing D), thread j owning channels j, j + n,
    ... of the row. Each candidate (the stack's blocks, then the other
    sources) is read once into registers: its Σ v·norm·query and Σ v² are
    block-reduced in shared memory, the score is dot / sqrt(Σv²/D + eps), and
    an online softmax rescales the running sum of p · v held in registers;
    the row is written as sum / denominator. The linalg form takes a loop
    nest per candidate and a few more for the softmax (seven kernels for a
    decode step's stack and running sum); this is one, f32 throughout, the
    same sums in another order (and the softmax online rather than from the
    maximum first). A destination that is one of the sources is an error.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def K3GpuRowNormPass : Pass<"k3-gpu-row-norm"> {
  let summary = "Run a bufferized k3.row_norm (RMSNorm of [R, D] rows) as one kernel";
  let description = [{
    Rewrites each `k3.row_norm` on memrefs (`norm=kernel`) into one
    `gpu.launch`: a block per row, a team of `rowNormTeam(D)` threads (a
    power of two, 32 to 256, dividing D), thread j owning channels j, j + n,
    ... of the row. Each thread loads its channels into registers once,
    their squares are summed over the block in shared memory, and the thread
    writes its channels times rsqrt(Σx²/D + eps) and the weight (and
    sigmoid(gate)). The linalg form is two kernels on a GPU, the first a
    thread per row walking all D values; this is one, f32 statistics, the
    sum in another order. No launch for no rows.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def K3GpuLaunchesToOpenMPPass : Pass<"k3-gpu-launches-to-openmp", "::mlir::ModuleOp"> {
  let summary = "Run gpu.launch bodies on the host: blocks in a loop, each an OpenMP team";
  let description = [{
    The CPU path of the GPU kernels, whose index arithmetic, barriers and
    fragment layouts no GPU checks in most sessions: the lit tests of the
    hand-built kernels, and whole models (`k3-compile --target=sm_90a
    --emulate`). Each `gpu.launch` (not async) becomes a loop over its
    grid; each block is one `omp.parallel` team of as many threads as the
    block has. `gpu.barrier` becomes `omp.barrier`. The workgroup
    attributions and the dynamic shared memory become views of one host
    arena per launch (shared by the team, reused by every block: they run
    in turn), aligned to 2^18 bytes so that a wgmma descriptor's address
    bits are an offset into it. `nvvm.mma.sync` m16n8k16 bf16 row.col
    becomes an exchange through the team: each lane deposits its A and B
    fragments (`k3emu_mma_put`), a barrier, each lane computes its D
    fragment from all 32 lanes' (`k3emu_mma_get`), a barrier.
    `nvvm.wgmma.mma_async` m64nNk16 bf16 (both operands K-major in shared
    memory, no swizzle) becomes `k3emu_wgmma` on the thread's
    accumulators, which reads both tiles through their descriptors; the
    wgmma fences, commit and wait and `nvvm.fence.proxy` are dropped. The
    functions live in lib/Target/Cpu/k3emu.c (a library given to
    mlir-runner with libomp in the tests; compiled into the binary by
    `--emulate`, where it also stands in for libomp's team entry points and
    runs a block's threads as fibers). A warp-wide op must be reached by the whole block at
    once, true of block-uniform kernels; any other GPU op is an error, and
    a team smaller than its block (an OpenMP thread limit) stops the run
    with one line (`k3emu_team`).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::memref::MemRefDialect", "::mlir::omp::OpenMPDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def K3GpuMapLoopsPass : Pass<"k3-gpu-map-loops"> {
  let summary = "Tile host-level scf.parallel loops and map them to GPU blocks and threads";
  let description = [{
    The GPU path's generic mapping (what `convert-parallel-loops-to-gpu`
    then outlines): each outermost `scf.parallel` outside any GPU region
    has its innermost dimension tiled by `threads` (or its static extent,
    if smaller), without min/max bounds (a guard skips the tail). The
    tile's inner loop goes to threadIdx.x, so consecutive threads touch
    consecutive elements (coalesced); the outer loop's dimensions are
    collapsed into one, on blockIdx.x (y and z would stop at 65535 blocks). Contractions take the
    tensor-core path instead (when one applies); this is the fallback for
    elementwise and reduction loops.

    With `min-blocks` (the GPU pipeline sets the chip's SM count), a loop
    whose extents are all static and whose grid would have fewer blocks
    than that gets smaller blocks, halved in whole warps down to 32
    threads, until it has enough: a block runs on one SM, so 64 blocks
    (the KDA scan's 64 heads of 128 columns) leave half of an H200's 132
    SMs idle, however many threads each has.
  }];
  let options = [
    Option<"threads", "threads", "int64_t", /*default=*/"128",
           "threads per block along the innermost dimension">,
    Option<"minBlocks", "min-blocks", "int64_t", /*default=*/"0",
           "shrink the blocks of a static loop nest (to 32 threads at least) until it has this many (0: off)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def K3GpuMmaContractionsPass : Pass<"k3-gpu-mma-contractions"> {
  let summary = "Run f32-accumulated contractions on tensor cores (bf16 mma.sync m16n8k16; wgmma m64n128k16 on sm_90a)";
  let description = [{
    Rewrites each bufferized `linalg.generic` contraction
    `C[.., m, n] += cvt(A[.., m, .., k ..]) * cvt(B[.., n, .., k ..])` (one
    reduction loop, not in C's map; every loop a batch, m, n or k loop;
    projected-permutation maps, f32 C, f32/bf16 A and B, `cvt` an
    `arith.extf` or nothing) into a
    `gpu.launch` whose warps run `nvvm.mma.sync` m16n8k16 with bf16
    operands and f32 accumulators (NVVM directly: `nvgpu.mma.sync` does not
    lower bf16). A block of 4 warps computes a 16 × 128 tile of C (each warp
    16 × 32: four m16n8 accumulators); blockIdx.x enumerates the n tiles and
    then every other parallel loop (batch loops, further m or n loops; the
    tile takes a dynamic m or n loop, else the largest), blockIdx.y the m
    tiles (at most 65535: 1M rows). Each thread loads its fragments straight from memory (clamped
    indices, zero outside the operands), rounds f32 inputs to bf16, packs
    pairs into 32-bit registers in the PTX fragment layout, and adds the
    result into C. Contractions with any other body (the MXFP4 decode, gates)
    are left for the generic loop mapping.

    With `wgmma` (sm_90a) the block's 4 warps act as one warpgroup on a
    64 × 128 tile of C: per stage of 64 k, the 128 threads copy A (64 × 64)
    and B (128 × 64) to shared memory as bf16 in wgmma's K-major,
    unswizzled core-matrix layout, fence the async proxy, and issue four
    `nvvm.wgmma.mma_async` m64n128k16 on shared-memory descriptors; the 64
    f32 accumulators per thread are added into C at the end. blockIdx.y
    then counts 64-row tiles. A contraction whose m is static and at most
    16 (a decode step's one token) keeps mma.sync's 16-row tiles instead of
    leaving most of the warpgroup's 64 rows idle.

    When C was zero-filled by the op just before (`linalg.fill` of 0.0 on
    the same buffer: how bufferization leaves a fresh accumulator), the
    fill is dropped and the kernel starts from zero accumulators and stores
    them without reading C: every element of C is stored by exactly one
    thread, so the fill's kernel launch and a read of C go away.

    When C is a fresh allocation that only the elementwise `linalg.generic`
    ops right after read (allocations and effect-free ops may sit between;
    a free comes after), their bodies run on each accumulator in registers
    (the epilogue), their other inputs loaded at the same element, each
    result stored into its op's output, and C is never stored: a residual
    add, a gate, the router's sigmoid cost no launch. Each output must be a
    fresh allocation written once per element, not read by the kernel or
    by another epilogue op; the launch takes the last op's place.
  }];
  let options = [
    Option<"wgmma", "wgmma", "bool", /*default=*/"false",
           "Use sm_90a's warpgroup MMA (wgmma.mma_async) instead of mma.sync">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect", "::mlir::scf::SCFDialect"
  ];
}

def K3GpuMoeExpertsPass : Pass<"k3-gpu-moe-experts"> {
  let summary = "Run a bufferized k3.moe_experts as expert-sorted MXFP4 GEMMs on mma.sync";
  let description = [{
    Rewrites each `k3.moe_experts` on memrefs (the MXFP4 experts of
    `k3.moe`, `--moe-dispatch=mma`) into three `gpu.launch`es of 128
    threads: a sort, block e counting every expert's slots in shared
    memory (atomic adds of integers) and placing e's slots in expert order
    (in slot order within an expert), then the two expert GEMMs over 16-row tiles of
    one expert each (a ragged tile map: the block finds its expert by a
    binary search over the tile offsets; blocks past the routing's tiles
    exit), each warp 16 rows × 32 columns on `nvvm.mma.sync` m16n8k16 (bf16,
    f32 accumulation). The weights are read as one 32-bit word of codes per
    lane, row and 32-channel block, and decoded to bf16 pairs in registers
    with the block's E8M0 scale (exact); the GLU (SiTU or SwiGLU) is GEMM1's epilogue, the
    routing weight GEMM2's. Every grid is sized from the token count alone:
    no host synchronisation. With `split-operands` the activations enter
    the tensor cores as two bf16 terms.
  }];
  let options = [
    Option<"splitOperands", "split-operands", "bool", /*default=*/"false",
           "Feed the activations (z, the GLU output) to the tensor cores "
           "as bf16 hi + lo (twice the MMAs) instead of one bf16 rounding">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def K3GpuRegisterAccumulatorsPass : Pass<"k3-gpu-register-accumulators"> {
  let summary = "Keep a loop's accumulator in a register: load before the loop, store after it";
  let description = [{
    A reduction lowered to loops (`convert-linalg-to-parallel-loops`) is an
    `scf.for` that loads the output element, combines and stores it back
    on every iteration. On a GPU that is a global-memory round trip per step (the
    NVPTX backend cannot keep the element in a register: it cannot prove
    the output apart from the inputs). This pass rewrites each `scf.for`
    outside kernels whose body (its own block, not nested regions) holds a
    `memref.load` and a later `memref.store` of the same memref at the same
    indices into a loop carrying the value: one load before the loop, one
    store after it. Innermost loops first, so a nest of reduction loops
    keeps the element in a register throughout.

    The hoisted load and store run even when the loop runs no iteration,
    so the element must belong to one parallel iteration: every induction
    variable of every enclosing `scf.parallel` is among the indices, the
    others are constants, all defined before the loop; and the loop's
    bounds must not depend on the parallel loops (as a lowered linalg
    op's, which are its operands' sizes), so a trip count of zero cannot
    be what keeps an iteration from an element it may not touch.

    It applies only when nothing else in the loop touches that element's
    buffer: no other access to a memref with the same root allocation,
    global or argument (through view ops), and no op with unknown memory
    effects or effects on a pointer.
    Distinct roots do not alias: a bufferized program's allocations are
    distinct, and the runtime passes each argument its own buffer. Any
    other root (a select of buffers, a loop's iter_arg) may be any buffer.

    Reduction `linalg.generic`s on buffers (outside kernels) are lowered
    here first, as convert-linalg-to-parallel-loops would (run it after
    this pass for the other linalg ops). When a `linalg.fill` of an output
    precedes one, with nothing but other such fills and allocations in
    between, and that output's accumulator ends up loaded
    once outside the reduction loops, the load becomes the fill's value and
    the fill goes: each element of the output is stored by exactly one
    parallel iteration (its map is a projected permutation of parallel
    loops), so the fill's kernel launch and a read of the output go away.
    A reduction with no parallel loop (a 0-d output) keeps its fill.
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def K3KdaChunkwisePass : Pass<"k3-kda-chunkwise"> {
  let summary = "Rewrite the KDA token recurrence into its chunked form";
  let description = [{
    Every `k3.kda` whose token count is not statically 1 becomes
    `k3.kda_chunked` (KDA.md §6): chunks of `chunk-size` tokens, split into
    sub-chunks of `sub-chunk` tokens. Single-token ops (decode) keep the
    recurrent step.

    The tile form is chosen from the op that produces the decay `g`:
    `factored` (matmul-shaped diagonal blocks, `e^{±G}` factors) only when
    `g` comes from `k3.kda_gate lower_bound` with `sub-chunk · |lb| ≤ 80`,
    so that every factor stays below `e^80` (fp32 and bf16 hold `e^88.7`;
    K3's `lb = −5` over 16 tokens is exactly −80). Otherwise (a softplus
    gate, a bound too low for the sub-chunk, a decay from any other op) it
    uses the `safe` form and emits a remark on the op saying why. The safe
    form has no factor above 1 for any gate (exact pairwise decays, formed
    as running products of the per-token decays on the CPU and as pairwise
    exponentials in the GPU's chunk kernels), so its sub-chunk size does not
    change the result.

    Snapshots (`snapshots every N`) become a strided slice of the chunk
    boundary states; where N is not a multiple of `chunk-size`, that op's
    chunk shrinks to gcd(chunk-size, N) (with a remark).

    ```mlir
    %o, %s = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25 : ...
    // becomes
    %o, %s, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0)
        scale = 0.25 chunk = 64 sub_chunk = 16 factored : ...
    ```
  }];
  let options = [
    Option<"chunkSize", "chunk-size", "int64_t", /*default=*/"64",
           "tokens per chunk (the sequential step over the state)">,
    Option<"subChunk", "sub-chunk", "int64_t", /*default=*/"16",
           "tokens per sub-chunk (the tile of the intra-chunk products); "
           "must divide chunk-size">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::k3::K3Dialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def K3MlaAbsorbPass : Pass<"k3-mla-absorb"> {
  let summary = "Rewrite expanded MLA into the absorbed (latent-space) form";
  let description = [{
    `k3.mla` becomes `k3.mla_absorbed` (MLA.md §3) where that is cheaper:
    the key up-projection moves into the query, attention runs over the
    cached `[c | k_rope]` rows, the value up-projection comes after it and
    the output gate after that; the scale attribute is kept as it is.

    The cost rule, per head, for `T` new tokens over `S` cached ones
    (multiply-adds; `L` latent, `P` nope, `R` rope, `Vd` value dims):

    - expanded: `(S+T)·L·(P+Vd)` to expand every position's keys and values,
      plus `T·(S+T)·(P+R+Vd)` for the attention;
    - absorbed: `T·L·(P+Vd)` for the two projections of the queries and
      outputs, plus `T·(S+T)·(2L+R)` for attention in the latent space.

    A one-token op (decode) is absorbed (option `decode=expanded` keeps it,
    for side-by-side comparisons). A multi-token op (prefill)
    gets both forms behind an `scf.if` on that comparison, evaluated at run
    time: short prefills over a long cache go absorbed (for K3, fewer than
    about 120 new tokens), long prompts stay expanded.

    `decode-splits = n` cuts a decode step's keys into n parts merged by
    log-sum-exp (the split-KV shape of a GPU decode kernel).
  }];
  let options = [
    Option<"decodeSplits", "decode-splits", "int64_t", /*default=*/"1",
           "key splits of a decode step, merged by log-sum-exp (>= 1)">,
    Option<"prefill", "prefill", "std::string", /*default=*/"\"cost\"",
           "multi-token ops: cost (the run-time rule), absorbed, or expanded">,
    Option<"decode", "decode", "std::string", /*default=*/"\"absorbed\"",
           "one-token ops: absorbed (the decode form), or expanded (kept, "
           "for comparisons)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::k3::K3Dialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
  ];
}

def K3OutlineLayersPass : Pass<"k3-outline-layers", "::mlir::ModuleOp"> {
  let summary = "One private function per distinct layer part, called once per layer";
  let description = [{
    The importer builds an entry point as the whole model unrolled, each
    layer's ops located at one of its four parts, `"layers.N.attn_res"`
    (the AttnRes read before the mixer), `"layers.N.mixer"` (norm and KDA
    or MLA), `"layers.N.residual"` (the residual add) and `"layers.N.ffn"`
    (AttnRes read, norm, MLP or MoE, add), or at `"layers.N"` for a whole
    layer. This pass moves every part's ops into a private function whose
    arguments are what it reads (the hidden state, its weights, its
    per-request state) and whose results are what later ops use (the new
    hidden state, the updated state), and calls it in the part's place.
    Parts whose functions are identical (same ops, same types, same
    attributes; locations aside) share one function, so the later phases
    compile each kind once, whatever the depth. Parts rather than layers:
    a layer that seals an AttnRes block differs from the others only in its
    first read (over the blocks alone) and in having no residual add, so
    with whole layers K3's seal layers would compile their KDA and MoE a
    second time.

    A function is named after its entry point and what it holds
    (`@prefill_kda`, `@decode_mla`, `@decode_moe`, `@decode_dense`,
    `@decode_attn_res`, `@decode_attn_res_seal`, `@decode_residual`;
    `@decode_kda_moe_seal` for a whole layer; a suffix `_N` where two kinds
    would still share a name) and lists the layers that call it in
    `k3.layers`. The embedding (ops at `"embed"`) and the output
    (`"output"`: the last AttnRes read, the final norm, lm_head) move
    likewise into `@<entry>_embed` and `@<entry>_output`, so the entry
    point holds calls and the AttnRes stack's views only: code the back
    ends compile without optimisation, in time linear in the depth.
    Constants a part uses from outside are cloned into it. A part whose ops
    cannot be moved as one call (a value leaves it and comes back) stays
    inline, with a remark.

    ```mlir
    func.func @decode(...) {
      %r1 = call @decode_attn_res(%blocks, %r0, ...) : ...
      %a1, %s1 = call @decode_kda(%r1, %s0, %w0...) : ...
      %h1 = call @decode_residual(%r0, %a1) : ...
      %r2 = call @decode_moe(%blocks, %h1, %w1...) : ...
    ```
  }];
}

def K3PackLayerWeightsPass : Pass<"k3-pack-layer-weights", "::mlir::ModuleOp"> {
  let summary = "A layer function's weights as one byte buffer, viewed per weight";
  let description = [{
    After k3-outline-layers each layer function takes its weights one
    argument each, and an entry point passes them at every call: K3's
    entry points take about 3,000 weights, each a memref descriptor the
    host program unpacks and passes on, so the host code and its compile
    time grew with the depth. This pass gives each layer function one
    `tensor<Nxi8>` argument instead, the weight pack, and views each weight
    in it with `k3.weight_view` at a fixed offset; the entry point passes
    one pack per call.

    A pack's members are the weights the function's calls pass at the same
    positions (static shapes of whole-byte elements, every call a weight of
    its entry point), ordered by name, each at an offset that is a multiple
    of `alignment` (the bundle's weight alignment). Ordering by name lets
    the prefill and decode functions of one layer share a pack: they read
    the same weights in different argument orders. The entry point's pack
    argument carries `k3.pack`, one dictionary per member: the member's own
    argument attributes (`k3.weight`, split and packed markers), `k3.type`
    and `k3.offset`; the bundle writer stores the members back to back in
    that layout and binds the argument to their bytes. A weight that would
    fall into two different packs (a tied embedding read by the embedding
    and the output) leaves both functions as they were, as does a function
    with fewer than two weights.

    ```mlir
    func.func private @decode_kda(%h: tensor<1x64xf32>, %w0: tensor<64xbf16>, %w1: tensor<96x64xbf16>) ...
    // becomes
    func.func private @decode_kda(%h: tensor<1x64xf32>, %pack: tensor<12416xi8>) ... {
      %w0 = k3.weight_view %pack[0] : tensor<12416xi8> -> tensor<64xbf16>
      %w1 = k3.weight_view %pack[128] : tensor<12416xi8> -> tensor<96x64xbf16>
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", "64",
           "Byte alignment of each member (the .k3b's weight alignment)">
  ];
  let dependentDialects = ["::mlir::k3::K3Dialect"];
}

def K3OutlineWeightsPass : Pass<"k3-outline-weights", "::mlir::ModuleOp"> {
  let summary = "Turn k3.weight ops into function arguments";
  let description = [{
    Every function's `k3.weight` ops become trailing arguments, one per
    distinct name in order of first use, each carrying `k3.weight = "<name>"`
    so that the bundle binds it to the stored blob. After this pass a
    function touches only its arguments, which is what the runtime calls.

    MXFP4 codes `tensor<...xKxf4E2M1FN>` arrive as their packed bytes
    `tensor<...x(K/2)xi8>` (attribute `k3.packed_e2m1`), viewed as codes by
    `k3.unpack_e2m1`: the kernels read two codes per byte and the weight
    stays 4-bit in memory.

    ```mlir
    func.func @f(%x: tensor<?x4xf32>) -> tensor<?x8xf32> {
      %w = k3.weight "w" : tensor<8x4xbf16>
      ...
    // becomes
    func.func @f(%x: tensor<?x4xf32>, %w: tensor<8x4xbf16> {k3.weight = "w"}) -> ...
    ```
  }];
}

def K3QuantizeMxfp4Pass : Pass<"k3-quantize-mxfp4", "::mlir::ModuleOp"> {
  let summary = "Quantize float routed-expert weights to MXFP4 (OCP MX v1.0)";
  let description = [{
    Every `k3.moe` whose experts `w1, w3, w2` are float `k3.weight`s gets
    MXFP4 experts instead: each `W` becomes the codes
    `k3.weight "W#mxfp4.<rule>.codes"` (`f4E2M1FN`, the same logical shape)
    and the scales `k3.weight "W#mxfp4.<rule>.scales"` (`f8E8M0FNU`,
    `[..., K/32]`), which the bundle writer computes from the checkpoint's
    values (MOE_MXFP4.md §2): blocks of 32 along the input dimension, scale
    `2^(floor(log2 amax) − 2)` (`scale-rule=floor`, OCP; the top of a binade
    clips to ±6·X) or `2^ceil(log2(amax / 6))` (`scale-rule=ceil`, never
    clips), elements rounded to the nearest E2M1 value with ties to even and
    saturated at ±6. The weights then stay 4-bit in the binary and in memory.

    Experts that are already MXFP4 are left as they are. An input dimension
    that is not a multiple of 32, or an expert matrix that is not a
    checkpoint weight, is an error on the op. `inputs=mxfp8` also marks every
    `k3.moe` `mxfp8_inputs`: the expert GEMMs' inputs are rounded to MXFP8
    E4M3 (W4A8 numerics); with `weights=false` that is all the pass does.
  }];
  let options = [
    Option<"scaleRule", "scale-rule", "std::string", [{"floor"}],
           "How each block's shared exponent is chosen: floor (OCP) or ceil">,
    Option<"inputs", "inputs", "std::string", [{"none"}],
           "Expert GEMM inputs: none (f32) or mxfp8 (E4M3, blocks of 32)">,
    Option<"weights", "weights", "bool", "true",
           "Quantize float expert weights (false: only mark mxfp8 inputs)">
  ];
  let dependentDialects = ["::mlir::k3::K3Dialect"];
}

def K3SimplifyDeallocationsPass : Pass<"k3-simplify-deallocations", "::mlir::ModuleOp"> {
  let summary = "buffer-deallocation-simplification on every function but the entry points that call layers";
  let description = [{
    Runs upstream's `buffer-deallocation-simplification` on each function
    of the module except a public one that calls functions (an entry point
    sequencing layer functions, k3-outline-layers). That entry point's one
    deallocation holds every layer call's result buffer (K3: 301 memrefs,
    300 retained values), whose origins the analysis cannot see: the
    patterns' pairwise queries grow with the cube of the depth and change
    nothing. It is lowered as it is and checks the aliases at run time.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect"];
}

def K3ScratchToStackPass : Pass<"k3-scratch-to-stack", "::mlir::func::FuncOp"> {
  let summary = "Small temporaries freed in their own block as stack slots (per function or per thread)";
  let description = [{
    Runs after convert-scf-to-openmp. A `memref.alloc` of a static shape
    of at most `max-bytes` that is freed once, in its own block, and used
    only in place (through views; never returned, yielded or passed to a
    call) becomes a `memref.alloca` at the top of the function, or of the
    enclosing omp.parallel region (once per thread), and its
    `memref.dealloc` goes. Only sequential control flow (scf.for, scf.while,
    scf.if, scf.index_switch, scf.execute_region, omp.wsloop,
    omp.loop_nest) may lie between. Inside a loop that removes a malloc/free
    pair per iteration: the CPU MoE's per-token form made five rows per
    token and pick, the batched KDA step 15 vectors per request and head.
    At most `max-function-bytes` move per function or parallel region.

    ```mlir
    scf.for %i = %c0 to %n step %c1 {
      %t = memref.alloc() : memref<1x32xf32>
      ...
      memref.dealloc %t : memref<1x32xf32>
    }
    // becomes
    %t = memref.alloca() : memref<1x32xf32>
    scf.for %i = %c0 to %n step %c1 { ... }
    ```
  }];
  let options = [
    Option<"maxBytes", "max-bytes", "int64_t", /*default=*/"16384",
           "Largest buffer moved, in bytes">,
    Option<"maxFunctionBytes", "max-function-bytes", "int64_t", /*default=*/"65536",
           "Most bytes moved per function (the frame stays small on any thread's stack)">
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def K3EntryDeallocationsPass : Pass<"k3-entry-deallocations", "::mlir::ModuleOp"> {
  let summary = "Free an entry point's layer results after their last use";
  let description = [{
    Runs after `ownership-based-buffer-deallocation` (and
    `k3-return-arguments`), before `bufferization-lower-deallocations`.
    Deallocation frees an entry point's buffers in one
    `bufferization.dealloc` at the end of its block, which checks at run
    time which of them alias the returned values: every layer call's
    results stay alive until the step ends (K3's prefill holds about 280
    hidden states of [T, 7168] f32), and the check's code grows with the
    depth. In a public single-block function ending in such a deallocation
    and a return, a buffer the deallocation frees unconditionally that is a
    `memref.alloc` of the block, or result `i` of a call whose callee
    returns its own `memref.alloc` there (in every return, no other result
    the same value), and that the function does not return or retain
    (through views and casts), is freed by a `memref.dealloc` right after
    the last op of the block that uses it or a view of it, and leaves the
    end-of-block deallocation. A buffer that is the same as a retained
    value is never freed by it; when nothing reads the deallocation's
    ownership results it leaves the list too (and an empty deallocation
    goes).

    ```mlir
    %h = call @layer(%x) : (memref<4xf32>) -> memref<4xf32>
    %y = call @out(%h) : (memref<4xf32>) -> memref<4xf32>
    %base, ... = memref.extract_strided_metadata %h ...
    %o = bufferization.dealloc (%base, ...) if (%true, ...) retain (%y)
    return %y
    // becomes
    %h = call @layer(%x) ...
    %y = call @out(%h) ...
    memref.dealloc %h
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def K3ReturnArgumentsPass : Pass<"k3-return-arguments", "::mlir::ModuleOp"> {
  let summary = "Return an entry point's updated arguments themselves, not clones";
  let description = [{
    Runs after `ownership-based-buffer-deallocation` and
    `buffer-deallocation-simplification`, before
    `bufferization-lower-deallocations`. Deallocation makes every returned
    memref owned by the caller, so an argument updated in place (a KDA
    state) is returned as a `bufferization.clone`: a copy of the whole
    buffer per call. In a public function that nothing in the module calls
    (an entry point: the runtime is its only caller, owns its arguments and
    never frees a result that is an input's buffer), a returned clone of an
    entry-block argument of the same type, used only by the return (and
    retained by deallocations, which then retain the argument), is
    replaced by the argument.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect"];
}

def K3SegmentKdaPass : Pass<"k3-segment-kda"> {
  let summary = "Split multi-token KDA into independent segments and compose them";
  let description = [{
    The context-parallel form of KDA. The recurrence is affine in its
    incoming state: a segment of tokens maps `S ↦ P·S + B` (per value head,
    `P` [K, K] acting on the key index) and its outputs are
    `O = O₀ + Q̃·S`. Each of `segments` equal slices of the sequence (the
    last ones may be short or empty) runs twice with no dependence on the
    others: from the zero state (giving `B` and `O₀`) and, with zero values,
    from the identity (giving `P` as its final state and `Q̃` as its
    outputs). A sequential scan then composes them,
    `S_{i+1} = P_i·S_i + B_i`, and corrects each slice's outputs with its
    incoming state. On one device this only reorders work; across devices
    the two runs per segment are what each device computes locally, and the
    scan is the cheap exchange of `[K, K]` and `[K, V]` matrices per head.
    Runs before k3-kda-chunkwise, which then chunks every segment.

    ```mlir
    %o, %s = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25 : ...
    // becomes, per segment i (extract_slice of the inputs):
    %o0, %b = k3.kda %qi, %ki, %vi, %gi, %bi, state(%zero) ...
    %qt, %p = k3.kda %qi, %ki, %zero_v, %gi, %bi, state(%identity) ...
    // then S_{i+1} = P_i S_i + B_i and O_i = O0_i + Q̃_i S_i (linalg.generic)
    ```
  }];
  let options = [
    Option<"segments", "segments", "int64_t", /*default=*/"2",
           "number of segments (≥ 1; 1 leaves the ops alone)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::k3::K3Dialect",
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"
  ];
}

def K3SplitKdaHeadsPass : Pass<"k3-split-kda-heads"> {
  let summary = "Run chunked KDA as one parallel loop over value heads";
  let description = [{
    Every `k3.kda_chunked` with more than one value head (static heads and
    state; outputs static past the token dimension) becomes an
    `scf.forall` over value heads whose body is a `k3.kda_chunked` on one
    value head and the key head it reads (GVA: value head h reads key head
    h / group). The outputs, the state and the boundary states, those that
    are used, are the forall's shared outputs, each head writing its own
    slice; the state is updated in place (each head reads its initial slice
    from the shared output it writes). The CPU tiles stage runs it before
    `convert-k3-to-linalg`: the chunk loop then runs inside one parallel
    region per layer instead of forking a region for every op of every
    chunk. Each head's arithmetic is the unsplit lowering's.

    ```mlir
    %o, %s, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) ...
        : (tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?x4x16xf32>, ...)
        -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>, tensor<?x4x16x16xf32>)
    // becomes (%b unused: no shared output for it)
    %r:2 = scf.forall (%h) in (4) shared_outs(%o0 = %empty, %s1 = %s0) {
      %kh = arith.divui %h, %c2 : index
      %qh = tensor.extract_slice %q[0, %kh, 0] [%t, 1, 16] [1, 1, 1] ...
      %oh, %sh, %bh = k3.kda_chunked %qh, ... : ... -> (tensor<?x1x16xf32>, ...)
      scf.forall.in_parallel { tensor.parallel_insert_slice %oh into %o0[0, %h, 0] ... }
    }
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def K3GpuDedupeKernelsPass : Pass<"k3-gpu-dedupe-kernels", "::mlir::ModuleOp"> {
  let summary = "One kernel for every set of identical outlined kernels";
  let description = [{
    gpu-kernel-outlining makes a `gpu.module` per launch, so two launches of
    the same computation (the expert kernels of a KDA and of an MLA layer,
    the AttnRes reads of every layer kind, an elementwise chain repeated in
    two functions) become two kernels, each compiled by the NVPTX back end
    and ptxas and stored in the binary. This pass keeps the first of every
    set of `gpu.module`s that are identical but for their names (same body,
    same types, same attributes such as the known block size) and points
    every `gpu.launch_func` at it, as IREE deduplicates its dispatches.
    First, a kernel argument with a static strided offset that only
    `memref.load`, `memref.store` and `memref.dim` use gets a dynamic
    offset (the launches cast their operand to it): the decode step's copies
    into the AttnRes blocks' stack, one per seal, differed only in that
    offset (K3: 8 kernels that are now one).

    ```mlir
    gpu.launch_func @f_kernel::@f_kernel ...
    gpu.launch_func @g_kernel_3::@g_kernel_3 ...  // same body as @f_kernel
    // becomes
    gpu.launch_func @f_kernel::@f_kernel ...
    gpu.launch_func @f_kernel::@f_kernel ...
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def K3GpuMergeLaunchesPass : Pass<"k3-gpu-merge-launches", "::mlir::ModuleOp"> {
  let summary = "Consecutive independent gpu.launch ops as one launch";
  let description = [{
    Launches that share no buffer one of them writes become one launch over
    the concatenation of their grids; each block runs the body of the
    launch its linear block id falls in, with that launch's block
    coordinates, grid and block size (a barrier-free body of fewer threads
    behind a thread guard; a body with barriers or warp-wide ops only with
    launches of its block size). A run of launches separated only by
    side-effect-free host ops, allocations, or frees of buffers the run does
    not touch is scheduled by dependence levels, each level merged, all
    after the run's last launch. Buffers are compared through views to
    their allocation or function argument (anything else keeps the launch
    alone); arguments are distinct buffers unless a call passes one buffer
    twice (that function and its callees are left alone). wgmma kernels
    merge only with each other (the same registers and staging tile). A
    decode layer's projections of one normed row are such a group.

    ```mlir
    gpu.launch blocks(%a, %c1, %c1) threads(%c128, %c1, %c1) { A }
    gpu.launch blocks(%b, %c1, %c1) threads(%c32, %c1, %c1) { B }
    // becomes
    gpu.launch blocks(%a + %b, %c1, %c1) threads(%c128, %c1, %c1) {
      scf.if %bid < %a { A } else { scf.if %tid < 32 { B } }
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
                           "::mlir::scf::SCFDialect"];
}

def K3ShareHostMemoryPass : Pass<"k3-share-host-memory", "::mlir::ModuleOp"> {
  let summary = "Host-side buffers of a GPU program in memory both sides can reach";
  let description = [{
    After kernel outlining, the host functions still allocate with
    `memref.alloc` and read constants with `memref.get_global`; a kernel
    cannot reach either. This pass makes every host buffer a
    `gpu.alloc host_shared` (CUDA managed memory: the runtime's
    `mgpuMemAlloc`), frees it with `gpu.dealloc`, and copies each constant
    global into such a buffer where it is read (freed at the end of that
    block). Host code between launches (dispatch counts, small scalar loops)
    then reads and writes the same memory as the kernels, after each
    launch's stream synchronisation. Buffers with non-identity layouts or
    constants returned from their block are refused with an error on the
    op.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::memref::MemRefDialect"];
}

def K3RoundContractionInputsPass : Pass<"k3-round-contraction-inputs"> {
  let summary = "Round the f32 operands of contractions to bf16 (the tensor cores' inputs)";
  let description = [{
    The GPU's numerics on the CPU, for telling a GPU bug from its precision:
    every `linalg.generic` contraction with an f32 accumulator (two inputs,
    one reduction loop, a body `out + cvt(a) * cvt(b)`) has its f32 operands
    rounded to bf16 (round to nearest even) where they enter the product,
    as k3-gpu-mma-contractions feeds them to `mma.sync`/`wgmma`. bf16 and
    narrower operands are exact in bf16 already and are left alone. The
    GPU's own kernels round a few operands differently (the KDA chunk
    kernels and, with `split-operands`, the MoE experts keep f32 accuracy as
    two bf16 terms), so the rounded CPU build approximates the GPU build;
    `k3-compile --contraction-inputs=bf16` runs this pass after
    convert-k3-to-linalg.
  }];
}

def K3TileContractionsPass : Pass<"k3-tile-contractions"> {
  let summary = "Tile and vectorise the linalg.generics marked with k3.tile";
  let description = [{
    The CPU tiles of the contractions a lowering marks with
    `k3.tile = array<i64: ...>` (one tile size per loop; 0 keeps a loop
    whole): each marked `linalg.generic` is tiled, its parallel tiles one
    `scf.forall` (run on the thread pool: k3-cpu-parallel-loops) and its
    reduction tiles `scf.for` loops inside, and each tile is vectorised. The
    accumulator tile of the innermost reduction loop is then hoisted into
    the loop's iteration arguments, so a tile of, say, 4 × 16 outputs stays
    in vector registers for the whole reduction, and the contraction is
    lowered to outer products (broadcast-and-FMA rows). This is what lets
    LLVM emit register-blocked FMA loops instead of one load and store per
    multiply-add. Sizes must divide the static loop extents; ops that do not
    qualify are left as they are (and run as plain loops).
  }];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def K3CpuParallelLoopsPass : Pass<"k3-cpu-parallel-loops"> {
  let summary = "Keep the scf.parallel loops worth a thread pool, serialise the rest";
  let description = [{
    The CPU's loops come as `scf.parallel` (`convert-linalg-to-parallel-loops`,
    `scf-forall-to-parallel` of the contractions' tiles), and
    `convert-scf-to-openmp` turns each remaining one into an OpenMP
    work-shared loop on libomp's pool. A fork and join costs about a
    microsecond, so this pass keeps only the outermost parallel loop of each
    nest, and only where the nest does enough work: its estimated innermost
    iterations (static trip counts; a dynamic extent, the tokens of a
    prompt, counts as `dynamic-extent`) reach `min-work`. Everything else
    (a parallel loop inside another, a decode step's norm over one token)
    becomes `scf.for` loops. Results do not depend on the thread count: each
    iteration writes its own elements, and reductions stay inside one
    iteration.

    A loop with dynamic bounds forks only where, at run time, its work
    reaches `min-work` and it has two iterations or more (`scf.if` between
    it and a serial copy): one iteration would run on one thread with the
    loops inside it serial. In the serial copy the loops inside are
    candidates again, so decode_batch with one request spreads its heads
    over the pool.
    A loop of static trips whose inner loops have dynamic trips known
    before it starts (a GEMM's panel loop around its rows: a prompt's
    tokens, decode_batch's requests) is versioned the same way on its
    actual work, where the estimate counts each such extent as
    `dynamic-extent`: one token no longer forks for a few hundred
    multiply-adds.

    A kept loop of several dimensions whose outer dimensions have 64
    iterations or more (decided at run time where they are dynamic) runs
    its innermost dimension as an `scf.for` inside each iteration:
    `convert-scf-to-openmp` collapses a work-shared loop's dimensions into
    one flat index, whose division and remainder per element keep LLVM's
    loop vectoriser off; a serial innermost loop has unit stride.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"16384",
           "Innermost iterations below which a nest runs on one thread">,
    Option<"dynamicExtent", "dynamic-extent", "int64_t", /*default=*/"64",
           "What a dynamic trip count counts as in the estimate">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
}

def K3MergeAllReducesPass : Pass<"k3-merge-all-reduces", "::mlir::func::FuncOp"> {
  let summary = "Add partial sums before their all-reduce: one collective instead of two";
  let description = [{
    `shard-partition` reduces each partial sum where it is made. Where two
    are added right after (LatentMoE on a grid: the row-parallel up
    projection's output and the shared experts'), this pass rewrites
    `addf(all_reduce(a), all_reduce(b))` over the same grid and axes, each
    reduction used only there, as `all_reduce(addf(a, b))`. Runs after
    partition, on tensors (the k3 stage of a grid's binary).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def K3LowerCollectivesPass : Pass<"k3-lower-collectives", "::mlir::ModuleOp"> {
  let summary = "Lower the upstream shard collectives of a sharded binary to k3.collective";
  let description = [{
    A binary compiled for a grid of ranks (`k3-compile --tp --ep`) holds,
    from upstream's `shard-partition` (the k3 stage), `shard` ops on
    tensors: `shard.all_reduce` (sum) after the row-parallel projections and
    the MoE block, `shard.all_gather` of the logits, `shard.all_slice` where
    a whole value feeds a split one, and `shard.process_multi_index` where a
    rank's share depends on its place (k3.moe's first expert). Upstream's
    `convert-shard-to-mpi` cannot lower them (DISTRIBUTED.md); this pass
    does, into the runtime's calls:


    - `shard.all_reduce` (sum, f32 or bf16) → `k3.collective all_reduce`
      into a new tensor;
    - `shard.all_gather` along axis `a` → `k3.collective all_gather` into
      `[P, ...]` (the group's blocks stacked in group-rank order), then a
      transpose that puts P before axis `a` and a collapse of the two;
    - `shard.all_slice` → the rank's block as a `tensor.extract_slice`
      (no communication);
    - `shard.process_linear_index` and `shard.process_multi_index` → calls
      of `k3_comm_index(axis)` (-1: the linear index over the whole grid),
      which the runtime answers for its rank.

    The grid's shape becomes the module's `k3.grid` attribute (the bundle
    records it; the runtime checks it against the processes) and
    `shard.grid` goes. Afterwards no `shard` op may remain: any other (a
    reduce-scatter, an all-to-all, a reduction other than a sum, a dynamic
    grid) is an error on the op, not IR left for LLVM to reject.
  }];
  let dependentDialects = ["::mlir::k3::K3Dialect", "::mlir::func::FuncDialect",
                           "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def K3CommToCallsPass : Pass<"k3-comm-to-calls", "::mlir::ModuleOp"> {
  let summary = "Turn k3.collective on buffers into calls of the runtime's k3_comm_collective";
  let description = [{
    Runs on memrefs, after the deallocations are lowered (so that no
    buffer's lifetime depends on a call that hides its operands behind
    addresses). Each `k3.collective` becomes

    ```
    k3_comm_collective(kind : i32, input : i64, output : i64, count : i64,
                       dtype : i32, axes : i64)
    ```

    with the buffers' element addresses, the input's element count, the
    dtype (0 f32, 1 bf16) and the axes as a bit mask; the runtime's table
    (runtime/include/k3rt/k3rt_comm.h) runs it on the process's grid. A
    buffer whose layout is not the identity is copied into a dense one
    first (and the output back), so the runtime sees contiguous elements.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // K3_PASSES_TD
