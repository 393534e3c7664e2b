//===- KdaDecodePattern.cpp - k3.kda_decode as one loop over heads --------===//
//
// Part of k3. The fused one-token KDA step: the windows shift once for all
// channels, then one loop over value heads (scf.for, or with
// `kda-decode=heads` an scf.forall the CPU runs on threads) does, on that head's rows
// only, the conv taps with SiLU, the L2 norms, the decay gate, β, the
// recurrent step on the head's [K, V] state slice (updated in place) and
// the gated RMSNorm of the read. Nothing per head outlives its iteration.
//
// The head-batched form (`kda-decode=batched`, the GPU's) does the same
// steps once for all heads, each a loop nest over [HV, ·]: no host loop, so
// a GPU runs the step as a dozen kernels instead of a dozen per head. The
// state makes three passes: the prediction reads e^g ⊙ S, the update writes
// e^g ⊙ S + β k (v − pred)ᵀ in place, and the read sums the new state
// against q.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Conversion/K3ToLinalg/Common.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <array>

using namespace mlir;
using namespace mlir::k3;
using namespace mlir::k3::lowering;

namespace {

using IT = utils::IteratorType;

SmallVector<OpFoldResult> ints(OpBuilder &b, ArrayRef<int64_t> v) {
  SmallVector<OpFoldResult> r;
  for (int64_t x : v)
    r.push_back(b.getIndexAttr(x));
  return r;
}

/// A static-shaped slice of `src` at `offsets` (OpFoldResults), rank-reduced
/// to `shape`.
Value slice(OpBuilder &b, Location loc, Value src, ArrayRef<OpFoldResult> offsets,
            ArrayRef<int64_t> sizes, ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(src.getType());
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), src, offsets,
      ints(b, sizes), ints(b, SmallVector<int64_t>(sizes.size(), 1)));
}

/// The next window: rows 1.. of `window`, then the new row `x` [1, P], in
/// the window's type, as one generic (three copies through a [window | x]
/// tensor would be three kernels on the GPU). A window of no rows stays.
Value shifted(OpBuilder &b, Location loc, Value window, Value x) {
  auto wType = cast<RankedTensorType>(window.getType());
  const int64_t rows = wType.getDimSize(0);
  if (rows == 0)
    return window;
  Value out = empty(b, loc, ints(b, wType.getShape()), wType.getElementType());
  return linalg::GenericOp::create(
             b, loc, TypeRange{wType}, ValueRange{}, ValueRange{out},
             ArrayRef<AffineMap>{AffineMap::getMultiDimIdentityMap(2, b.getContext())},
             SmallVector<IT>(2, IT::parallel),
             [&](OpBuilder &nb, Location nl, ValueRange) {
               Value r = linalg::IndexOp::create(nb, nl, 0), c = linalg::IndexOp::create(nb, nl, 1);
               Value next = arith::AddIOp::create(nb, nl, r, cstIndex(nb, nl, 1));
               Value last = cstIndex(nb, nl, rows - 1);
               // The window's row r + 1, clamped (row `last` takes x instead).
               Value kept = tensor::ExtractOp::create(
                   nb, nl, window,
                   ValueRange{arith::MinUIOp::create(nb, nl, next, last), c});
               // Through f32: f16 and bf16 do not convert into each other.
               Value fresh = convertScalar(
                   nb, nl,
                   convertScalar(nb, nl,
                                 tensor::ExtractOp::create(nb, nl, x,
                                                           ValueRange{cstIndex(nb, nl, 0), c}),
                                 nb.getF32Type()),
                   wType.getElementType());
               Value isOld = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult, r, last);
               linalg::YieldOp::create(
                   nb, nl, ValueRange{arith::SelectOp::create(nb, nl, isOld, kept, fresh)});
             })
      .getResult(0);
}

