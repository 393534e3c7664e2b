//===- GpuKernelBuilder.h - Helpers for hand-built mma.sync kernels -------===//
//
// Part of k3. The index arithmetic, loops and branches, dynamic shared
// memory arrays, bf16 packing and m16n8k16 MMA that the passes building
// whole kernels by hand (k3-gpu-attend-parts, k3-gpu-kda-chunks,
// k3-gpu-moe-experts, k3-gpu-kda-step, k3-gpu-attn-res, k3-gpu-row-norm,
// k3-gpu-paged-attend) share. Fragment layouts of mma.sync m16n8k16 (PTX ISA, "Matrix Fragments
// for mma.m16n8k16"), g = lane / 4, t = lane % 4,
// the lower index of a pair in a register's low 16 bits:
//
//   A (16 x 16, row-major): a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..),
//                           a3 (g+8, 2t+8..)
//   B (16 x 8):             b0 (k 2t..2t+1, n g), b1 (k 2t+8..2t+9, n g)
//   C/D (16 x 8, f32):      c0, c1 (g, 2t..2t+1), c2, c3 (g+8, 2t..2t+1)
//
// So the accumulators of two n8 tiles side by side, packed to bf16 pairs,
// are the A fragment of the next product over those 16 columns: a kernel
// can chain products through registers (flash attention's trick).
//
//===----------------------------------------------------------------------===//

#ifndef K3_PASSES_TRANSFORMS_GPUKERNELBUILDER_H
#define K3_PASSES_TRANSFORMS_GPUKERNELBUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace mlir::k3 {

