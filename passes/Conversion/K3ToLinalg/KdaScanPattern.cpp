//===- KdaScanPattern.cpp - KDA prefill as one column-parallel scan -------===//
//
// Part of k3. `k3.kda` and `k3.kda_chunked` (`kda-lowering=scan`, the GPU
// form) as one `scf.forall` over the state's columns (value head h, value
// channel j), each running the whole recurrence of KDA.md §4 over the
// tokens on its own column S[h, :, j]:
//
//   pred  = Σ_i e^{g_t[h,i]} S[i] · k_t[h',i]            (h' = h / group, GVA)
//   S[i]  ← e^{g_t[h,i]} S[i] + k_t[h',i] · β_t[h] (v_t[h,j] − pred)
//   o_t[h, j] = Σ_i S[i] · scale · q_t[h',i]
//
// The columns are independent (every term above reads only column j of the
// state), so there is no communication between iterations: on a GPU the
// forall is one kernel with a thread per column, whatever T, instead of a
// host loop over chunks or tokens launching kernels for each. The column,
// the output column and the boundary-state column are slices of the
// forall's shared outputs updated in place (no temporaries inside the
// kernel). Each column runs T·3·K multiply-adds in sequence, so this form
// trades the chunked form's tensor-core products for the absence of host
// control; the arithmetic is that of the recurrent lowering
// (TokenMixingPatterns.cpp), term for term.
//
// Boundary states: `k3.kda`'s snapshots after every N tokens, and
// `k3.kda_chunked`'s state after every chunk (the last one possibly short),
// both at slot t / N when token t closes one.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Conversion/K3ToLinalg/Common.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::k3;
using namespace mlir::k3::lowering;

namespace {

/// What the two ops have in common, and how their boundary states differ.
struct ScanOperands {
  Value q, k, v, g, beta, initialState;
  double scale;
  /// Tokens between boundary states (0: none wanted); `closeLast` also
  /// closes one at the last token (the chunked op's short last chunk).
  int64_t every = 0;
  bool closeLast = false;
  /// The boundary states' result type, when wanted.
  Type statesType;
};

/// The scan; returns {out, final state[, boundary states]} in the result
/// types of `op`.
FailureOr<SmallVector<Value>> scan(PatternRewriter &b, Operation *op, const ScanOperands &in) {
  auto qType = cast<RankedTensorType>(in.q.getType());
  auto vType = cast<RankedTensorType>(in.v.getType());
  const int64_t h = qType.getDimSize(1), dk = qType.getDimSize(2), hv = vType.getDimSize(1),
                dv = vType.getDimSize(2);
  for (int64_t d : {h, dk, hv, dv})
    if (ShapedType::isDynamic(d))
      return b.notifyMatchFailure(op, "heads and head dims must be static");
  const int64_t group = hv / h;
  Location loc = op->getLoc();
  Type f32Type = b.getF32Type();
  auto outType = cast<RankedTensorType>(op->getResult(0).getType());
  Type outElt = outType.getElementType();
  auto idx = [](OpBuilder &nb, Location nl, int64_t v) { return cstIndex(nb, nl, v); };

  Value tokens = tensor::DimOp::create(b, loc, in.q, 0);
  // α = e^g once for all tokens (the recurrent lowering's `alpha`).
  Value alpha = elementwise(b, loc, in.g, cast<RankedTensorType>(in.g.getType()),
                            [](OpBuilder &nb, Location nl, ValueRange a) {
                              return Value(math::ExpOp::create(nb, nl, a[0]));
                            });
  // The state result starts as a copy of the initial state; each column
  // then updates its own slice in place.
  Value state = elementwise(b, loc, in.initialState,
                            cast<RankedTensorType>(in.initialState.getType()),
                            [](OpBuilder &, Location, ValueRange a) { return a[0]; });
  SmallVector<Value> shared{state, empty(b, loc, sizesOf(b, loc, in.v), outElt)};
  Value slots;
  if (in.every) {
    Value n = idx(b, loc, in.every);
    Value rounded = in.closeLast ? Value(arith::AddIOp::create(b, loc, tokens,
                                                               idx(b, loc, in.every - 1)))
                                 : tokens;
    slots = arith::DivUIOp::create(b, loc, rounded, n);
    shared.push_back(empty(b, loc,
                           {OpFoldResult(slots), b.getIndexAttr(hv), b.getIndexAttr(dk),
                            b.getIndexAttr(dv)},
                           f32Type));
  }

  auto forall = scf::ForallOp::create(
      b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(hv), b.getIndexAttr(dv)}, shared,
      std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  Value hh = forall.getInductionVar(0), j = forall.getInductionVar(1);
  SmallVector<Value> outs(forall.getRegionIterArgs());
  Value hq = arith::DivUIOp::create(b, loc, hh, idx(b, loc, group));
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1), dkAttr = b.getIndexAttr(dk);
  // This column's slices of the shared outputs: S[h, :, j], out[:, h, j]
  // and the boundary states [:, h, :, j].
  struct Slice {
    SmallVector<OpFoldResult> offsets, sizes;
  };
  SmallVector<Slice> slices{{{hh, zero, j}, {one, dkAttr, one}},
                            {{zero, hh, j}, {OpFoldResult(tokens), one, one}}};
  SmallVector<Type> sliceTypes{RankedTensorType::get({dk}, f32Type),
                               RankedTensorType::get({ShapedType::kDynamic}, outElt)};
  if (in.every) {
    slices.push_back({{zero, hh, zero, j}, {OpFoldResult(slots), one, dkAttr, one}});
    sliceTypes.push_back(RankedTensorType::get({ShapedType::kDynamic, dk}, f32Type));
  }
  SmallVector<Value> carried;
  for (auto [out, slice, type] : llvm::zip(outs, slices, sliceTypes))
    carried.push_back(tensor::ExtractSliceOp::create(
        b, loc, cast<RankedTensorType>(type), out, slice.offsets, slice.sizes,
        SmallVector<OpFoldResult>(slice.offsets.size(), one)));

