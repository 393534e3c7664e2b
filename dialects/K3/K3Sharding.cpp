//===- K3Sharding.cpp - Sharding models of the k3 ops ---------------------===//
//
// Part of k3. Upstream's `shard::ShardingInterface` for the k3 ops an
// import holds and for the upstream tensor and arith ops the importer uses
// that upstream leaves without a model, so that `sharding-propagation` and
// `shard-partition` split a model for a grid (issue 28, DISTRIBUTED.md).
//
// Every model describes its op the same way: loops, one per independent
// index of the computation, and for each tensor operand and result the
// loop that each of its dimensions runs over. A loop is
//   - parallel: sharding it shards every tensor it indexes alike (tokens,
//     heads, channels); the op runs unchanged on its rank's block;
//   - sum: a reduction whose partial results add up (a contraction's
//     input width, a MoE's experts, an MLP's hidden channels): split, each
//     rank computes its partial result and a `shard.all_reduce` over the
//     loop's axes follows the op;
//   - whole: mixed in any other way (a norm's width, a recurrence's or a
//     convolution's tokens, a head's channels): never split. An option
//     that would split it is refused, so propagation reshards instead.
// Two tensors that split one loop along different axes, or one axis split
// by two loops, are refused the same way.
//
// The options, annotations and partitions are computed from this
// description here, not by upstream's defaults: those need an affine map
// per operand, which the ops with index operands (slices, reshapes,
// tensor.dim) do not have.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Sharding.h"

#include "dialects/K3/K3Ops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"

#include <optional>

using namespace mlir;
using namespace mlir::k3;
using shard::GridAxis;
using shard::Sharding;
using shard::ShardingArray;
using shard::ShardingOption;

namespace {

enum class Loop { Parallel, Sum, Whole };

/// An op's loops, and for each operand then each result the loop of each
/// of its dimensions (nothing for a value that is not a ranked tensor).
struct Structure {
  SmallVector<Loop> loops;
  SmallVector<std::optional<SmallVector<unsigned>>> dims;
  /// k3.moe: the experts' loop, whose split makes the routed indices local.
  std::optional<unsigned> experts;

  unsigned loop(Loop kind) {
    loops.push_back(kind);
    return loops.size() - 1;
  }
  SmallVector<unsigned> fresh(unsigned n, Loop kind) {
    SmallVector<unsigned> out;
    for (unsigned i = 0; i < n; ++i)
      out.push_back(loop(kind));
    return out;
  }
  /// `v`'s dimensions over `ds`; an absent optional operand adds nothing.
  void add(Value v, ArrayRef<unsigned> ds) {
    if (v)
      dims.emplace_back(SmallVector<unsigned>(ds));
  }
  /// `v` over loops of its own of `kind`, one per dimension.
  void own(Value v, Loop kind) {
    if (!v)
      return;
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t) {
      dims.emplace_back(std::nullopt);
      return;
    }
    dims.emplace_back(fresh(t.getRank(), kind));
  }
  void scalar() { dims.emplace_back(std::nullopt); }
};

SmallVector<unsigned> cat(ArrayRef<unsigned> a, ArrayRef<unsigned> b) {
  SmallVector<unsigned> out(a);
  out.append(b.begin(), b.end());
  return out;
}

int64_t rank(Value v) { return cast<RankedTensorType>(v.getType()).getRank(); }

//===--- The k3 ops ------------------------------------------------------===//

Structure describe(WeightOp op) {
  Structure s;
  s.own(op.getResult(), Loop::Parallel);
  return s;
}

Structure describe(EmbedOp op) {
  // A lookup: the table is read whole by every token.
  Structure s;
  unsigned t = s.loop(Loop::Parallel), v = s.loop(Loop::Whole), d = s.loop(Loop::Whole);
  s.add(op.getIds(), {t});
  s.add(op.getTable(), {v, d});
  s.add(op.getOut(), {t, d});
  return s;
}

/// Ops normalising their last dimension: every other is parallel.
template <typename Op> Structure describeLastWhole(Op op, ArrayRef<Value> alike) {
  Structure s;
  SmallVector<unsigned> lead = s.fresh(rank(op->getResult(0)) - 1, Loop::Parallel);
  unsigned n = s.loop(Loop::Whole);
  for (Value v : alike)
    s.add(v, v && rank(v) == 1 ? SmallVector<unsigned>{n} : cat(lead, {n}));
  s.add(op->getResult(0), cat(lead, {n}));
  return s;
}
Structure describe(RmsNormOp op) {
  return describeLastWhole(op, {op.getX(), op.getWeight(), op.getGate()});
}
Structure describe(L2NormOp op) { return describeLastWhole(op, {op.getX()}); }

