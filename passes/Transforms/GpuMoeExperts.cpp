//===- GpuMoeExperts.cpp - k3.moe_experts as sorted MXFP4 GEMM kernels ----===//
//
// Part of k3. Implements k3-gpu-moe-experts: a bufferized k3.moe_experts
// (the routed experts of k3.moe on MXFP4 weights) becomes three gpu.launches
// that sort the routing slots by expert on the device and run both expert
// GEMMs on mma.sync m16n8k16 (bf16 operands, f32 accumulation) with the
// weights decoded in registers (MOE_MXFP4.md §4, W4A16; §7, a ragged tile
// map). No host synchronisation: every grid is sized from T alone and the
// blocks past the routing's actual tiles exit at once.
//
//   1. sort   (grid E):  each block counts every expert's slots in shared
//      memory (shared-memory atomic adds: integer counts, the same in any
//      order; E·S reads in all, which a separate count kernel would save
//      only at the price of a launch); block e writes count[e], rowOff[e] =
//      Σ_{e' < e} count[e'] and tileOff[e], the same over ⌈count / 16⌉;
//      each thread takes a contiguous run of slots, so that one block-wide
//      scan of the run counts places e's slots in slot order:
//      sorted[rowOff[e] + i] is e's i-th slot. Block 0 zeroes the y rows of
//      slots routed outside [0, E).
//   2. GEMM1 (grid tiles × Ie/128): block i finds its expert e (the last
//      with tileOff[e] ≤ i, a binary search) and its 16 sorted rows; warp w
//      computes 16 rows × 32 columns of both halves,
//      h = glu(z[slot / k] · W1[e]ᵀ, z[slot / k] · W3[e]ᵀ) (SiTU or SwiGLU), stored by
//      sorted row.
//   3. GEMM2 (grid tiles × Dl/128): y[slot] = weight[slot] · h[row] · W2[e]ᵀ,
//      stored by slot (the routing-weight epilogue in f32).
//
// The tile count is data-dependent but at most min(T·k, ⌈T·k / 16⌉ + E):
// every tile holds a slot, and each expert wastes at most one partial tile.
//
// Operands. A 32-channel MXFP4 block of one weight row is 16 bytes; lane
// (g, t) of a warp reads word t of it (4 bytes, channels 8t .. 8t + 7) with
// the block's scale byte, and feeds its bytes to two MMA k-steps as b0, b1.
// The sum over k does not care in which k-slot a channel sits as long as A
// agrees, so k-slots 2t, 2t + 1 | 2t + 8, 2t + 9 of step 0 hold channels
// 8t .. 8t + 3 and those of step 1 channels 8t + 4 .. 8t + 7: the A
// fragment of row r is then channels 8t .. 8t + 7 of the block, read as 8
// consecutive values. One 32-bit load per lane, weight row and block; no
// shared memory and no shuffles.
//
// Decode, one byte (two codes, low nibble first) into a bf16 pair: the
// sign to bit 15 and `e1 e0 m` to bits 8..6 of each half give
// E2M1 · 2^-126 exactly (the 0.5 code as a bf16 subnormal), and a bf16x2
// multiply by 2^(s − 1) restores the bias and applies the scale exactly
// (the product has 2 significant bits). 2^(s − 1) is a finite bf16 only
// for s ≤ 128; larger scale bytes multiply twice, by 2^126 and 2^(s − 127)
// (s = 255, E8M0's NaN, as NaN). The weights are therefore exact in bf16;
// only the activations are rounded, and `split-operands` feeds them as two
// bf16 terms (hi + lo, twice the MMAs) for f32-level results.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"
#include "passes/Transforms/GpuKernelBuilder.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3GPUMOEEXPERTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

constexpr int64_t kThreads = 128;
constexpr int64_t kWarps = kThreads / 32;
// Rows of a tile (one m16 MMA) and columns of a warp (four n8 tiles).
constexpr int64_t kTileRows = 16;
constexpr int64_t kWarpTiles = 4;
constexpr int64_t kBlockCols = kWarps * kWarpTiles * 8;
// Dynamic shared memory a launch may use without cuFuncSetAttribute.
constexpr int64_t kSharedLimit = 48 * 1024;

struct KernelBuilder : k3::GpuKernelBuilder {
  k3::MoeExpertsOp op;
  int64_t experts, ie, dl, topK;
  bool split;