/// Builds index and f32 arithmetic, loads and stores, and mma.sync at one
/// insertion point.
struct GpuKernelBuilder {
  OpBuilder &b;
  Location loc;

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t y) { return y ? add(x, idx(y)) : x; }
  Value mul(Value x, int64_t y) { return arith::MulIOp::create(b, loc, x, idx(y)); }
  Value div(Value x, int64_t y) { return arith::DivUIOp::create(b, loc, x, idx(y)); }
  Value rem(Value x, int64_t y) { return arith::RemUIOp::create(b, loc, x, idx(y)); }
  Value lt(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
  Value lt(Value x, int64_t y) { return lt(x, idx(y)); }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value minIdx(Value x, Value y) { return arith::MinUIOp::create(b, loc, x, y); }
  Value f32(double v) { return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(v))); }
  Value i32(int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v); }
  Value eq(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, y);
  }
  Value load(Value m, ValueRange i) { return memref::LoadOp::create(b, loc, m, i); }
  void store(Value v, Value m, ValueRange i) { memref::StoreOp::create(b, loc, v, m, i); }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value select(Value c, Value x, Value y) { return arith::SelectOp::create(b, loc, c, x, y); }

  /// A loop `for (i = lo; i < hi; i += step)` carrying `init`; `body`
  /// returns the next values.
  SmallVector<Value> loop(Value lo, Value hi, Value step, ValueRange init,
                          function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto f = scf::ForOp::create(b, loc, lo, hi, step, init);
    OpBuilder::InsertionGuard guard(b);
    // Without loop-carried values the builder already added the yield.
    if (init.empty()) {
      b.setInsertionPoint(f.getBody()->getTerminator());
      body(f.getInductionVar(), f.getRegionIterArgs());
    } else {
      b.setInsertionPointToStart(f.getBody());
      scf::YieldOp::create(b, loc, body(f.getInductionVar(), f.getRegionIterArgs()));
    }
    return SmallVector<Value>(f.getResults());
  }
  /// The same loop without carried values.
  void forEach(Value lo, Value hi, Value step, function_ref<void(Value)> body) {
    loop(lo, hi, step, {}, [&](Value i, ValueRange) {
      body(i);
      return SmallVector<Value>{};
    });
  }
  /// `then()` where `cond`.
  void when(Value cond, function_ref<void()> then) {
    auto i = scf::IfOp::create(b, loc, cond, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&i.getThenRegion().front());
    then();
  }

  /// `then(n)` with `n` extent `dim` of `buffer`, where it is positive (a
  /// launch of no blocks is an error on a GPU). A static extent needs no
  /// branch, so that k3-gpu-merge-launches, which runs before canonicalize,
  /// sees the launch beside the others; a static 0 builds nothing.
  void whenNonEmpty(Value buffer, int64_t dim, function_ref<void(Value)> then) {
    int64_t n = cast<ShapedType>(buffer.getType()).getDimSize(dim);
    if (!ShapedType::isDynamic(n)) {
      if (n > 0)
        then(idx(n));
      return;
    }
    Value v = memref::DimOp::create(b, loc, buffer, dim);
    when(lt(idx(0), v), [&] { then(v); });
  }

  /// The reductions by `combine` over a team of `threads` (a power of two)
  /// of `values`, one per thread, each through its shared tree of
  /// `threads` words, reduced together in log2 n barriered steps.
  /// `reusable`: a barrier after every thread has read the results, so that
  /// the trees may be written again.
  SmallVector<Value> teamReduce(Value tid, int64_t threads, ArrayRef<Value> values,
                                ArrayRef<Value> trees, function_ref<Value(Value, Value)> combine,
                                bool reusable = false) {
    for (auto [v, tree] : llvm::zip(values, trees))
      store(v, tree, {tid});
    gpu::BarrierOp::create(b, loc);
    for (int64_t s = threads / 2; s >= 1; s /= 2) {
      when(lt(tid, s), [&] {
        for (Value tree : trees) {
          // One op per statement: the IR's order must not depend on the
          // compiler's order for a call's arguments.
          Value mine = load(tree, {tid});
          Value other = load(tree, {add(tid, s)});
          store(combine(mine, other), tree, {tid});
        }
      });
      gpu::BarrierOp::create(b, loc);
    }
    SmallVector<Value> results;
    for (Value tree : trees)
      results.push_back(load(tree, {idx(0)}));
    if (reusable)
      gpu::BarrierOp::create(b, loc);
    return results;
  }
  /// teamReduce's sums.
  SmallVector<Value> teamSums(Value tid, int64_t threads, ArrayRef<Value> values,
                              ArrayRef<Value> trees, bool reusable = false) {
    return teamReduce(tid, threads, values, trees, [&](Value x, Value y) { return fadd(x, y); },
                      reusable);
  }

  /// `v` times `scale` where there is one (an op's optional q_scale: the
  /// product a scaling kernel would have made, as the value is loaded).
  Value scaledBy(Value v, std::optional<APFloat> scale) {
    return scale ? fmul(v, f32(scale->convertToDouble())) : v;
  }

  /// RMSNorm's scaling of a row held by a team, each thread's values `xs`
  /// (f32): x · rsqrt(Σx² / d + eps), the squares summed over the thread's
  /// values in order and then over the team through `tree` (k3-gpu-row-norm
  /// and k3-gpu-attn-res's then_norm: one arithmetic, so the same bits).
  SmallVector<Value> rmsScaled(Value tid, int64_t threads, ArrayRef<Value> xs, Value tree,
                               int64_t d, double eps) {
    Value sq = f32(0.0);
    for (Value v : xs)
      sq = fadd(sq, fmul(v, v));
    Value sum = teamSums(tid, threads, {sq}, {tree}).front();
    Value mean = arith::DivFOp::create(b, loc, sum, f32(double(d)));
    Value inv = math::RsqrtOp::create(b, loc, fadd(mean, f32(eps)));
    SmallVector<Value> out;
    for (Value v : xs)
      out.push_back(fmul(v, inv));
    return out;
  }

  /// A gpu.launch of a (gx, gy) grid of blocks of `threads` threads with
  /// `sharedBytes` of dynamic shared memory, its body built by `body` (which
  /// ends it with gpu.terminator); the insertion point stays after it.
  gpu::LaunchOp launch(Value gx, Value gy, int64_t threads, int64_t sharedBytes,
                       function_ref<void(gpu::LaunchOp)> body) {
    Value one = idx(1);
    Value smem = arith::ConstantIntOp::create(b, loc, b.getI32Type(), sharedBytes);
    auto l = gpu::LaunchOp::create(b, loc, gx, gy, one, idx(threads), one, one, smem,
                                   /*asyncTokenType=*/nullptr, ValueRange(), TypeRange());
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&l.getBody().front());
    body(l);
    return l;
  }

  /// Consecutive arrays of `sizes` 32-bit words of `type` (i32 or f32) in
  /// dynamic shared memory.
  SmallVector<Value> sharedWords(ArrayRef<int64_t> sizes, Type type) {
    auto wg = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
    Value base = gpu::DynamicSharedMemoryOp::create(
        b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), nullptr, wg));
    SmallVector<Value> views;
    int64_t offset = 0;
    for (int64_t n : sizes) {
      views.push_back(memref::ViewOp::create(b, loc, MemRefType::get({n}, type, nullptr, wg),
                                             base, idx(offset * 4), ValueRange()));
      offset += n;
    }
    return views;
  }
  /// The bytes of sharedWords(sizes).
  static int64_t sharedBytes(ArrayRef<int64_t> sizes) {
    int64_t n = 0;
    for (int64_t s : sizes)
      n += s;
    return 4 * n;
  }

  /// `v` as f32 (an extension of a narrower float).
  Value toF32(Value v) {
    return v.getType().isF32() ? v : Value(arith::ExtFOp::create(b, loc, b.getF32Type(), v));
  }

  /// Two f32 values as bf16 in one word, `lo` in the low half.
  Value pack(Value lo, Value hi) {
    auto bits = [&](Value v) {
      Value h = arith::TruncFOp::create(b, loc, b.getBF16Type(), v);
      return bf16Bits(h);
    };
    return join(bits(lo), bits(hi));
  }

  /// Two bf16 values in one word, `lo` in the low half.
  Value packBf16(Value lo, Value hi) { return join(bf16Bits(lo), bf16Bits(hi)); }

  /// One m16n8k16 bf16 MMA: `acc` (4 f32) + A (4 words) · B (2 words).
  SmallVector<Value> mma(ArrayRef<Value> a, ArrayRef<Value> bRegs, ValueRange acc) {
    Type f = b.getF32Type();
    auto resultType = LLVM::LLVMStructType::getLiteral(b.getContext(), {f, f, f, f});
    auto m = NVVM::MmaOp::create(
        b, loc, resultType, a, bRegs, acc, ArrayRef<int64_t>{16, 8, 16}, std::nullopt,
        std::nullopt, std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16, NVVM::MMATypes::bf16},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row, NVVM::MMALayout::col});
    SmallVector<Value> out;
    for (int64_t e = 0; e < 4; ++e)
      out.push_back(LLVM::ExtractValueOp::create(b, loc, m.getRes(), e));
    return out;
  }

private:
  Value bf16Bits(Value h) {
    h = arith::BitcastOp::create(b, loc, b.getI16Type(), h);
    return arith::ExtUIOp::create(b, loc, b.getI32Type(), h);
  }
  Value join(Value lo, Value hi) {
    Value sh = arith::ShLIOp::create(b, loc, hi, arith::ConstantIntOp::create(b, loc, 16, 32));
    return arith::OrIOp::create(b, loc, lo, sh);
  }
};

} // namespace mlir::k3

#endif // K3_PASSES_TRANSFORMS_GPUKERNELBUILDER_H
