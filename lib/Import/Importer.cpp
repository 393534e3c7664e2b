//===- Importer.cpp - Checkpoint → K3 dialect -----------------------------===//
//
// Part of k3. One builder per layer kind, following K3_CHECKPOINT.md §6 line
// by line. Activations are f32 at this phase; weights keep their storage
// type (the later phases choose compute precisions).
//
//===----------------------------------------------------------------------===//

#include "lib/Import/Importer.h"

#include "dialects/K3/K3Ops.h"
#include "lib/Model/Placement.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace mlir::k3;
using ::k3::model::Checkpoint;
using ::k3::model::Config;
using ::k3::model::DType;
using ::k3::model::FFN;
using ::k3::model::Mixer;
using ::k3::model::TensorSpec;

namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;

/// The grid is ep x tp, row-major: the tensor-parallel axis is the minor
/// one, so a tensor-parallel group is consecutive ranks, which mpirun
/// places on one node (its NVLink) by default.
constexpr int16_t kTpAxis = 1;

/// The checkpoint's tensors by name (the head's as `lm_head.weight`),
/// built once for all entry points: K3's table holds half a million
/// tensors (each routed expert's own).
using SpecIndex = llvm::StringMap<const TensorSpec *>;

/// Builds one entry point of the model: prefill (every position's logits),
/// prefill_last (the last position's only: the usual prompt needs nothing
/// else, and the lm_head is a large part of a prefill), decode (one token),
/// or decode_batch (one token for each of B requests, `batch`).
class EntryBuilder {
public:
  EntryBuilder(OpBuilder &b, const Checkpoint &ck, const SpecIndex &specs, bool decode,
               bool lastOnly, const ImportOptions &options, bool batch = false)
      : b(b), ck(ck), c(ck.config()), specs(specs), decode(decode), lastOnly(lastOnly),
        batch(batch),
        f32(b.getF32Type()),
        cacheType(options.f32MlaCache ? b.getF32Type() : b.getBF16Type()),
        snapshotInterval(decode || batch ? 0 : options.kdaSnapshotInterval),
        ranks(options.tp * options.ep) {}

  func::FuncOp build(ModuleOp module);

private:
  //===--- Types and weights ------------------------------------------===//

  int64_t tokens() const { return decode || outputRow ? 1 : kDyn; }
  RankedTensorType act(ArrayRef<int64_t> inner) {
    SmallVector<int64_t> shape{tokens()};
    shape.append(inner.begin(), inner.end());
    return RankedTensorType::get(shape, f32);
  }

  /// Storage element type of a stored (or expected) tensor.
  Type elementType(const TensorSpec &s, DType dtype) {
    if (s.packed)
      return b.getType<Float4E2M1FNType>();
    if (s.scale)
      return b.getType<Float8E8M0FNUType>();
    switch (dtype) {
    case DType::F32:
      return f32;
    case DType::F16:
      return b.getF16Type();
    default:
      return b.getBF16Type();
    }
  }

  /// Storage shape and dtype: the stored tensor's when there are weights.
  std::pair<SmallVector<int64_t>, DType> stored(const TensorSpec &s) {
    if (const auto *v = ck.find(s))
      return {SmallVector<int64_t>(v->shape.begin(), v->shape.end()), v->dtype};
    return {SmallVector<int64_t>(s.shape.begin(), s.shape.end()), s.dtype};
  }

  /// `k3.weight` of a tensor relative to the model prefix. MXFP4 codes are
  /// typed by their logical [rows, cols]: two codes per stored byte. A
  /// linear `X.weight` stored packed is dequantized here for the ops that
  /// take float weights (`linear` keeps it 4-bit instead).
  Value weight(const std::string &rel) {
    auto cached = weights.find(rel);
    if (cached != weights.end())
      return cached->second;
    Value w;
    if (!specs.count(rel) && isPacked(rel)) {
      std::string base = rel.substr(0, rel.size() - 7);
      w = dequantize(weight(base + ".weight_packed"),
                     weight(base + ".weight_scale"));
    } else {
      const TensorSpec &s = *specs.lookup(rel);
      auto [shape, dtype] = stored(s);
      if (s.packed)
        shape.back() *= 2;
      auto op = WeightOp::create(b, loc, RankedTensorType::get(shape, elementType(s, dtype)),
                                 ck.fullName(s), IntegerAttr(), DenseI64ArrayAttr());
      w = shardAs(op, ::k3::model::weightSplit(rel));
    }
    weights[rel] = w;
    return w;
  }

  /// On a grid, `v` annotated with where it lives: whole on every rank, or
  /// split into equal blocks along `how.dim` over the tp axis or the whole
  /// grid (lib/Model/Placement.h). These annotations, on the weights and
  /// on the entry point's arguments and results, are all the importer says
  /// of the split: the k3 stage's sharding-propagation carries them to
  /// every op, and shard-partition makes one rank's program of it, with
  /// its collectives (dialects/K3/K3Sharding.cpp). `forUsers` annotates an
  /// argument (how its users see it) rather than a value's producer.
  Value shardAs(Value v, ::k3::model::WeightSplit how, bool forUsers = false) {
    SmallVector<shard::GridAxis> axes;
    if (how.over == ::k3::model::WeightSplit::Tp)
      axes = {kTpAxis};
    else if (how.over == ::k3::model::WeightSplit::World)
      axes = {0, 1};
    return shardAlong(v, how.dim, axes, forUsers);
  }
  /// `v` annotated as split along `dim` over `axes` (none: whole).
  Value shardAlong(Value v, int64_t dim, ArrayRef<shard::GridAxis> axes, bool forUsers) {
    if (ranks == 1)
      return v;
    SmallVector<shard::GridAxesAttr> split;
    for (int64_t d = 0; d <= (axes.empty() ? 0 : dim); ++d)
      split.push_back(shard::GridAxesAttr::get(b.getContext(), d == dim ? axes
                                                                      : ArrayRef<shard::GridAxis>{}));
    Value sharding = shard::ShardingOp::create(
        b, loc, FlatSymbolRefAttr::get(b.getContext(), "grid"), split);
    return shard::ShardOp::create(b, loc, v, sharding, forUsers);
  }