/// Elementwise ops: one parallel loop per dimension, shared by all.
Structure describeElementwise(Operation *op) {
  Structure s;
  auto t = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!t) { // on scalars: nothing to shard
    for (unsigned i = 0; i < op->getNumOperands() + op->getNumResults(); ++i)
      s.scalar();
    return s;
  }
  SmallVector<unsigned> all = s.fresh(t.getRank(), Loop::Parallel);
  for (Value v : op->getOperands())
    s.add(v, all);
  for (Value v : op->getResults())
    s.add(v, all);
  return s;
}
Structure describe(SigmoidOp op) { return describeElementwise(op); }
Structure describe(SituGluOp op) { return describeElementwise(op); }
Structure describe(SwiGluOp op) { return describeElementwise(op); }

Structure describe(LinearOp op) {
  // y[.., n] = Σ_k x[.., k] w[n, k]; MXFP4 scales [N, K/32] follow k.
  Structure s;
  SmallVector<unsigned> lead = s.fresh(rank(op.getX()) - 1, Loop::Parallel);
  unsigned n = s.loop(Loop::Parallel), k = s.loop(Loop::Sum);
  s.add(op.getX(), cat(lead, {k}));
  s.add(op.getWeight(), {n, k});
  s.add(op.getScales(), {n, k});
  s.add(op.getY(), cat(lead, {n}));
  return s;
}

Structure describe(LmHeadOp op) {
  Structure s;
  SmallVector<unsigned> lead = s.fresh(rank(op.getX()) - 1, Loop::Parallel);
  unsigned v = s.loop(Loop::Parallel), d = s.loop(Loop::Sum);
  s.add(op.getX(), cat(lead, {d}));
  s.add(op.getWeight(), {v, d});
  s.add(op.getLogits(), cat(lead, {v}));
  return s;
}

Structure describe(ShortConvOp op) {
  // Depthwise over channels; the tokens and the window mix.
  Structure s;
  unsigned t = s.loop(Loop::Whole), c = s.loop(Loop::Parallel), w = s.loop(Loop::Whole),
           r = s.loop(Loop::Whole);
  s.add(op.getX(), {t, c});
  s.add(op.getWeight(), {c, w});
  s.add(op.getState(), {r, c});
  s.add(op.getY(), {t, c});
  s.add(op.getNewState(), {r, c});
  return s;
}

Structure describe(KdaGateOp op) {
  Structure s;
  unsigned t = s.loop(Loop::Parallel), h = s.loop(Loop::Parallel), k = s.loop(Loop::Parallel);
  s.add(op.getX(), {t, h, k});
  s.add(op.getALog(), {h});
  s.add(op.getDtBias(), {h, k});
  s.add(op.getG(), {t, h, k});
  return s;
}

Structure describe(KdaOp op) {
  // Heads are independent; the tokens are a recurrence. q/k heads and the
  // value heads (GVA: HV = g·H) share one loop: a block of value heads is
  // read by the matching block of key heads, so splitting both alike is
  // right whenever H divides evenly.
  Structure s;
  unsigned t = s.loop(Loop::Whole), h = s.loop(Loop::Parallel), k = s.loop(Loop::Whole),
           v = s.loop(Loop::Whole), n = s.loop(Loop::Whole);
  s.add(op.getQ(), {t, h, k});
  s.add(op.getK(), {t, h, k});
  s.add(op.getV(), {t, h, v});
  s.add(op.getG(), {t, h, k});
  s.add(op.getBeta(), {t, h});
  s.add(op.getInitialState(), {h, k, v});
  s.add(op.getOut(), {t, h, v});
  s.add(op.getFinalState(), {h, k, v});
  s.add(op.getSnapshots(), {n, h, k, v});
  return s;
}