struct LowerKdaDecode : OpRewritePattern<KdaDecodeOp> {
  LowerKdaDecode(MLIRContext *ctx, bool batched, bool parallel)
      : OpRewritePattern<KdaDecodeOp>(ctx), batched(batched), parallel(parallel) {}
  /// All heads at once (the GPU form) rather than a loop over heads.
  bool batched;
  /// The loop over heads as an scf.forall (`kda-decode=heads`, the CPU's:
  /// threads) rather than an scf.for.
  bool parallel;

  LogicalResult matchAndRewrite(KdaDecodeOp op, PatternRewriter &b) const override {
    auto sType = cast<RankedTensorType>(op.getState().getType());
    auto cqType = cast<RankedTensorType>(op.getCq().getType());
    if (!sType.hasStaticShape() || !cqType.hasStaticShape() ||
        !cast<RankedTensorType>(op.getCk().getType()).hasStaticShape() ||
        !cast<RankedTensorType>(op.getCv().getType()).hasStaticShape())
      return b.notifyMatchFailure(op, "needs static head shapes");
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    const int64_t hv = sType.getDimSize(0), dk = sType.getDimSize(1), dv = sType.getDimSize(2);
    const int64_t width = cqType.getDimSize(0) + 1, group = hv / (cqType.getDimSize(1) / dk);
    const bool bounded = op.getForm() == KdaGateForm::lower_bound;
    const double lb = bounded ? op.getLbAttr().getValueAsDouble() : 0.0;
    const double scale = op.getScale().convertToDouble(), eps = op.getEps().convertToDouble();
    auto outType = cast<RankedTensorType>(op.getOut().getType());
    Type f32 = b.getF32Type();

    // Per stream its window [W-1, P] and new row x [1, P]: the taps read
    // both where they are, and the windows shift once.
    const std::array<std::pair<Value, Value>, 3> streams = {
        std::pair{op.getCq(), op.getXq()}, {op.getCk(), op.getXk()}, {op.getCv(), op.getXv()}};
    SmallVector<Value> windows;
    for (auto [window, x] : streams)
      windows.push_back(shifted(b, loc, window, x));

    AffineExpr d0 = getAffineDimExpr(0, ctx);
    AffineMap id1 = identity(ctx, 1), id2 = identity(ctx, 2), row2 = project(ctx, 2, {1}),
              col2 = project(ctx, 2, {0});
    auto sum = [](OpBuilder &bb, Location bl, Value acc, Value term) {
      return Value(arith::AddFOp::create(bb, bl, acc, term));
    };
    // y[c] = silu(Σ_i w[c, i] · [window | x][i, c]) for `n` channels from
    // `first`, one elementwise loop over c: each tap's weight and input are
    // inputs of their own (w's W columns through constant maps, which read
    // w's rows whole, and the window's rows), summed in tap order, x's (the
    // last tap) last. (A reduction over the taps inside the channel loop
    // read w's columns strided and kept LLVM from vectorising the SiLU.)
    auto conv = [&](OpBuilder &nb, Location nl, unsigned stream, Value w, Value first, int64_t n) {
      auto [window, x] = streams[stream];
      OpFoldResult zero = nb.getIndexAttr(0);
      Value filt = slice(nb, nl, w, {first, zero}, {n, width}, {n, width});
      SmallVector<Value> ins;
      SmallVector<AffineMap> maps;
      for (int64_t t = 0; t < width; ++t) {
        ins.push_back(filt);
        maps.push_back(AffineMap::get(1, 0, {d0, getAffineConstantExpr(t, ctx)}, ctx));
      }
      if (width > 1) {
        Value taps = withElementType(
            nb, nl, slice(nb, nl, window, {zero, first}, {width - 1, n}, {width - 1, n}), f32);
        for (int64_t t = 0; t + 1 < width; ++t) {
          ins.push_back(taps);
          maps.push_back(AffineMap::get(1, 0, {getAffineConstantExpr(t, ctx), d0}, ctx));
        }
      }
      ins.push_back(withElementType(nb, nl, slice(nb, nl, x, {zero, first}, {1, n}, {n}), f32));
      maps.append({id1, id1});
      return generic(nb, nl, ins, empty(nb, nl, ints(nb, {n}), f32), maps, {IT::parallel},
                     [&](OpBuilder &bb, Location bl, ValueRange a) {
                       // w's W columns, the W-1 window rows, x, then the output.
                       Value t;
                       for (int64_t i = 0; i < width; ++i) {
                         Value in = i + 1 < width ? a[width + i] : a[2 * width - 1];
                         Value term = arith::MulFOp::create(bb, bl, a[i], in);
                         t = t ? sum(bb, bl, t, term) : term;
                       }
                       return SmallVector<Value>{
                           arith::MulFOp::create(bb, bl, t, sigmoid(bb, bl, t))};
                     })
          .front();
    };
    // x / sqrt(Σx² + 1e-6) · mult over a [n] row.
    auto l2 = [&](OpBuilder &nb, Location nl, Value x, double mult) {
      Value ss = tensor::ExtractOp::create(nb, nl, sumOfSquares(nb, nl, x), ValueRange{});
      Value inv = arith::DivFOp::create(
          nb, nl, cst(nb, nl, mult),
          math::SqrtOp::create(nb, nl, arith::AddFOp::create(nb, nl, ss, cst(nb, nl, 1e-6))));
      return elementwise(nb, nl, x, cast<RankedTensorType>(x.getType()),
                         [&](OpBuilder &bb, Location bl, ValueRange a) {
                           return Value(arith::MulFOp::create(bb, bl, a[0], inv));
                         });
    };

    if (batched) {
      Value state = nullptr, y = nullptr;
      batchedStep(b, op, conv, state, y);
      b.replaceOp(op, {y, windows[0], windows[1], windows[2], state});
      return success();
    }

    Value out = empty(b, loc, sizesOf(b, loc, op.getOut()), outType.getElementType());
    // One head's step on the state `acc`: its new [K, V] state slice and its
    // output row [V].
    auto headStep = [&](OpBuilder &nb, Location nl, Value h,
                        Value acc) -> std::pair<Value, Value> {
      Value qh = arith::DivUIOp::create(nb, nl, h, cstIndex(nb, nl, group));
      Value qFirst = arith::MulIOp::create(nb, nl, qh, cstIndex(nb, nl, dk));
      Value vFirst = arith::MulIOp::create(nb, nl, h, cstIndex(nb, nl, dv));
      Value q = l2(nb, nl, conv(nb, nl, 0, op.getWq(), qFirst, dk), scale);
      Value k = l2(nb, nl, conv(nb, nl, 1, op.getWk(), qFirst, dk), 1.0);
      Value v = conv(nb, nl, 2, op.getWv(), vFirst, dv);
      OpFoldResult zero = nb.getIndexAttr(0);
      // α = e^g per key row, g from the head's gate inputs.
      Value fRow = slice(nb, nl, op.getF(), {zero, h, zero}, {1, 1, dk}, {dk});
      Value dtRow = slice(nb, nl, op.getDtBias(), {h, zero}, {1, dk}, {dk});
      Value aLog = tensor::ExtractOp::create(nb, nl, op.getALog(), ValueRange{h});
      Value alpha = generic(nb, nl, {fRow, dtRow}, empty(nb, nl, ints(nb, {dk}), f32),
                            {id1, id1, id1}, {IT::parallel},
                            [&](OpBuilder &bb, Location bl, ValueRange a) {
                              Value g = kdaDecay(bb, bl, bounded, lb, a[0], aLog, a[1]);
                              return SmallVector<Value>{math::ExpOp::create(bb, bl, g)};
                            })
                        .front();
      Value beta = sigmoid(
          nb, nl,
          convertScalar(nb, nl,
                        tensor::ExtractOp::create(nb, nl, op.getBetaLogits(),
                                                  ValueRange{cstIndex(nb, nl, 0), h}),
                        f32));
      // The head's state, decayed in place, then predict, update, read.
      Value s = slice(nb, nl, acc, {h, zero, zero}, {1, dk, dv}, {dk, dv});
      s = generic(nb, nl, alpha, s, {col2, id2}, {IT::parallel, IT::parallel},
                  [](OpBuilder &bb, Location bl, ValueRange a) {
                    return SmallVector<Value>{arith::MulFOp::create(bb, bl, a[1], a[0])};
                  })
              .front();
      auto readOut = [&](Value state, Value vec) {
        return generic(nb, nl, {state, vec}, zeros(nb, nl, ints(nb, {dv})),
                       {id2, col2, row2}, {IT::reduction, IT::parallel},
                       [&](OpBuilder &bb, Location bl, ValueRange a) {
                         return SmallVector<Value>{
                             sum(bb, bl, a[2], arith::MulFOp::create(bb, bl, a[0], a[1]))};
                       })
            .front();
      };
      Value pred = readOut(s, k);
      s = generic(nb, nl, {k, v, pred}, s, {col2, row2, row2, id2},
                  {IT::parallel, IT::parallel},
                  [&](OpBuilder &bb, Location bl, ValueRange a) {
                    Value delta = arith::MulFOp::create(
                        bb, bl, beta, arith::SubFOp::create(bb, bl, a[1], a[2]));
                    return SmallVector<Value>{
                        sum(bb, bl, a[3], arith::MulFOp::create(bb, bl, a[0], delta))};
                  })
              .front();
      Value o = readOut(s, q);
      // y = o · rsqrt(mean(o²) + eps) · w · sigmoid(out_gate).
      Value ms = arith::DivFOp::create(
          nb, nl, tensor::ExtractOp::create(nb, nl, sumOfSquares(nb, nl, o), ValueRange{}),
          cst(nb, nl, double(dv)));
      Value inv = math::RsqrtOp::create(nb, nl, arith::AddFOp::create(nb, nl, ms, cst(nb, nl, eps)));
      Value gateRow = slice(nb, nl, op.getOutGate(), {zero, h, zero}, {1, 1, dv}, {dv});
      Value y = generic(nb, nl, {o, op.getNormWeight(), gateRow},
                        empty(nb, nl, ints(nb, {dv}), outType.getElementType()),
                        {id1, id1, id1, id1}, {IT::parallel},
                        [&](OpBuilder &bb, Location bl, ValueRange a) {
                          Value n = arith::MulFOp::create(
                              bb, bl, arith::MulFOp::create(bb, bl, a[0], inv), a[1]);
                          return SmallVector<Value>{
                              arith::MulFOp::create(bb, bl, n, sigmoid(bb, bl, a[2]))};
                        })
                    .front();
      return {s, y};
    };
    OpFoldResult zero = b.getIndexAttr(0);
    if (parallel) {
      // The heads are independent (each reads and writes its own state
      // slice and output row): an scf.forall, which the CPU runs on threads.
      auto loop = scf::ForallOp::create(b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(hv)},
                                        ValueRange{op.getState(), out}, std::nullopt);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(loop.getTerminator());
      Value h = loop.getInductionVar(0);
      ValueRange iter = loop.getRegionIterArgs();
      auto [s, y] = headStep(b, loc, h, iter[0]);
      b.setInsertionPointToStart(loop.getTerminator().getBody());
      tensor::ParallelInsertSliceOp::create(b, loc, s, iter[0], {h, zero, zero},
                                            ints(b, {1, dk, dv}), ints(b, {1, 1, 1}));
      tensor::ParallelInsertSliceOp::create(b, loc, y, iter[1], {zero, h, zero},
                                            ints(b, {1, 1, dv}), ints(b, {1, 1, 1}));
      b.replaceOp(op, {loop.getResult(1), windows[0], windows[1], windows[2], loop.getResult(0)});
      return success();
    }
    auto loop = scf::ForOp::create(
        b, loc, cstIndex(b, loc, 0), cstIndex(b, loc, hv), cstIndex(b, loc, 1),
        ValueRange{op.getState(), out},
        [&](OpBuilder &nb, Location nl, Value h, ValueRange iter) {
          auto [s, y] = headStep(nb, nl, h, iter[0]);
          Value state = tensor::InsertSliceOp::create(nb, nl, s, iter[0], {h, zero, zero},
                                                      ints(nb, {1, dk, dv}), ints(nb, {1, 1, 1}));
          Value outNext = tensor::InsertSliceOp::create(nb, nl, y, iter[1], {zero, h, zero},
                                                        ints(nb, {1, 1, dv}), ints(nb, {1, 1, 1}));
          scf::YieldOp::create(nb, nl, ValueRange{state, outNext});
        });
    b.replaceOp(op, {loop.getResult(1), windows[0], windows[1], windows[2], loop.getResult(0)});
    return success();
  }

  /// The step for all heads at once: the new state and the output [1, HV, V].
  template <typename Conv>
  void batchedStep(PatternRewriter &b, KdaDecodeOp op, Conv &conv,
                   Value &state, Value &y) const {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    auto sType = cast<RankedTensorType>(op.getState().getType());
    const int64_t hv = sType.getDimSize(0), dk = sType.getDimSize(1), dv = sType.getDimSize(2);
    const int64_t nq = cast<RankedTensorType>(op.getCq().getType()).getDimSize(1) / dk;
    const int64_t group = hv / nq;
    const bool bounded = op.getForm() == KdaGateForm::lower_bound;
    const double lb = bounded ? op.getLbAttr().getValueAsDouble() : 0.0;
    const double scale = op.getScale().convertToDouble();
    auto outType = cast<RankedTensorType>(op.getOut().getType());
    Type f32 = b.getF32Type();
    AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
               d2 = getAffineDimExpr(2, ctx);
    AffineMap id2 = identity(ctx, 2), col2 = project(ctx, 2, {0});
    SmallVector<IT> par2(2, IT::parallel);
    OpFoldResult zero = b.getIndexAttr(0);

    // [heads · width] → [heads, width].
    auto perHead = [&](Value v, int64_t heads, int64_t width) -> Value {
      return tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get({heads, width}, f32), v,
                                           ArrayRef<ReassociationIndices>{{0, 1}});
    };
    // Each row x / sqrt(Σx² + 1e-6) · mult, as the per-head form.
    auto l2Rows = [&](Value x, double mult) {
      Value ss = sumOfSquares(b, loc, x);
      return generic(b, loc, {x, ss}, empty(b, loc, sizesOf(b, loc, x), f32), {id2, col2, id2},
                     par2,
                     [&](OpBuilder &nb, Location nl, ValueRange a) {
                       Value inv = arith::DivFOp::create(
                           nb, nl, cst(nb, nl, mult),
                           math::SqrtOp::create(nb, nl,
                                                arith::AddFOp::create(nb, nl, a[1], cst(nb, nl, 1e-6))));
                       return SmallVector<Value>{arith::MulFOp::create(nb, nl, a[0], inv)};
                     })
          .front();
    };
    Value c0 = cstIndex(b, loc, 0);
    Value q = l2Rows(perHead(conv(b, loc, 0, op.getWq(), c0, nq * dk), nq, dk), scale);
    Value k = l2Rows(perHead(conv(b, loc, 1, op.getWk(), c0, nq * dk), nq, dk), 1.0);
    Value v = perHead(conv(b, loc, 2, op.getWv(), c0, hv * dv), hv, dv);
    // α = e^g [HV, K] and β [HV].
    Value f = slice(b, loc, op.getF(), {zero, zero, zero}, {1, hv, dk}, {hv, dk});
    Value alpha = generic(b, loc, {f, op.getDtBias(), op.getALog()},
                          empty(b, loc, ints(b, {hv, dk}), f32), {id2, id2, col2, id2}, par2,
                          [&](OpBuilder &nb, Location nl, ValueRange a) {
                            Value g = kdaDecay(nb, nl, bounded, lb, a[0], a[2], a[1]);
                            return SmallVector<Value>{math::ExpOp::create(nb, nl, g)};
                          })
                      .front();
    Value betaLogits = slice(b, loc, op.getBetaLogits(), {zero, zero}, {1, hv}, {hv});
    Value beta = generic(b, loc, betaLogits, empty(b, loc, ints(b, {hv}), f32),
                         {identity(ctx, 1), identity(ctx, 1)}, {IT::parallel},
                         [&](OpBuilder &nb, Location nl, ValueRange a) {
                           return SmallVector<Value>{sigmoid(nb, nl, a[0])};
                         })
                     .front();

    // Loops (head, column, key row) for the reads; q and k rows are shared
    // by a group of value heads (GVA).
    AffineMap sRead = AffineMap::get(3, 0, {d0, d2, d1}, ctx),
              keyRead = AffineMap::get(3, 0, {d0.floorDiv(group), d2}, ctx),
              alphaRead = project(ctx, 3, {0, 2}), outRead = project(ctx, 3, {0, 1});
    SmallVector<IT> readIts{IT::parallel, IT::parallel, IT::reduction};
    auto accumulate = [](OpBuilder &nb, Location nl, Value acc, Value x, Value y) {
      return Value(arith::AddFOp::create(nb, nl, acc, arith::MulFOp::create(nb, nl, x, y)));
    };
    Value pred = generic(b, loc, {op.getState(), alpha, k}, zeros(b, loc, ints(b, {hv, dv})),
                         {sRead, alphaRead, keyRead, outRead}, readIts,
                         [&](OpBuilder &nb, Location nl, ValueRange a) {
                           Value decayed = arith::MulFOp::create(nb, nl, a[0], a[1]);
                           return SmallVector<Value>{accumulate(nb, nl, a[3], decayed, a[2])};
                         })
                     .front();
    // Loops (head, key row, column), in place on the state.
    state = generic(b, loc, {alpha, k, v, pred, beta}, op.getState(),
                    {project(ctx, 3, {0, 1}), AffineMap::get(3, 0, {d0.floorDiv(group), d1}, ctx),
                     project(ctx, 3, {0, 2}), project(ctx, 3, {0, 2}), project(ctx, 3, {0}),
                     identity(ctx, 3)},
                    SmallVector<IT>(3, IT::parallel),
                    [&](OpBuilder &nb, Location nl, ValueRange a) {
                      Value delta = arith::MulFOp::create(
                          nb, nl, a[4], arith::SubFOp::create(nb, nl, a[2], a[3]));
                      Value decayed = arith::MulFOp::create(nb, nl, a[5], a[0]);
                      return SmallVector<Value>{accumulate(nb, nl, decayed, a[1], delta)};
                    })
                .front();
    Value o = generic(b, loc, {state, q}, zeros(b, loc, ints(b, {hv, dv})),
                      {sRead, keyRead, outRead}, readIts,
                      [&](OpBuilder &nb, Location nl, ValueRange a) {
                        return SmallVector<Value>{accumulate(nb, nl, a[2], a[0], a[1])};
                      })
                  .front();
    // y = o · rsqrt(mean(o²) + eps) · w · sigmoid(out_gate), per head: the
    // gated k3.rms_norm (lowered in turn, PlumbingPatterns.cpp).
    Value gate = slice(b, loc, op.getOutGate(), {zero, zero, zero}, {1, hv, dv}, {hv, dv});
    Value y2 = RmsNormOp::create(b, loc, RankedTensorType::get({hv, dv}, outType.getElementType()),
                                 o, op.getNormWeight(), gate, op.getEpsAttr());
    y = tensor::ExpandShapeOp::create(b, loc, outType, y2,
                                      ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  }
};

} // namespace

void mlir::k3::lowering::populateKdaDecodePatterns(RewritePatternSet &patterns, bool batched,
                                                   bool parallel) {
  patterns.add<LowerKdaDecode>(patterns.getContext(), batched, parallel);
}
