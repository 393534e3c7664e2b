//===- GpuRowNorm.cpp - k3.row_norm as one kernel -------------------------===//
//
// Part of k3. Implements k3-gpu-row-norm: a bufferized k3.row_norm (RMSNorm
// of [R, D] rows) becomes one gpu.launch, block r per row, a team of n
// threads (rowNormTeam(D)), thread j owning the row's channels j, j + n,
// ..., j + (C - 1)·n (C = D / n; a warp's loads are consecutive channels):
//
//   1. the thread loads its C values into registers and sums their squares
//      (of a rank-3 x [R, K, D], each value is the sum of its K rows:
//      the MoE's combine over picks, folded in by k3-gpu-fuse-row-norms);
//   2. the sums are added over the team through shared memory (a tree of
//      log2 n barriered steps);
//   3. inv = rsqrt(Σx² / D + eps), and the thread writes its channels as
//      (x · inv) · weight [· sigmoid(gate)], the linalg form's order.
//
// The linalg form (PlumbingPatterns.cpp) is two kernels: a thread per row
// walking all D values for the sum (7168 of them in a row of K3), then the
// scaling. A thread writes only channels it alone has read, after reading
// them: the destination may be x's own buffer.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Conversion/K3ToLinalg/Common.h"
#include "passes/Passes.h"
#include "passes/Transforms/GpuKernelBuilder.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3GPUROWNORMPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

struct KernelBuilder : k3::GpuKernelBuilder {
  k3::RowNormOp op;
  int64_t d, threads;

  void build(gpu::LaunchOp launch) {
    Value tid = launch.getThreadIds().x, r = launch.getBlockIds().x;
    SmallVector<Value> tree = sharedWords({threads}, b.getF32Type());
    SmallVector<Value> cols, x;
    for (int64_t k = 0; k < d / threads; ++k)
      cols.push_back(add(tid, k * threads));
    Value src = op.getX();
    auto srcType = cast<MemRefType>(src.getType());
    if (srcType.getRank() == 3) {
      // [R, K, D]: each value is its K rows' sum, from 0.0 in order of K.
      SmallVector<Value> zeros(cols.size(), f32(0.0));
      x = loop(idx(0), memref::DimOp::create(b, loc, src, 1), idx(1), zeros,
               [&](Value p, ValueRange acc) {
                 SmallVector<Value> next;
                 for (auto [c, a] : llvm::zip(cols, acc))
                   next.push_back(fadd(a, toF32(load(src, {r, p, c}))));
                 return next;
               });
    } else {
      for (Value c : cols)
        x.push_back(toF32(load(src, {r, c})));
    }
    SmallVector<Value> scaled =
        rmsScaled(tid, threads, x, tree[0], d, op.getEps().convertToDouble());
    Value out = op.getOutInit();
    Type outElt = cast<MemRefType>(out.getType()).getElementType();
    for (auto [c, v] : llvm::zip(cols, scaled)) {
      Value weight = toF32(load(op.getWeight(), {c}));
      Value y = fmul(v, weight);
      if (Value gate = op.getGate())
        y = fmul(y, k3::lowering::sigmoid(b, loc, toF32(load(gate, {r, c}))));
      store(k3::lowering::convertScalar(b, loc, y, outElt), out, {r, c});
    }
    gpu::TerminatorOp::create(b, loc);
  }
};

struct K3GpuRowNormPass : k3::impl::K3GpuRowNormPassBase<K3GpuRowNormPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<k3::RowNormOp> work;
    getOperation()->walk([&](k3::RowNormOp op) { work.push_back(op); });
    for (k3::RowNormOp op : work) {
      auto outType = dyn_cast<MemRefType>(op.getOutInit().getType());
      if (!outType) {
        op.emitOpError() << "k3-gpu-row-norm runs after bufferization, got tensors";
        return signalPassFailure();
      }
      const int64_t d = outType.getDimSize(1);
      const int64_t threads = ShapedType::isDynamic(d) ? 0 : k3::rowNormTeam(d);
      if (threads == 0) {
        op.emitOpError() << "k3-gpu-row-norm needs a static row width that a team of 32 to "
                         << k3::kRowTeamMaxThreads
                         << " threads (a power of two dividing it, at most "
                         << k3::kRowTeamMaxChannels << " channels each) covers, got " << outType;
        return signalPassFailure();
      }
      OpBuilder b(op);
      Location loc = op.getLoc();
      KernelBuilder kb{{b, loc}, op, d, threads};
      // A block per row; none for no rows.
      kb.whenNonEmpty(op.getOutInit(), 0, [&](Value rows) {
        kb.launch(rows, kb.idx(1), threads, KernelBuilder::sharedBytes({threads}),
                  [&](gpu::LaunchOp l) { kb.build(l); });
      });
      op.erase();
    }
  }
};

} // namespace