Structure describe(MlaOp op) {
  // Heads are independent; the latent row, its rope part and the cache are
  // every head's (DISTRIBUTED.md: replicated under tensor parallelism).
  Structure s;
  unsigned h = s.loop(Loop::Parallel);
  SmallVector<unsigned> t{s.loop(Loop::Whole)};
  s.add(op.getQ(), cat(t, {h, s.loop(Loop::Whole)}));
  s.own(op.getLatent(), Loop::Whole);
  s.own(op.getKRope(), Loop::Whole);
  unsigned vd = s.loop(Loop::Whole);
  // kv_b [H·(P+Vd), L]: a block of its rows is a block of heads.
  s.add(op.getKvB(), {h, s.loop(Loop::Whole)});
  s.own(op.getCache(), Loop::Whole);
  s.add(op.getGate(), cat(t, {h, vd}));
  s.add(op.getOut(), cat(t, {h, vd}));
  s.own(op.getNewCache(), Loop::Whole);
  return s;
}

Structure describe(RouterOp op) {
  Structure s;
  unsigned t = s.loop(Loop::Parallel), d = s.loop(Loop::Whole), e = s.loop(Loop::Whole),
           k = s.loop(Loop::Whole);
  s.add(op.getX(), {t, d});
  s.add(op.getWeight(), {e, d});
  s.add(op.getBias(), {e});
  s.add(op.getIndices(), {t, k});
  s.add(op.getWeights(), {t, k});
  return s;
}

Structure describe(MlpOp op) {
  // y = down · glu(gate · x, up · x): the hidden channels are a sum.
  Structure s;
  SmallVector<unsigned> lead = s.fresh(rank(op.getX()) - 1, Loop::Parallel);
  unsigned d = s.loop(Loop::Whole), f = s.loop(Loop::Sum), o = s.loop(Loop::Whole);
  s.add(op.getX(), cat(lead, {d}));
  s.add(op.getGateProj(), {f, d});
  s.add(op.getUpProj(), {f, d});
  s.add(op.getDownProj(), {o, f});
  s.add(op.getY(), cat(lead, {o}));
  return s;
}

Structure describe(MoeOp op) {
  // The output sums the picked experts' weighted outputs and the shared
  // experts' (their hidden channels a sum as in k3.mlp). With LatentMoE's
  // norm between the combine and the up projection the experts' partial
  // sums do not add up after the op: the importer spells that form out.
  Structure s;
  unsigned t = s.loop(Loop::Parallel), d = s.loop(Loop::Whole), k = s.loop(Loop::Whole);
  // A norm makes both whole: the shared experts' partial sums would add up,
  // but not beside a whole routed part (the all-reduce would count it once
  // per rank).
  Loop sum = op.getNorm() ? Loop::Whole : Loop::Sum;
  unsigned e = s.loop(sum), fs = s.loop(sum), dl = s.loop(Loop::Whole);
  s.experts = e;
  s.add(op.getX(), {t, d});
  s.add(op.getIndices(), {t, k});
  s.add(op.getWeights(), {t, k});
  s.add(op.getLatentDown(), {dl, d});
  s.add(op.getLatentUp(), {d, dl});
  s.add(op.getNorm(), {dl});
  unsigned f = s.loop(Loop::Whole), in = s.loop(Loop::Whole), out = s.loop(Loop::Whole);
  s.add(op.getW1(), {e, f, in});
  s.add(op.getW3(), {e, f, in});
  s.add(op.getW2(), {e, out, f});
  s.add(op.getW1Scale(), {e, f, in});
  s.add(op.getW3Scale(), {e, f, in});
  s.add(op.getW2Scale(), {e, out, f});
  s.add(op.getSharedGate(), {fs, d});
  s.add(op.getSharedUp(), {fs, d});
  s.add(op.getSharedDown(), {d, fs});
  s.add(op.getY(), {t, d});
  return s;
}

/// Ops that run replicated: every dimension a whole loop of its own.
Structure describeReplicated(Operation *op) {
  Structure s;
  for (Value v : op->getOperands())
    s.own(v, Loop::Whole);
  for (Value v : op->getResults())
    s.own(v, Loop::Whole);
  return s;
}
Structure describe(AttnResOp op) { return describeReplicated(op); }

//===--- Upstream ops the importer uses ----------------------------------===//

