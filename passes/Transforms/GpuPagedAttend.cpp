//===- GpuPagedAttend.cpp - k3.paged_attend as one decode kernel ----------===//
//
// Part of k3. Implements k3-gpu-paged-attend: a bufferized k3.paged_attend
// (decode_batch's MLA attention over the paged latent cache, CACHE.md,
// MLA.md §3) becomes one gpu.launch, block (h, b) for query head h of
// request b, a team of n = pagedAttendTeam(L) threads:
//
//   - the block's absorbed query row [L+R] goes to shared memory;
//   - the request's keys are the first len = min(lengths[b], MB·PT) rows
//     of its pages (row j is row j mod PT of page table[b, j / PT], read in
//     place) and then its own new row; the table and the length are read
//     on the device, so one launch serves any lengths;
//   - the keys go by in chunks of n: thread t takes key j0 + t and its
//     whole dot product with the query; the chunk's largest score and
//     Σ e^{s−m} are team reductions in shared memory (an online softmax
//     across chunks, the running sum rescaled by e^{m_old − m_new}); then
//     the chunk's probabilities weight its rows' first L columns, thread t
//     owning columns t, t + n, ... (consecutive threads read consecutive
//     columns of a row), accumulated in registers;
//   - out[b, h, c] = Σ / denominator.
//
// f32 throughout, the pages' bf16 values widened as read. The CPU's form
// (MlaAbsorbedPattern.cpp) takes a page at a time as one part of the same
// online softmax; the sums differ in order only.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"
#include "passes/Transforms/GpuKernelBuilder.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <limits>

namespace mlir::k3 {
#define GEN_PASS_DEF_K3GPUPAGEDATTENDPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

constexpr int64_t kMaxThreads = 128;
// Columns a thread accumulates in registers: K3's and Kimi Linear's L =
// 512 over 128 threads is 4.
constexpr int64_t kMaxColumns = 16;

struct KernelBuilder : k3::GpuKernelBuilder {
  k3::PagedAttendOp op;
  int64_t l, width, threads;
  int64_t splitKeys; ///< keys a split block takes at least (0: never split)
  int64_t sms;       ///< the chip's SMs: splits stop where blocks fill them twice

  /// Shared memory: the query row [L+R]; the chunk's probabilities and
  /// the max and sum trees [n].
  SmallVector<int64_t> shared() const { return {width, threads, threads, threads}; }

  Value idxOf(Value i32) { return arith::IndexCastOp::create(b, loc, b.getIndexType(), i32); }