  auto load = [&](OpBuilder &nb, Location nl, Value src, ValueRange pos) {
    return f32(nb, nl, tensor::ExtractOp::create(nb, nl, src, pos));
  };
  auto perToken = scf::ForOp::create(
      b, loc, idx(b, loc, 0), tokens, idx(b, loc, 1), carried,
      [&](OpBuilder &tb, Location tl, Value t, ValueRange it) {
        Value s = it[0];
        // The decayed state row i, S[i]·α_i, and k_i.
        auto decayed = [&](OpBuilder &ib, Location il, Value col, Value i) {
          return arith::MulFOp::create(ib, il, tensor::ExtractOp::create(ib, il, col, i),
                                       tensor::ExtractOp::create(ib, il, alpha,
                                                                 ValueRange{t, hh, i}));
        };
        // pred = Σ_i (S[i]·α_i)·k_i.
        auto pred = scf::ForOp::create(
            tb, tl, idx(tb, tl, 0), idx(tb, tl, dk), idx(tb, tl, 1),
            ValueRange{cst(tb, tl, 0.0)},
            [&](OpBuilder &ib, Location il, Value i, ValueRange acc) {
              Value term = arith::MulFOp::create(ib, il, decayed(ib, il, s, i),
                                                 load(ib, il, in.k, {t, hq, i}));
              scf::YieldOp::create(ib, il, Value(arith::AddFOp::create(ib, il, acc[0], term)));
            });
        Value delta = arith::MulFOp::create(
            tb, tl, load(tb, tl, in.beta, {t, hh}),
            arith::SubFOp::create(tb, tl, load(tb, tl, in.v, {t, hh, j}), pred.getResult(0)));
        // S[i] ← S[i]·α_i + k_i·Δ, and o = Σ_i S[i]·(q_i·scale).
        auto update = scf::ForOp::create(
            tb, tl, idx(tb, tl, 0), idx(tb, tl, dk), idx(tb, tl, 1),
            ValueRange{s, cst(tb, tl, 0.0)},
            [&](OpBuilder &ib, Location il, Value i, ValueRange st) {
              Value next = arith::AddFOp::create(
                  ib, il, decayed(ib, il, st[0], i),
                  arith::MulFOp::create(ib, il, load(ib, il, in.k, {t, hq, i}), delta));
              Value sq = arith::MulFOp::create(ib, il, load(ib, il, in.q, {t, hq, i}),
                                               cst(ib, il, in.scale));
              Value o = arith::AddFOp::create(ib, il, st[1], arith::MulFOp::create(ib, il, next, sq));
              scf::YieldOp::create(
                  ib, il, ValueRange{tensor::InsertOp::create(ib, il, next, st[0], i), o});
            });
        Value sNext = update.getResult(0);
        SmallVector<Value> yields{
            sNext, tensor::InsertOp::create(
                       tb, tl, convertScalar(tb, tl, update.getResult(1), outElt), it[1], t)};
        if (in.every) {
          // Token t closes a boundary: store the column at slot t / N.
          Value done = arith::AddIOp::create(tb, tl, t, idx(tb, tl, 1));
          Value closes = arith::CmpIOp::create(
              tb, tl, arith::CmpIPredicate::eq,
              arith::RemUIOp::create(tb, tl, done, idx(tb, tl, in.every)), idx(tb, tl, 0));
          if (in.closeLast)
            closes = arith::OrIOp::create(
                tb, tl, closes,
                arith::CmpIOp::create(tb, tl, arith::CmpIPredicate::eq, done, tokens));
          auto branch = scf::IfOp::create(
              tb, tl, closes,
              [&](OpBuilder &yb, Location yl) {
                Value slot = arith::DivUIOp::create(yb, yl, t, idx(yb, yl, in.every));
                scf::YieldOp::create(
                    yb, yl,
                    Value(tensor::InsertSliceOp::create(
                        yb, yl, sNext, it[2], {OpFoldResult(slot), yb.getIndexAttr(0)},
                        {yb.getIndexAttr(1), yb.getIndexAttr(dk)},
                        {yb.getIndexAttr(1), yb.getIndexAttr(1)})));
              },
              [&](OpBuilder &yb, Location yl) { scf::YieldOp::create(yb, yl, it[2]); });
          yields.push_back(branch.getResult(0));
        }
        scf::YieldOp::create(tb, tl, yields);
      });