/// A reshape's dimensions: those of the expanded side are the loops; the
/// collapsed side's dimension g runs over group g's major loop, its first
/// dimension not statically 1 (a block split of a flattened dimension is a
/// block split of its major part: A_log [1, 1, H, 1] as [H]); the other
/// loops of a group stay whole.
template <typename Op>
Structure describeReshape(Op op, Value expanded, Value collapsed) {
  Structure s;
  auto type = cast<RankedTensorType>(expanded.getType());
  SmallVector<unsigned> major;
  for (const ReassociationIndices &group : op.getReassociationIndices()) {
    int64_t pick = group.front();
    for (int64_t d : group)
      if (type.getDimSize(d) != 1) {
        pick = d;
        break;
      }
    for (int64_t d : group) {
      unsigned l = s.loop(d == pick ? Loop::Parallel : Loop::Whole);
      if (d == pick)
        major.push_back(l);
    }
  }
  SmallVector<unsigned> all;
  for (unsigned i = 0; i < s.loops.size(); ++i)
    all.push_back(i);
  for (Value v : op->getOperands())
    if (v == expanded)
      s.add(v, all);
    else if (v == collapsed)
      s.add(v, major);
    else
      s.scalar(); // expand_shape's dynamic output sizes
  for (Value v : op->getResults())
    s.add(v, v == expanded ? all : major);
  return s;
}
Structure describe(tensor::ExpandShapeOp op) {
  return describeReshape(op, op.getResult(), op.getSrc());
}
Structure describe(tensor::CollapseShapeOp op) {
  return describeReshape(op, op.getSrc(), op.getResult());
}

Structure describe(tensor::ExtractSliceOp op) {
  // Dimensions the slice keeps whole (offset 0, the source's static size,
  // stride 1) are parallel; the cut ones whole.
  Structure s;
  auto src = op.getSourceType();
  if (op.getResultType().getRank() != src.getRank())
    return describeReplicated(op);
  SmallVector<unsigned> all;
  for (int64_t d = 0; d < src.getRank(); ++d) {
    bool kept = !src.isDynamicDim(d) && isConstantIntValue(op.getMixedOffsets()[d], 0) &&
                isConstantIntValue(op.getMixedSizes()[d], src.getDimSize(d)) &&
                isConstantIntValue(op.getMixedStrides()[d], 1);
    all.push_back(s.loop(kept ? Loop::Parallel : Loop::Whole));
  }
  for (Value v : op->getOperands())
    if (v == op.getSource())
      s.add(v, all);
    else
      s.scalar();
  s.add(op.getResult(), all);
  return s;
}
Structure describe(tensor::InsertSliceOp op) { return describeReplicated(op); }
Structure describe(tensor::EmptyOp op) {
  // Upstream's model annotates its dynamic sizes (index operands) with a
  // sharding without a grid, which the verifier rejects: this one replaces
  // it (registered first, see registerK3ShardingModels).
  Structure s;
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    s.scalar();
  s.own(op.getResult(), Loop::Parallel);
  return s;
}
Structure describe(tensor::CastOp op) { return describeElementwise(op); }
Structure describe(tensor::DimOp op) {
  Structure s;
  s.own(op.getSource(), Loop::Parallel);
  s.scalar();
  s.scalar();
  return s;
}

// The arith ops the importer emits, on tensors or on index scalars.
#define K3_ELEMENTWISE(OP)                                                                      \
  Structure describe(OP op) { return describeElementwise(op); }
K3_ELEMENTWISE(arith::AddFOp)
K3_ELEMENTWISE(arith::SubFOp)
K3_ELEMENTWISE(arith::MulFOp)
K3_ELEMENTWISE(arith::ExtFOp)
K3_ELEMENTWISE(arith::TruncFOp)
K3_ELEMENTWISE(arith::AddIOp)
K3_ELEMENTWISE(arith::SubIOp)
K3_ELEMENTWISE(arith::MulIOp)
K3_ELEMENTWISE(arith::IndexCastOp)
K3_ELEMENTWISE(arith::ScalingExtFOp)
#undef K3_ELEMENTWISE

//===--- From a description to options, annotations and partitions -------===//

