//===- GpuKdaChunks.cpp - k3.kda_chunks as two chunked KDA kernels -------===//
//
// Part of k3. Implements k3-gpu-kda-chunks: a bufferized k3.kda_chunks
// becomes two gpu.launches, FlashKDA's split (KDA.md §6.7): a token-
// parallel kernel prepares every chunk's matrices at once, and a
// head-parallel kernel runs the recurrence over the prepared chunks, so
// that the per-chunk preparation is spread over the whole GPU instead of
// serialised in each head's block. With G a 16-token chunk's inclusive
// cumulative log-decay (KDA.md §6.1, C = 16) and Gm = G[row 8]:
//
// Kernel 1, a block of 128 threads per (chunk, value head), in shared
// memory (f32):
//   1. G by a scan per key channel; β.
//   2. Q2 = scale q e^{G−Gm}, K2 = k e^{G−Gm}, KB = k e^{Gm−G} (the
//      factors of the chunk matrices: each within e^80 when 8 tokens of
//      decay stay within 80 nat), QG = scale q e^G, WK = k e^G,
//      KD = (k e^{G_last−G})ᵀ, e^{G_last}, and the head's values U = V.
//   3. L = β (K2 · KBᵀ) strictly below the diagonal and Aqk = Q2 · KBᵀ on
//      and below it, one f32 dot product per entry (masked by select,
//      KDA.md §6.5: the entries above are never used).
//      With `pairwise` (any gate, the softplus one included), step 2 keeps
//      the bare q and k instead of the factors and each entry (r, s) takes
//      its own exponents: L[r][s] = β_r Σ_c k_r k_s e^{G_r − G_s} and
//      Aqk[r][s] = Σ_c scale q_r k_s e^{G_r − G_s} for s ≤ r only, every
//      exponent ≤ 0 (FLA chunk_kda's intra-sub-chunk form). The
//      other operands only ever take e^{≤ 0} (G is the decay since the
//      chunk's start), so nothing can overflow whatever the gate.
//   4. (I + L) W = diag(β) WK and (I + L) U = diag(β) V by forward
//      substitution, one thread per column, in place (the UT transform in
//      f32, KDA.md §6.2).
// It writes the chunk's record to the workspace: W, QG, Aqk and KD as bf16
// pairs in the order of the B fragments that read them (one 32-bit load
// per register), U and e^{G_last} in f32 (and, with `split-operands`,
// QG's bf16 rounding remainder as pairs too).
//
// Kernel 2, a block per (value head h, slice of VB value channels) and a
// warp per 16 of those channels (VB = 16 W for W warps, at most 4: 64
// channels, two blocks per head at V = 128), walks the chunks with the
// state slice transposed in registers: warp w holds Sᵀ[16 w .. 16 w + 16,
// 0 .. K) as the f32 accumulators of K / 8 n8 tiles, whose bf16 packing is
// the A operand of the next product (see GpuKernelBuilder.h), so the state
// never leaves the registers. Per chunk, on mma.sync: Pᵀ = Sᵀ Wᵀ and
// Oᵀ = Sᵀ QGᵀ (K/16 steps each), Δᵀ = Uᵀ − Pᵀ, Oᵀ += Δᵀ Aqkᵀ, then
// Sᵀ ← Sᵀ diag(e^{G_last}) + Δᵀ KD: the state update reuses Δᵀ's registers
// as its A operand. It needs no shared memory and no barrier.
//
// Tokens past T are loaded as zeros (q = k = v = g = β = 0), which leaves
// the outputs and the state of real tokens unchanged (KDA.md §6.6); every
// load is clamped inside its buffer and its value selected. With
// `split-operands`, the state and Δ enter the tensor cores as two bf16
// terms (hi + lo, twice their MMAs), so that the recurrence carries f32
// accumulation of the state instead of its bf16 rounding at every chunk,
// and Oᵀ takes one more product, Sᵀ_hi QG_loᵀ: a one-token chunk whose
// inter- and intra-chunk terms cancel to a quarter of their size lost 2%
// of the output to QG's bf16 rounding (test/Gpu/kda-chunks-emulated.mlir,
// T = 1).
//
// Kernel 1's shared memory, f32 words (rows of the K-wide arrays are K + 4
// words, so that step 3's 16 rows at one column fall in distinct banks up
// to 2-way):
//
//   G Q2 K2 KB QG WK [16][K+4]   KD [K][17]   U [16][V+4]
//   L Aqk [16][17]   B [16]
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"
#include "passes/Transforms/GpuKernelBuilder.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3GPUKDACHUNKSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

