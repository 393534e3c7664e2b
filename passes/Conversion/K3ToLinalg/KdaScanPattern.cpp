//===- KdaScanPattern.cpp - KDA prefill as one column-parallel scan -------===//
//
// Part of k3. `k3.kda` and `k3.kda_chunked` (`kda-prefill=scan`, the GPU
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
// host loop over chunks or tokens launching kernels for each. The column
// lives in K scalars carried by the token loop (registers on a GPU: the
// loops over i are unrolled here, K is static), read once from the initial
// state and written once at the end. The output column and the boundary
// states are slices of the forall's shared outputs, updated in place; a
// shared output exists only for a result that is used, so canonicalization
// has none to drop (dropping one would leave the writes aimed at a
// read-only operand, which bufferization copies inside the loop). Each
// column runs T·3·K multiply-adds in sequence, so this form trades the
// chunked form's tensor-core products for the absence of host control; the
// operations are the recurrent lowering's (TokenMixingPatterns.cpp), in the
// same order (results differ from it by rounding only where the backend
// contracts a different multiply-add pair into an FMA).
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

/// What the two ops have in common, and which results are wanted.
struct ScanOperands {
  Value q, k, v, g, beta, initialState;
  double scale;
  bool wantOut = true, wantState = true;
  /// Tokens between boundary states (0: none wanted); `closeLast` also
  /// closes one at the last token (the chunked op's short last chunk).
  int64_t every = 0;
  bool closeLast = false;
};

/// One column's slice of a shared output: offsets, sizes (the token or
/// slot count is dynamic) and the rank-reduced type.
struct Slice {
  SmallVector<OpFoldResult> offsets, sizes;
  RankedTensorType type;
};