/// Each loop's axes given some operands' and results' shardings; failure
/// where they disagree or would split a whole loop.
FailureOr<ShardingOption> optionOf(const Structure &s, ArrayRef<Sharding> operands,
                                   ArrayRef<Sharding> results) {
  ShardingArray axes(s.loops.size());
  FlatSymbolRefAttr grid;
  std::vector<Sharding> all(operands.begin(), operands.end());
  all.insert(all.end(), results.begin(), results.end());
  if (all.size() != s.dims.size()) // a description out of step with its op
    return failure();
  for (auto [sharding, dims] : llvm::zip(all, s.dims)) {
    if (!sharding || !dims)
      continue;
    grid = sharding.getGridAttr();
    for (auto [d, split] : llvm::enumerate(sharding.getSplitAxes())) {
      if (split.empty())
        continue;
      if (d >= dims->size())
        return failure();
      unsigned l = (*dims)[d];
      ArrayRef<GridAxis> a = split.asArrayRef();
      if (s.loops[l] == Loop::Whole || (!axes[l].empty() && ArrayRef(axes[l]) != a))
        return failure();
      axes[l].assign(a.begin(), a.end());
    }
  }
  // No tensor is split twice along one grid axis; and a sum's axes split
  // no result (their all-reduce would add up different blocks). The sums
  // an op adds up (k3.moe's experts and shared channels) split alike or
  // not at all: the all-reduce would count an unsplit one once per rank.
  SmallVector<GridAxis> sums, resultAxes;
  std::optional<unsigned> firstSum;
  for (auto [l, a] : llvm::enumerate(axes)) {
    if (s.loops[l] != Loop::Sum ||
        llvm::none_of(s.dims, [&](const auto &d) { return d && llvm::is_contained(*d, l); }))
      continue;
    if (firstSum && axes[*firstSum] != a)
      return failure();
    firstSum = l;
    sums.append(a.begin(), a.end());
  }
  for (auto [i, dims] : llvm::enumerate(s.dims)) {
    if (!dims)
      continue;
    SmallVector<GridAxis> used;
    for (unsigned l : *dims)
      for (GridAxis x : axes[l]) {
        if (llvm::is_contained(used, x))
          return failure();
        used.push_back(x);
      }
    if (i >= operands.size())
      resultAxes.append(used.begin(), used.end());
  }
  for (GridAxis x : sums)
    if (llvm::is_contained(resultAxes, x))
      return failure();
  if (!grid)
    return ShardingOption::makeEmpty();
  return ShardingOption(std::move(axes), grid);
}

Sharding shardingOf(MLIRContext *ctx, FlatSymbolRefAttr grid, ArrayRef<unsigned> dims,
                    const ShardingArray &axes) {
  SmallVector<shard::GridAxesAttr> split;
  for (unsigned l : dims)
    split.push_back(shard::GridAxesAttr::get(
        ctx, l < axes.size() ? ArrayRef<GridAxis>(axes[l]) : ArrayRef<GridAxis>{}));
  while (split.size() > 1 && split.back().empty())
    split.pop_back();
  if (split.empty())
    split.push_back(shard::GridAxesAttr::get(ctx, ArrayRef<GridAxis>{}));
  return Sharding::get(grid, split);
}

std::vector<Sharding> annotationsOf(MLIRContext *ctx, const Structure &s,
                                    const ShardingOption &option) {
  std::vector<Sharding> out;
  for (const auto &dims : s.dims)
    out.push_back(dims ? shardingOf(ctx, option.grid, *dims, option.shardingArray) : Sharding());
  return out;
}

/// The op's clone with `map`'s operands, its results typed by their
/// shardings.
Operation *cloneLocal(Operation *op, IRMapping &map, ArrayRef<Sharding> results,
                      SymbolTableCollection &symbols, OpBuilder &b) {
  Operation *local = b.clone(*op, map);
  for (auto [r, sharding] : llvm::zip(local->getResults(), results))
    if (sharding && isa<RankedTensorType>(r.getType()))
      r.setType(shard::shardType(r.getType(),
                                 shard::getGrid(op, sharding.getGridAttr(), symbols), sharding));
  return local;
}

