//===- GpuKdaStep.cpp - k3.kda_step as one decode kernel ------------------===//
//
// Part of k3. Implements k3-gpu-kda-step: a bufferized k3.kda_step (a KDA
// layer's whole one-token step, KDA.md §4, §5, §7) becomes one gpu.launch,
// block h per value head (block (h, r) for request r of a batched step:
// k3-gpu-batch-kda-step's form of decode_batch), a team of n threads (a
// power of two from 32 to 128, at least min(max(K, V), 128) where that
// allows):
//
//   1. thread c takes channels c, c + n, ... of the head's q and k (q/k
//      head h / group under GVA) and of its v: the causal conv over the
//      window and x with SiLU, and for key channels α = e^g from the gate
//      inputs; q, k, α and v go to shared memory. The thread then writes
//      its channels of the shifted windows (q/k by the group's first block
//      only), after it has read them: a channel's window is one thread's.
//   2. Σq² and Σk², reduced over the team in shared memory (a tree of
//      log2 n steps): q̂ = scale · q / sqrt(Σq² + 1e-6), k̂ = k / sqrt(Σk² +
//      1e-6); β = sigmoid(beta_logits[h]).
//   3. thread j takes state columns j, j + n, ...: pred = Σ_i α_i S_ij k̂_i
//      (the decayed state), δ = β (v_j − pred), then S_ij ← α_i S_ij +
//      k̂_i δ in place and o_j = Σ_i S_ij q̂_i with the new values. The
//      column's K rows are loaded at once (unrolled: K loads in flight) and
//      kept in registers, so the state is read once and written once (for
//      K over 128, in runs of 128 rows, read twice). A warp's loads of a
//      state row are consecutive columns (coalesced).
//   4. Σo² over the team: out_j = o_j · rsqrt(Σo² / V + eps) · w_j ·
//      sigmoid(gate_j).
//
// Under GVA a new q/k window must not be its old window's buffer (the
// group's other blocks still read the old one): the pass refuses the same
// buffer seen through views and casts; aliasing it cannot see (two function
// arguments bound to one buffer) is the caller's to avoid. convert-k3-to-
// linalg gives the new windows fresh tensors, which bufferize to fresh
// buffers.
//
// All arithmetic is f32 and follows the CPU lowering's order
// (KdaDecodePattern.cpp) with the same scalar helpers (sigmoid, the decay),
// so the kernel and the CPU differ by the reductions' order only. No
// tensor cores: each state element takes two multiply-adds per step (a
// matrix-vector product), a memory-bound step.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Conversion/K3ToLinalg/Common.h"
#include "passes/Passes.h"
#include "passes/Transforms/BufferRoot.h"
#include "passes/Transforms/GpuKernelBuilder.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3GPUKDASTEPPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

constexpr int64_t kMaxThreads = 128;
constexpr int64_t kMaxSharedBytes = 48 * 1024;
// State rows a thread loads at once (unrolled): all of K3's 128.
constexpr int64_t kRowRun = 128;

/// The team size for K key and V value channels.
int64_t teamSize(int64_t dk, int64_t dv) {
  int64_t n = 32;
  while (n < kMaxThreads && n < std::max(dk, dv))
    n *= 2;
  return n;
}

struct KernelBuilder : k3::GpuKernelBuilder {
  k3::KdaStepOp op;
  int64_t dk, dv, width, group, threads;
  /// The block's request (block y) when the step is batched, else null.
  Value req;

  /// An index into a per-token operand ([1, ...] or [B, ...]).
  SmallVector<Value> tok(ArrayRef<Value> rest) {
    SmallVector<Value> at{req ? req : idx(0)};
    at.append(rest.begin(), rest.end());
    return at;
  }
  /// An index into a window or the state (the request first if batched).
  SmallVector<Value> per(ArrayRef<Value> rest) {
    SmallVector<Value> at;
    if (req)
      at.push_back(req);
    at.append(rest.begin(), rest.end());
    return at;
  }

