//===- GpuAttnRes.cpp - k3.attn_res_mix as one kernel ---------------------===//
//
// Part of k3. Implements k3-gpu-attn-res: a bufferized k3.attn_res_mix
// (Attention Residuals' read over depth, MOE_MXFP4.md §9) becomes one
// gpu.launch, block t per token, a team of n threads (attnResTeam(D)),
// thread j owning the row's channels j, j + n, ..., j + (C - 1)·n
// (C = D / n; a warp's loads are consecutive channels):
//
//   for each candidate v (the stack's N blocks, then the [T, D] sources):
//     1. the thread loads its C values of v's row t into registers and
//        forms Σ v·norm·query and Σ v² over them;
//     2. both are summed over the team through shared memory (a tree of
//        log2 n barriered steps), then a barrier before the trees are
//        reused;
//     3. score = dot / sqrt(Σv² / D + eps), and an online softmax:
//        m' = max(m, score), a = e^{m − m'}, e = e^{score − m'},
//        denominator ← denominator · a + e, sum_c ← sum_c · a + e · v_c.
//   out[t, c] = sum_c / denominator;
//   with `then_norm` w, RMSNorm of that f32 row in the same kernel
//   (k3-gpu-row-norm's sums and order, through the same team):
//   out[t, c] = mix_c · rsqrt(Σ mix² / D + then_eps) · w_c.
//
// Each candidate is read once and the mix never leaves registers; the
// linalg form reads every candidate twice (scores, then the weighted sum)
// in a handful of loop nests, each its own kernel. f32 throughout; the
// CPU's form sums in another order and takes the softmax from the maximum
// first, so the two differ by rounding. A thread writes only channels it
// alone has read, after reading them: the destination may even be the
// running sum's buffer.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Conversion/K3ToLinalg/Common.h"
#include "passes/Passes.h"
#include "passes/Transforms/GpuKernelBuilder.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

namespace mlir::k3 {
#define GEN_PASS_DEF_K3GPUATTNRESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

using k3::kRowTeamMaxChannels;
using k3::kRowTeamMaxThreads;

struct KernelBuilder : k3::GpuKernelBuilder {
  k3::AttnResMixOp op;
  int64_t d, threads;

  /// The softmax state (m, denominator, sum_0 .. sum_{C-1}) after one more
  /// candidate whose values are `x`.
  SmallVector<Value> mix(Value tid, ArrayRef<Value> x, ArrayRef<Value> weights,
                         ValueRange state, ArrayRef<Value> trees) {
    Value dot = f32(0.0), sq = f32(0.0);
    for (auto [v, w] : llvm::zip(x, weights)) {
      dot = fadd(dot, fmul(v, w));
      sq = fadd(sq, fmul(v, v));
    }
    // The trees are written again by the next candidate.
    SmallVector<Value> sums = teamSums(tid, threads, {dot, sq}, trees, /*reusable=*/true);
    Value mean = arith::DivFOp::create(b, loc, sums[1], f32(double(d)));
    Value rms = math::SqrtOp::create(b, loc, fadd(mean, f32(op.getEps().convertToDouble())));
    Value score = arith::DivFOp::create(b, loc, sums[0], rms);
    Value m = state[0];
    Value next = arith::MaximumFOp::create(b, loc, m, score);
    Value keep = math::ExpOp::create(b, loc, fsub(m, next));
    Value e = math::ExpOp::create(b, loc, fsub(score, next));
    SmallVector<Value> out{next, fadd(fmul(state[1], keep), e)};
    for (auto [v, acc] : llvm::zip(x, state.drop_front(2)))
      out.push_back(fadd(fmul(acc, keep), fmul(e, v)));
    return out;
  }