/// The ops whose partition is more than a clone on local types.
LogicalResult rebuild(Operation *op, const ShardingArray &axes, ArrayRef<Value> operands,
                      ArrayRef<Sharding> results, IRMapping &map,
                      SymbolTableCollection &symbols, OpBuilder &b) {
  Location loc = op->getLoc();
  auto localType = [&](unsigned i) {
    return cast<RankedTensorType>(
        shard::shardType(op->getResult(i).getType(),
                         shard::getGrid(op, results[i].getGridAttr(), symbols), results[i]));
  };
  if (auto w = dyn_cast<WeightOp>(op)) {
    // The rank's block of the weight: the bundle writer stores it and the
    // runtime maps it by split_dim and split_axes.
    auto local = cast<WeightOp>(cloneLocal(op, map, results, symbols, b));
    for (auto [d, split] : llvm::enumerate(axes)) {
      if (split.empty())
        continue;
      if (local.getSplitDim())
        return w.emitOpError() << "is split along dimensions " << *local.getSplitDim()
                               << " and " << d << "; a weight splits along one";
      local.setSplitDimAttr(b.getI64IntegerAttr(d));
      SmallVector<int64_t> a(split.begin(), split.end());
      local.setSplitAxesAttr(b.getDenseI64ArrayAttr(a));
    }
    return success();
  }
  if (auto e = dyn_cast<tensor::ExpandShapeOp>(op)) {
    RankedTensorType type = localType(0);
    SmallVector<OpFoldResult> shape;
    for (auto [d, size] : llvm::enumerate(e.getMixedOutputShape())) {
      if (auto v = dyn_cast<Value>(size)) {
        // The result's dimensions are its loops.
        if (d < axes.size() && !axes[d].empty())
          return e.emitOpError() << "splits dynamic dimension " << d;
        shape.push_back(map.lookupOrDefault(v));
        continue;
      }
      shape.push_back(b.getIndexAttr(type.getDimSize(d)));
    }
    map.map(e.getResult(), tensor::ExpandShapeOp::create(b, loc, type, operands[0],
                                                         e.getReassociationIndices(), shape)
                               .getResult());
    return success();
  }
  if (auto c = dyn_cast<tensor::CollapseShapeOp>(op)) {
    map.map(c.getResult(), tensor::CollapseShapeOp::create(b, loc, localType(0), operands[0],
                                                           c.getReassociationIndices())
                               .getResult());
    return success();
  }
  if (auto x = dyn_cast<tensor::ExtractSliceOp>(op)) {
    // Only kept dimensions may be split: their size is the block's.
    RankedTensorType type = localType(0);
    auto lookup = [&](ArrayRef<OpFoldResult> in) {
      SmallVector<OpFoldResult> out;
      for (OpFoldResult f : in)
        out.push_back(isa<Value>(f) ? OpFoldResult(map.lookupOrDefault(cast<Value>(f))) : f);
      return out;
    };
    SmallVector<OpFoldResult> sizes = lookup(x.getMixedSizes());
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (!type.isDynamicDim(d))
        sizes[d] = b.getIndexAttr(type.getDimSize(d));
    map.map(x.getResult(),
            tensor::ExtractSliceOp::create(b, loc, type, operands[0], lookup(x.getMixedOffsets()),
                                           sizes, lookup(x.getMixedStrides()))
                .getResult());
    return success();
  }
  if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
    RankedTensorType type = localType(0);
    SmallVector<Value> sizes;
    for (auto [d, size] : llvm::enumerate(empty.getMixedSizes()))
      if (type.isDynamicDim(d)) {
        if (!isa<Value>(size) || (d < axes.size() && !axes[d].empty()))
          return empty.emitOpError() << "splits dynamic dimension " << d;
        sizes.push_back(map.lookupOrDefault(cast<Value>(size)));
      }
    map.map(empty.getResult(), tensor::EmptyOp::create(b, loc, type, sizes).getResult());
    return success();
  }
  if (auto dim = dyn_cast<tensor::DimOp>(op)) {
    // The global size of a split dimension is not the local one.
    std::optional<int64_t> d = dim.getConstantIndex();
    if (!d || (*d < int64_t(axes.size()) && !axes[*d].empty()))
      return dim.emitOpError() << "reads the size of a split dimension";
    b.clone(*op, map);
    return success();
  }
  return failure();
}

/// k3.moe with its experts split: the router's picks become the rank's
/// local indices (`picks - first`, the rank's first expert), those of
/// other ranks' experts fall outside [0, local experts), which the op
/// drops, and its output is the rank's partial sum.
Value localPicks(MoeOp op, ArrayRef<GridAxis> axes, FlatSymbolRefAttr gridName, Value picks,
                 int64_t localExperts, SymbolTableCollection &symbols, OpBuilder &b) {
  Location loc = op.getLoc();
  shard::GridOp grid = shard::getGrid(op, gridName, symbols);
  // The rank's block along `axes`, row-major over them as the bundle's
  // World split counts blocks.
  ValueRange coords =
      shard::ProcessMultiIndexOp::create(b, loc, gridName.getValue(), axes).getResults();
  Value block = arith::ConstantIndexOp::create(b, loc, 0);
  for (auto [i, axis] : llvm::enumerate(axes)) {
    Value size = arith::ConstantIndexOp::create(b, loc, grid.getShape()[axis]);
    block = arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, block, size), coords[i]);
  }
  auto type = cast<RankedTensorType>(picks.getType());
  Value first = arith::IndexCastOp::create(
      b, loc, type.getElementType(),
      arith::MulIOp::create(b, loc, block, arith::ConstantIndexOp::create(b, loc, localExperts)));
  SmallVector<Value> dynamic;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      dynamic.push_back(tensor::DimOp::create(b, loc, picks, d));
  Value firsts = tensor::SplatOp::create(b, loc, type, first, dynamic);
  return arith::SubIOp::create(b, loc, picks, firsts);
}

