//===- K3Ops.td - Ops of the K3 dialect ------------------------*- tablegen -*-===//
//
// Part of k3. The model-level ops: token mixing, channel mixing, depth mixing
// and plumbing. Shapes use the symbols of ../shared/spec/K3_CHECKPOINT.md:
// T tokens, D hidden, H heads, K/V key/value head dims, E experts, k top-k.
//
//===----------------------------------------------------------------------===//

#ifndef K3_OPS_TD
#define K3_OPS_TD

include "dialects/K3/K3Dialect.td"
include "dialects/K3/K3Enums.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def K3_Float : AnyTypeOf<[F32, BF16, F16]>;
def K3_FloatTensor : RankedTensorOf<[F32, BF16, F16]>;
def K3_F32Tensor : RankedTensorOf<[F32]>;
def K3_IndexTensor : RankedTensorOf<[I32, I64]>;
// Weights may be MXFP4: f4E2M1FN elements with a separate f8E8M0FNU scale.
def K3_WeightTensor : RankedTensorOf<[F32, BF16, F16, F4E2M1FN]>;
def K3_ScaleTensor : RankedTensorOf<[F8E8M0FNU]>;

//===----------------------------------------------------------------------===//
// Plumbing
//===----------------------------------------------------------------------===//

def K3_WeightOp : K3_Op<"weight", [Pure]> {
  let summary = "A named model weight";
  let description = [{
    Refers to a tensor of the checkpoint by its full name; the bundle binds
    the name to the stored data. The importer types it by the stored shape
    and dtype (F32 → f32, BF16 → bf16, F16 → f16) and reshapes in IR where
    the model uses another shape. MXFP4 data (`weight_packed`, U8) is typed
    `f4E2M1FN` with its logical shape (two codes per stored byte, low nibble
    first), its `weight_scale` `f8E8M0FNU`.

    A name holding `{e}` stacks the per-expert tensors `…experts.0.…` to
    `…experts.{E−1}.…` along a new leading dimension of size E.

    In a binary compiled for a grid of ranks (`k3-compile --tp --ep`), a
    weight each rank holds only a block of carries `split_dim` and
    `split_axes`: its type is the rank's block, one of the equal blocks
    along `split_dim` that the stored tensor makes over the ranks of the
    grid's `split_axes`, the block of the rank's linear index on those axes
    (the bundle of each rank holds that block only).

    Example:
    ```mlir
    %w = k3.weight "language_model.model.embed_tokens.weight" : tensor<256x64xbf16>
    %o = k3.weight "language_model.model.layers.0.self_attn.o_proj.weight"
        {split_dim = 1 : i64, split_axes = array<i64: 0>} : tensor<64x32xbf16>
    %w1 = k3.weight "language_model.model.layers.1.block_sparse_moe.experts.{e}.w1.weight_packed"
        : tensor<8x64x32xf4E2M1FN>
    ```
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<I64Attr>:$split_dim,
                   OptionalAttr<DenseI64ArrayAttr>:$split_axes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def K3_UnpackE2m1Op : K3_Op<"unpack_e2m1", [Pure]> {
  let summary = "View packed bytes as MXFP4 (E2M1) codes";
  let description = [{
    `bytes: [..., K/2]` of `i8`, two E2M1 codes per byte with element `2i`
    in bits 3:0 and `2i+1` in bits 7:4 (MOE_MXFP4.md §3), viewed as the
    `f4E2M1FN` codes `[..., K]`. It moves no data: k3-outline-weights puts
    it between a packed weight argument and its users, and the lowering of
    those users reads the bytes (two codes per load) inside their GEMMs.
    A CPU memref of `f4E2M1FN` would spend one byte per code.

    Example:
    ```mlir
    %w = k3.unpack_e2m1 %bytes : tensor<8x64x16xi8> -> tensor<8x64x32xf4E2M1FN>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I8]>:$bytes);
  let results = (outs RankedTensorOf<[F4E2M1FN]>:$codes);
  let assemblyFormat = "$bytes attr-dict `:` type($bytes) `->` type($codes)";
  let hasVerifier = 1;
}

def K3_WeightViewOp : K3_Op<"weight_view", [Pure,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite", "getAliasingValues",
         "getBufferType", "bufferize"]>]> {
  let summary = "One weight of a layer's weight pack, viewed in place";
  let description = [{
    `pack: [N]` of `i8` holds the weights a layer function reads, laid out
    back to back (k3-pack-layer-weights); this is the weight that starts at
    byte `offset`, as the tensor type of the result (static shape, dense,
    row-major). It moves no data: after bufferization it is a `memref.view`
    of the pack's buffer, so a layer function takes one buffer for all its
    weights and the entry point passes one descriptor per call instead of
    one per weight. `offset` is a multiple of the element's size.

    Example:
    ```mlir
    %w = k3.weight_view %pack[4096] : tensor<12288xi8> -> tensor<64x32xbf16>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I8]>:$pack, I64Attr:$offset);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$pack `[` $offset `]` attr-dict `:` type($pack) `->` type($result)";
  let hasVerifier = 1;
}

def K3_EmbedOp : K3_Op<"embed", [Pure]> {
  let summary = "Token embedding lookup";
  let description = [{
    `out[t] = table[ids[t]]`. Ids outside `[0, V)` are a runtime error, never
    a silent read.

    Example:
    ```mlir
    %h = k3.embed %ids, %table : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
    ```
  }];
  let arguments = (ins K3_IndexTensor:$ids, K3_FloatTensor:$table);
  let results = (outs K3_FloatTensor:$out);
  let assemblyFormat = [{
    $ids `,` $table attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def K3_RmsNormOp : K3_Op<"rms_norm", [Pure]> {
  let summary = "RMSNorm over the last dimension, optionally gated";
  let description = [{
    `y = x · rsqrt(mean(x²) + eps) · weight`, statistics in f32, over the last
    dimension `D` of `x`. With `gate` (same shape as `x`) the result is also
    multiplied by `sigmoid(gate)`: the fused norm-and-gate of the KDA output
    (`o_norm` with `g_proj`).

    Example:
    ```mlir
    %y = k3.rms_norm %x, %w {eps = 1.0e-05 : f32}
        : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
    %o = k3.rms_norm %o, %w gate(%g) {eps = 1.0e-05 : f32}
        : (tensor<?x4x16xf32>, tensor<16xf32>, tensor<?x4x16xf32>) -> tensor<?x4x16xf32>
    ```
  }];
  let arguments = (ins K3_FloatTensor:$x, K3_FloatTensor:$weight,
                   Optional<K3_FloatTensor>:$gate, F32Attr:$eps);
  let results = (outs K3_FloatTensor:$y);
  let assemblyFormat = [{
    $x `,` $weight (`gate` `(` $gate^ `)`)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def K3_L2NormOp : K3_Op<"l2_norm", [Pure, SameOperandsAndResultType]> {
  let summary = "L2 normalisation over the last dimension";
  let description = [{
    `y = x / sqrt(Σ x² + eps)` over the last dimension, eps inside the root
    (FLA's in-kernel form, KDA.md §2), statistics in f32. KDA normalises q and
    k per head with this op before `k3.kda`.

    Example:
    ```mlir
    %qn = k3.l2_norm %q {eps = 1.0e-06 : f32} : tensor<?x4x16xf32>
    ```
  }];
  let arguments = (ins K3_FloatTensor:$x, F32Attr:$eps);
  let results = (outs K3_FloatTensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasVerifier = 1;
}

def K3_SigmoidOp : K3_Op<"sigmoid", [Pure, SameOperandsAndResultType]> {
  let summary = "Elementwise logistic sigmoid";
  let description = [{
    `y = 1 / (1 + exp(−x))`, computed in f32. Used for the KDA `beta`
    (`sigmoid(x · b_projᵀ)`); the output gates are fused into `k3.rms_norm`
    and `k3.mla` instead.

    Example:
    ```mlir
    %beta = k3.sigmoid %b : tensor<?x4xf32>
    ```
  }];
  let arguments = (ins K3_FloatTensor:$x);
  let results = (outs K3_FloatTensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def K3_LinearOp : K3_Op<"linear", [Pure]> {
  let summary = "Linear layer y = x · Wᵀ, optionally MXFP4";
  let description = [{
    `x: [..., K]`, `weight: [N, K]`, `y: [..., N]`. An `f4E2M1FN` weight needs
    `scales: [N, K/32]` of `f8E8M0FNU` (each the value 2^(byte − 127)):
    `W[n, c] = weight[n, c] · scales[n, c/32]`, as `arith.scaling_extf`
    computes it (OCP MX v1.0, blocks of 32 along the input dimension).

    Example:
    ```mlir
    %y = k3.linear %x, %w : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
    %z = k3.linear %x, %wq scales(%s)
        : (tensor<?x64xbf16>, tensor<128x64xf4E2M1FN>, tensor<128x2xf8E8M0FNU>) -> tensor<?x128xbf16>
    ```
  }];
  let arguments = (ins K3_FloatTensor:$x, K3_WeightTensor:$weight,
                   Optional<K3_ScaleTensor>:$scales);
  let results = (outs K3_FloatTensor:$y);
  let assemblyFormat = [{
    $x `,` $weight (`scales` `(` $scales^ `)`)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def K3_LmHeadOp : K3_Op<"lm_head", [Pure]> {
  let summary = "Output projection to f32 vocabulary logits";
  let description = [{
    `logits = x · Wᵀ` with `x: [T, D]`, `weight: [V, D]`, `logits: [T, V]`
    accumulated and returned in f32 (sampling reads them directly).

    Example:
    ```mlir
    %l = k3.lm_head %h, %w : (tensor<?x64xbf16>, tensor<256x64xbf16>) -> tensor<?x256xf32>
    ```
  }];
  let arguments = (ins K3_FloatTensor:$x, K3_FloatTensor:$weight);
  let results = (outs K3_F32Tensor:$logits);
  let assemblyFormat = [{
    $x `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Token mixing
//===----------------------------------------------------------------------===//

def K3_ShortConvOp : K3_Op<"short_conv", [Pure]> {
  let summary = "Depthwise causal short convolution with its window state";
  let description = [{
    `x: [T, C]`, `weight: [C, W]`, `state: [W−1, C]` → `y: [T, C]`,
    `new_state: [W−1, C]`.

    `y[t, c] = Σ_{i<W} weight[c, i] · x̂[t − (W−1) + i, c]`, where `x̂` is `x`
    preceded by the `W−1` rows of `state` (the pre-convolution inputs of the
    previous tokens, oldest first; zeros for a fresh sequence). Tap `W−1`
    multiplies the current token. `new_state` holds the last `W−1` rows of
    `x̂`, so decode feeds it back unchanged. With `silu` the result is
    `silu(y)`. No bias (the K3 checkpoint has none).

    Example:
    ```mlir
    %y, %s1 = k3.short_conv %x, %w, state(%s0) silu
        : (tensor<?x64xbf16>, tensor<64x4xf32>, tensor<3x64xf32>) -> (tensor<?x64xbf16>, tensor<3x64xf32>)
    ```
  }];
  let arguments = (ins K3_FloatTensor:$x, K3_FloatTensor:$weight,
                   K3_FloatTensor:$state, UnitAttr:$silu);
  let results = (outs K3_FloatTensor:$y, K3_FloatTensor:$new_state);
  let assemblyFormat = [{
    $x `,` $weight `,` `state` `(` $state `)` (`silu` $silu^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def K3_KdaGateOp : K3_Op<"kda_gate", [Pure]> {
  let summary = "KDA per-channel log-decay gate";
  let description = [{
    `x: [T, H, K]` (the decay projection `f_b(f_a(x))` per head),
    `a_log: [H]` (one value per head), `dt_bias: [H, K]` → `g: [T, H, K]`, f32.

    - `lower_bound`: `g = lb · sigmoid(exp(a_log[h]) · (x + dt_bias[h]))`,
      `g ∈ (lb, 0)`; `lb` is required and negative (K3: −5). Any negative
      bound is valid IR; the chunkwise rewrite uses the factored 16-token
      tile form only when it can prove `lb ≥ −5` (KDA.md §6.3).
    - `softplus`: `g = −exp(a_log[h]) · softplus(x + dt_bias[h])`,
      `g ∈ (−∞, 0]`; no `lb`.

    Example:
    ```mlir
    %g = k3.kda_gate lower_bound lb = -5.0 %x, %a, %dt
        : (tensor<?x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
    %g2 = k3.kda_gate softplus %x, %a, %dt
        : (tensor<?x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
    ```
  }];
  let arguments = (ins K3_KdaGateFormAttr:$form, OptionalAttr<F32Attr>:$lb,
                   K3_FloatTensor:$x, K3_F32Tensor:$a_log,
                   K3_F32Tensor:$dt_bias);
  let results = (outs K3_F32Tensor:$g);
  let assemblyFormat = [{
    $form (`lb` `=` $lb^)? $x `,` $a_log `,` $dt_bias attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def K3_KdaOp : K3_Op<"kda", [Pure]> {
  let summary = "Kimi Delta Attention recurrence";
  let description = [{
    The token recurrence of KDA.md §2 over one sequence:
    `q, k: [T, H, K]` (already L2-normalised), `v: [T, HV, V]`,
    `g: [T, HV, K]` f32 per-channel log-decay, `beta: [T, HV]`,
    `initial_state: [HV, K, V]` f32 → `out: [T, HV, V]`,
    `final_state: [HV, K, V]` f32.

    State layout: K-major, `S[h, i, j]` couples key channel `i` with value
    channel `j` (FLA's default layout). Per token and value head:
    `S ← Diag(exp g_t) S; S ← S + k_t (β_t (v_t − Sᵀ k_t))ᵀ;
    o_t = Sᵀ (scale · q_t)`. `scale` is applied to q once (K^-1/2 for K3).
    GVA: value head `h` reads q/k head `h / (HV / H)`; `HV % H == 0`.

    With `snapshots every N`, a third result holds the state after every N
    tokens, `[⌊T/N⌋, HV, K, V]` (the prefix-cache snapshots of CACHE.md;
    the chunked form takes them from its chunk boundaries).

    Example:
    ```mlir
    %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
        : (tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>,
           tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<4x16x16xf32>)
        -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>)
    %o2, %s2, %snap = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
        snapshots every 512 : (...) -> (tensor<?x4x16xf32>,
           tensor<4x16x16xf32>, tensor<?x4x16x16xf32>)
    ```
  }];
  let arguments = (ins K3_FloatTensor:$q, K3_FloatTensor:$k,
                   K3_FloatTensor:$v, K3_F32Tensor:$g, K3_FloatTensor:$beta,
                   K3_F32Tensor:$initial_state, F32Attr:$scale,
                   OptionalAttr<I64Attr>:$snapshot_interval);
  let results = (outs K3_FloatTensor:$out, K3_F32Tensor:$final_state,
                 Optional<K3_F32Tensor>:$snapshots);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $g `,` $beta `,` `state` `(` $initial_state `)`
    `scale` `=` $scale (`snapshots` `every` $snapshot_interval^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def K3_KdaChunkedOp : K3_Op<"kda_chunked", [Pure]> {
  let summary = "KDA in chunked form (KDA.md §6), the output of k3-kda-chunkwise";
  let description = [{
    The same operands and results as `k3.kda` (K-major state `[HV, K, V]`),
    computed chunk by chunk: tokens are split into chunks of `chunk` tokens
    (the last one may be short) and each chunk into sub-chunks of
    `sub_chunk` tokens. Per chunk, with `G` the inclusive cumulative
    log-decay inside the chunk:

    - intra-chunk matrices `L` (strictly lower, `β_r Σ_d k_r k_s e^{G_r−G_s}`)
      and `Aqk` (lower, `scale Σ_d q_r k_s e^{G_r−G_s}`). In the `factored`
      form they are formed per pair of sub-chunks against the reference
      point `Gref = G[first row of r's sub-chunk]`: off-diagonal blocks are
      products of two factors ≤ 1, diagonal blocks of a factor ≤ 1 and one
      up to `e^{(B−1)·|lb|}`. In the `safe` form every entry takes the exact
      pairwise decay (no factor above 1, any gate) and `sub_chunk` does not
      change the result;
    - `W = (I+L)⁻¹ diag(β)(K ⊙ e^G)`, `U = (I+L)⁻¹ diag(β) V` by forward
      substitution (the UT transform);
    - `Δ = U − W S`, `O = scale (Q ⊙ e^G) S + Aqk Δ`,
      `S ← Diag(e^{G_last}) S + (K ⊙ e^{G_last − G})ᵀ Δ`.

    `boundary_states[n]` is the state after tokens `[0, min((n+1)·chunk, T))`
    (the last entry equals `final_state`); a lowering materialises it only
    when it is used.

    Example:
    ```mlir
    %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0)
        scale = 0.25 chunk = 64 sub_chunk = 16 factored
        : (tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>,
           tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<4x16x16xf32>)
        -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>, tensor<?x4x16x16xf32>)
    ```
  }];
  let arguments = (ins K3_FloatTensor:$q, K3_FloatTensor:$k,
                   K3_FloatTensor:$v, K3_F32Tensor:$g, K3_FloatTensor:$beta,
                   K3_F32Tensor:$initial_state, F32Attr:$scale,
                   I64Attr:$chunk, I64Attr:$sub_chunk,
                   K3_KdaTileFormAttr:$form);
  let results = (outs K3_FloatTensor:$out, K3_F32Tensor:$final_state,
                 K3_F32Tensor:$boundary_states);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $g `,` $beta `,` `state` `(` $initial_state `)`
    `scale` `=` $scale `chunk` `=` $chunk `sub_chunk` `=` $sub_chunk $form
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def K3_KdaDecodeOp : K3_Op<"kda_decode", [Pure]> {
  let summary = "One fused KDA decode step (the output of k3-fuse-kda-decode)";
  let description = [{
    The whole token-mixing step of a KDA layer for one token, from the
    projections to the gated output norm (KDA.md §4, §5, §7): for q, k and
    v, the depthwise causal conv over `[window | x]` with SiLU and the window
    shifted by one row; the L2 norm of q and k (eps 1e-6 inside the root);
    the decay gate `g` from `f` (`form`, `lb` as in `k3.kda_gate`);
    `β = sigmoid(beta_logits)`; the recurrent step of `k3.kda` on `state`
    (decay, predict, update, read with `scale`); then
    `out = rms_norm(o, norm_weight) · sigmoid(out_gate)` per value head.

    Operands: `xq, xk: [1, H·K]`, `xv: [1, HV·V]` (the projections before the
    conv), `wq, wk: [H·K, W]`, `wv: [HV·V, W]` (filters), `cq, ck: [W−1,
    H·K]`, `cv: [W−1, HV·V]` (windows), `f: [1, HV, K]`, `a_log: [HV]`,
    `dt_bias: [HV, K]`, `beta_logits: [1, HV]`, `state: [HV, K, V]` f32,
    `norm_weight: [V]`, `out_gate: [1, HV, V]`. Results: `out: [1, HV, V]`,
    the three new windows, the new state. The CPU lowering runs it as one
    loop over value heads with every intermediate a per-head row; the GPU
    issue maps the same step to one kernel.

    Example:
    ```mlir
    %o, %nq, %nk, %nv, %s1 = k3.kda_decode
        x(%xq, %xk, %xv) filters(%wq, %wk, %wv) windows(%cq, %ck, %cv)
        gate(%f, %a, %dt) beta(%b) state(%s0) norm(%w) out_gate(%og)
        lower_bound lb = -5.0 scale = 0.25 eps = 1.0e-05 : (...) -> (...)
    ```
  }];
  let arguments = (ins K3_FloatTensor:$xq, K3_FloatTensor:$xk, K3_FloatTensor:$xv,
                   K3_FloatTensor:$wq, K3_FloatTensor:$wk, K3_FloatTensor:$wv,
                   K3_FloatTensor:$cq, K3_FloatTensor:$ck, K3_FloatTensor:$cv,
                   K3_FloatTensor:$f, K3_F32Tensor:$a_log, K3_F32Tensor:$dt_bias,
                   K3_FloatTensor:$beta_logits, K3_F32Tensor:$state,
                   K3_FloatTensor:$norm_weight, K3_FloatTensor:$out_gate,
                   K3_KdaGateFormAttr:$form, OptionalAttr<F32Attr>:$lb,
                   F32Attr:$scale, F32Attr:$eps);
  let results = (outs K3_FloatTensor:$out, K3_FloatTensor:$new_cq,
                 K3_FloatTensor:$new_ck, K3_FloatTensor:$new_cv,
                 K3_F32Tensor:$new_state);
  let assemblyFormat = [{
    `x` `(` $xq `,` $xk `,` $xv `)` `filters` `(` $wq `,` $wk `,` $wv `)`
    `windows` `(` $cq `,` $ck `,` $cv `)` `gate` `(` $f `,` $a_log `,` $dt_bias `)`
    `beta` `(` $beta_logits `)` `state` `(` $state `)` `norm` `(` $norm_weight `)`
    `out_gate` `(` $out_gate `)` $form (`lb` `=` $lb^)? `scale` `=` $scale
    `eps` `=` $eps attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def K3_MlaOp : K3_Op<"mla", [Pure]> {
  let summary = "Multi-head latent attention, expanded form, with its cache";
  let description = [{
    Expanded MLA (MLA.md §2) for `T` new tokens after `S` cached ones:
    `q: [T, H, P+R]` (per head `[nope | rope]`), `latent: [T, L]` (the
    normalised latent `c`), `k_rope: [T, R]` (the shared key part, not
    rotated in K3), `kv_b: [H·(P+Vd), L]` (the key/value up-projection, rows
    per head `[k_nope | v]`), `cache: [S, L+R]` (rows `[c | k_rope]` of the
    previous tokens), optional `gate: [T, H, Vd]` (pre-sigmoid output gate)
    → `out: [T, H, Vd]`, `new_cache: [S+T, L+R]` (the old rows, then the new).

    `s[t,h,j] = scale · (q_nope·k_nope[j,h] + q_rope·k_rope[j])` over all
    `S+T` positions, softmax in f32; with `causal`, new token `t` (at
    position `S+t`) sees positions `≤ S+t`. `out = Σ_j p·v[j,h]`, times
    `sigmoid(gate)` when present. `scale` must be `1/sqrt(P+R)` for K3
    (never `1/sqrt(L+R)`), and is stored, never derived.

    Example:
    ```mlir
    %o, %c1 = k3.mla %q, %c, %kr, kv_b(%wkvb), cache(%c0) gate(%g) scale = 0.144 causal
        : (tensor<?x2x48xf32>, tensor<?x32xf32>, tensor<?x16xf32>, tensor<128x32xf32>,
           tensor<?x48xf32>, tensor<?x2x32xf32>)
        -> (tensor<?x2x32xf32>, tensor<?x48xf32>)
    ```
  }];
  let arguments = (ins K3_FloatTensor:$q, K3_FloatTensor:$latent,
                   K3_FloatTensor:$k_rope, K3_FloatTensor:$kv_b,
                   K3_FloatTensor:$cache, Optional<K3_FloatTensor>:$gate,
                   F32Attr:$scale, UnitAttr:$causal);
  let results = (outs K3_FloatTensor:$out, K3_FloatTensor:$new_cache);
  let assemblyFormat = [{
    $q `,` $latent `,` $k_rope `,` `kv_b` `(` $kv_b `)` `,` `cache` `(` $cache `)`
    (`gate` `(` $gate^ `)`)? `scale` `=` $scale (`causal` $causal^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Channel mixing
//===----------------------------------------------------------------------===//

def K3_MlaAbsorbedOp : K3_Op<"mla_absorbed", [Pure]> {
  let summary = "Multi-head latent attention, absorbed form (the output of k3-mla-absorb)";
  let description = [{
    The operands, results and meaning of `k3.mla`, computed in the latent
    space (MLA.md §3): the key up-projection is absorbed into the query,
    `q_lat[t,h] = W_UK[h]ᵀ q_nope[t,h]` (`[H, L]`), scores run against the
    cached rows `[c | k_rope]` (`L+R` values per token, shared by all
    heads), `o_lat[t,h] = Σ_j p[t,h,j] c_j` (`[H, L]`), then the value
    up-projection `o = W_UV[h] o_lat`, then the gate. `W_UK[h]` and `W_UV[h]`
    are rows `[0, P)` and `[P, P+Vd)` of head `h`'s block of `kv_b`.
    `scale` stays `1/sqrt(P+R)`, never `1/sqrt(L+R)` (MLA.md §5).

    `splits = n` divides the key positions into `n` contiguous parts; each
    part yields its partial output and log-sum-exp, merged as
    `lse = log Σ_i e^{lse_i}`, `o = Σ_i e^{lse_i − lse} o_i` (MLA.md §7): the
    shape of a split-KV decode kernel. `splits = 1` is one pass.

    Example:
    ```mlir
    %o, %c1 = k3.mla_absorbed %q, %c, %kr, kv_b(%wkvb), cache(%c0) gate(%g)
        scale = 0.144 causal splits = 4
        : (tensor<1x2x48xf32>, tensor<1x32xf32>, tensor<1x16xf32>, tensor<128x32xf32>,
           tensor<?x48xf32>, tensor<1x2x32xf32>)
        -> (tensor<1x2x32xf32>, tensor<?x48xf32>)
    ```
  }];
  let arguments = (ins K3_FloatTensor:$q, K3_FloatTensor:$latent,
                   K3_FloatTensor:$k_rope, K3_FloatTensor:$kv_b,
                   K3_FloatTensor:$cache, Optional<K3_FloatTensor>:$gate,
                   F32Attr:$scale, UnitAttr:$causal, I64Attr:$splits);
  let results = (outs K3_FloatTensor:$out, K3_FloatTensor:$new_cache);
  let assemblyFormat = [{
    $q `,` $latent `,` $k_rope `,` `kv_b` `(` $kv_b `)` `,` `cache` `(` $cache `)`
    (`gate` `(` $gate^ `)`)? `scale` `=` $scale (`causal` $causal^)?
    `splits` `=` $splits attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def K3_MlaPagedOp : K3_Op<"mla_paged", [Pure]> {
  let summary = "Absorbed MLA decode of many requests over a paged latent cache";
  let description = [{
    One new token for each of `B` requests, attending to that request's
    cached rows where they lie in a pool of pages (vLLM's paged attention,
    CACHE.md): `q: [B, H, P+R]`, `latent: [B, L]`, `k_rope: [B, R]`,
    `kv_b: [H·(P+Vd), L]` as in `k3.mla`; `pages: [N, PT, L+R]` (the pool:
    N pages of PT rows `[c | k_rope]`), `block_table: [B, MB]` i32 (request
    b's cached row j is row `j mod PT` of page `block_table[b, j / PT]`),
    `lengths: [B]` i32 (request b's cached rows, at most MB·PT), optional
    `gate: [B, H, Vd]` → `out: [B, H, Vd]`, `rows: [B, L+R]` (each request's
    new row `[latent | k_rope]` in the pages' element type, for the caller to
    store at row `lengths[b]`).

    Request b's token attends to its `lengths[b]` cached rows and to its own
    new row (as stored, so that later steps read the same values), with the
    absorbed form's scores, softmax and value up-projection (MLA.md §3);
    `scale` is `1/sqrt(P+R)`. Table entries past a request's pages are
    never read. No row is gathered: the kernel reads the pages in place.

    Example:
    ```mlir
    %o, %rows = k3.mla_paged %q, %c, %kr, kv_b(%wkvb), pages(%pool) table(%bt)
        lengths(%len) gate(%g) scale = 0.144
        : (tensor<?x2x48xf32>, tensor<?x32xf32>, tensor<?x16xf32>, tensor<128x32xf32>,
           tensor<?x?x48xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?x2x32xf32>)
        -> (tensor<?x2x32xf32>, tensor<?x48xbf16>)
    ```
  }];
  let arguments = (ins K3_FloatTensor:$q, K3_FloatTensor:$latent,
                   K3_FloatTensor:$k_rope, K3_FloatTensor:$kv_b,
                   K3_FloatTensor:$pages, RankedTensorOf<[I32]>:$block_table,
                   RankedTensorOf<[I32]>:$lengths, Optional<K3_FloatTensor>:$gate,
                   F32Attr:$scale);
  let results = (outs K3_FloatTensor:$out, K3_FloatTensor:$rows);
  let assemblyFormat = [{
    $q `,` $latent `,` $k_rope `,` `kv_b` `(` $kv_b `)` `,` `pages` `(` $pages `)`
    `table` `(` $block_table `)` `lengths` `(` $lengths `)`
    (`gate` `(` $gate^ `)`)? `scale` `=` $scale attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def K3_AttendPartsOp : K3_Op<"attend_parts", [
    DestinationStyleOpInterface, DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite", "getAliasingValues",
         "bufferize"]>]> {
  let summary = "Split-K softmax attention over shared key rows, one pass per part";
  let description = [{
    The core of absorbed MLA decode on a GPU (MLA.md §7), one fused kernel:
    `q: [M, D]` f32 query rows, the softmax scale already applied, or
    without it and the scale as `q_scale` (the kernel multiplies each query
    value as it loads it: the same product, one elementwise kernel fewer), `rows:
    [N, D]` key rows shared by every query row (bf16 or f32), whose first
    `L` columns are also the values. The keys are cut into `P = ⌈N / n⌉`
    parts of `n = part_keys` keys (the last may be shorter). For every row
    `m` and part `p`, with `s_j = q_m · rows_j` over the part's keys:
    `max[m, p] = max_j s_j`, `sum[m, p] = Σ_j e^{s_j − max}` and
    `u[m, p, :] = Σ_j e^{s_j − max} rows_j[0, L)`: what a log-sum-exp merge
    of the parts needs. Every key is visible (decode has no mask).

    On tensors it has destination operands and results like linalg; after
    bufferization it writes its `outs` buffers, and `k3-gpu-attend-parts`
    turns it into one kernel that reads each key row once, for both the
    scores and the values.

    Example:
    ```mlir
    %m, %l, %u = k3.attend_parts %q, %rows outs(%m0, %l0, %u0) part_keys = 256
        : (tensor<64x576xf32>, tensor<?x576xbf16>, tensor<64x?xf32>, tensor<64x?xf32>,
           tensor<64x?x512xf32>) -> (tensor<64x?xf32>, tensor<64x?xf32>, tensor<64x?x512xf32>)
    ```
  }];
  let arguments = (ins AnyShaped:$q, AnyShaped:$rows, AnyShaped:$max_init,
                   AnyShaped:$sum_init, AnyShaped:$u_init, I64Attr:$part_keys,
                   OptionalAttr<F32Attr>:$q_scale);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $q `,` $rows `outs` `(` $max_init `,` $sum_init `,` $u_init `)`
    `part_keys` `=` $part_keys attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return ::mlir::MutableOperandRange(getOperation(), 2, 3);
    }
  }];
  let hasVerifier = 1;
}

def K3_KdaChunksOp : K3_Op<"kda_chunks", [
    DestinationStyleOpInterface, DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite", "getAliasingValues",
         "bufferize"]>]> {
  let summary = "KDA prefill over 16-token chunks in one pass per value head";
  let description = [{
    `k3.kda_chunked`, as two GPU kernels (`k3-gpu-kda-chunks`): the operands
    of `k3.kda` (`q, k: [T, H, K]`, `v: [T, HV, V]`, `g: [T, HV, K]` f32
    log-decays, `beta: [T, HV]`) and the
    destinations `out: [T, HV, V]` (written), `state: [HV, K, V]` f32 (read
    as the initial state, written with the final one), `workspace:
    [⌈T/16⌉, HV, R]` f32 (scratch: one record of R words per chunk and
    value head, R fixed by K and V, see k3-gpu-kda-chunks) and, optionally,
    `boundaries: [⌈T/every⌉, HV, K, V]` f32, the state after every `every`
    tokens and after the last one (written; `every` a multiple of 16).

    The tokens run in chunks of 16 (KDA.md §6.1 with C = 16). Without
    `pairwise`, the chunk matrices are products of factors formed against
    the cumulative decay at the chunk's row 8: `g`'s cumulative sum over any
    8 consecutive tokens must stay within 80 nat (a lower-bounded gate), which
    keeps every factor within e^±80. With `pairwise`, each entry (r, s ≤ r)
    of the chunk matrices takes its own exponents e^{G_r − G_s} ≤ 1 (FLA's
    chunk_kda inside a sub-chunk): any gate, the softplus one included, at
    one exponential per entry and key channel.

    On tensors it has destination operands and results like linalg; after
    bufferization it updates its `outs` buffers.

    Example:
    ```mlir
    %o, %s, %w = k3.kda_chunks %q, %k, %v, %g, %beta outs(%o0, %s0, %w0) scale = 0.25
        every = 0
        : (tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>,
           tensor<?x4xf32>, tensor<?x4x16xf32>, tensor<4x16x16xf32>, tensor<?x4x784xf32>)
        -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>, tensor<?x4x784xf32>)
    ```
  }];
  let arguments = (ins AnyShaped:$q, AnyShaped:$k, AnyShaped:$v, AnyShaped:$g,
                   AnyShaped:$beta, AnyShaped:$out_init, AnyShaped:$state_init,
                   AnyShaped:$workspace_init, Optional<AnyShaped>:$boundaries_init,
                   F32Attr:$scale, I64Attr:$every, UnitAttr:$pairwise);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $g `,` $beta `outs` `(` $out_init `,` $state_init `,`
    $workspace_init (`,` $boundaries_init^)? `)` `scale` `=` $scale `every` `=` $every
    (`pairwise` $pairwise^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return ::mlir::MutableOperandRange(getOperation(), 5, getNumOperands() - 5);
    }
  }];
  let hasVerifier = 1;
}

def K3_MoeExpertsOp : K3_Op<"moe_experts", [
    DestinationStyleOpInterface, DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite", "getAliasingValues",
         "bufferize"]>]> {
  let summary = "The routed experts of k3.moe on MXFP4 weights, per routing slot";
  let description = [{
    The expert GEMMs of `k3.moe` with MXFP4 experts, as kernels on tensor
    cores (`k3-gpu-moe-experts`): for the latent input `z: [T, Dl]` (bf16,
    f16 or f32), routed by `indices: [T, k]` (i32 or i64) with `weights:
    [T, k]` f32, and the experts' packed E2M1 codes (i8, low nibble first)
    and E8M0 block scales, `w1, w3: [E, Ie, Dl/2]` with `s1, s3: [E, Ie,
    Dl/32]` and `w2: [E, Dl, Ie/2]` with `s2: [E, Dl, Ie/32]`, it writes
    for every slot `p = t·k + j` with `e = indices[t, j]`

    ```
    y[p] = weights[t, j] · W2[e] · glu(W1[e] · z[t], W3[e] · z[t])
    ```

    and zero where `e` lies outside `[0, E)` (the routing-weight epilogue;
    `k3.moe`'s combine is then a sum over `j`). `Dl` and `Ie` are multiples
    of 32. The destinations: `y: [T·k, Dl]` f32 (written), `h: [T·k, Ie]`
    f32 and `order: [3E + T·k]` i32 (scratch: the GLU output by
    expert-sorted row, and the slots' expert counts, row and tile offsets
    and expert-sorted order). `glu` as in `k3.moe`: SiTU-GLU with
    `beta1`/`beta2`, or SwiGLU with `activation silu`.

    On tensors it has destination operands and results like linalg; after
    bufferization it updates its `outs` buffers.

    Example:
    ```mlir
    %y, %h, %o = k3.moe_experts %z routed(%i, %w) experts(%w1, %w3, %w2)
        scales(%s1, %s3, %s2) outs(%y0, %h0, %o0) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
        : (tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<8x96x32xi8>,
           tensor<8x96x32xi8>, tensor<8x64x48xi8>, tensor<8x96x2xf8E8M0FNU>,
           tensor<8x96x2xf8E8M0FNU>, tensor<8x64x3xf8E8M0FNU>, tensor<?x64xf32>,
           tensor<?x96xf32>, tensor<?xi32>)
        -> (tensor<?x64xf32>, tensor<?x96xf32>, tensor<?xi32>)
    ```
  }];
  let arguments = (ins AnyShaped:$z, AnyShaped:$indices, AnyShaped:$weights, AnyShaped:$w1,
                   AnyShaped:$w3, AnyShaped:$w2, AnyShaped:$s1, AnyShaped:$s3, AnyShaped:$s2,
                   AnyShaped:$y_init, AnyShaped:$h_init, AnyShaped:$order_init,
                   OptionalAttr<K3_GluActivationAttr>:$activation,
                   OptionalAttr<F32Attr>:$beta1, OptionalAttr<F32Attr>:$beta2);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $z `routed` `(` $indices `,` $weights `)` `experts` `(` $w1 `,` $w3 `,` $w2 `)`
    `scales` `(` $s1 `,` $s3 `,` $s2 `)` `outs` `(` $y_init `,` $h_init `,` $order_init `)`
    (`activation` $activation^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// The activation; absent means SiTU-GLU (Kimi K3).
    ::mlir::k3::GluActivation getGlu() {
      return getActivation().value_or(::mlir::k3::GluActivation::situ);
    }
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return ::mlir::MutableOperandRange(getOperation(), 9, 3);
    }
  }];
  let hasVerifier = 1;
}

def K3_PagedAttendOp : K3_Op<"paged_attend", [
    DestinationStyleOpInterface, DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite", "getAliasingValues",
         "bufferize"]>]> {
  let summary = "The attention of k3.mla_paged over its pages, in destination-passing style";
  let description = [{
    The part of `k3.mla_paged` between the absorbed queries and the value
    up-projection, as one GPU kernel (`k3-gpu-paged-attend`, a block per
    head and request): `q: [B, H, L+R]` f32, the absorbed queries with the
    scale applied, or without it and the scale as `q_scale` (the kernel
    multiplies each query value as it loads it: the same product, one
    elementwise kernel fewer); `pages: [N, PT, L+R]`, `block_table: [B, MB]` i32 and
    `lengths: [B]` i32 as in `k3.mla_paged`; `rows: [B, L+R]`, each
    request's new row as stored. Request b's query row h attends to the
    first min(lengths[b], MB·PT) rows of its pages, then to its own row:
    `out[b, h, :] = Σ_j softmax_j(q[b, h] · key_j) · key_j[0 : L]` into
    `out: [B, H, L]` f32. The pages are read in place through the table;
    lengths and table are read on the device.

    Example:
    ```mlir
    %o = k3.paged_attend %q pages(%pool) table(%bt) lengths(%len) rows(%rows) outs(%o0)
        : (tensor<?x2x40xf32>, tensor<?x16x40xbf16>, tensor<?x?xi32>, tensor<?xi32>,
           tensor<?x40xbf16>, tensor<?x2x32xf32>) -> tensor<?x2x32xf32>
    ```
  }];
  let arguments = (ins AnyShaped:$q, AnyShaped:$pages, AnyShaped:$block_table,
                   AnyShaped:$lengths, AnyShaped:$rows, AnyShaped:$out_init,
                   OptionalAttr<F32Attr>:$q_scale);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $q `pages` `(` $pages `)` `table` `(` $block_table `)` `lengths` `(` $lengths `)`
    `rows` `(` $rows `)` `outs` `(` $out_init `)` attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return ::mlir::MutableOperandRange(getOperation(), 5, 1);
    }
  }];
  let hasVerifier = 1;
}

def K3_KdaStepOp : K3_Op<"kda_step", [
    DestinationStyleOpInterface, DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite", "getAliasingValues",
         "bufferize"]>]> {
  let summary = "The fused one-token KDA step, in destination-passing style";
  let description = [{
    `k3.kda_decode` with destinations, as one GPU kernel
    (`k3-gpu-kda-step`, a block per value head): the same inputs (`xq, xk:
    [1, H·K]`, `xv: [1, HV·V]`, the filters `wq, wk: [H·K, W]`, `wv: [HV·V,
    W]`, the windows `cq, ck: [W−1, H·K]`, `cv: [W−1, HV·V]`, the gate
    inputs `f: [1, HV, K]`, `a_log: [HV]` f32, `dt_bias: [HV, K]` f32,
    `beta_logits: [1, HV]`, `norm_weight: [V]`, `out_gate: [1, HV, V]`), the
    same attributes and the same step, written to the destinations `out:
    [1, HV, V]`, the three new windows (their windows' shapes) and `state:
    [HV, K, V]` f32, which is read as the state before the step and updated
    in place.

    Batched (B requests' steps in one kernel, a block per value head and
    request): a state of rank 4 `[B, HV, K, V]` makes every per-token
    operand `[B, ...]` in place of `[1, ...]` (`xq`, `xk`, `xv`, `f`,
    `beta_logits`, `out_gate`, `out`) and gives each window and new window
    a leading request dimension (`[B, W−1, ·]`); the weights are shared.

    On tensors it has destination operands and results like linalg; after
    bufferization it updates its `outs` buffers. The new windows must not
    be the old windows' buffers when value heads share q/k heads (another
    block still reads the window its group's first block rewrites).

    Example:
    ```mlir
    %o, %nq, %nk, %nv, %s1 = k3.kda_step x(%xq, %xk, %xv) filters(%wq, %wk, %wv)
        windows(%cq, %ck, %cv) gate(%f, %a, %dt) beta(%b) norm(%w) out_gate(%og)
        outs(%o0, %nq0, %nk0, %nv0, %s0) lower_bound lb = -5.0 scale = 0.25 eps = 1.0e-05
        : (...) -> (...)
    ```
  }];
  let arguments = (ins AnyShaped:$xq, AnyShaped:$xk, AnyShaped:$xv, AnyShaped:$wq,
                   AnyShaped:$wk, AnyShaped:$wv, AnyShaped:$cq, AnyShaped:$ck, AnyShaped:$cv,
                   AnyShaped:$f, AnyShaped:$a_log, AnyShaped:$dt_bias, AnyShaped:$beta_logits,
                   AnyShaped:$norm_weight, AnyShaped:$out_gate, AnyShaped:$out_init,
                   AnyShaped:$new_cq_init, AnyShaped:$new_ck_init, AnyShaped:$new_cv_init,
                   AnyShaped:$state_init, K3_KdaGateFormAttr:$form, OptionalAttr<F32Attr>:$lb,
                   F32Attr:$scale, F32Attr:$eps);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    `x` `(` $xq `,` $xk `,` $xv `)` `filters` `(` $wq `,` $wk `,` $wv `)`
    `windows` `(` $cq `,` $ck `,` $cv `)` `gate` `(` $f `,` $a_log `,` $dt_bias `)`
    `beta` `(` $beta_logits `)` `norm` `(` $norm_weight `)` `out_gate` `(` $out_gate `)`
    `outs` `(` $out_init `,` $new_cq_init `,` $new_ck_init `,` $new_cv_init `,` $state_init `)`
    $form (`lb` `=` $lb^)? `scale` `=` $scale `eps` `=` $eps attr-dict
    `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return ::mlir::MutableOperandRange(getOperation(), 15, 5);
    }
    /// B requests' steps at once: the state is [B, HV, K, V].
    bool isBatched() {
      return ::llvm::cast<::mlir::ShapedType>(getStateInit().getType()).getRank() == 4;
    }
  }];
  let hasVerifier = 1;
}

def K3_RouterOp : K3_Op<"router", [Pure]> {
  let summary = "Sigmoid top-k expert router with a selection-only bias";
  let description = [{
    `x: [T, D]`, `weight: [E, D]`, optional `bias: [E]` → `indices: [T, k]`,
    `weights: [T, k]` f32 (MOE_MXFP4.md §5), all in f32:
    `s = sigmoid(x · Wᵀ)`; `indices = topk(s + bias, k)` (exact ties go to
    the lower expert id); `w = s[indices]` from the unbiased scores; with
    `renormalize`, `w /= Σ w + 1e-20`; then `w *= scaling`.

    Example:
    ```mlir
    %i, %w = k3.router %x, %wr bias(%b) top_k = 2 renormalize scaling = 1.0
        : (tensor<?x64xbf16>, tensor<8x64xbf16>, tensor<8xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
    ```
  }];
  let arguments = (ins K3_FloatTensor:$x, K3_FloatTensor:$weight,
                   Optional<K3_F32Tensor>:$bias, I64Attr:$top_k,
                   UnitAttr:$renormalize, F32Attr:$scaling);
  let results = (outs K3_IndexTensor:$indices, K3_F32Tensor:$weights);
  let assemblyFormat = [{
    $x `,` $weight (`bias` `(` $bias^ `)`)? `top_k` `=` $top_k
    (`renormalize` $renormalize^)? `scaling` `=` $scaling attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def K3_SituGluOp : K3_Op<"situ_glu", [Pure, SameOperandsAndResultType]> {
  let summary = "SiTU-GLU activation";
  let description = [{
    `y = [β1·tanh(gate/β1)·sigmoid(gate)] · [β2·tanh(up/β2)]` in f32
    (MOE_MXFP4.md §8). Without `beta2` the up branch stays linear
    (`activation_situ_linear_beta: null`). `|y| < β1·β2`.

    Example:
    ```mlir
    %h = k3.situ_glu %g, %u {beta1 = 4.0 : f32, beta2 = 25.0 : f32} : tensor<?x96xbf16>
    ```
  }];
  let arguments = (ins K3_FloatTensor:$gate, K3_FloatTensor:$up,
                   F32Attr:$beta1, OptionalAttr<F32Attr>:$beta2);
  let results = (outs K3_FloatTensor:$y);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($gate)";
  let hasVerifier = 1;
}

def K3_SwiGluOp : K3_Op<"swiglu", [Pure, SameOperandsAndResultType]> {
  let summary = "SwiGLU activation";
  let description = [{
    `y = silu(gate) · up = gate · sigmoid(gate) · up` in the operands' type
    (f32 as imported; Kimi Linear's `hidden_act: silu`, KIMI_LINEAR.md).
    Unbounded, unlike `k3.situ_glu`.

    Example:
    ```mlir
    %h = k3.swiglu %g, %u : tensor<?x96xf32>
    ```
  }];
  let arguments = (ins K3_FloatTensor:$gate, K3_FloatTensor:$up);
  let results = (outs K3_FloatTensor:$y);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($gate)";
}

def K3_MlpOp : K3_Op<"mlp", [Pure]> {
  let summary = "Dense gated MLP (SiTU-GLU or SwiGLU)";
  let description = [{
    `y = (glu(x·gateᵀ, x·upᵀ)) · downᵀ` with `x: [T, D]`,
    `gate, up: [I, D]`, `down: [D, I]` (the layer-0 MLP and the shared
    experts). `glu` is SiTU-GLU with `beta1`/`beta2` as in `k3.situ_glu`
    (no `activation`, or `activation situ`), or SwiGLU (`activation silu`,
    no betas) as in `k3.swiglu`.

    Example:
    ```mlir
    %y = k3.mlp %x, %wg, %wu, %wd {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
        : (tensor<?x64xbf16>, tensor<96x64xbf16>, tensor<96x64xbf16>, tensor<64x96xbf16>) -> tensor<?x64xbf16>
    %z = k3.mlp %x, %wg, %wu, %wd activation silu
        : (tensor<?x64xbf16>, tensor<96x64xbf16>, tensor<96x64xbf16>, tensor<64x96xbf16>) -> tensor<?x64xbf16>
    ```
  }];
  let arguments = (ins K3_FloatTensor:$x, K3_FloatTensor:$gate_proj,
                   K3_FloatTensor:$up_proj, K3_FloatTensor:$down_proj,
                   OptionalAttr<K3_GluActivationAttr>:$activation,
                   OptionalAttr<F32Attr>:$beta1, OptionalAttr<F32Attr>:$beta2);
  let results = (outs K3_FloatTensor:$y);
  let assemblyFormat = [{
    $x `,` $gate_proj `,` $up_proj `,` $down_proj (`activation` $activation^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// The activation; absent means SiTU-GLU (Kimi K3).
    ::mlir::k3::GluActivation getGlu() {
      return getActivation().value_or(::mlir::k3::GluActivation::situ);
    }
  }];
  let hasVerifier = 1;
}

def K3_MoeOp : K3_Op<"moe", [Pure, AttrSizedOperandSegments]> {
  let summary = "Routed LatentMoE with optional shared experts";
  let description = [{
    MOE_MXFP4.md §6 for `x: [T, D]` routed by `indices, weights: [T, k]`
    (from `k3.router`):

    ```
    z = latent ? x · latent_downᵀ : x                        [T, Dl]
    u[t] = Σ_j weights[t,j] · E_{indices[t,j]}(z[t])          f32 combine
    E(z) = w2 · glu(w1 · z, w3 · z)                           Dl → Ie → Dl
    u = norm ? rms_norm(u; norm, eps) : u                     f32 stats
    y = latent ? u · latent_upᵀ : u                           [T, D]
    y += shared ? mlp(x; shared_gate, shared_up, shared_down) : 0
    ```

    Experts: `w1, w3: [E, Ie, Dl]`, `w2: [E, Dl, Ie]` (row = output channel).
    `f4E2M1FN` experts need `scales(w1_scale, w3_scale, w2_scale)` of
    `f8E8M0FNU`, `[E, Ie, Dl/32]` and `[E, Dl, Ie/32]`. Latent:
    `latent_down: [Dl, D]`, `latent_up: [D, Dl]`, optional `norm: [Dl]`
    (eps `eps`). Shared: `shared_gate, shared_up: [Is, D]`,
    `shared_down: [D, Is]`, applied to the original `x`. `glu` is the
    activation of `k3.mlp` (SiTU-GLU with `beta1`/`beta2`, or
    `activation silu`), for the routed and the shared experts alike.

    A pair whose index lies outside `[0, E)` is dropped (the router never
    produces one). With
    `mxfp8_inputs` (k3-quantize-mxfp4's `inputs=mxfp8`), each expert GEMM's
    input rows (z, then the SiTU-GLU output) are first rounded to MXFP8 E4M3
    in blocks of 32 along the input dimension (scale 2^(floor(log2 amax) − 8),
    nearest even, saturating at ±448): W4A8 numerics, products in f32.

    Example:
    ```mlir
    %y = k3.moe %x routed(%i, %w) latent(%wd, %wu) norm(%n)
        experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) shared(%sg, %su, %sd)
        {beta1 = 4.0 : f32, beta2 = 25.0 : f32, eps = 1.0e-05 : f32}
        : (tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<32x64xbf16>,
           tensor<64x32xbf16>, tensor<32xbf16>, tensor<8x64x32xf4E2M1FN>,
           tensor<8x64x32xf4E2M1FN>, tensor<8x32x64xf4E2M1FN>, tensor<8x64x1xf8E8M0FNU>,
           tensor<8x64x1xf8E8M0FNU>, tensor<8x32x2xf8E8M0FNU>, tensor<96x64xbf16>,
           tensor<96x64xbf16>, tensor<64x96xbf16>) -> tensor<?x64xbf16>
    ```
  }];
  let arguments = (ins K3_FloatTensor:$x, K3_IndexTensor:$indices,
                   K3_F32Tensor:$weights,
                   Optional<K3_FloatTensor>:$latent_down,
                   Optional<K3_FloatTensor>:$latent_up,
                   Optional<K3_FloatTensor>:$norm,
                   K3_WeightTensor:$w1, K3_WeightTensor:$w3,
                   K3_WeightTensor:$w2,
                   Optional<K3_ScaleTensor>:$w1_scale,
                   Optional<K3_ScaleTensor>:$w3_scale,
                   Optional<K3_ScaleTensor>:$w2_scale,
                   Optional<K3_FloatTensor>:$shared_gate,
                   Optional<K3_FloatTensor>:$shared_up,
                   Optional<K3_FloatTensor>:$shared_down,
                   OptionalAttr<K3_GluActivationAttr>:$activation,
                   OptionalAttr<F32Attr>:$beta1, OptionalAttr<F32Attr>:$beta2,
                   DefaultValuedAttr<F32Attr, "1.0e-5">:$eps,
                   UnitAttr:$mxfp8_inputs);
  let results = (outs K3_FloatTensor:$y);
  let assemblyFormat = [{
    $x `routed` `(` $indices `,` $weights `)`
    (`latent` `(` $latent_down^ `,` $latent_up `)`)?
    (`norm` `(` $norm^ `)`)?
    `experts` `(` $w1 `,` $w3 `,` $w2 `)`
    (`scales` `(` $w1_scale^ `,` $w3_scale `,` $w2_scale `)`)?
    (`shared` `(` $shared_gate^ `,` $shared_up `,` $shared_down `)`)?
    (`activation` $activation^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// The activation; absent means SiTU-GLU (Kimi K3).
    ::mlir::k3::GluActivation getGlu() {
      return getActivation().value_or(::mlir::k3::GluActivation::situ);
    }
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Depth mixing
//===----------------------------------------------------------------------===//

def K3_AttnResOp : K3_Op<"attn_res", [Pure]> {
  let summary = "Attention Residuals read over depth";
  let description = [{
    Mixes candidates `sources = [v_0, …, v_S]` (the sealed block snapshots,
    then the running sum last), each `[T, D]`, per token (MOE_MXFP4.md §9),
    in f32: `score_i = Σ_d rmsnorm(v_i)[d] · norm_weight[d] ·
    query[d]` with eps `eps`; `p = softmax_i(score)` (no temperature);
    `out = Σ_i p_i · v_i` (raw values). `query: [D]` is the pseudo-query
    (the rank-1 `*_res_proj` weight), `norm_weight: [D]` the `*_res_norm`
    weight.

    The first source may be a stack `[N, T, D]` of N candidates (N may be
    dynamic): the sealed blocks, read from one buffer, so that a layer's
    read does not depend on how many blocks precede it (the importer's
    form, which lets layers of one kind share a function whatever their
    depth).

    Example:
    ```mlir
    %h = k3.attn_res [%b0, %r] norm(%n) query(%p) {eps = 1.0e-05 : f32}
        : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Variadic<K3_FloatTensor>:$sources,
                   K3_FloatTensor:$norm_weight, K3_FloatTensor:$query,
                   F32Attr:$eps);
  let results = (outs K3_FloatTensor:$out);
  let assemblyFormat = [{
    ` ` `[` $sources `]` `norm` `(` $norm_weight `)` `query` `(` $query `)` attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def K3_AttnResMixOp : K3_Op<"attn_res_mix", [
    AttrSizedOperandSegments, DestinationStyleOpInterface, DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite", "getAliasingValues",
         "bufferize"]>]> {
  let summary = "Attention Residuals read over depth, in destination-passing style";
  let description = [{
    `k3.attn_res` with a destination, as one GPU kernel (`k3-gpu-attn-res`,
    a block per token): the same candidates (`sources`: a stack `[N, T, D]`
    first or not, then `[T, D]` ones), `norm_weight: [D]`, `query: [D]` and
    `eps`, the mix written to `out: [T, D]`. On tensors it has a result like
    linalg; after bufferization it writes its `outs` buffer, which must not
    be a source's.

    With `then_norm(%w)` (and `then_eps`) the op writes the RMSNorm of the
    f32 mix instead, `mix · rsqrt(mean(mix²) + then_eps) · w` (`k3.row_norm`'s
    arithmetic, in the same kernel: k3-gpu-fuse-row-norms folds a
    `k3.row_norm` of the mix into it).

    Example:
    ```mlir
    %h = k3.attn_res_mix [%stack, %r] norm(%n) query(%p) outs(%o) {eps = 1.0e-05 : f32}
        : (tensor<?x?x64xf32>, tensor<?x64xf32>, tensor<64xbf16>, tensor<64xbf16>,
           tensor<?x64xf32>) -> tensor<?x64xf32>
    %y = k3.attn_res_mix [%stack, %r] norm(%n) query(%p) then_norm(%w) outs(%o)
        {eps = 1.0e-05 : f32, then_eps = 1.0e-05 : f32}
        : (tensor<?x?x64xf32>, tensor<?x64xf32>, tensor<64xbf16>, tensor<64xbf16>,
           tensor<64xbf16>, tensor<?x64xf32>) -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyShaped>:$sources, AnyShaped:$norm_weight, AnyShaped:$query,
                   Optional<AnyShaped>:$then_norm, AnyShaped:$out_init, F32Attr:$eps,
                   OptionalAttr<F32Attr>:$then_eps);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    ` ` `[` $sources `]` `norm` `(` $norm_weight `)` `query` `(` $query `)`
    (`then_norm` `(` $then_norm^ `)`)? `outs` `(` $out_init `)` attr-dict `:`
    functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return ::mlir::MutableOperandRange(getOperation(), getNumOperands() - 1, 1);
    }
  }];
  let hasVerifier = 1;
}

def K3_RowNormOp : K3_Op<"row_norm", [
    DestinationStyleOpInterface, DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite", "getAliasingValues",
         "bufferize"]>]> {
  let summary = "RMSNorm of [R, D] rows, in destination-passing style";
  let description = [{
    `k3.rms_norm` of a rank-2 `x: [R, D]` with a destination, as one GPU
    kernel (`k3-gpu-row-norm`, a block per row): `out = x · rsqrt(mean(x²) +
    eps) · weight`, times `sigmoid(gate)` with `gate: [R, D]`, statistics in
    f32. On tensors it has a result like linalg; after bufferization it
    writes its `outs` buffer, which may be `x`'s own (each thread writes
    only the channels it has read).

    A rank-3 `x: [R, K, D]` (no gate) is normed as its rows summed over K
    first, in f32 and in order of K from 0.0: the MoE's combine over each
    token's picks, folded in by k3-gpu-fuse-row-norms.

    Example:
    ```mlir
    %y = k3.row_norm %x, %w outs(%o) {eps = 1.0e-05 : f32}
        : (tensor<?x64xf32>, tensor<64xbf16>, tensor<?x64xf32>) -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins AnyShaped:$x, AnyShaped:$weight, Optional<AnyShaped>:$gate,
                   AnyShaped:$out_init, F32Attr:$eps);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $x `,` $weight (`gate` `(` $gate^ `)`)? `outs` `(` $out_init `)` attr-dict
    `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return ::mlir::MutableOperandRange(getOperation(), getNumOperands() - 1, 1);
    }
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Communication
//===----------------------------------------------------------------------===//

def K3_CollectiveOp : K3_Op<"collective", [
    DestinationStyleOpInterface, DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite", "getAliasingValues",
         "bufferize"]>]> {
  let summary = "A collective over a grid axis group, as a runtime call on buffers";
  let description = [{
    What `k3-lower-collectives` makes of an upstream `shard` collective in a
    binary compiled for a grid of ranks (`k3-compile --tp --ep`): the
    collective over the ranks of `grid` that share every coordinate except
    those on `axes`. `all_reduce` writes the group's sum of `input` into
    `init` (same shape); `all_gather` writes every group rank's `input`
    into `init: [P, ...input]`, in group-rank order (P: the product of the
    grid's extents on `axes`). f32 or bf16.

    On tensors it has a destination and a result like linalg; after
    bufferization it updates its `init` buffer, and `k3-comm-to-calls`
    turns it into a call of the runtime's `k3_comm_collective` on its
    buffers' addresses (runtime/include/k3rt/k3rt_comm.h).

    Example:
    ```mlir
    %s = k3.collective all_reduce %x outs(%d) grid = [2, 1] axes = [0]
        : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins AnyShaped:$input, AnyShaped:$init, K3_CollectiveKindAttr:$kind,
                   DenseI64ArrayAttr:$grid, DenseI64ArrayAttr:$axes);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $kind $input `outs` `(` $init `)` `grid` `=` $grid `axes` `=` $axes attr-dict
    `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() { return getInitMutable(); }
    /// The ranks of one group: the product of the grid's extents on `axes`.
    int64_t getGroupSize();
  }];
  let hasVerifier = 1;
}

#endif // K3_OPS_TD