constexpr int64_t kChunk = 16;
constexpr int64_t kMaxWarps = 4;
// K/2 state accumulators per lane (split: the hi/lo packs as well).
constexpr int64_t kMaxKeys = 128;
constexpr int64_t kLPitch = 17;
constexpr int64_t kKdPitch = 17;
// The preparation kernel's block.
constexpr int64_t kPrepThreads = 128;
// sm_80's largest dynamic shared memory per block.
constexpr int64_t kMaxSharedBytes = 163 * 1024;

/// The kernels' shapes: key channels padded to 16, the recurrence's value
/// slice, a (chunk, head) record of the workspace and the preparation
/// kernel's shared memory.
struct Shape {
  int64_t dk, kp, pk, dv, warps, vb, pu;
  explicit Shape(int64_t dk, int64_t dv)
      : dk(dk), kp((dk + 15) / 16 * 16), pk(kp + 4), dv(dv),
        warps(std::clamp<int64_t>((dv + 15) / 16, 1, kMaxWarps)), vb(16 * warps),
        pu(dv + 4) {}
  int64_t threads() const { return 32 * warps; }

  // The record, in 32-bit words: W and Q e^G as [16][K/2] bf16 pairs along
  // the key channels, Aqk as [16][8] pairs along its columns, KD as [K][8]
  // pairs along the tokens (each the B fragments' word order), U as
  // [16][V] f32, e^{G_last} as [K] f32, and Q e^G's rounding remainder as
  // [16][K/2] bf16 pairs (written and read with split operands only).
  int64_t recW() const { return 0; }
  int64_t recQg() const { return 8 * kp; }
  int64_t recAqk() const { return 16 * kp; }
  int64_t recKd() const { return 16 * kp + 8 * kChunk; }
  int64_t recU() const { return recKd() + 8 * kp; }
  int64_t recEgl() const { return recU() + kChunk * dv; }
  /// With split operands, Q e^G's bf16 rounding remainder as W's layout.
  int64_t recQgLo() const { return recEgl() + kp; }
  int64_t recordWords() const { return recQgLo() + 8 * kp; }

  /// Words of a [rows][pitch] array, rounded up to 16 bytes (every view
  /// starts 16-byte aligned).
  static int64_t slot(int64_t rows, int64_t pitch) { return (rows * pitch + 3) / 4 * 4; }
  /// The preparation kernel's shared arrays in layout order (see the
  /// header): {rows, pitch}.
  SmallVector<std::pair<int64_t, int64_t>> arrays() const {
    SmallVector<std::pair<int64_t, int64_t>> a(6, {kChunk, pk});
    a.append({{kp, kKdPitch}, {kChunk, pu}, {kChunk, kLPitch}, {kChunk, kLPitch}, {1, kChunk}});
    return a;
  }
  int64_t words() const {
    int64_t n = 0;
    for (auto [rows, pitch] : arrays())
      n += slot(rows, pitch);
    return n;
  }
  int64_t bytes() const { return words() * 4; }
};

struct KernelBuilder : k3::GpuKernelBuilder {
  k3::KdaChunksOp op;
  Shape s;
  int64_t group;
  bool split;
  /// Exact pairwise exponents in step 3 (the op's `pairwise`).
  bool pairwise;
  /// Threads of the kernel being built.
  int64_t threads = 0;

  /// A [rows][pitch] f32 array in shared memory.
  struct Array {
    Value mem;
    int64_t pitch;
  };
  Value at(const Array &a, Value r, Value c) { return add(mul(r, a.pitch), c); }
  Value get(const Array &a, Value r, Value c) { return load(a.mem, {at(a, r, c)}); }
  Value get(const Array &a, int64_t r, Value c) { return get(a, idx(r), c); }
  void put(Value v, const Array &a, Value r, Value c) { store(v, a.mem, {at(a, r, c)}); }

