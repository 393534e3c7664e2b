//===- KdaSplitHeads.cpp - Chunked KDA as one parallel loop over heads ----===//
//
// Part of k3. Implements k3-kda-split-heads: every k3.kda_chunked with more
// than one key head becomes an scf.forall over key heads, each iteration a
// k3.kda_chunked on its head's slices (one key head and its GVA group of
// value heads).
//
// Why: the chunked lowering is a sequential loop over 16-token chunks whose
// body is a dozen small linalg ops over all heads. On the CPU each of them
// became its own OpenMP region: a 512-token prompt of a KDA layer forked and
// joined ~400 times, each join waiting for the slower thread. The heads
// share nothing, so the whole recurrence of one head can run on one thread:
// one region per layer, and k3-cpu-parallel-loops serialises the loops
// nested in it.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3KDASPLITHEADSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;
using namespace mlir::k3;

namespace {

/// `shape` with dimension `dim` replaced by `size`.
RankedTensorType withDim(Type type, int64_t dim, int64_t size) {
  auto t = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(t.getShape());
  shape[dim] = size;
  return RankedTensorType::get(shape, t.getElementType());
}

/// Offsets, sizes and unit strides of the slice of a `value`-shaped tensor
/// that takes `size` entries from `offset` along `dim` and all of the
/// others.
struct Slice {
  SmallVector<OpFoldResult> offsets, sizes, strides;
};
Slice sliceAlong(OpBuilder &b, Location loc, Value value, int64_t dim, OpFoldResult offset,
                 int64_t size) {
  int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
  Slice s{SmallVector<OpFoldResult>(rank, b.getIndexAttr(0)),
          tensor::getMixedSizes(b, loc, value),
          SmallVector<OpFoldResult>(rank, b.getIndexAttr(1))};
  s.offsets[dim] = offset;
  s.sizes[dim] = b.getIndexAttr(size);
  return s;
}

Value extract(OpBuilder &b, Location loc, Value value, int64_t dim, OpFoldResult offset,
              int64_t size) {
  Slice s = sliceAlong(b, loc, value, dim, offset, size);
  return tensor::ExtractSliceOp::create(b, loc, withDim(value.getType(), dim, size), value,
                                        s.offsets, s.sizes, s.strides);
}

void split(KdaChunkedOp op) {
  auto qType = cast<RankedTensorType>(op.getQ().getType());
  auto vType = cast<RankedTensorType>(op.getV().getType());
  const int64_t h = qType.getDimSize(1), hv = vType.getDimSize(1), group = hv / h;
  OpBuilder b(op);
  Location loc = op.getLoc();

  // A shared output only for a result that is used (an unused one would be
  // a write into a fresh tensor that bufferization must still allocate).
  // The state is updated in place: each head's initial slice is read from
  // the shared output it is written back to.
  const bool wantOut = !op.getOut().use_empty(), wantState = !op.getFinalState().use_empty(),
             wantStates = !op.getBoundaryStates().use_empty();
  auto emptyLike = [&](Value result, Value dynamicSource, int64_t dynamicDim) {
    auto type = cast<RankedTensorType>(result.getType());
    SmallVector<Value> dynamic;
    if (type.isDynamicDim(0)) {
      Value extent = tensor::DimOp::create(b, loc, dynamicSource, dynamicDim);
      if (result == op.getBoundaryStates()) {
        // ceil(T / chunk) boundary states.
        Value c = arith::ConstantIndexOp::create(b, loc, op.getChunk());
        Value cm1 = arith::ConstantIndexOp::create(b, loc, op.getChunk() - 1);
        extent = arith::DivUIOp::create(b, loc, arith::AddIOp::create(b, loc, extent, cm1), c);
      }
      dynamic.push_back(extent);
    }
    return Value(tensor::EmptyOp::create(b, loc, type, dynamic));
  };
  SmallVector<Value> shared;
  if (wantOut)
    shared.push_back(emptyLike(op.getOut(), op.getQ(), 0));
  if (wantState)
    shared.push_back(op.getInitialState());
  if (wantStates)
    shared.push_back(emptyLike(op.getBoundaryStates(), op.getQ(), 0));

  auto loop = scf::ForallOp::create(b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(h)}, shared,
                                    std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getTerminator());
  Value head = loop.getInductionVar(0);
  ValueRange iter = loop.getRegionIterArgs();
  Value firstValueHead = arith::MulIOp::create(
      b, loc, head, arith::ConstantIndexOp::create(b, loc, group));
  Value stateIn = wantState ? iter[wantOut ? 1 : 0] : op.getInitialState();
  // (Built one statement at a time: the slices appear in operand order.)
  Value q = extract(b, loc, op.getQ(), 1, head, 1);
  Value k = extract(b, loc, op.getK(), 1, head, 1);
  Value v = extract(b, loc, op.getV(), 1, firstValueHead, group);
  Value g = extract(b, loc, op.getG(), 1, firstValueHead, group);
  Value beta = extract(b, loc, op.getBeta(), 1, firstValueHead, group);
  Value s0 = extract(b, loc, stateIn, 0, firstValueHead, group);
  auto inner = KdaChunkedOp::create(
      b, loc, withDim(op.getOut().getType(), 1, group),
      withDim(op.getFinalState().getType(), 0, group),
      withDim(op.getBoundaryStates().getType(), 1, group), q, k, v, g, beta, s0,
      op.getScaleAttr(), op.getChunkAttr(), op.getSubChunkAttr(), op.getFormAttr());

  // The slices' extents are computed in the body (the terminator's region
  // holds nothing but the inserts).
  SmallVector<std::tuple<Value, Value, Slice>> inserts;
  auto insert = [&](Value value, Value into, int64_t dim) {
    inserts.emplace_back(value, into, sliceAlong(b, loc, into, dim, firstValueHead, group));
  };
  unsigned next = 0;
  if (wantOut)
    insert(inner.getOut(), iter[next++], 1);
  if (wantState)
    insert(inner.getFinalState(), iter[next++], 0);
  if (wantStates)
    insert(inner.getBoundaryStates(), iter[next++], 1);
  b.setInsertionPointToStart(loop.getTerminator().getBody());
  for (auto &[value, into, s] : inserts)
    tensor::ParallelInsertSliceOp::create(b, loc, value, into, s.offsets, s.sizes, s.strides);

  next = 0;
  if (wantOut)
    op.getOut().replaceAllUsesWith(loop.getResult(next++));
  if (wantState)
    op.getFinalState().replaceAllUsesWith(loop.getResult(next++));
  if (wantStates)
    op.getBoundaryStates().replaceAllUsesWith(loop.getResult(next++));
  op.erase();
}

struct K3KdaSplitHeadsPass : k3::impl::K3KdaSplitHeadsPassBase<K3KdaSplitHeadsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<KdaChunkedOp> ops;
    getOperation()->walk([&](KdaChunkedOp op) {
      int64_t h = cast<RankedTensorType>(op.getQ().getType()).getDimSize(1);
      // One head has nothing to split; dynamic heads cannot be sliced into
      // static ones (the lowering rejects them with its own error).
      if (h > 1 && !ShapedType::isDynamic(h) &&
          !ShapedType::isDynamic(cast<RankedTensorType>(op.getV().getType()).getDimSize(1)))
        ops.push_back(op);
    });
    for (KdaChunkedOp op : ops)
      split(op);
  }
};

} // namespace