  /// True if the linear `X.weight` is stored as an MXFP4 pair.
  bool isPacked(const std::string &rel) const {
    return ::k3::model::endsWith(rel, ".weight") &&
           specs.count(rel.substr(0, rel.size() - 7) + ".weight_packed");
  }

  /// `W = codes · scales` with the block-32 scales broadcast along the input
  /// dimension, through upstream `arith.scaling_extf`. bf16 holds every
  /// E2M1 × 2^k product exactly (same exponent range as f32).
  Value dequantize(Value codes, Value scales) {
    auto cType = cast<RankedTensorType>(codes.getType());
    int64_t rows = cType.getDimSize(0), cols = cType.getDimSize(1);
    Type e8 = b.getType<Float8E8M0FNUType>();
    Value empty = tensor::EmptyOp::create(b, loc, {rows, cols / 32, 32}, e8);
    Value wide = linalg::BroadcastOp::create(b, loc, scales, empty, {2})
                     ->getResult(0);
    Value flat = tensor::CollapseShapeOp::create(
        b, loc, wide, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
    return arith::ScalingExtFOp::create(
        b, loc, RankedTensorType::get({rows, cols}, b.getBF16Type()), codes,
        flat, arith::FastMathFlagsAttr());
  }

  /// A weight the ops require in f32 (gate parameters, the router bias):
  /// widened when the checkpoint stores it narrower (any float dtype loads).
  Value f32Weight(const std::string &rel) {
    Value w = weight(rel);
    auto type = cast<RankedTensorType>(w.getType());
    if (type.getElementType() == f32)
      return w;
    return arith::ExtFOp::create(b, loc, type.clone(f32), w);
  }

  /// Routed expert matrices stacked over experts: the name holds `{e}`,
  /// which the bundle expands to 0..E-1 along a new leading dimension.
  Value expertWeight(const std::string &moe, const char *which,
                     const char *suffix) {
    std::string rel0 = moe + "experts.0." + which + suffix;
    const TensorSpec &s = *specs.lookup(rel0);
    auto [shape, dtype] = stored(s);
    if (s.packed)
      shape.back() *= 2;
    shape.insert(shape.begin(), c.numExperts);
    auto type = RankedTensorType::get(shape, elementType(s, dtype));
    std::string name = ck.fullName(s);
    name.replace(name.find("experts.0."), 10, "experts.{e}.");
    auto op = WeightOp::create(b, loc, type, name, IntegerAttr(), DenseI64ArrayAttr());
    return shardAs(op, {::k3::model::WeightSplit::World, 0});
  }

  //===--- Small ops --------------------------------------------------===//

  FloatAttr fattr(double v) { return b.getF32FloatAttr(static_cast<float>(v)); }

  /// `y = x · Wᵀ`; an MXFP4-packed weight stays 4-bit with its scales.
  Value linear(Value x, const std::string &rel) {
    Value w, scales;
    if (isPacked(rel)) {
      std::string base = rel.substr(0, rel.size() - 7);
      w = weight(base + ".weight_packed");
      scales = weight(base + ".weight_scale");
    } else {
      w = weight(rel);
    }
    int64_t n = cast<RankedTensorType>(w.getType()).getDimSize(0);
    auto xType = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> shape(xType.getShape());
    shape.back() = n;
    return LinearOp::create(b, loc, RankedTensorType::get(shape, f32), x, w,
                            scales);
  }

  Value rmsNorm(Value x, Value w, double eps, Value gate = Value()) {
    return RmsNormOp::create(b, loc, x.getType(), x, w, gate, fattr(eps));
  }

  /// [T, a·b] → [T, a, b].
  Value split(Value x, int64_t a, int64_t bDim) {
    SmallVector<OpFoldResult> out{tokenCount(), b.getIndexAttr(a),
                                  b.getIndexAttr(bDim)};
    return tensor::ExpandShapeOp::create(b, loc, act({a, bDim}), x,
                                         {{0}, {1, 2}}, out);
  }
  /// [T, a, b] → [T, a·b].
  Value merge(Value x) {
    return tensor::CollapseShapeOp::create(
        b, loc, x, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
  }
  /// Columns [from, from + width) of a [T, n] tensor.
  Value columns(Value x, int64_t from, int64_t width) {
    SmallVector<OpFoldResult> offsets{b.getIndexAttr(0), b.getIndexAttr(from)};
    SmallVector<OpFoldResult> sizes{tokenCount(), b.getIndexAttr(width)};
    SmallVector<OpFoldResult> strides{b.getIndexAttr(1), b.getIndexAttr(1)};
    return tensor::ExtractSliceOp::create(b, loc, act({width}), x, offsets,
                                          sizes, strides);
  }
  OpFoldResult tokenCount() {
    if (decode)
      return b.getIndexAttr(1);
    return numTokens;
  }

  //===--- Layers -----------------------------------------------------===//

  Value kda(Value x, int64_t layer);
  Value mla(Value x, int64_t layer);
  /// decode_batch's mixers: the projections over the B tokens, the
  /// recurrence per request (KDA, an scf.forall over the requests) or the
  /// paged attention (MLA).
  Value kdaBatch(Value x, int64_t layer);
  Value mlaBatch(Value x, int64_t layer);
  /// Pieces shared by the KDA builders: the conv filter `name` as [P, W],
  /// A_log (its first H values) and dt_bias as [H, K], the decay gate of
  /// `f`, and the output gate's projection.
  Value convFilter(const std::string &at, const char *name);
  std::pair<Value, Value> decayParameters(const std::string &at);
  Value decayGate(Value f, Value aLog, Value dtBias);
  Value outputGate(Value x, const std::string &at);
  /// MLA's inputs from the normed `x`: q [T, H·(P+R)], the normalised
  /// latent, k_rope and the gate (null without one).
  struct MlaInputs {
    Value q, latent, kRope, gate;
  };
  MlaInputs mlaInputs(Value x, const std::string &at);
  Value ffn(Value x, int64_t layer);
  Value attnRes(ArrayRef<Value> sources, const std::string &norm,
                const std::string &proj);

  OpBuilder &b;
  const Checkpoint &ck;
  const Config &c;
  const SpecIndex &specs;
  bool decode;
  bool lastOnly;
  bool batch;
  /// decode_batch: each request's cached rows [B] and the pool of MLA pages.
  Value lengths, pages;
  bool outputRow = false; // building prefill_last's output: one row
  Type f32;
  Type cacheType;
  Location loc = b.getUnknownLoc();
  Value numTokens;
  std::map<std::string, Value> weights;
  /// State arguments consumed, and the values to return for them.
  SmallVector<Value> stateIn, stateOut;
  /// Prefill only: the KDA snapshot interval (0: none) and the snapshots.
  int64_t snapshotInterval;
  SmallVector<std::pair<std::string, Value>> snapshots;
  unsigned nextState = 0;
  /// On a grid: where each result lives (build()'s shardAs).
  SmallVector<::k3::model::WeightSplit> resultSplits;
  /// The grid's ranks (1: one process).
  int64_t ranks;
};

Value EntryBuilder::convFilter(const std::string &at, const char *name) {
  // The checkpoint's [P, 1, W] filter is used as [P, W].
  return tensor::CollapseShapeOp::create(b, loc, weight(at + name + "_conv1d.weight"),
                                         ArrayRef<ReassociationIndices>{{0}, {1, 2}});
}

std::pair<Value, Value> EntryBuilder::decayParameters(const std::string &at) {
  const int64_t h = c.kdaHeads, dk = c.kdaHeadDim;
  Value aLog = f32Weight(at + "A_log");
  auto aType = cast<RankedTensorType>(aLog.getType());
  if (aType.getRank() > 1) {
    ReassociationIndices all;
    for (int64_t i = 0; i < aType.getRank(); ++i)
      all.push_back(i);
    aLog = tensor::CollapseShapeOp::create(b, loc, aLog,
                                           ArrayRef<ReassociationIndices>{all});
  }
  aLog = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({h}, aType.getElementType()), aLog,
      ArrayRef<OpFoldResult>{b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(h)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  Value dtBias = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({h, dk}, f32), f32Weight(at + "dt_bias"),
      ArrayRef<ReassociationIndices>{{0, 1}});
  return {aLog, dtBias};
}

Value EntryBuilder::decayGate(Value f, Value aLog, Value dtBias) {
  auto type = cast<RankedTensorType>(f.getType());
  return c.gateLowerBound
             ? KdaGateOp::create(b, loc, type, KdaGateForm::lower_bound,
                                 fattr(*c.gateLowerBound), f, aLog, dtBias)
             : KdaGateOp::create(b, loc, type, KdaGateForm::softplus, FloatAttr(), f, aLog,
                                 dtBias);
}

Value EntryBuilder::outputGate(Value x, const std::string &at) {
  return c.fullRankOutputGate
             ? linear(x, at + "g_proj.weight")
             : linear(linear(x, at + "g_a_proj.weight"), at + "g_b_proj.weight");
}

Value EntryBuilder::kda(Value x, int64_t layer) {
  if (batch)
    return kdaBatch(x, layer);
  const std::string at = "layers." + std::to_string(layer) + ".self_attn.";
  const int64_t h = c.kdaHeads, dk = c.kdaHeadDim, p = c.kdaHeads * c.kdaHeadDim;
  // q, k, v: projection, depthwise causal conv with its window, SiLU.
  SmallVector<Value, 3> qkv;
  for (const char *name : {"q", "k", "v"}) {
    Value proj = linear(x, at + name + "_proj.weight");
    Value filter = convFilter(at, name);
    Value window = stateIn[nextState++];
    auto conv = ShortConvOp::create(b, loc, act({p}), window.getType(), proj,
                                    filter, window, /*silu=*/true);
    stateOut.push_back(conv.getNewState());
    qkv.push_back(split(conv.getY(), h, dk));
  }
  Value q = L2NormOp::create(b, loc, qkv[0], fattr(1e-6));
  Value k = L2NormOp::create(b, loc, qkv[1], fattr(1e-6));

  // Decay gate from the low-rank f_a/f_b projection; A_log per head (the
  // stored tensor may be padded: take the first H values).
  Value f = split(linear(linear(x, at + "f_a_proj.weight"), at + "f_b_proj.weight"),
                  h, dk);
  auto [aLog, dtBias] = decayParameters(at);
  Value g = decayGate(f, aLog, dtBias);
  Value beta = SigmoidOp::create(b, loc, linear(x, at + "b_proj.weight"));

  Value s0 = stateIn[nextState++];
  Type snapType = snapshotInterval
                      ? RankedTensorType::get({kDyn, h, dk, dk}, b.getF32Type())
                      : Type();
  auto rec = KdaOp::create(b, loc, act({h, dk}), s0.getType(), snapType, q, k, qkv[2], g,
                           beta, s0, fattr(1.0 / std::sqrt(double(dk))),
                           snapshotInterval ? b.getI64IntegerAttr(snapshotInterval)
                                            : IntegerAttr());
  stateOut.push_back(rec.getFinalState());
  if (snapshotInterval)
    snapshots.push_back({"layers." + std::to_string(layer) + ".kda_snapshots",
                         rec.getSnapshots()});

  // Head-wise RMSNorm fused with the sigmoid output gate, then o_proj.
  Value gate = outputGate(x, at);
  Value o = rmsNorm(rec.getOut(), weight(at + "o_norm.weight"), c.rmsNormEps,
                    split(gate, h, dk));
  return linear(merge(o), at + "o_proj.weight");
}

EntryBuilder::MlaInputs EntryBuilder::mlaInputs(Value x, const std::string &at) {
  const int64_t h = c.mlaHeads;
  // The two LoRA norms use KimiRMSNorm's default eps 1e-6, not rms_norm_eps
  // (K3_CHECKPOINT.md §9.4).
  Value q = c.qLoraRank
                ? linear(rmsNorm(linear(x, at + "q_a_proj.weight"),
                                 weight(at + "q_a_layernorm.weight"), 1e-6),
                         at + "q_b_proj.weight")
                : linear(x, at + "q_proj.weight");
  Value ckr = linear(x, at + "kv_a_proj_with_mqa.weight");
  Value latent = rmsNorm(columns(ckr, 0, c.kvLoraRank),
                         weight(at + "kv_a_layernorm.weight"), 1e-6);
  Value kRope = columns(ckr, c.kvLoraRank, c.qkRopeHeadDim);
  Value gate;
  if (c.mlaOutputGate)
    gate = split(linear(x, at + "g_proj.weight"), h, c.vHeadDim);
  return {q, latent, kRope, gate};
}

Value EntryBuilder::mla(Value x, int64_t layer) {
  if (batch)
    return mlaBatch(x, layer);
  const std::string at = "layers." + std::to_string(layer) + ".self_attn.";
  const int64_t h = c.mlaHeads, qk = c.qkNopeHeadDim + c.qkRopeHeadDim;
  auto [q, latent, kRope, gate] = mlaInputs(x, at);
  // The cache argument has room for this call's rows: [S + T] rows, the
  // first S cached. The op reads those S, and its [S + T] result is built
  // in the argument's buffer (appendCacheRows): no copy of the cache.
  Value room = stateIn[nextState++];
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  // T as the new latent rows' count (not the ids'): the lowering proves the
  // room from S + dim(latent) = dim(room), which value bounds see through
  // tensor.dim but not through the k3 ops between the ids and the latents.
  Value cachedRows = arith::SubIOp::create(b, loc, tensor::DimOp::create(b, loc, room, zero),
                                           tensor::DimOp::create(b, loc, latent, zero));
  Value cache = tensor::ExtractSliceOp::create(
      b, loc, room, ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{cachedRows, b.getIndexAttr(c.mlaCacheWidth())},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
  // The scale is 1/sqrt(nope + rope) whatever the cache width (MLA.md §5).
  auto attn = MlaOp::create(b, loc, act({h, c.vHeadDim}), cache.getType(),
                            split(q, h, qk), latent, kRope,
                            weight(at + "kv_b_proj.weight"), cache, gate,
                            fattr(1.0 / std::sqrt(double(qk))), b.getUnitAttr());
  stateOut.push_back(attn.getNewCache());
  return linear(merge(attn.getOut()), at + "o_proj.weight");
}

Value EntryBuilder::kdaBatch(Value x, int64_t layer) {
  const std::string at = "layers." + std::to_string(layer) + ".self_attn.";
  const int64_t h = c.kdaHeads, dk = c.kdaHeadDim, p = c.kdaHeads * c.kdaHeadDim;
  // Per-token work over all B tokens: the projections, the gates' inputs.
  SmallVector<Value, 3> proj, filter, windows;
  for (const char *name : {"q", "k", "v"}) {
    proj.push_back(linear(x, at + name + "_proj.weight"));
    filter.push_back(convFilter(at, name));
    windows.push_back(stateIn[nextState++]);
  }
  Value f = split(linear(linear(x, at + "f_a_proj.weight"), at + "f_b_proj.weight"), h, dk);
  auto [aLog, dtBias] = decayParameters(at);
  Value betaLogits = linear(x, at + "b_proj.weight");
  Value gate = split(outputGate(x, at), h, dk);
  Value normWeight = weight(at + "o_norm.weight"); // outside the loop, as every weight
  Value state = stateIn[nextState++];

  // Per request, its row of each and its slots of the windows and state:
  // the single-token chain k3-fuse-kda-decode makes one k3.kda_decode of,
  // its new windows and state written back into the slots it read.
  Value out = tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{numTokens, b.getIndexAttr(h),
                                                                     b.getIndexAttr(dk)},
                                      f32);
  SmallVector<Value> shared{out, windows[0], windows[1], windows[2], state};
  auto forall = scf::ForallOp::create(b, loc, ArrayRef<OpFoldResult>{numTokens}, shared,
                                      std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  Value r = forall.getInductionVar(0);
  auto slot = [&](Value v) { // v's [1, ...] slice at request r, of the same rank
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0)), sizes;
    offsets[0] = r;
    sizes.push_back(b.getIndexAttr(1));
    for (int64_t d = 1; d < type.getRank(); ++d)
      sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
    SmallVector<int64_t> shape(type.getShape());
    shape[0] = 1;
    return Value(tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), v, offsets, sizes,
        SmallVector<OpFoldResult>(type.getRank(), b.getIndexAttr(1))));
  };
  auto dropFirst = [&](Value v) { // [1, a, ...] → [a, ...]
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<ReassociationIndices> groups{{0, 1}};
    for (int64_t d = 2; d < type.getRank(); ++d)
      groups.push_back({d});
    return Value(tensor::CollapseShapeOp::create(b, loc, v, groups));
  };
  auto addFirst = [&](Value v) { // [a, ...] → [1, a, ...]
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape{1};
    shape.append(type.getShape().begin(), type.getShape().end());
    SmallVector<ReassociationIndices> groups{{0, 1}};
    for (int64_t d = 1; d < type.getRank(); ++d)
      groups.push_back({d + 1});
    return Value(tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), v, groups));
  };
  auto one = [&](ArrayRef<int64_t> inner) {
    SmallVector<int64_t> shape{1};
    shape.append(inner.begin(), inner.end());
    return RankedTensorType::get(shape, f32);
  };
  ValueRange slots = forall.getRegionIterArgs();
  SmallVector<Value> qkv, newState;
  for (int i = 0; i < 3; ++i) {
    Value window = dropFirst(slot(slots[1 + i]));
    auto conv = ShortConvOp::create(b, loc, one({p}), window.getType(), slot(proj[i]),
                                    filter[i], window, /*silu=*/true);
    newState.push_back(conv.getNewState());
    qkv.push_back(tensor::ExpandShapeOp::create(b, loc, one({h, dk}), conv.getY(),
                                                ArrayRef<ReassociationIndices>{{0}, {1, 2}}));
  }
  Value q = L2NormOp::create(b, loc, qkv[0], fattr(1e-6));
  Value k = L2NormOp::create(b, loc, qkv[1], fattr(1e-6));
  Value g = decayGate(slot(f), aLog, dtBias);
  Value beta = SigmoidOp::create(b, loc, slot(betaLogits));
  Value s0 = dropFirst(slot(slots[4]));
  auto rec = KdaOp::create(b, loc, one({h, dk}), s0.getType(), Type(), q, k, qkv[2], g, beta, s0,
                           fattr(1.0 / std::sqrt(double(dk))), IntegerAttr());
  newState.push_back(rec.getFinalState());
  Value o = rmsNorm(rec.getOut(), normWeight, c.rmsNormEps, slot(gate));
  // The new state is used after the whole chain only: k3-fuse-kda-decode
  // puts the fused op where the chain ends.
  SmallVector<Value> results{o};
  for (Value v : newState)
    results.push_back(addFirst(v));
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  for (auto [value, into] : llvm::zip(results, slots)) {
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0)), sizes;
    offsets[0] = r;
    for (int64_t d : type.getShape())
      sizes.push_back(b.getIndexAttr(d));
    tensor::ParallelInsertSliceOp::create(
        b, loc, value, into, offsets, sizes,
        SmallVector<OpFoldResult>(type.getRank(), b.getIndexAttr(1)));
  }
  b.setInsertionPointAfter(forall);
  for (unsigned i = 1; i < 5; ++i)
    stateOut.push_back(forall.getResult(i));
  return linear(merge(forall.getResult(0)), at + "o_proj.weight");
}

