//===- GpuAttendParts.cpp - k3.attend_parts as one split-K kernel ---------===//
//
// Part of k3. Implements k3-gpu-attend-parts: a bufferized k3.attend_parts
// becomes one gpu.launch of 8 warps per (part, 64 query rows), flash
// decoding on mma.sync m16n8k16 (the fragment layouts are those of
// GpuMmaContractions.cpp's header). Shared memory, in 32-bit words:
//
//   Q  [64][qw]  the block's query rows as bf16 pairs (zero past M and D)
//   K  [16][qw]  the tile's key rows as bf16 (zero past the part and D)
//   P  [64][12]  the tile's probabilities as bf16 pairs
//   S  [64][17]  the tile's scores, f32
//   A  [64]      each row's rescale factor e^{m_old − m_new}, f32
//
// Row pitches are padded so that a fragment load (lanes g = 0..7 on rows,
// t = 0..3 on words) touches 32 distinct banks: qw ≡ 4 (mod 32), P's 12
// words, S's 17 floats (one thread per row reads its whole row).
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"
#include "passes/Transforms/GpuKernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

namespace mlir::k3 {
#define GEN_PASS_DEF_K3GPUATTENDPARTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

constexpr int64_t kRows = 64;   // query rows per block: 4 m16 tiles
constexpr int64_t kKeys = 16;   // keys per tile: one k16 step of P · V
constexpr int64_t kWarps = 8;   // the 8 (m16, n8) blocks of a 64 x 16 score tile
constexpr int64_t kThreads = kWarps * 32;
constexpr int64_t kPWords = 12; // a P row: 8 words of data, 4 of padding
constexpr int64_t kSPitch = 17; // an S row: 16 floats, 1 of padding
constexpr int64_t kMaxValues = 512;
// sm_80's largest dynamic shared memory per block (sm_90: 227 KiB).
constexpr int64_t kMaxSharedBytes = 163 * 1024;

/// Shared memory words per row of Q and K for rows of `d` values: ≡ 4
/// (mod 32), so that the 8 rows of a fragment load fall on 8 disjoint
/// groups of 4 banks.
int64_t rowWords(int64_t d) {
  const int64_t dp = (d + 15) / 16 * 16;
  return dp / 2 + ((4 - (dp / 2) % 32) + 32) % 32;
}

int64_t sharedBytes(int64_t d) {
  return (kRows * rowWords(d) + kKeys * rowWords(d) + kRows * kPWords + kRows * kSPitch + kRows) *
         4;
}

struct KernelBuilder : k3::GpuKernelBuilder {
  k3::AttendPartsOp op;
  int64_t d, dp, qw, l;
  /// Elements per key-row load: 8 (16-byte vectors of bf16) or 2 (a pair).
  int64_t width;

  Type unitType() {
    return width == 8 ? Type(VectorType::get({8}, b.getBF16Type())) : b.getI32Type();
  }
  int64_t unitsPerRow() const { return dp / width; }
  int64_t unitsPerThread() const {
    return (kKeys * unitsPerRow() + kThreads - 1) / kThreads;
  }

  /// Thread `tid`'s units of the key tile starting at `first` (keys past
  /// `end` and columns past D are zero), loaded from `rows` in registers:
  /// 16-byte vectors of 8 bf16, or else pairs rounded to bf16 and packed in
  /// a word (one register per pair: element units would spill next to the
  /// 128 accumulators).
  SmallVector<Value> loadTile(Value rows, Value first, Value end, Value keys, Value tid) {
    SmallVector<Value> units;
    Type unit = unitType();
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(unit));
    Value lastKey = arith::SubIOp::create(b, loc, arith::MaxUIOp::create(b, loc, keys, idx(1)),
                                          idx(1));
    for (int64_t i = 0; i < unitsPerThread(); ++i) {
      Value e = add(tid, i * kThreads);
      Value r = div(e, unitsPerRow()), col = mul(rem(e, unitsPerRow()), width);
      Value key = add(first, r);
      Value ok = both(lt(e, kKeys * unitsPerRow()), lt(key, end));
      // Clamped indices: every load reads inside `rows`; the select
      // replaces what lies outside the tile.
      Value k = minIdx(key, lastKey);
      if (width == 8) {
        // 16-byte aligned: D and the row stride are multiples of 8 (checked
        // in `vectorWidth`), the buffers' bases are allocations.
        Value v = vector::LoadOp::create(b, loc, cast<VectorType>(unit), rows,
                                         ValueRange{k, minIdx(col, idx(d - 8))},
                                         /*nontemporal=*/false, llvm::MaybeAlign(16));
        units.push_back(arith::SelectOp::create(b, loc, both(ok, lt(col, d)), v, zero));
        continue;
      }
      auto element = [&](Value c) {
        Value v = load(rows, {k, minIdx(c, idx(d - 1))});
        if (!v.getType().isF32())
          v = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
        return arith::SelectOp::create(b, loc, both(ok, lt(c, d)), v, f32(0.0)).getResult();
      };
      units.push_back(pack(element(col), element(add(col, 1))));
    }
    return units;
  }