  /// Shared memory: q, k, α [K]; v, o [V]; three reduction trees [n]; q̂
  /// and k̂ [K].
  SmallVector<int64_t> shared() const {
    return {dk, dk, dk, dv, dv, threads, threads, threads, dk, dk};
  }

  Value sigmoid(Value x) { return k3::lowering::sigmoid(b, loc, x); }

  /// silu(Σ_i w[ch, i] · window[i, ch] + w[ch, W−1] · x[0, ch]) in f32:
  /// the window's taps summed first, then x's (KdaDecodePattern's order).
  Value conv(Value window, Value x, Value w, Value ch) {
    Value sum = f32(0.0);
    for (int64_t i = 0; i + 1 < width; ++i) {
      // One op per statement: C++ leaves the order of a call's arguments
      // to the compiler, the IR must not.
      Value tap = toF32(load(w, {ch, idx(i)}));
      Value past = toF32(load(window, per({idx(i), ch})));
      sum = fadd(sum, fmul(tap, past));
    }
    Value tap = toF32(load(w, {ch, idx(width - 1)}));
    Value now = toF32(load(x, tok({ch})));
    Value t = fmul(tap, now);
    if (width > 1)
      t = fadd(sum, t);
    return fmul(t, sigmoid(t));
  }

  /// The new window's column `ch`: rows 1.. of the old one, then x's value
  /// (through f32: f16 and bf16 do not convert into each other).
  void shift(Value window, Value x, Value next, Value ch) {
    Type elt = cast<MemRefType>(next.getType()).getElementType();
    for (int64_t r = 0; r + 2 < width; ++r)
      store(load(window, per({idx(r + 1), ch})), next, per({idx(r), ch}));
    if (width > 1)
      store(k3::lowering::convertScalar(b, loc, toF32(load(x, tok({ch}))), elt), next,
            per({idx(width - 2), ch}));
  }