  /// The values `body` computes from key `j` of request `req`, given as a
  /// memref and the indices before the column: its own row where j is its
  /// length, else row j mod PT of page table[req, j / PT]. The branch is
  /// taken once per key, not per column (per thread for the scores, each
  /// thread its own key; the whole block's for the weighted rows).
  SmallVector<Value> onKey(Value req, Value len, Value pageRows, Value j, TypeRange types,
                           function_ref<SmallVector<Value>(Value, SmallVector<Value>)> body) {
    auto own = scf::IfOp::create(b, loc, types, eq(j, len), /*withElse=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&own.getThenRegion().front());
    scf::YieldOp::create(b, loc, body(op.getRows(), {req}));
    b.setInsertionPointToStart(&own.getElseRegion().front());
    Value page = idxOf(load(op.getBlockTable(), {req, arith::DivUIOp::create(b, loc, j, pageRows)}));
    Value row = arith::RemUIOp::create(b, loc, j, pageRows);
    scf::YieldOp::create(b, loc, body(op.getPages(), {page, row}));
    return SmallVector<Value>(own.getResults());
  }
  /// Column `c` of a row (f32).
  Value column(Value m, SmallVector<Value> at, Value c) {
    at.push_back(c);
    return toF32(load(m, at));
  }

  /// The query row [L+R] of (req, h) into shared memory `qS`, times
  /// q_scale where the op has one (the product the scaling kernel made).
  void loadQuery(Value tid, Value req, Value h, Value qS) {
    forEach(tid, idx(width), idx(threads), [&](Value c) {
      Value v = load(op.getQ(), {req, h, c});
      store(scaledBy(v, op.getQScale()), qS, {c});
    });
    gpu::BarrierOp::create(b, loc);
  }

  /// The rows request `req` may read (at most its table's) and the rows of
  /// a page: (len, pageRows).
  std::pair<Value, Value> extent(Value req) {
    Value pageRows = memref::DimOp::create(b, loc, op.getPages(), 1);
    Value tableRows = arith::MulIOp::create(
        b, loc, memref::DimOp::create(b, loc, op.getBlockTable(), 1), pageRows);
    Value len = minIdx(idxOf(load(op.getLengths(), {req})), tableRows);
    return {len, pageRows};
  }

  /// The online softmax over keys [lo, hi) of request `req` (key `len` is
  /// its own row): (m, Σ e^{s−m}, Σ e^{s−m}·v_c for the thread's columns).
  /// An empty range gives (−inf, 0, 0...).
  SmallVector<Value> attend(Value tid, Value req, Value len, Value pageRows, Value lo, Value hi,
                            ArrayRef<Value> sh) {
    Value qS = sh[0], pS = sh[1], maxTree = sh[2], sumTree = sh[3];
    Value step = idx(threads);
    const int64_t columns = l / threads;
    Value negInf = f32(-std::numeric_limits<double>::infinity());
    SmallVector<Value> init{negInf, f32(0.0)};
    for (int64_t k = 0; k < columns; ++k)
      init.push_back(f32(0.0));
    return loop(lo, hi, step, init, [&](Value j0, ValueRange state) {
      // This thread's key of the chunk (the last one's where the chunk
      // runs past the range: a valid address, its score masked).
      Value j = add(j0, tid);
      Value valid = lt(j, hi);
      Value jRead = select(valid, j, len);
      Type f32Type = b.getF32Type();
      Value dot = onKey(req, len, pageRows, jRead, f32Type, [&](Value m, SmallVector<Value> at) {
                    return loop(idx(0), idx(width), idx(1), {f32(0.0)}, [&](Value c, ValueRange s) {
                      // One op per statement: C++ leaves the order of a
                      // call's arguments to the compiler, the IR must not.
                      Value qc = load(qS, {c});
                      Value kc = column(m, at, c);
                      return SmallVector<Value>{fadd(s[0], fmul(qc, kc))};
                    });
                  }).front();
      Value score = select(valid, dot, negInf);
      auto maxOf = [&](Value x, Value y) -> Value {
        return arith::MaximumFOp::create(b, loc, x, y);
      };
      Value chunkMax =
          teamReduce(tid, threads, {score}, {maxTree}, maxOf, /*reusable=*/true).front();
      Value m = maxOf(state[0], chunkMax);
      Value e = math::ExpOp::create(b, loc, fsub(score, m));
      Value p = select(valid, e, f32(0.0));
      store(p, pS, {tid});
      // The sum's barriers also publish pS.
      Value chunkSum = teamSums(tid, threads, {p}, {sumTree}, /*reusable=*/true).front();
      // e^{−inf − m} = 0 on the first chunk.
      Value keep = math::ExpOp::create(b, loc, fsub(state[0], m));
      SmallVector<Value> next{m, fadd(fmul(state[1], keep), chunkSum)};
      SmallVector<Value> u;
      for (Value v : state.drop_front(2))
        u.push_back(fmul(v, keep));
      Value n = minIdx(step, arith::SubIOp::create(b, loc, hi, j0));
      SmallVector<Type> types(u.size(), b.getF32Type());
      u = loop(idx(0), n, idx(1), u, [&](Value i, ValueRange us) {
        Value pi = load(pS, {i});
        return onKey(req, len, pageRows, add(j0, i), types, [&](Value m, SmallVector<Value> at) {
          SmallVector<Value> out;
          for (auto [k, v] : llvm::enumerate(us))
            out.push_back(fadd(v, fmul(pi, column(m, at, add(tid, int64_t(k) * threads)))));
          return out;
        });
      });
      next.append(u.begin(), u.end());
      return next;
    });
  }

  /// out[req, h, thread's columns] = acc's sums / its denominator.
  void storeOut(Value tid, Value req, Value h, ArrayRef<Value> acc) {
    Value inv = arith::DivFOp::create(b, loc, f32(1.0), acc[1]);
    for (int64_t k = 0; k < l / threads; ++k)
      store(fmul(acc[2 + k], inv), op.getOutInit(), {req, h, add(tid, k * threads)});
  }

  /// One kernel, block (h, b): all of the request's keys.
  void build(gpu::LaunchOp launch) {
    Value tid = launch.getThreadIds().x, h = launch.getBlockIds().x,
          req = launch.getBlockIds().y;
    SmallVector<Value> sh = sharedWords(shared(), b.getF32Type());
    loadQuery(tid, req, h, sh[0]);
    auto [len, pageRows] = extent(req);
    storeOut(tid, req, h, attend(tid, req, len, pageRows, idx(0), add(len, 1), sh));
    gpu::TerminatorOp::create(b, loc);
  }

  /// Split keys, block (b·S + s, h) (the long side on x, whose limit is
  /// 2^31 − 1, not y's 65535): keys [s·C, (s + 1)·C) of the request's,
  /// into the partials: stats[(b·H + h)·S + s] = (m, Σ) at 2·that,
  /// sums[that·L + c]. A split past the request's keys writes the empty
  /// softmax (−inf, 0, 0...), which the merge weighs by 0.
  void buildSplit(gpu::LaunchOp launch, Value splits, Value chunk, int64_t heads, Value stats,
                  Value sums) {
    Value tid = launch.getThreadIds().x, x = launch.getBlockIds().x,
          h = launch.getBlockIds().y;
    Value req = arith::DivUIOp::create(b, loc, x, splits);
    Value s = arith::RemUIOp::create(b, loc, x, splits);
    SmallVector<Value> sh = sharedWords(shared(), b.getF32Type());
    loadQuery(tid, req, h, sh[0]);
    auto [len, pageRows] = extent(req);
    Value keys = add(len, 1);
    Value lo = minIdx(arith::MulIOp::create(b, loc, s, chunk), keys);
    Value hi = minIdx(arith::AddIOp::create(b, loc, lo, chunk), keys);
    SmallVector<Value> acc = attend(tid, req, len, pageRows, lo, hi, sh);
    Value part =
        arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, add(mul(req, heads), h), splits), s);
    when(eq(tid, idx(0)), [&] {
      store(acc[0], stats, {mul(part, 2)});
      store(acc[1], stats, {add(mul(part, 2), 1)});
    });
    Value row = mul(part, l);
    for (int64_t k = 0; k < l / threads; ++k)
      store(acc[2 + k], sums, {add(row, add(tid, k * threads))});
    gpu::TerminatorOp::create(b, loc);
  }

  /// The merge, block (h, b): M = max_s m_s, each split's sums weighed by
  /// e^{m_s − M}, in order of s; then as the one kernel's out.
  void buildMerge(gpu::LaunchOp launch, Value splits, int64_t heads, Value stats, Value sums) {
    Value tid = launch.getThreadIds().x, h = launch.getBlockIds().x,
          req = launch.getBlockIds().y;
    Value first = arith::MulIOp::create(b, loc, add(mul(req, heads), h), splits);
    Value negInf = f32(-std::numeric_limits<double>::infinity());
    Value top = loop(idx(0), splits, idx(1), {negInf}, [&](Value s, ValueRange m) {
                  Value ms = load(stats, {mul(add(first, s), 2)});
                  return SmallVector<Value>{arith::MaximumFOp::create(b, loc, m[0], ms)};
                }).front();
    SmallVector<Value> init(2 + l / threads, f32(0.0));
    init[0] = top;
    SmallVector<Value> acc = loop(idx(0), splits, idx(1), init, [&](Value s, ValueRange a) {
      Value part = add(first, s);
      Value w = math::ExpOp::create(b, loc, fsub(load(stats, {mul(part, 2)}), top));
      SmallVector<Value> next{a[0], fadd(a[1], fmul(load(stats, {add(mul(part, 2), 1)}), w))};
      Value row = mul(part, l);
      for (int64_t k = 0; k < l / threads; ++k) {
        Value at = add(row, add(tid, k * threads));
        next.push_back(fadd(a[2 + k], fmul(load(sums, {at}), w)));
      }
      return next;
    });
    storeOut(tid, req, h, acc);
    gpu::TerminatorOp::create(b, loc);
  }
};