Value EntryBuilder::mlaBatch(Value x, int64_t layer) {
  const std::string at = "layers." + std::to_string(layer) + ".self_attn.";
  const int64_t h = c.mlaHeads, qk = c.qkNopeHeadDim + c.qkRopeHeadDim;
  auto [q, latent, kRope, gate] = mlaInputs(x, at);
  Value table = stateIn[nextState++];
  // The new rows come back for the caller to store at each request's end.
  auto attn = MlaPagedOp::create(
      b, loc, act({h, c.vHeadDim}), RankedTensorType::get({kDyn, c.mlaCacheWidth()}, cacheType),
      split(q, h, qk), latent, kRope, weight(at + "kv_b_proj.weight"), pages, table, lengths, gate,
      fattr(1.0 / std::sqrt(double(qk))));
  stateOut.push_back(attn.getRows());
  return linear(merge(attn.getOut()), at + "o_proj.weight");
}

Value EntryBuilder::ffn(Value x, int64_t layer) {
  const std::string lp = "layers." + std::to_string(layer) + ".";
  // SiTU-GLU (K3) is the ops' default and keeps its betas; SwiGLU (Kimi
  // Linear's `silu`) is spelled out and has none.
  const bool swiglu = c.hiddenAct == ::k3::model::Activation::SiLU;
  GluActivationAttr glu =
      swiglu ? GluActivationAttr::get(b.getContext(), GluActivation::silu) : GluActivationAttr();
  FloatAttr beta1 = swiglu ? FloatAttr() : fattr(c.situBeta1);
  FloatAttr beta2 = !swiglu && c.situBeta2 ? fattr(*c.situBeta2) : FloatAttr();
  if (c.ffn(layer) == FFN::Dense) {
    const std::string mp = lp + "mlp.";
    return MlpOp::create(b, loc, x.getType(), x, weight(mp + "gate_proj.weight"),
                         weight(mp + "up_proj.weight"), weight(mp + "down_proj.weight"), glu,
                         beta1, beta2);
  }
  const std::string mp = lp + "block_sparse_moe.";
  auto idxType = RankedTensorType::get({tokens(), c.topK}, b.getI32Type());
  auto router = RouterOp::create(
      b, loc, idxType, act({c.topK}), x, weight(mp + "gate.weight"),
      f32Weight(mp + "gate.e_score_correction_bias"),
      b.getI64IntegerAttr(c.topK),
      c.moeRenormalize ? b.getUnitAttr() : UnitAttr(),
      fattr(c.routedScalingFactor));

  Value down, up, norm;
  if (c.routedExpertHiddenSize) {
    down = weight(mp + "routed_expert_down_proj.weight");
    up = weight(mp + "routed_expert_up_proj.weight");
    if (c.latentMoeUseNorm)
      norm = weight(mp + "routed_expert_norm.weight");
  }
  bool packed = specs.count(mp + "experts.0.w1.weight_packed");
  const char *data = packed ? ".weight_packed" : ".weight";
  Value w1 = expertWeight(mp, "w1", data), w3 = expertWeight(mp, "w3", data),
        w2 = expertWeight(mp, "w2", data);
  Value s1, s3, s2;
  if (packed) {
    s1 = expertWeight(mp, "w1", ".weight_scale");
    s3 = expertWeight(mp, "w3", ".weight_scale");
    s2 = expertWeight(mp, "w2", ".weight_scale");
  }
  Value sg, su, sd;
  if (c.numSharedExperts > 0) {
    sg = weight(mp + "shared_experts.gate_proj.weight");
    su = weight(mp + "shared_experts.up_proj.weight");
    sd = weight(mp + "shared_experts.down_proj.weight");
  }
  if (ranks == 1 || !down)
    return MoeOp::create(b, loc, x.getType(), x, router.getIndices(), router.getWeights(), down,
                         up, norm, w1, w3, w2, s1, s3, s2, sg, su, sd, glu, beta1, beta2,
                         fattr(c.rmsNormEps), UnitAttr());
  // LatentMoE on a grid, spelled out: the experts split over the ranks, so
  // each rank's latent combine is a partial sum, and the norm before the up
  // projection needs the whole sum (an all-reduce of [T, Dl], smaller than
  // [T, D]); the up projection is then row-parallel over the latent
  // columns, and the shared experts column/row-parallel, each ending in an
  // all-reduce that partition adds.
  int64_t dl = cast<RankedTensorType>(down.getType()).getDimSize(0);
  Value z = LinearOp::create(b, loc, act({dl}), x, down, Value());
  Value u = MoeOp::create(b, loc, act({dl}), z, router.getIndices(), router.getWeights(), Value(),
                          Value(), Value(), w1, w3, w2, s1, s3, s2, Value(), Value(), Value(), glu,
                          beta1, beta2, fattr(c.rmsNormEps), UnitAttr());
  if (norm)
    u = rmsNorm(u, norm, c.rmsNormEps);
  // The up projection reads the rank's block of u's columns: split from
  // the whole one grid axis at a time (upstream reshards one per step).
  u = shardAlong(u, 1, {0}, /*forUsers=*/true);
  u = shardAlong(u, 1, {0, 1}, /*forUsers=*/true);
  Value y = LinearOp::create(b, loc, x.getType(), u, up, Value());
  if (sg)
    y = arith::AddFOp::create(
        b, loc, y, MlpOp::create(b, loc, x.getType(), x, sg, su, sd, glu, beta1, beta2));
  return y;
}

