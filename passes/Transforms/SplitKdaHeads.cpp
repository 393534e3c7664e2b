//===- SplitKdaHeads.cpp - Chunked KDA as one parallel loop over heads ----===//
//
// Part of k3. Implements k3-split-kda-heads: every k3.kda_chunked with more
// than one value head becomes an scf.forall over value heads, each
// iteration a k3.kda_chunked on one value head and the key head it reads
// (GVA: value head h reads key head h / group).
//
// Why: the chunked lowering is a sequential loop over 16-token chunks whose
// body is a dozen small linalg ops over all heads. On the CPU each of them
// became its own OpenMP region: a 512-token prompt of a KDA layer forked and
// joined some 450 times. The value heads share nothing (the lowering
// computes every key-side matrix per value head already), so the whole
// recurrence of one value head can run on one thread: one region per layer,
// and k3-cpu-parallel-loops serialises the loops nested in it.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3SPLITKDAHEADSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;
using namespace mlir::k3;

namespace {

/// `type` with dimension `dim` of size `size`.
RankedTensorType withDim(Type type, int64_t dim, int64_t size) {
  auto t = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(t.getShape());
  shape[dim] = size;
  return t.clone(shape);
}

/// Offsets, sizes and unit strides of the slice of `value` that takes
/// `size` entries from `offset` along `dim` and all of the others.
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

/// The slice of `value` taking `size` entries from `offset` along `dim`.
Value extract(OpBuilder &b, Location loc, Value value, int64_t dim, OpFoldResult offset,
              int64_t size) {
  Slice s = sliceAlong(b, loc, value, dim, offset, size);
  return tensor::ExtractSliceOp::create(b, loc, withDim(value.getType(), dim, size), value,
                                        s.offsets, s.sizes, s.strides);
}

/// Whether every dimension of `v`'s type but the leading one is static.
bool staticPastFirst(Value v) {
  return llvm::none_of(cast<RankedTensorType>(v.getType()).getShape().drop_front(),
                       ShapedType::isDynamic);
}

/// Whether `op` splits: several value heads, and result types this pass
/// can build from the token count alone (the importer's and
/// k3-kda-chunkwise's always are; others lower unsplit, as before).
bool splits(KdaChunkedOp op) {
  auto s0 = cast<RankedTensorType>(op.getInitialState().getType());
  return s0.hasStaticShape() && s0.getDimSize(0) > 1 &&
         s0 == op.getFinalState().getType() && staticPastFirst(op.getQ()) &&
         staticPastFirst(op.getK()) && staticPastFirst(op.getOut()) &&
         staticPastFirst(op.getBoundaryStates());
}

/// An empty tensor of `result`'s type, its dynamic leading extent `extent`.
Value emptyOf(OpBuilder &b, Location loc, Value result, Value extent) {
  auto type = cast<RankedTensorType>(result.getType());
  return tensor::EmptyOp::create(b, loc, type,
                                 type.isDynamicDim(0) ? ValueRange{extent} : ValueRange{});
}

/// Rewrites `op` (which `splits`) into the forall over value heads.
void split(KdaChunkedOp op) {
  const int64_t hv = cast<RankedTensorType>(op.getInitialState().getType()).getDimSize(0),
                group = hv / cast<RankedTensorType>(op.getQ().getType()).getDimSize(1);
  OpBuilder b(op);
  Location loc = op.getLoc();

  // A shared output only for a result that is used (an unused one would be
  // a write into a fresh tensor that bufferization must still allocate).
  // The state is updated in place: each head's initial slice is read from
  // the shared output it is written back to.
  const bool wantOut = !op.getOut().use_empty(), wantState = !op.getFinalState().use_empty(),
             wantStates = !op.getBoundaryStates().use_empty();
  Value tokens = tensor::DimOp::create(b, loc, op.getQ(), 0);
  SmallVector<Value> shared;
  if (wantOut)
    shared.push_back(emptyOf(b, loc, op.getOut(), tokens));
  if (wantState)
    shared.push_back(op.getInitialState());
  if (wantStates) {
    // ceil(T / chunk) boundary states.
    Value chunk = arith::ConstantIndexOp::create(b, loc, op.getChunk());
    Value count = arith::DivUIOp::create(
        b, loc,
        arith::AddIOp::create(b, loc, tokens,
                              arith::ConstantIndexOp::create(b, loc, op.getChunk() - 1)),
        chunk);
    shared.push_back(emptyOf(b, loc, op.getBoundaryStates(), count));
  }

  auto loop = scf::ForallOp::create(b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(hv)}, shared,
                                    std::nullopt);
  b.setInsertionPoint(loop.getTerminator());
  Value head = loop.getInductionVar(0);
  ValueRange iter = loop.getRegionIterArgs();
  Value keyHead = arith::DivUIOp::create(b, loc, head,
                                         arith::ConstantIndexOp::create(b, loc, group));
  Value stateIn = wantState ? iter[wantOut ? 1 : 0] : op.getInitialState();
  // (One statement each: the slices appear in operand order.)
  Value q = extract(b, loc, op.getQ(), 1, keyHead, 1);
  Value k = extract(b, loc, op.getK(), 1, keyHead, 1);
  Value v = extract(b, loc, op.getV(), 1, head, 1);
  Value g = extract(b, loc, op.getG(), 1, head, 1);
  Value beta = extract(b, loc, op.getBeta(), 1, head, 1);
  Value s0 = extract(b, loc, stateIn, 0, head, 1);
  auto inner = KdaChunkedOp::create(
      b, loc, withDim(op.getOut().getType(), 1, 1), withDim(op.getFinalState().getType(), 0, 1),
      withDim(op.getBoundaryStates().getType(), 1, 1), q, k, v, g, beta, s0,
      op.getScaleAttr(), op.getChunkAttr(), op.getSubChunkAttr(), op.getFormAttr());

  // The slices' extents are computed in the body: the terminator's region
  // holds nothing but the inserts.
  SmallVector<std::tuple<Value, Value, Slice>> inserts;
  auto insert = [&](Value value, Value into, int64_t dim) {
    inserts.emplace_back(value, into, sliceAlong(b, loc, into, dim, head, 1));
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

struct K3SplitKdaHeadsPass : k3::impl::K3SplitKdaHeadsPassBase<K3SplitKdaHeadsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<KdaChunkedOp> ops;
    getOperation()->walk([&](KdaChunkedOp op) {
      if (splits(op))
        ops.push_back(op);
    });
    for (KdaChunkedOp op : ops)
      split(op);
  }
};

} // namespace