  /// Stores thread `tid`'s units into the K tile (pitch qw words).
  void storeTile(ArrayRef<Value> units, Value kWords, Value kBf16, Value tid) {
    for (auto [i, v] : llvm::enumerate(units)) {
      Value e = add(tid, int64_t(i) * kThreads);
      Value r = div(e, unitsPerRow()), u = rem(e, unitsPerRow());
      auto body = [&] {
        if (width == 8)
          vector::StoreOp::create(b, loc, v, kBf16, ValueRange{add(mul(r, 2 * qw), mul(u, 8))},
                                  /*nontemporal=*/false, llvm::MaybeAlign(16));
        else
          store(v, kWords, {add(mul(r, qw), u)});
      };
      if ((int64_t(i) + 1) * kThreads <= kKeys * unitsPerRow()) {
        body();
        continue;
      }
      auto guard = scf::IfOp::create(b, loc, lt(e, kKeys * unitsPerRow()), false);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&guard.getThenRegion().front());
      body();
    }
  }

  void build(gpu::LaunchOp launch, Value keys, Value rowsM) {
    Value q = op.getQ(), rows = op.getRows();
    Value tid = launch.getThreadIds().x;
    Value warp = div(tid, 32), lane = rem(tid, 32);
    Value g = div(lane, 4), t = rem(lane, 4);
    Value part = launch.getBlockIds().x;
    Value m0 = mul(launch.getBlockIds().y, kRows);
    Value start = mul(part, op.getPartKeys());
    Value end = minIdx(add(start, op.getPartKeys()), keys);

    // Views of the dynamic shared memory (byte offsets, all multiples of 16).
    auto wg = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
    Value base = gpu::DynamicSharedMemoryOp::create(
        b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), nullptr, wg));
    int64_t offset = 0;
    auto view = [&](Type element, int64_t count) {
      return memref::ViewOp::create(b, loc, MemRefType::get({count}, element, nullptr, wg),
                                    base, idx(offset), ValueRange())
          .getResult();
    };
    Type i32 = b.getI32Type(), f32Type = b.getF32Type();
    Value qs = view(i32, kRows * qw);
    offset += kRows * qw * 4;
    Value ks = view(i32, kKeys * qw), kb = view(b.getBF16Type(), kKeys * qw * 2);
    offset += kKeys * qw * 4;
    Value ps = view(i32, kRows * kPWords);
    offset += kRows * kPWords * 4;
    Value ss = view(f32Type, kRows * kSPitch);
    offset += kRows * kSPitch * 4;
    Value as = view(f32Type, kRows);

    // The block's query rows, as bf16 pairs.
    {
      auto loop = scf::ForOp::create(b, loc, tid, idx(kRows * qw), idx(kThreads));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value e = loop.getInductionVar();
      Value r = div(e, qw), c = mul(rem(e, qw), 2);
      Value row = add(m0, r);
      Value lastRow = arith::SubIOp::create(
          b, loc, arith::MaxUIOp::create(b, loc, rowsM, idx(1)), idx(1));
      Value rc = minIdx(row, lastRow);
      auto element = [&](Value col) {
        Value ok = both(lt(row, rowsM), lt(col, d));
        // q_scale before the bf16 rounding, as the scaling kernel did.
        Value v = scaledBy(load(q, {rc, minIdx(col, idx(d - 1))}), op.getQScale());
        return arith::SelectOp::create(b, loc, ok, v, f32(0.0)).getResult();
      };
      store(pack(element(c), element(add(c, 1))), qs, {e});
    }

    const int64_t nTiles = (l + 7) / 8, tilesPerWarp = (nTiles + kWarps - 1) / kWarps;
    SmallVector<Value> init{f32(-std::numeric_limits<float>::infinity()), f32(0.0)};
    for (int64_t i = 0; i < 4 * tilesPerWarp * 4; ++i)
      init.push_back(f32(0.0));
    // The vector path carries the next tile in 5 x 4 registers (K3's
    // rows); the pair path (f32 or odd rows) would carry more, spilling
    // next to the accumulators, and loads each tile when it is needed.
    const bool prefetch = width == 8;
    if (prefetch) {
      SmallVector<Value> first = loadTile(rows, start, end, keys, tid);
      init.append(first.begin(), first.end());
    }
    const size_t accAt = 2, unitsAt = 2 + 4 * tilesPerWarp * 4;

    auto loop = scf::ForOp::create(b, loc, start, end, idx(kKeys), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value k0 = loop.getInductionVar();
      ValueRange carried = loop.getRegionIterArgs();
      // The previous tile's P · V has read K and P in every warp.
      gpu::BarrierOp::create(b, loc);
      storeTile(prefetch ? SmallVector<Value>(carried.drop_front(unitsAt))
                         : loadTile(rows, k0, end, keys, tid),
                ks, kb, tid);
      gpu::BarrierOp::create(b, loc);
      // The next tile's loads are in flight during this tile's math.
      SmallVector<Value> next;
      if (prefetch)
        next = loadTile(rows, add(k0, kKeys), end, keys, tid);

      // Scores: warp w computes rows 16 (w / 2) .., keys 8 (w % 2) ..
      {
        Value mi = div(warp, 2), nj = rem(warp, 2);
        Value rLo = add(mul(mi, 16), g), rHi = add(rLo, 8), key = add(mul(nj, 8), g);
        auto steps = scf::ForOp::create(b, loc, idx(0), idx(dp / 2), idx(8),
                                        ValueRange{f32(0.0), f32(0.0), f32(0.0), f32(0.0)});
        {
          OpBuilder::InsertionGuard g2(b);
          b.setInsertionPointToStart(steps.getBody());
          Value w = add(steps.getInductionVar(), t);
          auto qAt = [&](Value r, int64_t dw) { return load(qs, {add(add(mul(r, qw), w), dw)}); };
          Value kAt = add(mul(key, qw), w);
          SmallVector<Value> a{qAt(rLo, 0), qAt(rHi, 0), qAt(rLo, 4), qAt(rHi, 4)};
          SmallVector<Value> bRegs{load(ks, {kAt}), load(ks, {add(kAt, 4)})};
          scf::YieldOp::create(b, loc, mma(a, bRegs, steps.getRegionIterArgs()));
        }
        Value col = add(mul(nj, 8), mul(t, 2));
        for (int64_t e = 0; e < 4; ++e)
          store(steps.getResult(e), ss,
                {add(mul(e < 2 ? rLo : rHi, kSPitch), add(col, e % 2))});
      }
      gpu::BarrierOp::create(b, loc);

      // Online softmax, one thread per row: the new max, the rescale of
      // what came before, the tile's probabilities (0 past the part).
      Value mOld = carried[0], lOld = carried[1];
      auto rowIf = scf::IfOp::create(b, loc, TypeRange{f32Type, f32Type}, lt(tid, kRows), true);
      {
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(&rowIf.getThenRegion().front());
        Value negInf = f32(-std::numeric_limits<float>::infinity());
        SmallVector<Value> s, valid;
        Value tileMax = negInf;
        for (int64_t c = 0; c < kKeys; ++c) {
          valid.push_back(lt(add(k0, c), end));
          s.push_back(load(ss, {add(mul(tid, kSPitch), c)}));
          tileMax = arith::MaximumFOp::create(
              b, loc, tileMax, arith::SelectOp::create(b, loc, valid.back(), s.back(), negInf));
        }
        // The tile's first key is in the part: mNew is finite, and the
        // first tile's alpha is e^{−inf} = 0.
        Value mNew = arith::MaximumFOp::create(b, loc, mOld, tileMax);
        Value alpha = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, mOld, mNew));
        Value lNew = arith::MulFOp::create(b, loc, lOld, alpha);
        SmallVector<Value> p;
        for (int64_t c = 0; c < kKeys; ++c) {
          Value e = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, s[c], mNew));
          p.push_back(arith::SelectOp::create(b, loc, valid[c], e, f32(0.0)));
          lNew = arith::AddFOp::create(b, loc, lNew, p.back());
        }
        for (int64_t w = 0; w < kKeys / 2; ++w)
          store(pack(p[2 * w], p[2 * w + 1]), ps, {add(mul(tid, kPWords), w)});
        store(alpha, as, {tid});
        scf::YieldOp::create(b, loc, ValueRange{mNew, lNew});
        b.setInsertionPointToStart(&rowIf.getElseRegion().front());
        scf::YieldOp::create(b, loc, ValueRange{mOld, lOld});
      }
      gpu::BarrierOp::create(b, loc);

      // O += P · V: warp w's n8 tiles are w, w + 8, ...; each accumulator
      // first rescaled by its row's alpha.
      SmallVector<Value> yields{rowIf.getResult(0), rowIf.getResult(1)};
      SmallVector<Value> acc(carried.slice(accAt, 4 * tilesPerWarp * 4));
      for (int64_t mi = 0; mi < 4; ++mi) {
        Value rLo = add(g, mi * 16), rHi = add(rLo, 8);
        Value aLo = load(as, {rLo}), aHi = load(as, {rHi});
        auto pAt = [&](Value r, int64_t dw) {
          return load(ps, {add(add(mul(r, kPWords), t), dw)});
        };
        SmallVector<Value> a{pAt(rLo, 0), pAt(rHi, 0), pAt(rLo, 4), pAt(rHi, 4)};
        for (int64_t j = 0; j < tilesPerWarp; ++j) {
          // Columns past L (and past the padded row) are clamped: their
          // accumulators are never stored.
          Value col = minIdx(add(mul(add(warp, j * kWarps), 8), g), idx(dp - 1));
          auto vAt = [&](Value key) { return load(kb, {add(mul(key, 2 * qw), col)}); };
          Value key = mul(t, 2);
          SmallVector<Value> bRegs{packBf16(vAt(key), vAt(add(key, 1))),
                                   packBf16(vAt(add(key, 8)), vAt(add(key, 9)))};
          size_t at = (mi * tilesPerWarp + j) * 4;
          SmallVector<Value> c;
          for (int64_t e = 0; e < 4; ++e)
            c.push_back(arith::MulFOp::create(b, loc, acc[at + e], e < 2 ? aLo : aHi));
          SmallVector<Value> r = mma(a, bRegs, c);
          llvm::copy(r, acc.begin() + at);
        }
      }
      yields.append(acc.begin(), acc.end());
      yields.append(next.begin(), next.end());
      scf::YieldOp::create(b, loc, yields);
    }

    // The part's unnormalised output, max and sum, where in bounds.
    Value u = op.getUInit();
    for (int64_t mi = 0; mi < 4; ++mi)
      for (int64_t j = 0; j < tilesPerWarp; ++j)
        for (int64_t e = 0; e < 4; ++e) {
          Value row = add(add(m0, mi * 16 + 8 * (e / 2)), g);
          Value col = add(add(mul(add(warp, j * kWarps), 8), mul(t, 2)), e % 2);
          auto guard = scf::IfOp::create(b, loc, both(lt(row, rowsM), lt(col, l)), false);
          OpBuilder::InsertionGuard g2(b);
          b.setInsertionPointToStart(&guard.getThenRegion().front());
          store(loop.getResult(accAt + (mi * tilesPerWarp + j) * 4 + e), u, {row, part, col});
        }
    {
      Value row = add(m0, tid);
      auto guard = scf::IfOp::create(b, loc, both(lt(tid, kRows), lt(row, rowsM)), false);
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(&guard.getThenRegion().front());
      store(loop.getResult(0), op.getMaxInit(), {row, part});
      store(loop.getResult(1), op.getSumInit(), {row, part});
    }
    gpu::TerminatorOp::create(b, loc);
  }
};