  void build(gpu::LaunchOp launch) {
    Value tid = launch.getThreadIds().x, h = launch.getBlockIds().x;
    if (op.isBatched())
      req = launch.getBlockIds().y;
    SmallVector<Value> sh = sharedWords(shared(), b.getF32Type());
    Value qS = sh[0], kS = sh[1], alphaS = sh[2], vS = sh[3], oS = sh[4];
    Value step = idx(threads);
    const bool bounded = op.getForm() == k3::KdaGateForm::lower_bound;
    const double lb = bounded ? op.getLbAttr().getValueAsDouble() : 0.0;

    // 1. The convs, the decay and the new windows.
    Value qBase = mul(div(h, group), dk), vBase = mul(h, dv);
    Value firstOfGroup = group > 1 ? eq(rem(h, group), idx(0)) : Value();
    Value aLog = load(op.getALog(), {h});
    forEach(tid, idx(dk), step, [&](Value c) {
      Value ch = add(qBase, c);
      store(conv(op.getCq(), op.getXq(), op.getWq(), ch), qS, {c});
      store(conv(op.getCk(), op.getXk(), op.getWk(), ch), kS, {c});
      Value g = k3::lowering::kdaDecay(b, loc, bounded, lb, toF32(load(op.getF(), tok({h, c}))),
                                       aLog, load(op.getDtBias(), {h, c}));
      store(math::ExpOp::create(b, loc, g), alphaS, {c});
      auto shiftQk = [&] {
        shift(op.getCq(), op.getXq(), op.getNewCqInit(), ch);
        shift(op.getCk(), op.getXk(), op.getNewCkInit(), ch);
      };
      if (group > 1)
        when(firstOfGroup, shiftQk);
      else
        shiftQk();
    });
    forEach(tid, idx(dv), step, [&](Value c) {
      Value ch = add(vBase, c);
      store(conv(op.getCv(), op.getXv(), op.getWv(), ch), vS, {c});
      shift(op.getCv(), op.getXv(), op.getNewCvInit(), ch);
    });
    gpu::BarrierOp::create(b, loc);

    // 2. The L2 norms and β.
    auto squares = [&](Value from) {
      return loop(tid, idx(dk), step, {f32(0.0)}, [&](Value c, ValueRange acc) {
               Value x = load(from, {c});
               return SmallVector<Value>{fadd(acc[0], fmul(x, x))};
             }).front();
    };
    SmallVector<Value> ss = teamSums(tid, threads, {squares(qS), squares(kS)}, {sh[5], sh[6]});
    auto inverseNorm = [&](Value sumSq, double mult) {
      return arith::DivFOp::create(b, loc, f32(mult),
                                   math::SqrtOp::create(b, loc, fadd(sumSq, f32(1e-6))))
          .getResult();
    };
    Value qInv = inverseNorm(ss[0], op.getScale().convertToDouble());
    Value kInv = inverseNorm(ss[1], 1.0);
    Value beta = sigmoid(toF32(load(op.getBetaLogits(), tok({h}))));
    // q̂ and k̂ for the update and the read. The prediction forms k̂ from k
    // (the same product, so the same value): a load of the same address in
    // both passes would be merged by LLVM, keeping all K values of k̂ live
    // beside the column's K rows (spills).
    Value qHat = sh[8], kHat = sh[9];
    forEach(tid, idx(dk), step, [&](Value c) {
      store(fmul(load(qS, {c}), qInv), qHat, {c});
      store(fmul(load(kS, {c}), kInv), kHat, {c});
    });
    gpu::BarrierOp::create(b, loc);

    // 3. Predict, update in place and read, a column per thread. The
    // column's rows are loaded in runs of kRowRun, unrolled, so that a
    // thread has a run of independent loads in flight (a loop of one load
    // at a time waits a memory latency per row); with K ≤ kRowRun the
    // column stays in registers and the state is read once.
    Value state = op.getStateInit();
    const bool resident = dk <= kRowRun;
    Value oSquares = loop(tid, idx(dv), step, {f32(0.0)}, [&](Value j, ValueRange acc) {
      auto rows = [&](int64_t first, int64_t n) {
        SmallVector<Value> r;
        for (int64_t i = first; i < first + n; ++i)
          r.push_back(load(state, per({h, idx(i), j})));
        return r;
      };
      auto decayed = [&](Value s, int64_t i) { return fmul(s, load(alphaS, {idx(i)})); };
      auto key = [&](int64_t i) { return fmul(load(kS, {idx(i)}), kInv); };
      // The decayed rows α_i S_ij of a run; a resident column keeps them
      // for the update.
      auto decayedRun = [&](int64_t first, int64_t n) {
        SmallVector<Value> run = rows(first, n);
        for (int64_t i = 0; i < n; ++i)
          run[i] = decayed(run[i], first + i);
        return run;
      };
      SmallVector<Value> column;
      Value pred = f32(0.0);
      for (int64_t first = 0; first < dk; first += kRowRun) {
        const int64_t n = std::min(kRowRun, dk - first);
        SmallVector<Value> run = decayedRun(first, n);
        for (int64_t i = 0; i < n; ++i)
          pred = fadd(pred, fmul(run[i], key(first + i)));
        if (resident)
          column = run;
      }
      Value delta = fmul(beta, fsub(load(vS, {j}), pred));
      Value o = f32(0.0);
      for (int64_t first = 0; first < dk; first += kRowRun) {
        const int64_t n = std::min(kRowRun, dk - first);
        SmallVector<Value> run = resident ? column : decayedRun(first, n);
        for (int64_t i = 0; i < n; ++i) {
          Value next = fadd(run[i], fmul(load(kHat, {idx(first + i)}), delta));
          store(next, state, per({h, idx(first + i), j}));
          o = fadd(o, fmul(next, load(qHat, {idx(first + i)})));
        }
      }
      store(o, oS, {j});
      return SmallVector<Value>{fadd(acc[0], fmul(o, o))};
    }).front();

    // 4. The gated RMS norm of o.
    Value sumSq = teamSums(tid, threads, {oSquares}, {sh[7]}).front();
    Value mean = arith::DivFOp::create(b, loc, sumSq, f32(double(dv)));
    Value inv = math::RsqrtOp::create(b, loc, fadd(mean, f32(op.getEps().convertToDouble())));
    Value out = op.getOutInit();
    Type outElt = cast<MemRefType>(out.getType()).getElementType();
    forEach(tid, idx(dv), step, [&](Value j) {
      Value normed = fmul(load(oS, {j}), inv); // one op per statement
      Value y = fmul(normed, toF32(load(op.getNormWeight(), {j})));
      y = fmul(y, sigmoid(toF32(load(op.getOutGate(), tok({h, j})))));
      store(k3::lowering::convertScalar(b, loc, y, outElt), out, tok({h, j}));
    });
    gpu::TerminatorOp::create(b, loc);
  }
};