template <typename Op>
struct Model : shard::ShardingInterface::ExternalModel<Model<Op>, Op> {
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *op) const {
    SmallVector<utils::IteratorType> out;
    for (Loop l : describe(cast<Op>(op)).loops)
      out.push_back(l == Loop::Sum ? utils::IteratorType::reduction
                                   : utils::IteratorType::parallel);
    return out;
  }
  SmallVector<shard::ReductionKind> getReductionLoopIteratorKinds(Operation *op) const {
    SmallVector<shard::ReductionKind> out;
    for (Loop l : describe(cast<Op>(op)).loops)
      if (l == Loop::Sum)
        out.push_back(shard::ReductionKind::Sum);
    return out;
  }
  FailureOr<ShardingOption> getShardingOption(Operation *op, ArrayRef<Sharding> operands,
                                              ArrayRef<Sharding> results) const {
    return optionOf(describe(cast<Op>(op)), operands, results);
  }
  FailureOr<std::vector<Sharding>> getShardingAnnotations(Operation *op,
                                                          const ShardingOption &option) const {
    return annotationsOf(op->getContext(), describe(cast<Op>(op)), option);
  }
  LogicalResult addShardingAnnotations(Operation *op, OpBuilder &b,
                                       const ShardingOption &option) const {
    std::vector<Sharding> all = annotationsOf(op->getContext(), describe(cast<Op>(op)), option);
    unsigned n = op->getNumOperands();
    for (OpResult r : op->getResults())
      if (all[n + r.getResultNumber()]) {
        OpBuilder::InsertionGuard guard(b);
        shard::maybeInsertTargetShardingAnnotation(all[n + r.getResultNumber()], r, b);
      }
    for (OpOperand &o : op->getOpOperands())
      if (all[o.getOperandNumber()]) {
        OpBuilder::InsertionGuard guard(b);
        shard::maybeInsertSourceShardingAnnotation(all[o.getOperandNumber()], o, b);
      }
    return success();
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> operands,
                          ArrayRef<Sharding> operandShardings, ArrayRef<Sharding> resultShardings,
                          IRMapping &map, SymbolTableCollection &symbols, OpBuilder &b) const {
    // Upstream reshards one grid axis per step and leaves no value where a
    // reshard needs more (whole to split over two axes at once).
    for (auto [i, v] : llvm::enumerate(operands))
      if (!v)
        return op->emitOpError() << "operand " << i
                                 << " needs a resharding that shard-partition does not make "
                                    "(more than one grid axis at a time)";
    Structure s = describe(cast<Op>(op));
    if (s.dims.size() != op->getNumOperands() + op->getNumResults())
      return op->emitOpError() << "has " << op->getNumOperands() + op->getNumResults()
                               << " operands and results, its sharding model describes "
                               << s.dims.size();
    FailureOr<ShardingOption> option = optionOf(s, operandShardings, resultShardings);
    if (failed(option))
      return op->emitOpError() << "has shardings that do not agree on its loops";
    if (option->empty) { // nothing sharded: the op as it is
      b.clone(*op, map);
      return success();
    }
    const ShardingArray &axes = option->shardingArray;
    // Upstream gives no sharding for a result used more than once or not
    // at all: it is the one the option implies.
    std::vector<Sharding> all = annotationsOf(op->getContext(), s, *option);
    std::vector<Sharding> results(resultShardings.begin(), resultShardings.end());
    for (auto [i, r] : llvm::enumerate(results))
      if (!r)
        r = all[op->getNumOperands() + i];
    if constexpr (std::is_same_v<Op, WeightOp> || std::is_same_v<Op, tensor::ExpandShapeOp> ||
                  std::is_same_v<Op, tensor::CollapseShapeOp> ||
                  std::is_same_v<Op, tensor::ExtractSliceOp> ||
                  std::is_same_v<Op, tensor::DimOp> || std::is_same_v<Op, tensor::EmptyOp>)
      return rebuild(op, axes, operands, results, map, symbols, b);

    SmallVector<GridAxis> sumAxes;
    for (auto [l, a] : llvm::enumerate(axes))
      if (s.loops[l] == Loop::Sum)
        for (GridAxis x : a)
          if (!llvm::is_contained(sumAxes, x))
            sumAxes.push_back(x);
    llvm::sort(sumAxes);

    Operation *local;
    if constexpr (std::is_same_v<Op, MoeOp>) {
      auto moe = cast<MoeOp>(op);
      if (s.experts && !axes[*s.experts].empty()) {
        Value picks = map.lookup(moe.getIndices());
        int64_t localExperts = cast<RankedTensorType>(map.lookup(moe.getW1()).getType())
                                   .getDimSize(0);
        map.map(moe.getIndices(), localPicks(moe, axes[*s.experts], option->grid, picks,
                                             localExperts, symbols, b));
        local = cloneLocal(op, map, results, symbols, b);
        map.map(moe.getIndices(), picks);
      } else {
        local = cloneLocal(op, map, results, symbols, b);
      }
    } else {
      local = cloneLocal(op, map, results, symbols, b);
    }
    if (sumAxes.empty())
      return success();
    // The rank's partial result, summed over the axes that split the sum.
    for (auto [old, partial] : llvm::zip(op->getResults(), local->getResults()))
      map.map(old, shard::AllReduceOp::create(b, op->getLoc(), partial,
                                              option->grid.getValue(), sumAxes,
                                              shard::ReductionKind::Sum)
                       .getResult());
    return success();
  }
};

} // namespace