  Value toIndex(Value v) { return arith::IndexCastOp::create(b, loc, b.getIndexType(), v); }
  Value toI32(Value v) { return arith::IndexCastOp::create(b, loc, b.getI32Type(), v); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value shl(Value x, int64_t n) { return arith::ShLIOp::create(b, loc, x, i32(n)); }
  Value shr(Value x, int64_t n) { return arith::ShRUIOp::create(b, loc, x, i32(n)); }
  Value andI(Value x, int64_t m) { return arith::AndIOp::create(b, loc, x, i32(m)); }
  Value orI(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }

  /// `order[at]` as an index.
  Value orderAt(Value at) { return toIndex(load(op.getOrderInit(), {at})); }
  Value count(Value e) { return orderAt(e); }
  Value rowOff(Value e) { return orderAt(add(e, experts)); }
  Value tileOff(Value e) { return orderAt(add(e, 2 * experts)); }

  Value slotCount() {
    return mul(memref::DimOp::create(b, loc, op.getIndices(), 0), topK);
  }
  /// The expert of slot `s` (an index; negative ids stay negative).
  Value expertOf(Value s) {
    return toIndex(load(op.getIndices(), {div(s, topK), rem(s, topK)}));
  }
  Value validExpert(Value e) {
    Value lo = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, e, idx(0));
    return both(lo, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, e, idx(experts)));
  }

  SmallVector<Value> sharedWords(ArrayRef<int64_t> sizes) {
    return GpuKernelBuilder::sharedWords(sizes, b.getI32Type());
  }

  /// Thread 0 replaces `v[0 .. n)` by its exclusive prefix sums (i32).
  void exclusiveScan(Value tid, Value v, int64_t n) {
    when(eq(tid, idx(0)), [&] {
      loop(idx(0), idx(n), idx(1), {i32(0)}, [&](Value i, ValueRange acc) {
        Value x = load(v, {i});
        store(acc[0], v, {i});
        return SmallVector<Value>{arith::AddIOp::create(b, loc, acc[0], x)};
      });
    });
  }

  /// Σ of `v[0 .. n)` (i32), by thread 0, into `out` at `at`.
  void sumInto(Value tid, Value v, int64_t n, Value out, Value at) {
    when(eq(tid, idx(0)), [&] {
      Value s = loop(idx(0), idx(n), idx(1), {i32(0)}, [&](Value i, ValueRange acc) {
                  return SmallVector<Value>{arith::AddIOp::create(b, loc, acc[0], load(v, {i}))};
                }).front();
      store(s, out, {at});
    });
  }

  /// Kernel 1: every expert's count, the offsets and expert e's sorted
  /// slots.
  SmallVector<int64_t> sortShared() const { return {experts, kThreads, kThreads, kThreads}; }
  void buildSort(gpu::LaunchOp launch) {
    Value tid = launch.getThreadIds().x, e = launch.getBlockIds().x;
    SmallVector<Value> sh = sharedWords(sortShared());
    Value counts = sh[0], rows = sh[1], tiles = sh[2], runs = sh[3];
    Value order = op.getOrderInit();
    // Every block counts every expert's slots (an integer sum: the same in
    // any order), so that no kernel before this one has to.
    forEach(tid, idx(experts), idx(kThreads), [&](Value x) { store(i32(0), counts, {x}); });
    gpu::BarrierOp::create(b, loc);
    forEach(tid, slotCount(), idx(kThreads), [&](Value s) {
      Value x = expertOf(s);
      when(validExpert(x), [&] {
        memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi, i32(1), counts,
                                    ValueRange{x});
      });
    });
    gpu::BarrierOp::create(b, loc);
    when(eq(tid, idx(0)), [&] { store(load(counts, {e}), order, {e}); });
    // The offsets: Σ over the experts before e.
    SmallVector<Value> acc =
        loop(tid, e, idx(kThreads), {i32(0), i32(0)}, [&](Value x, ValueRange a) {
          Value c = load(counts, {x});
          Value t = arith::CeilDivUIOp::create(b, loc, c, i32(kTileRows));
          return SmallVector<Value>{arith::AddIOp::create(b, loc, a[0], c),
                                    arith::AddIOp::create(b, loc, a[1], t)};
        });
    store(acc[0], rows, {tid});
    store(acc[1], tiles, {tid});
    // Thread t's run of slots [t·L, min(S, t·L + L)), and its hits.
    Value slots = slotCount();
    Value run = arith::CeilDivUIOp::create(b, loc, slots, idx(kThreads));
    Value first = minIdx(arith::MulIOp::create(b, loc, tid, run), slots);
    Value last = minIdx(add(first, run), slots);
    Value hits = loop(first, last, idx(1), {i32(0)}, [&](Value s, ValueRange a) {
                   Value hit =
                       arith::ExtUIOp::create(b, loc, b.getI32Type(), eq(expertOf(s), e));
                   return SmallVector<Value>{arith::AddIOp::create(b, loc, a[0], hit)};
                 }).front();
    store(hits, runs, {tid});
    gpu::BarrierOp::create(b, loc);
    sumInto(tid, rows, kThreads, order, add(e, experts));
    sumInto(tid, tiles, kThreads, order, add(e, 2 * experts));
    exclusiveScan(tid, runs, kThreads);
    gpu::BarrierOp::create(b, loc);
    // The run's slots of e, in order, at rowOff[e] + (hits of earlier runs).
    Value start = add(rowOff(e), toIndex(load(runs, {tid})));
    loop(first, last, idx(1), {start}, [&](Value s, ValueRange a) {
      Value hit = eq(expertOf(s), e);
      when(hit, [&] { store(toI32(s), order, {add(a[0], 3 * experts)}); });
      return SmallVector<Value>{
          arith::SelectOp::create(b, loc, hit, add(a[0], 1), a[0]).getResult()};
    });
    // Block 0: slots routed outside [0, E) give zero rows.
    when(eq(e, idx(0)), [&] {
      loop(first, last, idx(1), {}, [&](Value s, ValueRange) {
        when(arith::XOrIOp::create(b, loc, validExpert(expertOf(s)),
                                   arith::ConstantIntOp::create(b, loc, 1, 1)),
             [&] {
               loop(idx(0), idx(dl), idx(1), {}, [&](Value m, ValueRange) {
                 store(f32(0.0), op.getYInit(), {s, m});
                 return SmallVector<Value>{};
               });
             });
        return SmallVector<Value>{};
      });
    });
    gpu::TerminatorOp::create(b, loc);
  }

  /// The block's tile: its expert (the last e with tileOff[e] ≤ i, by a
  /// binary search in ⌈log2 E⌉ steps), first sorted row and row count
  /// (≤ 0 past the routing's tiles).
  struct Tile {
    Value expert, base, rows;
  };
  Tile findTile(Value i) {
    int64_t steps = 0;
    while ((int64_t(1) << steps) < experts)
      ++steps;
    SmallVector<Value> range{idx(0), idx(experts)};
    for (int64_t s = 0; s < steps; ++s) {
      Value mid = div(add(range[0], range[1]), 2);
      Value below = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, tileOff(mid), i);
      range = {select(below, mid, range[0]), select(below, range[1], mid)};
    }
    Value e = range[0];
    Value r0 = mul(sub(i, tileOff(e)), kTileRows);
    Value rows = sub(count(e), r0);
    return {e, add(rowOff(e), r0), rows};
  }

  /// Scale byte `s` (an i32 in [0, 255]) as the two bf16x2 factors whose
  /// product is 2^(s − 1) (see the header).
  std::pair<Value, Value> scaleFactors(Value s) {
    Value small = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, s, i32(128));
    Value f1 = select(small, shl(arith::AddIOp::create(b, loc, s, i32(126)), 7), i32(253 << 7));
    Value big = select(eq(s, i32(255)), i32(0x7fc0), shl(s, 7));
    Value f2 = select(small, i32(0x3f80), big);
    auto pair = [&](Value h) { return asPair(orI(h, shl(h, 16))); };
    return {pair(f1), pair(f2)};
  }
  Value asPair(Value word) {
    // arith.bitcast keeps shapes; the LLVM dialect's reinterprets the word.
    return LLVM::BitcastOp::create(b, loc, VectorType::get({2}, b.getBF16Type()), word);
  }
  /// Byte `k` of `word` (its two E2M1 codes) as a bf16 pair, scaled.
  Value decode(Value word, int64_t k, std::pair<Value, Value> f) {
    Value x = shr(word, 8 * k);
    Value lo = orI(shl(andI(x, 0x8), 12), shl(andI(x, 0x7), 6));
    Value hi = orI(shl(andI(x, 0x80), 24), shl(andI(x, 0x70), 18));
    Value v = asPair(orI(lo, hi));
    v = arith::MulFOp::create(b, loc, v, f.first);
    v = arith::MulFOp::create(b, loc, v, f.second);
    return LLVM::BitcastOp::create(b, loc, b.getI32Type(), v);
  }

  /// The packed codes `w: [E, N, C/2]` i8 as 32-bit words.
  Value wordsOf(Value w) {
    auto type = cast<MemRefType>(w.getType());
    Value flat = memref::CollapseShapeOp::create(b, loc, w,
                                                 ArrayRef<ReassociationIndices>{{0, 1, 2}});
    return memref::ViewOp::create(
        b, loc,
        MemRefType::get({type.getNumElements() / 4}, b.getI32Type(), nullptr,
                        type.getMemorySpace()),
        flat, idx(0), ValueRange());
  }

  /// The A terms of one k-block for the lane's rows g and g + 8: `row(r, c)`
  /// is channel c of tile row r in f32; two steps of 4 words (hi, with
  /// `split` also lo).
  SmallVector<SmallVector<SmallVector<Value>>> aTerms(Value gl, Value tl, Value blk,
                                                      function_ref<Value(Value, Value)> row) {
    Value c0 = add(mul(blk, 32), mul(tl, 8));
    SmallVector<SmallVector<Value>> x(2);
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t q = 0; q < 8; ++q)
        x[h].push_back(row(add(gl, 8 * h), add(c0, q)));
    SmallVector<SmallVector<SmallVector<Value>>> steps;
    for (int64_t st = 0; st < 2; ++st) {
      // a0 (g, 2t..) a1 (g+8, 2t..) a2 (g, 2t+8..) a3 (g+8, 2t+8..).
      SmallVector<Value> vals{x[0][4 * st], x[0][4 * st + 1], x[1][4 * st], x[1][4 * st + 1],
                              x[0][4 * st + 2], x[0][4 * st + 3], x[1][4 * st + 2],
                              x[1][4 * st + 3]};
      SmallVector<SmallVector<Value>> terms(1);
      if (split)
        terms.emplace_back();
      for (size_t i = 0; i < vals.size(); i += 2) {
        terms[0].push_back(pack(vals[i], vals[i + 1]));
        if (!split)
          continue;
        auto rest = [&](Value v) {
          Value r = arith::TruncFOp::create(b, loc, b.getBF16Type(), v);
          return fsub(v, arith::ExtFOp::create(b, loc, b.getF32Type(), r));
        };
        terms[1].push_back(pack(rest(vals[i]), rest(vals[i + 1])));
      }
      steps.push_back(terms);
    }
    return steps;
  }

  /// acc (kWarpTiles n8 tiles per matrix) += A · W[e]ᵀ over one k-block,
  /// for weight rows (output columns) n0 + 8 j + g.
  void accumulate(ArrayRef<SmallVector<SmallVector<Value>>> a, Value words, Value scales,
                  Value e, int64_t n, int64_t c, Value n0, Value gl, Value tl, Value blk,
                  MutableArrayRef<Value> acc) {
    for (int64_t j = 0; j < kWarpTiles; ++j) {
      Value col = minIdx(add(add(n0, 8 * j), gl), idx(n - 1));
      Value row = add(mul(e, n), col);
      Value word = load(words, {add(add(mul(row, c / 8), mul(blk, 4)), tl)});
      Value s = load(scales, {e, col, blk});
      s = arith::BitcastOp::create(b, loc, b.getI8Type(), s);
      auto f = scaleFactors(arith::ExtUIOp::create(b, loc, b.getI32Type(), s));
      SmallVector<Value> tile(acc.begin() + 4 * j, acc.begin() + 4 * j + 4);
      for (int64_t st = 0; st < 2; ++st) {
        SmallVector<Value> bRegs{decode(word, 2 * st, f), decode(word, 2 * st + 1, f)};
        for (const SmallVector<Value> &term : a[st])
          tile = mma(term, bRegs, tile);
      }
      llvm::copy(tile, acc.begin() + 4 * j);
    }
  }

  /// β·tanh(x/β).
  Value softCap(Value x, double beta) {
    Value t = math::TanhOp::create(b, loc, arith::DivFOp::create(b, loc, x, f32(beta)));
    return fmul(t, f32(beta));
  }
  /// The GLU epilogue: SiTU-GLU, or SwiGLU (silu(g) · u) for `activation silu`.
  Value glu(Value g, Value u) {
    Value sig = arith::DivFOp::create(
        b, loc, f32(1.0), fadd(f32(1.0), math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, g))));
    if (op.getGlu() == k3::GluActivation::silu)
      return fmul(fmul(g, sig), u);
    Value gate = fmul(softCap(g, op.getBeta1()->convertToDouble()), sig);
    if (auto beta2 = op.getBeta2())
      u = softCap(u, beta2->convertToDouble());
    return fmul(gate, u);
  }

  /// Kernels 3 and 4: one 16-row tile of one expert, 128 output columns.
  void buildGemm(gpu::LaunchOp launch, bool first) {
    Value tid = launch.getThreadIds().x;
    Value warp = div(tid, 32), lane = rem(tid, 32);
    Value gl = div(lane, 4), tl = rem(lane, 4);
    Tile tile = findTile(launch.getBlockIds().x);
    Value live = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, tile.rows, idx(0));
    when(live, [&] {
      Value rows = minIdx(tile.rows, idx(kTileRows));
      Value order = op.getOrderInit();
      // Sorted row r of the tile (clamped: rows past `rows` are computed
      // but never stored; rows and columns of an MMA do not mix).
      auto sortedRow = [&](Value r) {
        return add(tile.base, minIdx(r, arith::SubIOp::create(b, loc, rows, idx(1))));
      };
      auto slotOf = [&](Value r) { return toIndex(load(order, {add(sortedRow(r), 3 * experts)})); };
      const int64_t n = first ? ie : dl, c = first ? dl : ie;
      Value n0 = add(mul(launch.getBlockIds().y, kBlockCols), mul(warp, kWarpTiles * 8));
      // Lane's two rows' sources: z's token rows, or h's sorted rows.
      // The slots of the lane's rows g and g + 8 (clamped reads), looked up
      // once for the A rows and GEMM2's epilogue.
      Value slot[2], src[2];
      for (int64_t h = 0; h < 2; ++h) {
        Value r = add(gl, 8 * h);
        slot[h] = slotOf(r);
        src[h] = first ? div(slot[h], topK) : sortedRow(r);
      }
      Value a = first ? op.getZ() : op.getHInit();
      auto row = [&](Value r, Value ch) {
        // r is gl or gl + 8: pick the matching source row.
        Value upper = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, r, idx(8));
        return toF32(load(a, {select(upper, src[1], src[0]), ch}));
      };
      const int64_t tiles = first ? 2 * kWarpTiles : kWarpTiles;
      Value w1 = wordsOf(first ? op.getW1() : op.getW2());
      Value w3 = first ? wordsOf(op.getW3()) : Value();
      Value s1 = first ? op.getS1() : op.getS2(), s3 = op.getS3();
      SmallVector<Value> init(4 * tiles, f32(0.0));
      SmallVector<Value> acc =
          loop(idx(0), idx(c / 32), idx(1), init, [&](Value blk, ValueRange in) {
            SmallVector<Value> out(in);
            auto aT = aTerms(gl, tl, blk, row);
            accumulate(aT, w1, s1, tile.expert, n, c, n0, gl, tl, blk,
                       MutableArrayRef<Value>(out).take_front(4 * kWarpTiles));
            if (first)
              accumulate(aT, w3, s3, tile.expert, n, c, n0, gl, tl, blk,
                         MutableArrayRef<Value>(out).drop_front(4 * kWarpTiles));
            return out;
          });
      // GEMM2's routing weights of the lane's two rows.
      Value weight[2];
      for (int64_t h = 0; h < 2 && !first; ++h)
        weight[h] = load(op.getWeights(), {div(slot[h], topK), rem(slot[h], topK)});
      // The epilogue: element q of tile j is (row g + 8 (q / 2), column
      // n0 + 8 j + 2 t + q % 2).
      for (int64_t j = 0; j < kWarpTiles; ++j)
        for (int64_t q = 0; q < 4; ++q) {
          Value r = add(gl, 8 * (q / 2));
          Value col = add(add(n0, 8 * j), add(mul(tl, 2), q % 2));
          when(both(lt(r, rows), lt(col, n)), [&] {
            Value v = acc[4 * j + q];
            if (first) {
              store(glu(v, acc[4 * (kWarpTiles + j) + q]), op.getHInit(),
                    {sortedRow(r), col});
              return;
            }
            store(fmul(weight[q / 2], v), op.getYInit(), {slot[q / 2], col});
          });
        }
    });
    gpu::TerminatorOp::create(b, loc);
  }
};