  /// `m[i...]` as f32 where `ok`, else 0; indices clamped into `m`.
  Value masked(Value m, ArrayRef<Value> i, Value ok) {
    SmallVector<Value> clamped;
    for (auto [d, v] : llvm::enumerate(i)) {
      Value extent = memref::DimOp::create(b, loc, m, int64_t(d));
      Value last = arith::SubIOp::create(b, loc, arith::MaxUIOp::create(b, loc, extent, idx(1)),
                                         idx(1));
      clamped.push_back(minIdx(v, last));
    }
    return select(ok, toF32(load(m, clamped)), f32(0.0));
  }

  /// A loop `for (i = tid; i < n; i += threads)`; `body(i)`.
  void strided(Value tid, int64_t n, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, tid, idx(n), idx(threads));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }

  /// v − bf16(v), as f32.
  Value remainder(Value v) {
    Value r = arith::TruncFOp::create(b, loc, b.getBF16Type(), v);
    return fsub(v, arith::ExtFOp::create(b, loc, b.getF32Type(), r));
  }

  /// Pairs `x` packs as bf16 (hi) and, with `split`, as the rounding
  /// remainder (lo): the A operand terms of `x`.
  SmallVector<SmallVector<Value>> terms(ArrayRef<Value> x) {
    SmallVector<Value> hi, lo;
    for (size_t i = 0; i < x.size(); i += 2) {
      hi.push_back(pack(x[i], x[i + 1]));
      if (split)
        lo.push_back(pack(remainder(x[i]), remainder(x[i + 1])));
    }
    SmallVector<SmallVector<Value>> out{hi};
    if (split)
      out.push_back(lo);
    return out;
  }

  /// acc + Σ_terms A · B.
  SmallVector<Value> mmaTerms(ArrayRef<SmallVector<Value>> a, ArrayRef<Value> bRegs,
                              SmallVector<Value> acc) {
    for (const SmallVector<Value> &term : a)
      acc = mma(term, bRegs, acc);
    return acc;
  }

  /// The A fragment of accumulator tiles `lo` and `lo + 1` (16 columns):
  /// the pairs (c0 c1) (c2 c3) of each, in fragment order a0..a3.
  SmallVector<Value> fragmentOf(ArrayRef<Value> tiles, int64_t lo) {
    const Value *x = tiles.data() + 4 * lo;
    return {x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]};
  }

  /// Forward substitution down column `j` of `a`: x_r = β_r a[r][j] −
  /// Σ_{s<r} L[r][s] x_s, written back in place.
  void substitute(const Array &a, Value j, const Array &lm, Value beta) {
    SmallVector<Value> x;
    for (int64_t r = 0; r < kChunk; ++r) {
      Value br = load(beta, {idx(r)}); // one op per statement (argument order)
      Value acc = fmul(br, get(a, r, j));
      for (int64_t c = 0; c < r; ++c)
        acc = fsub(acc, fmul(get(lm, r, idx(c)), x[c]));
      x.push_back(acc);
      put(acc, a, idx(r), j);
    }
  }

  /// Word `at` of the workspace record (chunk, head), as stored.
  Value word(Value ws, Value chunk, Value hh, Value at) {
    return arith::BitcastOp::create(b, loc, b.getI32Type(), load(ws, {chunk, hh, at}));
  }
  void putWord(Value w, Value ws, Value chunk, Value hh, Value at) {
    store(arith::BitcastOp::create(b, loc, b.getF32Type(), w), ws, {chunk, hh, at});
  }

  /// Kernel 1, one block per (chunk, value head): steps 1 to 4 of the
  /// header, then the chunk's record.
  void buildPrep(gpu::LaunchOp launch) {
    threads = kPrepThreads;
    Value q = op.getQ(), k = op.getK(), v = op.getV(), g = op.getG(), beta = op.getBeta();
    Value ws = op.getWorkspaceInit();
    const double scale = op.getScale().convertToDouble();
    Value tid = launch.getThreadIds().x;
    Value chunk = launch.getBlockIds().x, hh = launch.getBlockIds().y, hq = div(hh, group);
    Value tokens = memref::DimOp::create(b, loc, q, 0);
    Value t0 = mul(chunk, kChunk);
    Value n = arith::MinUIOp::create(b, loc, idx(kChunk),
                                     arith::SubIOp::create(b, loc, tokens, t0));
    Value dk = idx(s.dk);

    auto wg = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
    Value base = gpu::DynamicSharedMemoryOp::create(
        b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), nullptr, wg));
    // The views in Shape::arrays()'s order, which also sizes the launch.
    SmallVector<Array> views;
    int64_t offset = 0;
    for (auto [rows, pitch] : s.arrays()) {
      const int64_t count = Shape::slot(rows, pitch);
      Value m = memref::ViewOp::create(
          b, loc, MemRefType::get({count}, b.getF32Type(), nullptr, wg), base, idx(offset * 4),
          ValueRange());
      offset += count;
      views.push_back(Array{m, pitch});
    }
    assert(offset == s.words() && "the views fill the launch's shared memory");
    Array gs = views[0], q2 = views[1], k2 = views[2], kbs = views[3], qg = views[4],
          wk = views[5], kd = views[6], us = views[7], lm = views[8], aqk = views[9],
          bs = views[10];
    Value betas = bs.mem;

    // 1. G per key channel, and β.
    strided(tid, s.kp, [&](Value c) {
      Value acc = f32(0.0);
      for (int64_t r = 0; r < kChunk; ++r) {
        Value tr = add(t0, r);
        acc = fadd(acc, masked(g, {tr, hh, c}, both(lt(idx(r), n), lt(c, dk))));
        put(acc, gs, idx(r), c);
      }
    });
    {
      auto rows = scf::IfOp::create(b, loc, lt(tid, kChunk), false);
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(&rows.getThenRegion().front());
      store(masked(beta, {add(t0, tid), hh}, lt(tid, n)), betas, {tid});
    }
    gpu::BarrierOp::create(b, loc);

    // 2. The factors and operands; e^{G_last} straight into the record.
    strided(tid, kChunk * s.kp, [&](Value e) {
      Value r = div(e, s.kp), c = rem(e, s.kp);
      Value ok = both(lt(r, n), lt(c, dk));
      Value tr = add(t0, r);
      Value qv = masked(q, {tr, hq, c}, ok), kv = masked(k, {tr, hq, c}, ok);
      Value gr = get(gs, r, c), gm = get(gs, 8, c), last = get(gs, kChunk - 1, c);
      auto exp = [&](Value x) { return Value(math::ExpOp::create(b, loc, x)); };
      Value eg = exp(gr);
      Value sq = fmul(qv, f32(scale));
      if (pairwise) {
        // Step 3 takes its own exponents: the bare operands.
        put(sq, q2, r, c);
        put(kv, k2, r, c);
      } else {
        Value up = exp(fsub(gr, gm)), down = exp(fsub(gm, gr));
        put(fmul(sq, up), q2, r, c);
        put(fmul(kv, up), k2, r, c);
        put(fmul(kv, down), kbs, r, c);
      }
      put(fmul(sq, eg), qg, r, c);
      put(fmul(kv, eg), wk, r, c);
      put(fmul(kv, exp(fsub(last, gr))), kd, c, r);
      auto first = scf::IfOp::create(
          b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, r, idx(0)), false);
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(&first.getThenRegion().front());
      store(exp(last), ws, {chunk, hh, add(c, s.recEgl())});
    });
    strided(tid, kChunk * s.dv, [&](Value e) {
      Value r = div(e, s.dv), j = rem(e, s.dv);
      put(masked(v, {add(t0, r), hh, j}, lt(r, n)), us, r, j);
    });
    gpu::BarrierOp::create(b, loc);

    // 3. L and Aqk, one entry (r, s) per thread and step.
    strided(tid, kChunk * kChunk, [&](Value p) {
      Value r = div(p, kChunk), c0 = rem(p, kChunk);
      Value below = lt(c0, r), onOrBelow = lt(c0, add(r, 1));
      // The two dot products over the key channels.
      auto dots = [&]() -> SmallVector<Value> {
        auto loop = scf::ForOp::create(b, loc, idx(0), idx(s.kp), idx(1),
                                       ValueRange{f32(0.0), f32(0.0)});
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(loop.getBody());
        Value c = loop.getInductionVar();
        // Pairwise: k_s e^{G_r − G_s}, at most k_s for s ≤ r (the only
        // entries computed) whatever the gate.
        Value kb = pairwise ? fmul(get(k2, c0, c),
                                   math::ExpOp::create(b, loc, fsub(get(gs, r, c), get(gs, c0, c))))
                            : get(kbs, c0, c);
        Value dl = fadd(loop.getRegionIterArgs()[0], fmul(get(k2, r, c), kb));
        Value da = fadd(loop.getRegionIterArgs()[1], fmul(get(q2, r, c), kb));
        scf::YieldOp::create(b, loc, ValueRange{dl, da});
        return SmallVector<Value>(loop.getResults());
      };
      SmallVector<Value> sums;
      if (pairwise) {
        // Only the entries on and below the diagonal: the ones above would
        // take e^{G_r − G_s} ≥ 1 (+inf for a steep decay) and are never
        // used; skipping them saves 120 of the 256 entries' exponentials.
        auto lower = scf::IfOp::create(b, loc, TypeRange{b.getF32Type(), b.getF32Type()},
                                       onOrBelow, /*withElseRegion=*/true);
        {
          OpBuilder::InsertionGuard g2(b);
          b.setInsertionPointToStart(&lower.getThenRegion().front());
          scf::YieldOp::create(b, loc, dots());
          b.setInsertionPointToStart(&lower.getElseRegion().front());
          scf::YieldOp::create(b, loc, ValueRange{f32(0.0), f32(0.0)});
        }
        sums.assign(lower.getResults().begin(), lower.getResults().end());
      } else {
        sums = dots();
      }
      Value scaled = fmul(load(betas, {r}), sums[0]); // one op per statement
      put(select(below, scaled, f32(0.0)), lm, r, c0);
      put(select(onOrBelow, sums[1], f32(0.0)), aqk, r, c0);
    });
    gpu::BarrierOp::create(b, loc);

    // 4. W and U by forward substitution.
    strided(tid, s.kp, [&](Value j) { substitute(wk, j, lm, betas); });
    strided(tid, s.dv, [&](Value j) { substitute(us, j, lm, betas); });
    gpu::BarrierOp::create(b, loc);

    // The record: the B operands as bf16 pairs in fragment order, U.
    auto pairs = [&](const Array &a, int64_t rows, int64_t halfWidth, int64_t at) {
      strided(tid, rows * halfWidth, [&](Value e) {
        Value r = div(e, halfWidth), c = mul(rem(e, halfWidth), 2);
        putWord(pack(get(a, r, c), get(a, r, add(c, 1))), ws, chunk, hh, add(e, at));
      });
    };
    pairs(wk, kChunk, s.kp / 2, s.recW());
    pairs(qg, kChunk, s.kp / 2, s.recQg());
    if (split) {
      // Q e^G − bf16(Q e^G): the output's inter-chunk term, Sᵀ (Q e^G)ᵀ,
      // can cancel against the intra-chunk one (one token whose q·k is
      // near 1/β), and a bf16 Q e^G alone then costs a few times 2^-9
      // of the output.
      strided(tid, kChunk * s.kp / 2, [&](Value e) {
        Value r = div(e, s.kp / 2), c = mul(rem(e, s.kp / 2), 2);
        putWord(pack(remainder(get(qg, r, c)), remainder(get(qg, r, add(c, 1)))), ws, chunk,
                hh, add(e, s.recQgLo()));
      });
    }
    pairs(aqk, kChunk, kChunk / 2, s.recAqk());
    pairs(kd, s.kp, kChunk / 2, s.recKd());
    strided(tid, kChunk * s.dv, [&](Value e) {
      Value r = div(e, s.dv), j = rem(e, s.dv);
      store(get(us, r, j), ws, {chunk, hh, add(e, s.recU())});
    });
    gpu::TerminatorOp::create(b, loc);
  }

  /// Kernel 2, one block per (value head, value slice): step 5 over every
  /// chunk in turn, the state in registers.
  void buildRecurrence(gpu::LaunchOp launch) {
    threads = s.threads();
    Value q = op.getQ(), ws = op.getWorkspaceInit();
    Value out = op.getOutInit(), state = op.getStateInit(), states = op.getBoundariesInit();
    const int64_t every = op.getEvery();
    Value tid = launch.getThreadIds().x;
    Value warp = div(tid, 32), lane = rem(tid, 32);
    Value gl = div(lane, 4), tl = rem(lane, 4);
    Value hh = launch.getBlockIds().x;
    Value v0 = mul(launch.getBlockIds().y, s.vb);
    Value tokens = memref::DimOp::create(b, loc, q, 0);
    Value dk = idx(s.dk), dv = idx(s.dv);

    // Lane's state element e of tile j: Sᵀ[value row][key column].
    auto stateRow = [&](int64_t e) { return add(add(mul(warp, 16), gl), 8 * (e / 2)); };
    auto stateCol = [&](int64_t j, int64_t e) { return add(mul(tl, 2), 8 * j + e % 2); };
    const int64_t tiles = s.kp / 8;
    SmallVector<Value> init;
    for (int64_t j = 0; j < tiles; ++j)
      for (int64_t e = 0; e < 4; ++e) {
        Value c = stateCol(j, e), vv = add(v0, stateRow(e));
        init.push_back(masked(state, {hh, c, vv}, both(lt(c, dk), lt(vv, dv))));
      }

    auto loop = scf::ForOp::create(b, loc, idx(0), tokens, idx(kChunk), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value t0 = loop.getInductionVar(), chunk = div(t0, kChunk);
      SmallVector<Value> st(loop.getRegionIterArgs());
      Value n = arith::MinUIOp::create(b, loc, idx(kChunk),
                                       arith::SubIOp::create(b, loc, tokens, t0));
      // B fragment words of a [rows][pitch] pair array of the record: row
      // `row`, words w0 + t and w0 + t + 4.
      auto bWords = [&](int64_t at, int64_t pitch, Value row, int64_t w0) {
        Value first = add(add(mul(row, pitch), tl), at + w0);
        return SmallVector<Value>{word(ws, chunk, hh, first),
                                  word(ws, chunk, hh, add(first, 4))};
      };

      // Pᵀ and the inter-chunk Oᵀ over the key channels, 16 at a time,
      // from the state's registers.
      SmallVector<Value> pt(8, f32(0.0)), ot(8, f32(0.0));
      for (int64_t kk = 0; kk < s.kp / 16; ++kk) {
        SmallVector<SmallVector<Value>> a = terms(fragmentOf(st, 2 * kk));
        for (int64_t nt = 0; nt < 2; ++nt) {
          Value row = add(gl, 8 * nt);
          auto p = mmaTerms(a, bWords(s.recW(), s.kp / 2, row, 8 * kk),
                            SmallVector<Value>(pt.begin() + 4 * nt, pt.begin() + 4 * nt + 4));
          auto o = mmaTerms(a, bWords(s.recQg(), s.kp / 2, row, 8 * kk),
                            SmallVector<Value>(ot.begin() + 4 * nt, ot.begin() + 4 * nt + 4));
          if (split) // + Sᵀ_hi (Q e^G)ᵀ_lo (the lo·lo term is below f32's).
            o = mma(a[0], bWords(s.recQgLo(), s.kp / 2, row, 8 * kk), o);
          llvm::copy(p, pt.begin() + 4 * nt);
          llvm::copy(o, ot.begin() + 4 * nt);
        }
      }
      // Δᵀ = Uᵀ − Pᵀ: element e of tile nt is (value row, token 8 nt + 2t + e % 2).
      SmallVector<Value> delta;
      for (int64_t nt = 0; nt < 2; ++nt)
        for (int64_t e = 0; e < 4; ++e) {
          Value tok = add(mul(tl, 2), 8 * nt + e % 2);
          Value vv = minIdx(add(v0, stateRow(e)), idx(s.dv - 1));
          Value u = load(ws, {chunk, hh, add(add(mul(tok, s.dv), vv), s.recU())});
          delta.push_back(fsub(u, pt[4 * nt + e]));
        }
      SmallVector<SmallVector<Value>> da = terms(delta);
      // Oᵀ += Δᵀ Aqkᵀ (B[s][r] = Aqk[r][s]), then the output slice.
      for (int64_t nt = 0; nt < 2; ++nt) {
        auto o = mmaTerms(da, bWords(s.recAqk(), kChunk / 2, add(gl, 8 * nt), 0),
                          SmallVector<Value>(ot.begin() + 4 * nt, ot.begin() + 4 * nt + 4));
        llvm::copy(o, ot.begin() + 4 * nt);
      }
      Type outType = cast<MemRefType>(out.getType()).getElementType();
      for (int64_t nt = 0; nt < 2; ++nt)
        for (int64_t e = 0; e < 4; ++e) {
          Value tok = add(mul(tl, 2), 8 * nt + e % 2), vv = add(v0, stateRow(e));
          auto guard = scf::IfOp::create(b, loc, both(lt(tok, n), lt(vv, dv)), false);
          OpBuilder::InsertionGuard g2(b);
          b.setInsertionPointToStart(&guard.getThenRegion().front());
          Value o = ot[4 * nt + e];
          if (outType != o.getType())
            o = arith::TruncFOp::create(b, loc, outType, o);
          store(o, out, {add(t0, tok), hh, vv});
        }
      // Sᵀ ← Sᵀ diag(e^{G_last}) + Δᵀ KD.
      SmallVector<Value> next;
      for (int64_t j = 0; j < tiles; ++j) {
        SmallVector<Value> acc;
        for (int64_t e = 0; e < 4; ++e)
          acc.push_back(
              fmul(st[4 * j + e], load(ws, {chunk, hh, add(stateCol(j, e), s.recEgl())})));
        auto r = mmaTerms(da, bWords(s.recKd(), kChunk / 2, add(gl, 8 * j), 0), acc);
        next.append(r.begin(), r.end());
      }
      // The state after every `every` tokens and after the last one.
      if (states) {
        Value end = add(t0, kChunk);
        Value closes = arith::OrIOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rem(end, every), idx(0)),
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, end, tokens));
        auto guard = scf::IfOp::create(b, loc, closes, false);
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(&guard.getThenRegion().front());
        Value slot = div(arith::SubIOp::create(b, loc, add(t0, n), idx(1)), every);
        storeState(next, states, {slot}, hh, v0, warp, gl, tl);
      }
      scf::YieldOp::create(b, loc, next);
    }
    storeState(SmallVector<Value>(loop.getResults()), state, {}, hh, v0, warp, gl, tl);
    gpu::TerminatorOp::create(b, loc);
  }

  /// The lane's state elements into `m[lead..., h, key, value]`, where in
  /// bounds.
  void storeState(ArrayRef<Value> st, Value m, ArrayRef<Value> lead, Value hh, Value v0,
                  Value warp, Value gl, Value tl) {
    for (int64_t j = 0; j < s.kp / 8; ++j)
      for (int64_t e = 0; e < 4; ++e) {
        Value c = add(mul(tl, 2), 8 * j + e % 2);
        Value vv = add(v0, add(add(mul(warp, 16), gl), 8 * (e / 2)));
        auto guard = scf::IfOp::create(b, loc, both(lt(c, s.dk), lt(vv, s.dv)), false);
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(&guard.getThenRegion().front());
        SmallVector<Value> i(lead);
        i.append({hh, c, vv});
        store(st[4 * j + e], m, i);
      }
  }
};