void mlir::k3::registerK3ShardingModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, K3Dialect *) {
    WeightOp::attachInterface<Model<WeightOp>>(*ctx);
    EmbedOp::attachInterface<Model<EmbedOp>>(*ctx);
    RmsNormOp::attachInterface<Model<RmsNormOp>>(*ctx);
    L2NormOp::attachInterface<Model<L2NormOp>>(*ctx);
    SigmoidOp::attachInterface<Model<SigmoidOp>>(*ctx);
    SituGluOp::attachInterface<Model<SituGluOp>>(*ctx);
    SwiGluOp::attachInterface<Model<SwiGluOp>>(*ctx);
    LinearOp::attachInterface<Model<LinearOp>>(*ctx);
    LmHeadOp::attachInterface<Model<LmHeadOp>>(*ctx);
    ShortConvOp::attachInterface<Model<ShortConvOp>>(*ctx);
    KdaGateOp::attachInterface<Model<KdaGateOp>>(*ctx);
    KdaOp::attachInterface<Model<KdaOp>>(*ctx);
    MlaOp::attachInterface<Model<MlaOp>>(*ctx);
    RouterOp::attachInterface<Model<RouterOp>>(*ctx);
    MlpOp::attachInterface<Model<MlpOp>>(*ctx);
    MoeOp::attachInterface<Model<MoeOp>>(*ctx);
    AttnResOp::attachInterface<Model<AttnResOp>>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::ExpandShapeOp::attachInterface<Model<tensor::ExpandShapeOp>>(*ctx);
    tensor::CollapseShapeOp::attachInterface<Model<tensor::CollapseShapeOp>>(*ctx);
    tensor::ExtractSliceOp::attachInterface<Model<tensor::ExtractSliceOp>>(*ctx);
    tensor::InsertSliceOp::attachInterface<Model<tensor::InsertSliceOp>>(*ctx);
    tensor::CastOp::attachInterface<Model<tensor::CastOp>>(*ctx);
    tensor::DimOp::attachInterface<Model<tensor::DimOp>>(*ctx);
    tensor::EmptyOp::attachInterface<Model<tensor::EmptyOp>>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, arith::ArithDialect *) {
    arith::AddFOp::attachInterface<Model<arith::AddFOp>>(*ctx);
    arith::SubFOp::attachInterface<Model<arith::SubFOp>>(*ctx);
    arith::MulFOp::attachInterface<Model<arith::MulFOp>>(*ctx);
    arith::ExtFOp::attachInterface<Model<arith::ExtFOp>>(*ctx);
    arith::TruncFOp::attachInterface<Model<arith::TruncFOp>>(*ctx);
    arith::AddIOp::attachInterface<Model<arith::AddIOp>>(*ctx);
    arith::SubIOp::attachInterface<Model<arith::SubIOp>>(*ctx);
    arith::MulIOp::attachInterface<Model<arith::MulIOp>>(*ctx);
    arith::IndexCastOp::attachInterface<Model<arith::IndexCastOp>>(*ctx);
    arith::ScalingExtFOp::attachInterface<Model<arith::ScalingExtFOp>>(*ctx);
  });
}