/// 8 when the rows are bf16 with D and the row stride multiples of 8 and a
/// unit innermost stride (16-byte vector loads stay aligned), else 2.
int64_t vectorWidth(MemRefType rows, int64_t d) {
  if (!rows.getElementType().isBF16() || d % 8 != 0)
    return 2;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(rows.getStridesAndOffset(strides, offset)) || strides.size() != 2 ||
      strides[1] != 1 || ShapedType::isDynamic(strides[0]) || strides[0] % 8 != 0 ||
      ShapedType::isDynamic(offset) || offset % 8 != 0)
    return 2;
  return 8;
}

struct K3GpuAttendPartsPass : k3::impl::K3GpuAttendPartsPassBase<K3GpuAttendPartsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<k3::AttendPartsOp> work;
    getOperation()->walk([&](k3::AttendPartsOp op) { work.push_back(op); });
    for (k3::AttendPartsOp op : work) {
      auto qType = dyn_cast<MemRefType>(op.getQ().getType());
      auto uType = dyn_cast<MemRefType>(op.getUInit().getType());
      if (!qType) {
        op.emitOpError() << "k3-gpu-attend-parts runs after bufferization, got tensors";
        return signalPassFailure();
      }
      int64_t d = qType.getDimSize(1), l = uType.getDimSize(2);
      if (ShapedType::isDynamic(d) || ShapedType::isDynamic(l)) {
        op.emitOpError() << "k3-gpu-attend-parts needs static row and value widths, got D = "
                         << (ShapedType::isDynamic(d) ? "?" : std::to_string(d))
                         << " and L = " << (ShapedType::isDynamic(l) ? "?" : std::to_string(l));
        return signalPassFailure();
      }
      std::string why;
      if (!k3::attendPartsKernelFits(d, l, &why)) {
        op.emitOpError() << why;
        return signalPassFailure();
      }
      OpBuilder b(op);
      Location loc = op.getLoc();
      KernelBuilder kb{{b, loc}, op, d, (d + 15) / 16 * 16, rowWords(d), l,
                       vectorWidth(cast<MemRefType>(op.getRows().getType()), d)};
      const int64_t bytes = sharedBytes(d);
      Value keys = memref::DimOp::create(b, loc, op.getRows(), 0);
      Value rowsM = memref::DimOp::create(b, loc, op.getQ(), 0);
      Value parts = memref::DimOp::create(b, loc, op.getMaxInit(), 1);
      Value gy = arith::CeilDivUIOp::create(b, loc, rowsM, kb.idx(kRows));
      Value one = kb.idx(1);
      Value smem = arith::ConstantIntOp::create(b, loc, b.getI32Type(), bytes);
      auto launch = gpu::LaunchOp::create(b, loc, parts, gy, one, kb.idx(kThreads), one, one,
                                          smem, /*asyncTokenType=*/nullptr, ValueRange(),
                                          TypeRange());
      b.setInsertionPointToStart(&launch.getBody().front());
      kb.build(launch, keys, rowsM);
      op.erase();
    }
  }
};

} // namespace