/// Whether `a` and `b` are the same buffer, seen through views and casts.
bool sameBuffer(Value a, Value b) { return k3::bufferRoot(a) == k3::bufferRoot(b); }

struct K3GpuKdaStepPass : k3::impl::K3GpuKdaStepPassBase<K3GpuKdaStepPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<k3::KdaStepOp> work;
    getOperation()->walk([&](k3::KdaStepOp op) { work.push_back(op); });
    for (k3::KdaStepOp op : work) {
      auto sType = dyn_cast<MemRefType>(op.getStateInit().getType());
      if (!sType) {
        op.emitOpError() << "k3-gpu-kda-step runs after bufferization, got tensors";
        return signalPassFailure();
      }
      auto cqType = cast<MemRefType>(op.getCq().getType());
      // A batched step's request count is the one extent known at run time.
      const int64_t o = op.isBatched() ? 1 : 0;
      auto staticPerRequest = [&](Value v) {
        ArrayRef<int64_t> shape = cast<MemRefType>(v.getType()).getShape();
        return llvm::none_of(shape.drop_front(o), ShapedType::isDynamic);
      };
      if (!staticPerRequest(op.getStateInit()) || !staticPerRequest(op.getCq()) ||
          !staticPerRequest(op.getCk()) || !staticPerRequest(op.getCv())) {
        op.emitOpError() << "k3-gpu-kda-step needs static heads, head dims and windows, got state "
                         << sType << " and windows " << cqType << ", " << op.getCk().getType()
                         << ", " << op.getCv().getType();
        return signalPassFailure();
      }
      const int64_t hv = sType.getDimSize(o), dk = sType.getDimSize(1 + o),
                    dv = sType.getDimSize(2 + o);
      const int64_t group = hv / (cqType.getDimSize(1 + o) / dk);
      // Under GVA the group's other blocks still read the old q/k windows
      // while its first block writes the new ones.
      if (group > 1)
        for (auto [old, next] : {std::pair{op.getCq(), op.getNewCqInit()},
                                 std::pair{op.getCk(), op.getNewCkInit()}})
          if (sameBuffer(old, next)) {
            op.emitOpError() << "k3-gpu-kda-step cannot shift a q/k window in place when " << group
                             << " value heads share each q/k head";
            return signalPassFailure();
          }
      OpBuilder b(op);
      Location loc = op.getLoc();
      KernelBuilder kb{{b, loc}, op, dk, dv, cqType.getDimSize(o) + 1, group, teamSize(dk, dv),
                       Value()};
      // A launch gets 48 KB of dynamic shared memory without opting in.
      const int64_t bytes = KernelBuilder::sharedBytes(kb.shared());
      if (bytes > kMaxSharedBytes) {
        op.emitOpError() << "k3-gpu-kda-step needs " << bytes << " bytes of shared memory for K = "
                         << dk << " and V = " << dv << ", over " << kMaxSharedBytes;
        return signalPassFailure();
      }
      auto launch = [&](Value requests) {
        kb.launch(kb.idx(hv), requests, kb.threads, bytes,
                  [&](gpu::LaunchOp l) { kb.build(l); });
      };
      if (op.isBatched()) {
        // Block (h, r) for request r; no launch for no requests (a launch
        // of no blocks is an error on a GPU).
        kb.whenNonEmpty(op.getStateInit(), 0, launch);
      } else {
        launch(kb.idx(1));
      }
      op.erase();
    }
  }
};

} // namespace