Value EntryBuilder::attnRes(ArrayRef<Value> sources, const std::string &norm,
                            const std::string &proj) {
  // The rank-1 projection [1, D] is the pseudo-query [D].
  Value query = tensor::CollapseShapeOp::create(
      b, loc, weight(proj), ArrayRef<ReassociationIndices>{{0, 1}});
  return AttnResOp::create(b, loc, act({c.hiddenSize}), sources, weight(norm),
                           query, fattr(c.rmsNormEps));
}

func::FuncOp EntryBuilder::build(ModuleOp module) {
  // Signature: ids, then the per-layer state in layer order.
  // decode_batch: ids [B], then each request's cached MLA rows [B] (with
  // MLA layers), the per-layer state with a leading request dimension (an
  // MLA layer's: its block table [B, max pages]), then the pool of pages.
  // It returns the new KDA state and, per MLA layer, the B new rows.
  SmallVector<Type> inputs{RankedTensorType::get({tokens()}, b.getI32Type())};
  SmallVector<std::string> stateNames, resultNames;
  SmallVector<Type> stateResults;
  // On a grid, where each argument and result lives (the KDA state and
  // windows split by heads like the heads' weights; the rest whole).
  using ::k3::model::WeightSplit;
  SmallVector<WeightSplit> inputSplits{WeightSplit{}}, stateSplits;
  bool anyMla = false;
  for (int64_t l = 0; l < c.numLayers; ++l)
    anyMla |= c.mixer(l) != Mixer::KDA;
  if (batch && anyMla) {
    inputs.push_back(RankedTensorType::get({kDyn}, b.getI32Type()));
    inputSplits.push_back({});
    stateNames.push_back("lengths");
  }
  SmallVector<int64_t> perRequest; // batch: the leading request dimension
  if (batch)
    perRequest.push_back(kDyn);
  auto stateType = [&](ArrayRef<int64_t> shape, Type elt) {
    SmallVector<int64_t> full(perRequest);
    full.append(shape.begin(), shape.end());
    return RankedTensorType::get(full, elt);
  };
  SmallVector<unsigned> appendsRows; // argument numbers of the MLA caches
  for (int64_t l = 0; l < c.numLayers; ++l) {
    std::string lp = "layers." + std::to_string(l) + ".";
    if (c.mixer(l) == Mixer::KDA) {
      auto window = stateType({c.convKernelSize - 1, c.kdaHeads * c.kdaHeadDim}, f32);
      WeightSplit byChannels{WeightSplit::Tp, int(perRequest.size()) + 1};
      for (const char *name : {"conv_q", "conv_k", "conv_v"}) {
        inputs.push_back(window);
        inputSplits.push_back(byChannels);
        stateNames.push_back(lp + name);
        stateResults.push_back(window);
        stateSplits.push_back(byChannels);
        resultNames.push_back(lp + name);
      }
      WeightSplit byHeads{WeightSplit::Tp, int(perRequest.size())};
      inputs.push_back(stateType({c.kdaHeads, c.kdaHeadDim, c.kdaHeadDim}, f32));
      inputSplits.push_back(byHeads);
      stateNames.push_back(lp + "kda_state");
      stateResults.push_back(inputs.back());
      stateSplits.push_back(byHeads);
      resultNames.push_back(lp + "kda_state");
    } else if (batch) {
      inputs.push_back(RankedTensorType::get({kDyn, kDyn}, b.getI32Type()));
      inputSplits.push_back({});
      stateNames.push_back(lp + "block_table");
      stateResults.push_back(RankedTensorType::get({kDyn, c.mlaCacheWidth()}, cacheType));
      stateSplits.push_back({});
      resultNames.push_back(lp + "mla_rows");
    } else {
      inputs.push_back(RankedTensorType::get({kDyn, c.mlaCacheWidth()}, cacheType));
      inputSplits.push_back({});
      stateNames.push_back(lp + "mla_cache");
      stateResults.push_back(inputs.back());
      stateSplits.push_back({});
      resultNames.push_back(lp + "mla_cache");
      appendsRows.push_back(inputs.size() - 1);
    }
  }
  if (batch && anyMla) {
    inputs.push_back(RankedTensorType::get({kDyn, kDyn, c.mlaCacheWidth()}, cacheType));
    inputSplits.push_back({});
    stateNames.push_back("mla_pages");
  }
  SmallVector<Type> results{RankedTensorType::get({lastOnly ? 1 : tokens(), c.vocabSize}, f32)};
  results.append(stateResults.begin(), stateResults.end());
  resultSplits.assign(1, WeightSplit{});
  resultSplits.append(stateSplits.begin(), stateSplits.end());
  // Then, with snapshots, one [⌊T/N⌋, H, K, K] tensor per KDA layer.
  SmallVector<std::string> snapshotNames;
  for (int64_t l = 0; snapshotInterval && l < c.numLayers; ++l)
    if (c.mixer(l) == Mixer::KDA) {
      results.push_back(RankedTensorType::get(
          {kDyn, c.kdaHeads, c.kdaHeadDim, c.kdaHeadDim}, f32));
      resultSplits.push_back({WeightSplit::Tp, 1});
      snapshotNames.push_back("layers." + std::to_string(l) + ".kda_snapshots");
    }

  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(b, loc,
                                 batch    ? "decode_batch"
                                 : decode ? "decode"
                                 : lastOnly ? "prefill_last"
                                            : "prefill",
                                 b.getFunctionType(inputs, results));
  fn.setArgAttr(0, "k3.name", b.getStringAttr("ids"));
  fn.setResultAttr(0, "k3.name", b.getStringAttr("logits"));
  for (auto [i, name] : llvm::enumerate(stateNames))
    fn.setArgAttr(i + 1, "k3.name", b.getStringAttr(name));
  for (auto [i, name] : llvm::enumerate(resultNames))
    fn.setResultAttr(i + 1, "k3.name", b.getStringAttr(name));
  // The caller passes S + T rows, the last T for the call to write.
  for (unsigned i : appendsRows)
    fn.setArgAttr(i, "k3.appends_rows", b.getUnitAttr());
  for (auto [i, name] : llvm::enumerate(snapshotNames))
    fn.setResultAttr(1 + resultNames.size() + i, "k3.name", b.getStringAttr(name));
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);
  Value ids = shardAs(body->getArgument(0), inputSplits.front(), /*forUsers=*/true);
  stateIn.clear();
  for (auto [arg, how] : llvm::zip_equal(body->getArguments().drop_front(),
                                         ArrayRef(inputSplits).drop_front()))
    stateIn.push_back(shardAs(arg, how, /*forUsers=*/true));
  if (batch && anyMla) {
    lengths = stateIn.front();
    pages = stateIn.back();
    stateIn = SmallVector<Value>(ArrayRef<Value>(stateIn).drop_front().drop_back());
  }
  if (!decode) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    numTokens = tensor::DimOp::create(b, loc, ids, zero);
  }

  // Located at "embed" as the final ops are at "output": k3-outline-layers
  // moves both into functions of their own, leaving the entry point calls.
  Value emb = EmbedOp::create(b, NameLoc::get(b.getStringAttr("embed")), act({c.hiddenSize}),
                              ids, weight("embed_tokens.weight"));

  // The AttnRes walk of K3_CHECKPOINT.md §6; without attn_res_block_size the
  // usual pre-norm residual. The sealed blocks live in one stack [B, T, D]
  // (B: every seal of the model) written as they seal; a read takes the
  // stack's first n blocks as one [?, T, D] view, so that its op, and the
  // layer function k3-outline-layers makes of the layer, do not depend on
  // how many blocks precede it. The stack and its views are the entry
  // point's own ops (located at "attn_res.blocks"), not any layer's.
  Value running = emb;
  Value stack, view; // the blocks, and the view of those sealed so far
  int64_t sealed = 0;
  Location blocksLoc = NameLoc::get(b.getStringAttr("attn_res.blocks"));
  if (c.attnResBlockSize) {
    int64_t seals = 0;
    for (int64_t l = 0; l < c.numLayers; ++l)
      seals += c.seals(l);
    SmallVector<OpFoldResult> sizes{b.getIndexAttr(seals), tokenCount(),
                                    b.getIndexAttr(c.hiddenSize)};
    stack = tensor::EmptyOp::create(b, blocksLoc, sizes, f32);
  }
  // Seals `running` as the next block and views the blocks so far.
  auto seal = [&](Value value) {
    SmallVector<OpFoldResult> at{b.getIndexAttr(sealed), b.getIndexAttr(0), b.getIndexAttr(0)};
    SmallVector<OpFoldResult> one{b.getIndexAttr(1), tokenCount(), b.getIndexAttr(c.hiddenSize)};
    SmallVector<OpFoldResult> unit(3, b.getIndexAttr(1));
    Value row = tensor::ExpandShapeOp::create(
        b, blocksLoc, RankedTensorType::get({1, tokens(), c.hiddenSize}, f32), value,
        ArrayRef<ReassociationIndices>{{0, 1}, {2}}, one);
    stack = tensor::InsertSliceOp::create(b, blocksLoc, row, stack, at, one, unit);
    ++sealed;
    SmallVector<OpFoldResult> zero(3, b.getIndexAttr(0));
    SmallVector<OpFoldResult> first{b.getIndexAttr(sealed), tokenCount(),
                                    b.getIndexAttr(c.hiddenSize)};
    Value slice = tensor::ExtractSliceOp::create(b, blocksLoc, stack, zero, first, unit);
    view = tensor::CastOp::create(
        b, blocksLoc, RankedTensorType::get({kDyn, tokens(), c.hiddenSize}, f32), slice);
  };
  // Each layer's ops are located at its parts, "layers.L.<part>": the
  // AttnRes read before the mixer and the mixer's input norm, the mixer
  // (KDA or MLA) and its residual add, and the feed-forward (its AttnRes
  // read, norm, MLP or MoE, add). k3-outline-layers makes a function of
  // each. A layer that seals an AttnRes block differs from the others in
  // its first read and in having no residual add: its feed-forward is the
  // same function as every other layer's, its mixer a second one per kind
  // (kda_seal). The input norm goes with the read, not the mixer, which
  // reads only the normed row: beside the read the GPU runs both as one
  // kernel (k3-gpu-fuse-row-norms), as it does the feed-forward's. The
  // residual add goes with the mixer: the GPU runs it in the output
  // projection's epilogue (k3-gpu-mma-contractions), not as a kernel.
  auto at = [&](const std::string &lp, const char *part) {
    loc = NameLoc::get(b.getStringAttr(lp + part));
  };
  for (int64_t l = 0; l < c.numLayers; ++l) {
    const std::string lp = "layers." + std::to_string(l) + ".";
    at(lp, "attn_res");
    Value h = running;
    bool seals = c.seals(l);
    if (seals) // seal after the read: the running sum restarts at 0
      seal(running);
    if (c.attnResBlockSize && sealed > int64_t(seals)) {
      // The read before a seal is over the blocks and the running sum,
      // which the seal has just made the last block.
      SmallVector<Value> srcs{view};
      if (!seals)
        srcs.push_back(running);
      h = attnRes(srcs, lp + "self_attention_res_norm.weight",
                  lp + "self_attention_res_proj.weight");
    }
    if (seals)
      running = Value();
    Value x = rmsNorm(h, weight(lp + "input_layernorm.weight"), c.rmsNormEps);
    at(lp, "mixer");
    Value a = c.mixer(l) == Mixer::KDA ? kda(x, l) : mla(x, l);
    running = running ? Value(arith::AddFOp::create(b, loc, running, a)) : a;
    at(lp, "ffn");
    h = running;
    if (c.attnResBlockSize)
      h = attnRes({view, running}, lp + "mlp_res_norm.weight", lp + "mlp_res_proj.weight");
    Value y = rmsNorm(h, weight(lp + "post_attention_layernorm.weight"),
                      c.rmsNormEps);
    running = arith::AddFOp::create(b, loc, running, ffn(y, l));
  }
  loc = NameLoc::get(b.getStringAttr("output"));
  if (lastOnly) {
    // Every op of the output is per position: the last row of the running
    // sum and of the sealed blocks give the last position's logits.
    Value last = arith::SubIOp::create(b, loc, numTokens,
                                       arith::ConstantIndexOp::create(b, loc, 1));
    outputRow = true;
    running = tensor::ExtractSliceOp::create(
        b, loc, act({c.hiddenSize}), running, ArrayRef<OpFoldResult>{last, b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(c.hiddenSize)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
    if (c.attnResBlockSize) {
      Value blocks = tensor::DimOp::create(b, loc, view, 0);
      view = tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get({kDyn, 1, c.hiddenSize}, f32), view,
          ArrayRef<OpFoldResult>{b.getIndexAttr(0), last, b.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{blocks, b.getIndexAttr(1), b.getIndexAttr(c.hiddenSize)},
          SmallVector<OpFoldResult>(3, b.getIndexAttr(1)));
    }
  }
  Value h = running;
  if (c.attnResBlockSize)
    h = attnRes({view, running}, "output_attn_res_norm.weight",
                "output_attn_res_proj.weight");
  h = rmsNorm(h, weight("norm.weight"), c.rmsNormEps);
  Value head = weight(c.tieWordEmbeddings ? "embed_tokens.weight" : "lm_head.weight");
  // The logits are every rank's whole vocabulary: a vocabulary split is
  // computed split and gathered (said outright: propagation would as soon
  // gather the weight).
  Value logits = LmHeadOp::create(b, loc, results[0], h, head);
  if (!c.tieWordEmbeddings) {
    ::k3::model::WeightSplit rows = ::k3::model::weightSplit("lm_head.weight");
    if (rows.over != ::k3::model::WeightSplit::None)
      logits = shardAs(logits, {rows.over, 1});
  }
  SmallVector<Value> rets{logits};
  rets.append(stateOut.begin(), stateOut.end());
  for (auto &[name, value] : snapshots)
    rets.push_back(value);
  for (auto [v, how] : llvm::zip_equal(rets, resultSplits))
    v = shardAs(v, how);
  func::ReturnOp::create(b, loc, rets);
  return fn;
}

} // namespace

