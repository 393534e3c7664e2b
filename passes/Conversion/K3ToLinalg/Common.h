//===- Common.h - Helpers for lowering k3 ops to linalg ---------*- C++ -*-===//
//
// Part of k3. Building blocks shared by the k3 → linalg patterns: shapes of
// dynamic tensors, f32 compute inside linalg bodies (statistics are f32
// whatever the storage, K3Dialect.td), and generic-op builders.
//
//===----------------------------------------------------------------------===//

#ifndef PASSES_CONVERSION_K3TOLINALG_COMMON_H
#define PASSES_CONVERSION_K3TOLINALG_COMMON_H

#include "dialects/K3/K3Ops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

#include <functional>

namespace mlir::k3::lowering {

/// The sizes of `v` (static ones as attributes, dynamic via tensor.dim).
SmallVector<OpFoldResult> sizesOf(OpBuilder &b, Location loc, Value v);

/// A zero-filled f32 tensor of `sizes`.
Value zeros(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes);

/// An uninitialised tensor of `sizes` and element type `elt`.
Value empty(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes, Type elt);

/// `v` widened (or narrowed) to `to` inside a region.
Value convertScalar(OpBuilder &b, Location loc, Value v, Type to);
inline Value f32(OpBuilder &b, Location loc, Value v) {
  return convertScalar(b, loc, v, b.getF32Type());
}

/// The largest power of two up to `preferred` that divides `extent`: a
/// tile size that needs no partial tiles.
int64_t fit(int64_t extent, int64_t preferred);

/// Scalar helpers on f32, and index constants.
Value cst(OpBuilder &b, Location loc, double value);
Value cstIndex(OpBuilder &b, Location loc, int64_t value);
Value sigmoid(OpBuilder &b, Location loc, Value x);

/// The KDA decay `g` of one channel (KDA.md §3) from f32 scalars: the
/// lower-bounded form `lb · sigmoid(e^a · (x + dt))` when `lowerBound`, else
/// `−e^a · softplus(x + dt)` (softplus the identity above 20, as FLA).
Value kdaDecay(OpBuilder &b, Location loc, bool lowerBound, double lb, Value x, Value aLog,
               Value dt);

/// Identity map of rank n, the map keeping only `dims` of n loops, and the
/// map keeping the first n − 1 (a row of statistics over the last dim).
AffineMap identity(MLIRContext *ctx, unsigned n);
AffineMap project(MLIRContext *ctx, unsigned n, ArrayRef<unsigned> dims);
AffineMap leading(MLIRContext *ctx, unsigned n);

/// A linalg.generic with `inputs`, `inits`, maps, iterators and a body that
/// receives the block arguments converted to f32 (inputs then inits) and
/// returns one f32 value per init, converted back to each init's type.
SmallVector<Value>
generic(OpBuilder &b, Location loc, ValueRange inputs, ValueRange inits,
        ArrayRef<AffineMap> maps, ArrayRef<utils::IteratorType> iterators,
        std::function<SmallVector<Value>(OpBuilder &, Location, ValueRange)>
            body);

/// Elementwise map over same-shape `inputs` into a fresh tensor of
/// `resultType`.
Value elementwise(OpBuilder &b, Location loc, ValueRange inputs,
                  RankedTensorType resultType,
                  std::function<Value(OpBuilder &, Location, ValueRange)> fn);

/// Fast-math flags of the contractions' multiply-adds: reassociable (so the
/// sums vectorise) and contractible (so they fuse into FMAs).
constexpr arith::FastMathFlags kReassociable =
    arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;

/// The body of a contraction generic with inputs (a, b) and accumulator c:
/// `c + a·b` with kReassociable.
SmallVector<Value> multiplyAccumulate(OpBuilder &b, Location loc, ValueRange args);

/// The end of an MLA lowering: `o` times `sigmoid(gate)` when there is a
/// gate, converted to `outType`, and both results cast to the op's static
/// result types where those are static (a decode step); replaces `op`.
void finishMla(PatternRewriter &b, Operation *op, Value o, Value gate, Value newCache);

/// `y[..., n] = Σ_k x[..., k] · w[n, k]`, accumulated in f32; x of any rank.
Value contract(OpBuilder &b, Location loc, Value x, Value w);

/// Sum over the last dimension of f(x[..., d], d) for every leading index,
/// in f32: a tensor of the leading shape.
Value reduceLast(OpBuilder &b, Location loc, ValueRange inputs,
                 std::function<Value(OpBuilder &, Location, ValueRange)> term);

/// Σ_d x[..., d]² in f32 (reduceLast of the squares).
Value sumOfSquares(OpBuilder &b, Location loc, Value x);

/// `v` with its element type changed (elementwise conversion), or `v`.
Value withElementType(OpBuilder &b, Location loc, Value v, Type elt);

/// Rows of `top` then rows of `bottom` (same width and element type).
Value concatRows(OpBuilder &b, Location loc, Value top, Value bottom);

/// Columns [from, from + width) of a 2-D tensor; last-dim slice of a 3-D one.
Value columns(OpBuilder &b, Location loc, Value m, int64_t from, int64_t width);
Value lastDims(OpBuilder &b, Location loc, Value m, int64_t from, int64_t width);

/// The rows `[latent | k_rope]` of `T` new tokens in the cache's element
/// type `cacheElt`, [T, L+R].
Value newCacheRows(OpBuilder &b, Location loc, Type cacheElt, Value latent, Value kRope);

/// The MLA cache after `T` new tokens: `cache` [S, L+R] then rows
/// `[latent | k_rope]` in the cache's element type, [S+T, L+R]. When `cache`
/// is the first S rows of a tensor of S + T rows (an entry point's cache
/// argument with room for the call's rows, see the importer), the rows are
/// inserted into that tensor: bufferized, the argument's buffer, no copy.
Value appendCacheRows(OpBuilder &b, Location loc, Value cache, Value latent, Value kRope);

//===--- Tiles and loops on tensors ---------------------------------===//

/// n unit strides (or offsets) for slices.
SmallVector<OpFoldResult> ones(OpBuilder &b, unsigned n);

/// A [rows, cols] slice of a 2-D tensor at (r, c), rows and cols static.
Value tile(OpBuilder &b, Location loc, Value m, OpFoldResult r, OpFoldResult c, int64_t rows,
           int64_t cols);

/// `part` inserted into the 2-D `into` at (r, c).
Value place(OpBuilder &b, Location loc, Value part, Value into, OpFoldResult r, OpFoldResult c);

/// A for loop over [lo, hi) step `step` carrying `init`; `body` returns the
/// next values.
scf::ForOp loop(OpBuilder &b, Location loc, Value lo, Value hi, Value step, ValueRange init,
                function_ref<SmallVector<Value>(OpBuilder &, Location, Value, ValueRange)> body);
/// The same over [0, n) with a constant step.
scf::ForOp loop(OpBuilder &b, Location loc, Value n, int64_t step, ValueRange init,
                function_ref<SmallVector<Value>(OpBuilder &, Location, Value, ValueRange)> body);

/// An scf.forall over the `extent / width` column panels of `into`
/// ([rows, extent]): `body(n0, block)` returns the panel's new [rows, width]
/// block from its current one. Panels write disjoint columns, so they run
/// side by side (the CPU's threads).
Value panels(OpBuilder &b, Location loc, Value into, int64_t extent, int64_t width,
             function_ref<Value(OpBuilder &, Location, Value, Value)> body);

//===--- MXFP4 weights (Mxfp4.cpp) -----------------------------------===//

/// A weight as the GEMMs read it: float data `[..., N, K]`, or MXFP4 with
/// `data` the packed bytes `[..., N, K/2]` behind `k3.unpack_e2m1` and
/// `scales` the E8M0 bytes `[..., N, K/32]`, or (`panel` > 0, float only)
/// the panels `[..., N/panel, K, panel]` of k3-pack-weight-panels.
struct GemmWeight {
  Value data;
  Value scales;
  int64_t panel = 0;
  bool packed() const { return bool(scales); }
};

/// The GemmWeight of an op's weight operand and optional scales; fails (on
/// `op`) for f4E2M1FN codes that do not come from `k3.unpack_e2m1`. A float
/// weight that k3-pack-weight-panels stored as panels (a `linalg.unpack`
/// with inner tile P on N: dimension 0 of a matrix, 1 of stacked experts)
/// is read as those panels.
FailureOr<GemmWeight> gemmWeight(PatternRewriter &b, Operation *op, Value w, Value scales);

/// Matrix `e` of a stacked `[E, N, K]` weight, as `[N, K]` (panels
/// `[E, N/P, K, P]` as `[N/P, K, P]`).
GemmWeight expertOf(OpBuilder &b, Location loc, const GemmWeight &w, Value e);

/// `e2m1 · 2^(scale − 127)` in f32 for the code in the low (or, with
/// `high` an i1 true, the high) nibble of `byte` (i8); `scale` is the
/// block's scale already widened to f32. The E2M1 value is assembled from
/// the code's bits (MOE_MXFP4.md §1), exactly.
Value decodeE2m1(OpBuilder &b, Location loc, Value byte, Value high, Value scale);

/// `y[..., n] = Σ_k x[..., k] · W[n, k]` in f32 for a 2-D weight; MXFP4
/// codes are decoded inside the dot products' inner loop, never into a
/// copy of W; panels are read in place by 1-row register tiles (x 2-D).
Value contractWeight(OpBuilder &b, Location loc, Value x, const GemmWeight &w);

/// Rows [n0, n0 + nt) of a 2-D weight `[N, K]`, transposed to an f32 panel
/// `[K, nt]` (decoded from MXFP4 when packed): the B operand of a register-
/// tiled GEMM, whose micro-kernel reads one contiguous row of nt per k. A
/// panel weight (nt its panel width) gives its panel in place, a slice.
Value weightPanel(OpBuilder &b, Location loc, const GemmWeight &w, Value n0, int64_t nt);

/// `a [m, K] · panel [K, nt]` (plus `acc` [m, nt] when given, else from
/// zero) as one generic marked for k3-tile-contractions (register tile
/// m × nt, reduction innermost).
Value panelProduct(OpBuilder &b, Location loc, Value a, Value panel, Value acc = Value());

/// Columns [k0, k0 + kc) of a 2-D weight's reduction dimension (kc and k0
/// multiples of 32 when packed): the weight of one cache block.
GemmWeight reductionBlock(OpBuilder &b, Location loc, const GemmWeight &w, Value k0, int64_t kc);

//===--- Cache-blocked GEMM (BlockedGemm.cpp) -------------------------===//

/// Whether `blockedContract` takes `x` [M, K] against the 2-D weight `w`
/// with panels of `panel` columns: static K and N, N a multiple of the
/// panel width, K of the MXFP4 block.
bool blockedContractApplies(Value x, const GemmWeight &w, int64_t panel);
/// `y[m, n] = Σ_k x[m, k] · W[n, k]` in f32 as a cache-blocked GEMM: blocks
/// of rows and of K, weight panels [kc, panel] packed (and widened) per
/// block, register tiles of 6 × panel (1 × panel for the last rows); falls back to
/// `contractWeight` for fewer rows than a tile (a decode step: its weight is
/// read once either way; LLVM's vectorised dot products measured faster for
/// k3-small's decode than weight-row tiles).
Value blockedContract(OpBuilder &b, Location loc, Value x, const GemmWeight &w, int64_t panel);
/// `y[m, n] = Σ_k x[m, k] · W[n, k]` in f32 for a panel weight (`w.panel`)
/// and fewer rows than a tile (a decode step, the last prompt position's
/// logits): its panels side by side (the CPU's threads), each read once in
/// place by 1-row register tiles over all of K.
Value panelRows(OpBuilder &b, Location loc, Value x, const GemmWeight &w);


/// `x [R, K]` rounded to MXFP8 E4M3 in blocks of 32 along K (OCP floor
/// scale 2^(floor(log2 amax) − 8), nearest even, saturating at ±448·X),
/// returned as the f32 values it represents (W4A8 numerics on the CPU).
/// Blocks with amax outside [2^-100, 2^121), or not finite, stay as they are.
Value roundToMxfp8(OpBuilder &b, Location loc, Value x);

//===--- LatentMoE (ChannelMixingPatterns.cpp) ------------------------===//

/// The experts' input z in f32: `x · latent_downᵀ`, or x without a latent.
Value moeLatentInput(PatternRewriter &b, MoeOp op);
/// The end of a MoE lowering from the f32 combine `u [T, Dl]`: the routed
/// norm, the up-projection and the shared experts on x, as k3 ops lowered
/// in turn; replaces `op`.
void finishMoe(PatternRewriter &b, MoeOp op, Value u);
/// Both MoE lowerings' expert weights; fails for codes without their bytes.
LogicalResult moeWeights(PatternRewriter &b, MoeOp op, GemmWeight &w1, GemmWeight &w3,
                         GemmWeight &w2);

/// `blockedLinear`: a 2-D k3.linear as `blockedContract` where it applies.
/// `panelColumns`: the blocked GEMM's panel width (16 or 32).
void populatePlumbingPatterns(RewritePatternSet &patterns, bool blockedLinear,
                              int64_t panelColumns);
/// `routerPerPick`: the router as one loop nest over (token, pick), the
/// GPU form, else a loop over tokens.
void populateChannelMixingPatterns(RewritePatternSet &patterns, bool routerPerPick);
void populateMixingPatterns(RewritePatternSet &patterns);
void populateTokenMixingPatterns(RewritePatternSet &patterns);
void populateKdaChunkedPatterns(RewritePatternSet &patterns);
/// k3.kda and k3.kda_chunked as one column-parallel scan over the tokens
/// (KdaScanPattern.cpp, the GPU form), over the host-loop lowerings.
void populateKdaScanPatterns(RewritePatternSet &patterns);
/// `k3.kda_chunked` as `k3.kda_chunks` (the GPU's chunk kernels,
/// `kda-prefill=chunks`; `pairwise` unless the form is factored over 16-token
/// multiples) where k3-gpu-kda-chunks builds them; over the scan, which
/// takes the other shapes.
void populateKdaChunksPatterns(RewritePatternSet &patterns);
/// `batched`: the decode step for all heads at once (the GPU form), else a
/// loop over heads.
void populateKdaDecodePatterns(RewritePatternSet &patterns, bool batched, bool parallel);
/// `k3.kda_decode` as one `k3.kda_step` (the GPU's decode kernel,
/// `kda-decode=kernel`), over the loop forms.
void populateKdaStepPatterns(RewritePatternSet &patterns);
/// `k3.attn_res` as one `k3.attn_res_mix` (the GPU's kernel,
/// `attn-res=kernel`) where the row width fits it, over the linalg form.
void populateAttnResMixPatterns(RewritePatternSet &patterns);
/// `k3.rms_norm` of [R, D] rows as one `k3.row_norm` (the GPU's kernel,
/// `norm=kernel`) where the row width fits it, over the linalg form.
void populateRowNormPatterns(RewritePatternSet &patterns);
/// `splitKeys` > 0: a fixed-token-count op (decode) splits its keys into
/// parts of that many keys side by side instead of its `splits` in turn;
/// `fused`: as one k3.attend_parts.
/// `pagedKernel`: k3.mla_paged's attention as one k3.paged_attend.
void populateMlaAbsorbedPatterns(RewritePatternSet &patterns, int64_t splitKeys, bool fused,
                                 bool pagedKernel = false);
/// The MoE by `dispatch`: "grouped" (grouped GEMMs, GroupedMoePattern.cpp),
/// "slots" (slot-parallel GEMMs, SlotMoePattern.cpp), "mma" (MXFP4 experts
/// as k3.moe_experts, MmaMoePattern.cpp, the rest as slots) or "per-token"
/// (the per-token loop, ChannelMixingPatterns.cpp, which also catches what
/// the others decline).
void populateMoePatterns(RewritePatternSet &patterns, StringRef dispatch,
                         int64_t panelColumns = 16);
void populateGroupedMoePattern(RewritePatternSet &patterns, int64_t panelColumns);
void populateMmaMoePattern(RewritePatternSet &patterns);
void populateSlotMoePattern(RewritePatternSet &patterns);

} // namespace mlir::k3::lowering

#endif // PASSES_CONVERSION_K3TOLINALG_COMMON_H