bool mlir::k3::attendPartsKernelFits(int64_t d, int64_t l, std::string *why) {
  // 64 rows x ⌈L/8⌉ n8 tiles over 8 warps: 4 f32 per tile and lane. At
  // L = 512 that is 128 accumulators, next to about 100 other registers.
  if (l > kMaxValues) {
    if (why)
      *why = "k3-gpu-attend-parts keeps at most " + std::to_string(kMaxValues) +
             " value columns in registers, got L = " + std::to_string(l);
    return false;
  }
  // Rows not a multiple of 8 wide load pairs; with the addresses of 19
  // pairs per thread next to 128 accumulators ptxas spills (148 bytes at
  // D = 578, L = 512; f32 rows of 576 fit).
  if (d % 8 != 0 && l > kMaxValues / 2) {
    if (why)
      *why = "k3-gpu-attend-parts needs rows a multiple of 8 wide for more than " +
             std::to_string(kMaxValues / 2) + " value columns, got D = " + std::to_string(d) +
             " and L = " + std::to_string(l);
    return false;
  }
  if (sharedBytes(d) > kMaxSharedBytes) {
    if (why)
      *why = "k3-gpu-attend-parts needs " + std::to_string(sharedBytes(d)) +
             " bytes of shared memory for rows of D = " + std::to_string(d) + ", over sm_80's " +
             std::to_string(kMaxSharedBytes);
    return false;
  }
  return true;
}