struct K3GpuPagedAttendPass : k3::impl::K3GpuPagedAttendPassBase<K3GpuPagedAttendPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<k3::PagedAttendOp> work;
    getOperation()->walk([&](k3::PagedAttendOp op) { work.push_back(op); });
    for (k3::PagedAttendOp op : work) {
      auto outType = dyn_cast<MemRefType>(op.getOutInit().getType());
      if (!outType) {
        op.emitOpError() << "k3-gpu-paged-attend runs after bufferization, got tensors";
        return signalPassFailure();
      }
      auto qType = cast<MemRefType>(op.getQ().getType());
      const int64_t heads = outType.getDimSize(1), l = outType.getDimSize(2),
                    width = qType.getDimSize(2);
      const int64_t threads = k3::pagedAttendTeam(l);
      if (ShapedType::isDynamic(heads) || ShapedType::isDynamic(width) || threads == 0) {
        op.emitOpError() << "k3-gpu-paged-attend needs static heads and row widths, and a latent "
                            "width that a team of 32 to "
                         << kMaxThreads << " threads (a power of two dividing it, at most "
                         << kMaxColumns << " columns each) covers, got out " << outType
                         << " and q " << qType;
        return signalPassFailure();
      }
      OpBuilder b(op);
      Location loc = op.getLoc();
      if (splitKeys < 0 || sms < 1) {
        op.emitOpError() << "k3-gpu-paged-attend needs split-keys >= 0 and sms >= 1, got "
                         << int64_t(splitKeys) << " and " << int64_t(sms);
        return signalPassFailure();
      }
      KernelBuilder kb{{b, loc}, op, l, width, threads, splitKeys, sms};
      auto one = [&](Value requests) {
        kb.launch(kb.idx(heads), requests, threads, KernelBuilder::sharedBytes(kb.shared()),
                  [&](gpu::LaunchOp l) { kb.build(l); });
      };
      // Block (h, b); no launch for no requests (a launch of no blocks is
      // an error on a GPU).
      kb.whenNonEmpty(op.getOutInit(), 0, [&](Value requests) {
        if (splitKeys == 0)
          return one(requests);
        // S = ⌈MB·PT / P⌉ splits of C = ⌈(MB·PT + 1) / S⌉ keys (the own
        // row goes into the last split, not into one of its own), from the
        // table's width: the same for every call of a captured graph, whose
        // signature holds MB and B. At most ⌈2·SMs / (B·H)⌉ splits: once
        // the requests' blocks fill the chip twice over, more splits only
        // grow the workspace, B·H·S·(L + 2) words.
        Value tablePages = memref::DimOp::create(b, loc, op.getBlockTable(), 1);
        Value pageRows = memref::DimOp::create(b, loc, op.getPages(), 1);
        Value tableRows = arith::MulIOp::create(b, loc, tablePages, pageRows);
        Value blocks = kb.mul(requests, heads);
        Value fill = arith::CeilDivUIOp::create(b, loc, kb.idx(2 * sms), blocks);
        Value splits = kb.minIdx(
            arith::CeilDivUIOp::create(b, loc, tableRows, kb.idx(splitKeys)), fill);
        auto branch = scf::IfOp::create(b, loc, kb.lt(kb.idx(1), splits), /*withElse=*/true);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&branch.getThenRegion().front());
        Value chunk = arith::CeilDivUIOp::create(b, loc, kb.add(tableRows, 1), splits);
        Value parts = arith::MulIOp::create(b, loc, blocks, splits);
        auto f32Buffer = [&](Value n) {
          return memref::AllocOp::create(
              b, loc, MemRefType::get({ShapedType::kDynamic}, b.getF32Type()), ValueRange{n});
        };
        Value stats = f32Buffer(kb.mul(parts, 2));
        Value sums = f32Buffer(kb.mul(parts, l));
        Value splitBlocks = arith::MulIOp::create(b, loc, requests, splits);
        Value headBlocks = kb.idx(heads);
        kb.launch(splitBlocks, headBlocks, threads, KernelBuilder::sharedBytes(kb.shared()),
                  [&](gpu::LaunchOp l) {
                    kb.buildSplit(l, splits, chunk, heads, stats, sums);
                  });
        kb.launch(kb.idx(heads), requests, threads, 0,
                  [&](gpu::LaunchOp l) { kb.buildMerge(l, splits, heads, stats, sums); });
        memref::DeallocOp::create(b, loc, stats);
        memref::DeallocOp::create(b, loc, sums);
        b.setInsertionPointToStart(&branch.getElseRegion().front());
        one(requests);
      });
      op.erase();
    }
  }
};

} // namespace

int64_t mlir::k3::pagedAttendTeam(int64_t l) {
  if (l <= 0)
    return 0;
  int64_t n = 1;
  while (n < kMaxThreads && l % (2 * n) == 0)
    n *= 2;
  return n >= 32 && l / n <= kMaxColumns ? n : 0;
}