struct K3GpuMoeExpertsPass : k3::impl::K3GpuMoeExpertsPassBase<K3GpuMoeExpertsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<k3::MoeExpertsOp> work;
    getOperation()->walk([&](k3::MoeExpertsOp op) { work.push_back(op); });
    for (k3::MoeExpertsOp op : work) {
      auto zType = dyn_cast<MemRefType>(op.getZ().getType());
      if (!zType) {
        op.emitOpError() << "k3-gpu-moe-experts runs after bufferization, got tensors";
        return signalPassFailure();
      }
      auto w1Type = cast<MemRefType>(op.getW1().getType());
      auto w2Type = cast<MemRefType>(op.getW2().getType());
      auto idsType = cast<MemRefType>(op.getIndices().getType());
      if (!w1Type.hasStaticShape() || !w2Type.hasStaticShape() ||
          !cast<MemRefType>(op.getW3().getType()).hasStaticShape() || idsType.isDynamicDim(1)) {
        op.emitOpError() << "k3-gpu-moe-experts needs static expert shapes and top-k, got w1 "
                         << w1Type << ", w3 " << op.getW3().getType() << ", w2 " << w2Type
                         << " and indices " << idsType;
        return signalPassFailure();
      }
      for (Value w : {op.getW1(), op.getW3(), op.getW2()})
        if (!cast<MemRefType>(w.getType()).getLayout().isIdentity()) {
          op.emitOpError() << "k3-gpu-moe-experts reads the codes as 32-bit words and needs "
                              "contiguous expert buffers, got "
                           << w.getType();
          return signalPassFailure();
        }
      // The sort counts every expert in shared memory: E + 3·128 words
      // within the 48 KiB a launch gets without opting in (E ≤ 11904).
      const int64_t sortBytes = 4 * (w1Type.getDimSize(0) + 3 * kThreads);
      if (sortBytes > kSharedLimit) {
        op.emitOpError() << "k3-gpu-moe-experts counts the experts in shared memory: "
                         << w1Type.getDimSize(0) << " experts need " << sortBytes
                         << " bytes, over " << kSharedLimit;
        return signalPassFailure();
      }
      OpBuilder b(op);
      Location loc = op.getLoc();
      KernelBuilder kb{{b, loc}, op, w1Type.getDimSize(0), w1Type.getDimSize(1),
                       w2Type.getDimSize(1), idsType.getDimSize(1), splitOperands};
      Value one = kb.idx(1);
      auto launch = [&](Value gx, Value gy, int64_t smem) {
        Value bytes = smem ? Value(arith::ConstantIntOp::create(b, loc, b.getI32Type(), smem))
                           : Value();
        return gpu::LaunchOp::create(b, loc, gx, gy, one, kb.idx(kThreads), one, one, bytes,
                                     /*asyncTokenType=*/nullptr, ValueRange(), TypeRange());
      };
      auto build = [&](gpu::LaunchOp l, function_ref<void(gpu::LaunchOp)> body) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&l.getBody().front());
        body(l);
      };
      Value e = kb.idx(kb.experts);
      build(launch(e, one, KernelBuilder::sharedBytes(kb.sortShared())),
            [&](gpu::LaunchOp l) { kb.buildSort(l); });
      Value slots = kb.slotCount();
      Value tiles = kb.minIdx(
          slots, kb.add(arith::CeilDivUIOp::create(b, loc, slots, kb.idx(kTileRows)), e));
      auto columnBlocks = [&](int64_t n) { return kb.idx((n + kBlockCols - 1) / kBlockCols); };
      build(launch(tiles, columnBlocks(kb.ie), 0),
            [&](gpu::LaunchOp l) { kb.buildGemm(l, /*first=*/true); });
      build(launch(tiles, columnBlocks(kb.dl), 0),
            [&](gpu::LaunchOp l) { kb.buildGemm(l, /*first=*/false); });
      op.erase();
    }
  }
};

} // namespace