/// The scan; returns {out, final state, boundary states}, each null when
/// not wanted, in the forall's (dynamic) types.
FailureOr<std::array<Value, 3>> scan(PatternRewriter &b, Operation *op,
                                     const ScanOperands &in) {
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
  Type outElt = cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
  auto idx = [](OpBuilder &nb, Location nl, int64_t v) { return cstIndex(nb, nl, v); };

  Value tokens = tensor::DimOp::create(b, loc, in.q, 0);
  // α = e^g once for all tokens (the recurrent lowering's `alpha`).
  Value alpha = elementwise(b, loc, in.g, cast<RankedTensorType>(in.g.getType()),
                            [](OpBuilder &nb, Location nl, ValueRange a) {
                              return Value(math::ExpOp::create(nb, nl, a[0]));
                            });
  // The shared outputs of the wanted results, and each column's slice.
  enum Kind { Out, State, States };
  SmallVector<Kind> kinds;
  SmallVector<Value> shared;
  Value slots;
  if (in.wantOut) {
    kinds.push_back(Out);
    shared.push_back(empty(b, loc, sizesOf(b, loc, in.v), outElt));
  }
  if (in.wantState) {
    kinds.push_back(State);
    shared.push_back(empty(b, loc, sizesOf(b, loc, in.initialState), f32Type));
  }
  if (in.every) {
    Value rounded = in.closeLast ? Value(arith::AddIOp::create(b, loc, tokens,
                                                               idx(b, loc, in.every - 1)))
                                 : tokens;
    slots = arith::DivUIOp::create(b, loc, rounded, idx(b, loc, in.every));
    kinds.push_back(States);
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
  Value hq = arith::DivUIOp::create(b, loc, hh, idx(b, loc, group));
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1), dkAttr = b.getIndexAttr(dk);
  auto sliceOf = [&](Kind kind) -> Slice {
    switch (kind) {
    case Out: // out[:, h, j]
      return {{zero, hh, j}, {OpFoldResult(tokens), one, one},
              RankedTensorType::get({ShapedType::kDynamic}, outElt)};
    case State: // S[h, :, j]
      return {{hh, zero, j}, {one, dkAttr, one}, RankedTensorType::get({dk}, f32Type)};
    case States: // states[:, h, :, j]
      return {{zero, hh, zero, j}, {OpFoldResult(slots), one, dkAttr, one},
              RankedTensorType::get({ShapedType::kDynamic, dk}, f32Type)};
    }
    llvm_unreachable("kind");
  };
  auto unitStrides = [&](const Slice &slice) {
    return SmallVector<OpFoldResult>(slice.offsets.size(), one);
  };
  auto column = [&](Kind kind) -> Value {
    Slice slice = sliceOf(kind);
    auto it = llvm::find(kinds, kind);
    return tensor::ExtractSliceOp::create(b, loc, slice.type,
                                          forall.getRegionIterArgs()[it - kinds.begin()],
                                          slice.offsets, slice.sizes, unitStrides(slice));
  };

  // Token t's loop over i finishes token t − 1 and starts token t, so that
  // each S[i] is live only as one scalar (registers on a GPU) and every
  // operand is loaded in the loop that uses it:
  //   next_i = P_i + k_{t−1,i}·Δ_{t−1}       (S after t − 1, P = its decayed
  //   o_{t−1} += next_i·(q_{t−1,i}·scale)      form before the update)
  //   P_i ← next_i·α_{t,i};  pred_t += P_i·k_{t,i}
  // then Δ_t = β_t (v_t − pred_t): the recurrent lowering's operations in
  // its order (decayed, predict, update, read). Token 0 starts from P = S₀
  // and Δ = 0 (its "previous token" reads row 0, adds k·0 and writes a
  // provisional o_0 that token 1 or the epilogue overwrites); the epilogue
  // finishes token T − 1.
  SmallVector<Value> carried;
  for (int64_t i = 0; i < dk; ++i)
    carried.push_back(tensor::ExtractOp::create(
        b, loc, in.initialState, ValueRange{hh, idx(b, loc, i), j}));
  carried.push_back(cst(b, loc, 0.0));
  const size_t deltaAt = dk, outAt = dk + 1, statesAt = dk + 1 + (in.wantOut ? 1 : 0);
  if (in.wantOut)
    carried.push_back(column(Out));
  if (in.every)
    carried.push_back(column(States));

  auto load = [&](OpBuilder &nb, Location nl, Value src, ValueRange pos) {
    return f32(nb, nl, tensor::ExtractOp::create(nb, nl, src, pos));
  };
  // Token `t` closes a boundary: its column into slot t / N.
  auto boundary = [&](OpBuilder &nb, Location nl, Value guard, Value t, ArrayRef<Value> col,
                      Value states) -> Value {
    Value done = arith::AddIOp::create(nb, nl, t, idx(nb, nl, 1));
    Value closes = arith::CmpIOp::create(
        nb, nl, arith::CmpIPredicate::eq,
        arith::RemUIOp::create(nb, nl, done, idx(nb, nl, in.every)), idx(nb, nl, 0));
    if (in.closeLast)
      closes = arith::OrIOp::create(
          nb, nl, closes, arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq, done, tokens));
    if (guard)
      closes = arith::AndIOp::create(nb, nl, guard, closes);
    auto branch = scf::IfOp::create(
        nb, nl, closes,
        [&](OpBuilder &yb, Location yl) {
          Value slot = arith::DivUIOp::create(yb, yl, t, idx(yb, yl, in.every));
          Value filled = states;
          for (int64_t i = 0; i < dk; ++i)
            filled = tensor::InsertOp::create(yb, yl, col[i], filled,
                                              ValueRange{slot, idx(yb, yl, i)});
          scf::YieldOp::create(yb, yl, filled);
        },
        [&](OpBuilder &yb, Location yl) { scf::YieldOp::create(yb, yl, states); });
    return branch.getResult(0);
  };
  // Finishes token `tp` from the carried state: its column (next_i) and o.
  auto finish = [&](OpBuilder &nb, Location nl, Value tp, ValueRange it, int64_t i,
                    Value &o) -> Value {
    Value next = arith::AddFOp::create(
        nb, nl, it[i],
        arith::MulFOp::create(nb, nl, load(nb, nl, in.k, {tp, hq, idx(nb, nl, i)}), it[deltaAt]));
    Value sq = arith::MulFOp::create(nb, nl, load(nb, nl, in.q, {tp, hq, idx(nb, nl, i)}),
                                     cst(nb, nl, in.scale));
    o = arith::AddFOp::create(nb, nl, o, arith::MulFOp::create(nb, nl, next, sq));
    return next;
  };

  auto perToken = scf::ForOp::create(
      b, loc, idx(b, loc, 0), tokens, idx(b, loc, 1), carried,
      [&](OpBuilder &tb, Location tl, Value t, ValueRange it) {
        Value started = arith::CmpIOp::create(tb, tl, arith::CmpIPredicate::ugt, t,
                                              idx(tb, tl, 0));
        Value tp = arith::SelectOp::create(
            tb, tl, started, arith::SubIOp::create(tb, tl, t, idx(tb, tl, 1)), t);
        SmallVector<Value> yields, prev;
        Value o = cst(tb, tl, 0.0), pred = cst(tb, tl, 0.0);
        for (int64_t i = 0; i < dk; ++i) {
          prev.push_back(finish(tb, tl, tp, it, i, o));
          Value decayed = arith::MulFOp::create(
              tb, tl, prev.back(),
              tensor::ExtractOp::create(tb, tl, alpha, ValueRange{t, hh, idx(tb, tl, i)}));
          pred = arith::AddFOp::create(
              tb, tl, pred,
              arith::MulFOp::create(tb, tl, decayed, load(tb, tl, in.k, {t, hq, idx(tb, tl, i)})));
          yields.push_back(decayed);
        }
        yields.push_back(arith::MulFOp::create(
            tb, tl, load(tb, tl, in.beta, {t, hh}),
            arith::SubFOp::create(tb, tl, load(tb, tl, in.v, {t, hh, j}), pred)));
        if (in.wantOut)
          yields.push_back(tensor::InsertOp::create(tb, tl, convertScalar(tb, tl, o, outElt),
                                                    it[outAt], tp));
        if (in.every)
          yields.push_back(boundary(tb, tl, started, tp, prev, it[statesAt]));
        scf::YieldOp::create(tb, tl, yields);
      });

  // The epilogue finishes token T − 1 (none when T = 0: S₀ is final).
  Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, tokens, idx(b, loc, 0));
  auto last = scf::IfOp::create(
      b, loc, any,
      [&](OpBuilder &nb, Location nl) {
        ValueRange it = perToken.getResults();
        Value tp = arith::SubIOp::create(nb, nl, tokens, idx(nb, nl, 1));
        SmallVector<Value> yields;
        Value o = cst(nb, nl, 0.0);
        for (int64_t i = 0; i < dk; ++i)
          yields.push_back(finish(nb, nl, tp, it, i, o));
        yields.push_back(it[deltaAt]);
        if (in.wantOut)
          yields.push_back(tensor::InsertOp::create(nb, nl, convertScalar(nb, nl, o, outElt),
                                                    it[outAt], tp));
        if (in.every)
          yields.push_back(boundary(nb, nl, Value(), tp, ArrayRef<Value>(yields).take_front(dk),
                                    it[statesAt]));
        scf::YieldOp::create(nb, nl, yields);
      },
      [&](OpBuilder &nb, Location nl) { scf::YieldOp::create(nb, nl, perToken.getResults()); });

  // The columns back into their places.
  SmallVector<std::pair<Kind, Value>> done;
  if (in.wantOut)
    done.push_back({Out, last.getResult(outAt)});
  if (in.wantState) {
    Value col = column(State);
    for (int64_t i = 0; i < dk; ++i)
      col = tensor::InsertOp::create(b, loc, last.getResult(i), col, ValueRange{idx(b, loc, i)});
    done.push_back({State, col});
  }
  if (in.every)
    done.push_back({States, last.getResult(statesAt)});
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  for (auto [kind, value] : done) {
    Slice slice = sliceOf(kind);
    tensor::ParallelInsertSliceOp::create(b, loc, value,
                                          forall.getRegionIterArgs()[llvm::find(kinds, kind) -
                                                                     kinds.begin()],
                                          slice.offsets, slice.sizes, unitStrides(slice));
  }
  std::array<Value, 3> results{};
  for (auto [kind, value] : llvm::zip(kinds, forall.getResults()))
    results[kind] = value;
  return results;
}