  void build(gpu::LaunchOp launch) {
    Value tid = launch.getThreadIds().x, t = launch.getBlockIds().x;
    SmallVector<Value> trees = sharedWords({threads, threads}, b.getF32Type());
    const int64_t channels = d / threads;
    SmallVector<Value> cols, weights;
    for (int64_t k = 0; k < channels; ++k) {
      cols.push_back(add(tid, k * threads));
      weights.push_back(fmul(toF32(load(op.getNormWeight(), {cols.back()})),
                             toF32(load(op.getQuery(), {cols.back()}))));
    }
    SmallVector<Value> state{f32(-INFINITY), f32(0.0)};
    for (int64_t k = 0; k < channels; ++k)
      state.push_back(f32(0.0));
    ValueRange sources = op.getSources();
    if (cast<MemRefType>(sources.front().getType()).getRank() == 3) {
      Value stack = sources.front();
      Value blocks = memref::DimOp::create(b, loc, stack, 0);
      state = loop(idx(0), blocks, idx(1), state, [&](Value i, ValueRange s) {
        SmallVector<Value> x;
        for (Value c : cols)
          x.push_back(toF32(load(stack, {i, t, c})));
        return mix(tid, x, weights, s, trees);
      });
      sources = sources.drop_front();
    }
    for (Value src : sources) {
      SmallVector<Value> x;
      for (Value c : cols)
        x.push_back(toF32(load(src, {t, c})));
      state = mix(tid, x, weights, state, trees);
    }
    SmallVector<Value> mixed;
    for (int64_t k = 0; k < channels; ++k)
      mixed.push_back(arith::DivFOp::create(b, loc, state[2 + k], state[1]));
    if (Value w = op.getThenNorm()) {
      // k3-gpu-row-norm's arithmetic on the f32 mix, through the same team
      // (the trees were left reusable by the last candidate).
      mixed = rmsScaled(tid, threads, mixed, trees[0], d, op.getThenEps()->convertToDouble());
      for (int64_t k = 0; k < channels; ++k) {
        Value weight = toF32(load(w, {cols[k]}));
        mixed[k] = fmul(mixed[k], weight);
      }
    }
    Value out = op.getOutInit();
    Type outElt = cast<MemRefType>(out.getType()).getElementType();
    for (int64_t k = 0; k < channels; ++k)
      store(k3::lowering::convertScalar(b, loc, mixed[k], outElt), out, {t, cols[k]});
    gpu::TerminatorOp::create(b, loc);
  }
};

struct K3GpuAttnResPass : k3::impl::K3GpuAttnResPassBase<K3GpuAttnResPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<k3::AttnResMixOp> work;
    getOperation()->walk([&](k3::AttnResMixOp op) { work.push_back(op); });
    for (k3::AttnResMixOp op : work) {
      auto outType = dyn_cast<MemRefType>(op.getOutInit().getType());
      if (!outType) {
        op.emitOpError() << "k3-gpu-attn-res runs after bufferization, got tensors";
        return signalPassFailure();
      }
      const int64_t d = outType.getDimSize(1);
      const int64_t threads = ShapedType::isDynamic(d) ? 0 : k3::attnResTeam(d);
      if (threads == 0) {
        op.emitOpError() << "k3-gpu-attn-res needs a static row width that a team of 32 to "
                         << kRowTeamMaxThreads << " threads (a power of two dividing it, at most "
                         << kRowTeamMaxChannels << " channels each) covers, got " << outType;
        return signalPassFailure();
      }
      OpBuilder b(op);
      Location loc = op.getLoc();
      KernelBuilder kb{{b, loc}, op, d, threads};
      // A block per token; none for an empty prompt (a launch of no blocks
      // is an error on a GPU).
      kb.whenNonEmpty(op.getOutInit(), 0, [&](Value tokens) {
        kb.launch(tokens, kb.idx(1), threads, KernelBuilder::sharedBytes({threads, threads}),
                  [&](gpu::LaunchOp l) { kb.build(l); });
      });
      op.erase();
    }
  }
};

} // namespace

int64_t mlir::k3::attnResTeam(int64_t d) {
  if (d <= 0)
    return 0;
  int64_t n = 1;
  while (n < kRowTeamMaxThreads && d % (2 * n) == 0)
    n *= 2;
  return n >= 32 && d / n <= kRowTeamMaxChannels ? n : 0;
}