struct K3GpuKdaChunksPass : k3::impl::K3GpuKdaChunksPassBase<K3GpuKdaChunksPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<k3::KdaChunksOp> work;
    getOperation()->walk([&](k3::KdaChunksOp op) { work.push_back(op); });
    for (k3::KdaChunksOp op : work) {
      auto qType = dyn_cast<MemRefType>(op.getQ().getType());
      if (!qType) {
        op.emitOpError() << "k3-gpu-kda-chunks runs after bufferization, got tensors";
        return signalPassFailure();
      }
      auto sType = cast<MemRefType>(op.getStateInit().getType());
      const int64_t h = qType.getDimSize(1), hv = sType.getDimSize(0),
                    dk = sType.getDimSize(1), dv = sType.getDimSize(2);
      if (ShapedType::isDynamic(h) || ShapedType::isDynamic(hv) || ShapedType::isDynamic(dk) ||
          ShapedType::isDynamic(dv)) {
        op.emitOpError() << "k3-gpu-kda-chunks needs static heads and head dims, got state "
                         << sType << " and q " << qType;
        return signalPassFailure();
      }
      std::string why;
      if (!k3::kdaChunksKernelFits(dk, dv, &why)) {
        op.emitOpError() << why;
        return signalPassFailure();
      }
      const Shape shape(dk, dv);
      auto wsType = cast<MemRefType>(op.getWorkspaceInit().getType());
      if (wsType.getDimSize(2) != shape.recordWords()) {
        op.emitOpError() << "workspace records have " << wsType.getDimSize(2)
                         << " words, expected " << shape.recordWords() << " for K = " << dk
                         << " and V = " << dv;
        return signalPassFailure();
      }
      OpBuilder b(op);
      Location loc = op.getLoc();
      KernelBuilder kb{{b, loc}, op, shape, hv / h, splitOperands, op.getPairwise()};
      Value one = kb.idx(1);
      Value smem = arith::ConstantIntOp::create(b, loc, b.getI32Type(), shape.bytes());
      // Kernel 1 over (chunk, value head): the chunks' records.
      Value tokens = memref::DimOp::create(b, loc, op.getQ(), 0);
      Value chunks = arith::CeilDivUIOp::create(b, loc, tokens, kb.idx(kChunk));
      auto prep = gpu::LaunchOp::create(b, loc, chunks, kb.idx(hv), one, kb.idx(kPrepThreads),
                                        one, one, smem, /*asyncTokenType=*/nullptr,
                                        ValueRange(), TypeRange());
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&prep.getBody().front());
        kb.buildPrep(prep);
      }
      // Kernel 2 over (value head, value slice): the recurrence.
      Value gy = kb.idx((dv + shape.vb - 1) / shape.vb);
      auto rec = gpu::LaunchOp::create(b, loc, kb.idx(hv), gy, one, kb.idx(shape.threads()), one,
                                       one, /*dynamicSharedMemorySize=*/nullptr,
                                       /*asyncTokenType=*/nullptr, ValueRange(), TypeRange());
      b.setInsertionPointToStart(&rec.getBody().front());
      kb.buildRecurrence(rec);
      op.erase();
    }
  }
};

} // namespace

int64_t mlir::k3::kdaChunksWorkspaceWords(int64_t dk, int64_t dv) {
  return Shape(dk, dv).recordWords();
}

bool mlir::k3::kdaChunksKernelFits(int64_t dk, int64_t dv, std::string *why) {
  if (dk < 1 || dv < 1 || dk > kMaxKeys) {
    if (why)
      *why = "k3-gpu-kda-chunks keeps the state's 1 to " + std::to_string(kMaxKeys) +
             " key channels in registers, got K = " + std::to_string(dk);
    return false;
  }
  const int64_t bytes = Shape(dk, dv).bytes();
  if (bytes > kMaxSharedBytes) {
    if (why)
      *why = "k3-gpu-kda-chunks needs " + std::to_string(bytes) + " bytes of shared memory for K = " +
             std::to_string(dk) + ", over sm_80's " + std::to_string(kMaxSharedBytes);
    return false;
  }
  return true;
}