OwningOpRef<ModuleOp> mlir::k3::importCheckpoint(MLIRContext &context,
                                                 const Checkpoint &ck,
                                                 const ImportOptions &options) {
  context.loadDialect<K3Dialect, arith::ArithDialect, func::FuncDialect, scf::SCFDialect,
                      linalg::LinalgDialect, tensor::TensorDialect>();
  OpBuilder b(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  SpecIndex specs(ck.specs().size());
  for (const TensorSpec &s : ck.specs())
    specs[s.isHead ? "lm_head.weight" : s.name] = &s;
  if (options.tp * options.ep > 1) {
    context.loadDialect<shard::ShardDialect>();
    b.setInsertionPointToEnd(module->getBody());
    shard::GridOp::create(b, b.getUnknownLoc(), "grid",
                          ArrayRef<int64_t>{options.ep, options.tp});
  }
  for (auto [decode, lastOnly] : {std::pair{false, false}, {false, true}, {true, false}}) {
    EntryBuilder entry(b, ck, specs, decode, lastOnly, options);
    entry.build(*module);
  }
  if (options.batchedDecode) {
    context.loadDialect<scf::SCFDialect>();
    EntryBuilder entry(b, ck, specs, /*decode=*/false, /*lastOnly=*/false, options,
                       /*batch=*/true);
    entry.build(*module);
  }
  return module;
}