/// `value` in `type` (a static result refines a dynamic one), or, for a
/// result nobody reads, an uninitialised tensor of `type` whose dynamic
/// (leading) extent is `rows`.
Value resultOf(PatternRewriter &b, Location loc, Value value, Type type, Value rows) {
  if (!value) {
    auto t = cast<RankedTensorType>(type);
    SmallVector<OpFoldResult> sizes;
    for (int64_t d = 0; d < t.getRank(); ++d)
      sizes.push_back(t.isDynamicDim(d) ? OpFoldResult(rows) : b.getIndexAttr(t.getDimSize(d)));
    value = empty(b, loc, sizes, t.getElementType());
  }
  return value.getType() == type ? value : Value(tensor::CastOp::create(b, loc, type, value));
}

/// Both ops: the scan of their common operands and the op's results;
/// `boundaryStates` is the op's boundary-state result (null for a k3.kda
/// without snapshots), one every `every` tokens.
template <typename OpTy>
LogicalResult rewrite(PatternRewriter &b, OpTy op, Value boundaryStates, int64_t every,
                      bool closeLast) {
  ScanOperands in{op.getQ(), op.getK(), op.getV(), op.getG(), op.getBeta(), op.getInitialState(),
                  op.getScale().convertToDouble()};
  in.wantOut = !op.getOut().use_empty();
  in.wantState = !op.getFinalState().use_empty();
  // Boundary states only when used (as the loop lowerings).
  if (boundaryStates && !boundaryStates.use_empty()) {
    in.every = every;
    in.closeLast = closeLast;
  }
  FailureOr<std::array<Value, 3>> r = scan(b, op, in);
  if (failed(r))
    return failure();
  Location loc = op.getLoc();
  Value tokens = tensor::DimOp::create(b, loc, op.getQ(), 0);
  SmallVector<Value> results{resultOf(b, loc, (*r)[0], op.getOut().getType(), tokens),
                             resultOf(b, loc, (*r)[1], op.getFinalState().getType(), tokens)};
  if (boundaryStates) {
    // ⌈T/N⌉ after every chunk (the last one short), ⌊T/N⌋ snapshots.
    Value n = cstIndex(b, loc, every);
    Value rounded = closeLast ? Value(arith::AddIOp::create(b, loc, tokens,
                                                            cstIndex(b, loc, every - 1)))
                              : tokens;
    results.push_back(resultOf(b, loc, (*r)[2], boundaryStates.getType(),
                               arith::DivUIOp::create(b, loc, rounded, n)));
  }
  b.replaceOp(op, results);
  return success();
}

struct ScanKda : OpRewritePattern<KdaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(KdaOp op, PatternRewriter &b) const override {
    std::optional<uint64_t> every = op.getSnapshotInterval();
    return rewrite(b, op, every ? op.getSnapshots() : Value(), every ? int64_t(*every) : 0,
                   /*closeLast=*/false);
  }
};

struct ScanKdaChunked : OpRewritePattern<KdaChunkedOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(KdaChunkedOp op, PatternRewriter &b) const override {
    return rewrite(b, op, op.getBoundaryStates(), op.getChunk(), /*closeLast=*/true);
  }
};

} // namespace

void mlir::k3::lowering::populateKdaScanPatterns(RewritePatternSet &patterns) {
  // Over the host-loop lowerings of the same ops.
  patterns.add<ScanKda, ScanKdaChunked>(patterns.getContext(), /*benefit=*/2);
}