  // The columns back into their places.
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  for (auto [column, out, slice] : llvm::zip(perToken.getResults(), outs, slices))
    tensor::ParallelInsertSliceOp::create(b, loc, column, out, slice.offsets, slice.sizes,
                                          SmallVector<OpFoldResult>(slice.offsets.size(), one));
  b.setInsertionPointAfter(forall);

  // {out, state[, states]} in the op's (possibly static) result types.
  SmallVector<Value> results{forall.getResult(1), forall.getResult(0)};
  SmallVector<Type> want{outType, op->getResult(1).getType()};
  if (in.every) {
    results.push_back(forall.getResult(2));
    want.push_back(in.statesType);
  }
  for (auto [value, type] : llvm::zip(results, want))
    if (value.getType() != type)
      value = tensor::CastOp::create(b, loc, type, value);
  return results;
}

struct ScanKda : OpRewritePattern<KdaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(KdaOp op, PatternRewriter &b) const override {
    ScanOperands in{op.getQ(), op.getK(), op.getV(), op.getG(), op.getBeta(), op.getInitialState(),
                    op.getScale().convertToDouble()};
    if (std::optional<uint64_t> every = op.getSnapshotInterval()) {
      in.every = int64_t(*every);
      in.statesType = op.getSnapshots().getType();
    }
    FailureOr<SmallVector<Value>> r = scan(b, op, in);
    if (failed(r))
      return failure();
    b.replaceOp(op, *r);
    return success();
  }
};

struct ScanKdaChunked : OpRewritePattern<KdaChunkedOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(KdaChunkedOp op, PatternRewriter &b) const override {
    ScanOperands in{op.getQ(), op.getK(), op.getV(), op.getG(), op.getBeta(), op.getInitialState(),
                    op.getScale().convertToDouble()};
    // Boundary states only when used, as the chunked lowering.
    bool wantStates = !op.getBoundaryStates().use_empty();
    if (wantStates) {
      in.every = op.getChunk();
      in.closeLast = true;
      in.statesType = op.getBoundaryStates().getType();
    }
    FailureOr<SmallVector<Value>> r = scan(b, op, in);
    if (failed(r))
      return failure();
    SmallVector<Value> results = *r;
    if (!wantStates) {
      // Unused: an uninitialised tensor of its shape, as the chunked lowering.
      Location loc = op.getLoc();
      Value tokens = tensor::DimOp::create(b, loc, op.getQ(), 0);
      Value chunks = arith::DivUIOp::create(
          b, loc, arith::AddIOp::create(b, loc, tokens, cstIndex(b, loc, op.getChunk() - 1)),
          cstIndex(b, loc, op.getChunk()));
      auto type = cast<RankedTensorType>(op.getBoundaryStates().getType());
      SmallVector<OpFoldResult> sizes{OpFoldResult(chunks)};
      for (int64_t d : type.getShape().drop_front())
        sizes.push_back(b.getIndexAttr(d));
      Value states = empty(b, loc, sizes, type.getElementType());
      if (states.getType() != type)
        states = tensor::CastOp::create(b, loc, type, states);
      results.push_back(states);
    }
    b.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::k3::lowering::populateKdaScanPatterns(RewritePatternSet &patterns) {
  // Over the host-loop lowerings of the same ops.
  patterns.add<ScanKda, ScanKdaChunked>(patterns.getContext(), /*benefit=*/2);
}
