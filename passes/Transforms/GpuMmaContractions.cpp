//===- GpuMmaContractions.cpp - Contractions on tensor cores --------------===//
//
// Part of k3. Implements k3-gpu-mma-contractions: an f32-accumulated
// linalg.generic contraction becomes a gpu.launch of warps issuing
// nvvm.mma.sync m16n8k16 with bf16 operands (sm_80+), or, with `wgmma`
// (sm_90a), of one warpgroup issuing nvvm.wgmma.mma_async m64n128k16 on
// bf16 tiles staged in shared memory (see buildWgmma).
//
// Fragment layout of mma.m16n8k16 (PTX ISA, "Matrix Fragments for
// mma.m16n8k16"), with g = lane / 4 and t = lane % 4:
//   A (16 x 16, row): a0,a1 = (g, 2t..2t+1), a2,a3 = (g+8, 2t..), a4,a5 =
//     (g, 2t+8..), a6,a7 = (g+8, 2t+8..); one 32-bit register per pair.
//   B (16 x 8, col):  b0,b1 = (k 2t..2t+1, n g), b2,b3 = (k 2t+8.., n g).
//   C (16 x 8, f32):  c0,c1 = (g, 2t..2t+1), c2,c3 = (g+8, 2t..).
// The lower k (or column) of a pair sits in the register's low half.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/Transforms/BufferRoot.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#define DEBUG_TYPE "k3-gpu-mma-contractions"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3GPUMMACONTRACTIONSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

constexpr int64_t kWarps = 4;       // per block, side by side along n
constexpr int64_t kTilesPerWarp = 4; // m16n8 accumulators per warp: 16 x 32
constexpr int64_t kBlockN = kWarps * kTilesPerWarp * 8;
// sm_90a: the 4 warps form one warpgroup computing 64 x kBlockN of C with
// wgmma m64n128k16; each stage copies 64 k of A and B to shared memory.
constexpr int64_t kWgRows = 64;
constexpr int64_t kStageK = 64;
// With wgmma, contractions whose m is static and at most this stay on
// mma.sync (16-row tiles).
constexpr int64_t kMaxMmaSyncRows = 16;

/// A contraction C[..., m, n] += cvt(A) * cvt(B) on memrefs. The tile's
/// rows and columns are one m and one n dimension; every other parallel
/// dimension (batch dimensions, further m or n ones) is enumerated by
/// blockIdx.x after the column tiles.
struct Contraction {
  unsigned m, n, k;
  SmallVector<unsigned> z;
  OpOperand *a, *b, *c;
};

/// Of several m (or n) dimensions, the tile takes a dynamic one (the token
/// count) or else the largest; the others go to blockIdx.x (see build).
unsigned pickTileDim(linalg::GenericOp op, ArrayRef<unsigned> dims, SmallVector<unsigned> &z) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned best = dims[0];
  for (unsigned d : dims)
    if (ShapedType::isDynamic(ranges[d]) ||
        (!ShapedType::isDynamic(ranges[best]) && ranges[d] > ranges[best]))
      best = d;
  for (unsigned d : dims)
    if (d != best)
      z.push_back(d);
  return best;
}

/// f32 rounds to bf16 at the tensor cores' inputs (the GPU path's bf16
/// numerics); f16 would lose mantissa bits to bf16, so it is left alone.
bool isMmaElement(Type t) { return t.isF32() || t.isBF16(); }

/// The block argument `v` is, looking through one arith.extf.
BlockArgument argThroughExt(Value v) {
  if (auto ext = v.getDefiningOp<arith::ExtFOp>())
    v = ext.getIn();
  return dyn_cast<BlockArgument>(v);
}

std::optional<Contraction> match(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return std::nullopt;
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation())
      return std::nullopt;
  auto cType = dyn_cast<MemRefType>(op.getDpsInitOperand(0)->get().getType());
  if (!cType || !cType.getElementType().isF32())
    return std::nullopt;
  for (OpOperand *in : op.getDpsInputOperands()) {
    auto t = dyn_cast<MemRefType>(in->get().getType());
    if (!t || !isMmaElement(t.getElementType()))
      return std::nullopt;
  }
  // Body: yield(out + cvt(in0) * cvt(in1)), in either operand order.
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!add || body.getOperations().size() > 5)
    return std::nullopt;
  Value out = body.getArgument(2), product;
  if (add.getLhs() == out)
    product = add.getRhs();
  else if (add.getRhs() == out)
    product = add.getLhs();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul)
    return std::nullopt;
  BlockArgument x = argThroughExt(mul.getLhs()), y = argThroughExt(mul.getRhs());
  if (!x || !y || x.getOwner() != &body || y.getOwner() != &body || x.getArgNumber() > 1 ||
      y.getArgNumber() > 1 || x.getArgNumber() == y.getArgNumber())
    return std::nullopt;

  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(cast<linalg::LinalgOp>(op.getOperation()));
  // Every loop classified (a parallel loop in C alone, or in A and B but not
  // C, is none of batch, m, n, k), and the reduction loop not in C's map.
  if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.size() != 1 ||
      op.getNumReductionLoops() != 1 ||
      dims->batch.size() + dims->m.size() + dims->n.size() + dims->k.size() !=
          op.getNumLoops() ||
      op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isFunctionOfDim(dims->k[0]))
    return std::nullopt;
  Contraction c;
  c.z.assign(dims->batch.begin(), dims->batch.end());
  c.m = pickTileDim(op, SmallVector<unsigned>(dims->m.begin(), dims->m.end()), c.z);
  c.n = pickTileDim(op, SmallVector<unsigned>(dims->n.begin(), dims->n.end()), c.z);
  c.k = dims->k[0];
  auto uses = [&](OpOperand *operand, unsigned d) {
    return op.getMatchingIndexingMap(operand).isFunctionOfDim(d);
  };
  OpOperand *in0 = op.getDpsInputOperand(0), *in1 = op.getDpsInputOperand(1);
  c.a = uses(in0, c.m) ? in0 : in1;
  c.b = c.a == in0 ? in1 : in0;
  c.c = op.getDpsInitOperand(0);
  if (!uses(c.a, c.m) || !uses(c.a, c.k) || uses(c.a, c.n) || !uses(c.b, c.n) ||
      !uses(c.b, c.k) || uses(c.b, c.m))
    return std::nullopt;
  return c;
}

/// Builds the kernel body of one contraction inside a gpu.launch.
struct KernelBuilder {
  OpBuilder &b;
  Location loc;
  linalg::GenericOp op;
  const Contraction &c;
  SmallVector<Value> sizes; ///< loop extents, by loop dimension
  /// C holds zeros (its fill was dropped): start from zero accumulators and
  /// store without reading C.
  bool zeroInit = false;
  /// The elementwise ops that read C next (epilogueOf): their bodies run
  /// on each result instead of a store of C, into their outputs.
  SmallVector<linalg::GenericOp> epilogues;

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t y) { return y ? add(x, idx(y)) : x; }

  /// The indices of `operand` at loop values `ivs` and whether all are in
  /// bounds; out-of-bounds indices are clamped to the last element.
  std::pair<SmallVector<Value>, Value> indices(OpOperand *operand, ArrayRef<Value> ivs,
                                               bool clamp) {
    AffineMap map = op.getMatchingIndexingMap(operand);
    SmallVector<Value> result;
    Value inBounds = arith::ConstantIntOp::create(b, loc, 1, 1);
    for (AffineExpr e : map.getResults()) {
      unsigned d = cast<AffineDimExpr>(e).getPosition();
      Value i = ivs[d], size = sizes[d];
      Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, i, size);
      inBounds = arith::AndIOp::create(b, loc, inBounds, ok);
      if (clamp) {
        Value last = arith::SubIOp::create(b, loc, arith::MaxUIOp::create(b, loc, size, idx(1)),
                                           idx(1));
        i = arith::MinUIOp::create(b, loc, i, last);
      }
      result.push_back(i);
    }
    return {result, inBounds};
  }

  /// The result `v` of C's element at `cIndex` (in bounds): stored into C,
  /// or through each epilogue's body into its output.
  void storeResult(ArrayRef<Value> cIndex, Value v) {
    if (epilogues.empty())
      memref::StoreOp::create(b, loc, v, c.c->get(), cIndex);
    for (linalg::GenericOp e : epilogues)
      runEpilogue(e, cIndex, v);
  }
  void runEpilogue(linalg::GenericOp e, ArrayRef<Value> cIndex, Value v) {
    OpOperand *cIn = nullptr;
    for (OpOperand *in : e.getDpsInputOperands())
      if (in->get() == c.c->get())
        cIn = in;
    // The epilogue's loop values: its C map is a permutation of them.
    AffineMap cMap = e.getMatchingIndexingMap(cIn);
    SmallVector<Value> loops(e.getNumLoops());
    for (unsigned p = 0; p < cMap.getNumResults(); ++p)
      loops[cMap.getDimPosition(p)] = cIndex[p];
    auto at = [&](OpOperand *operand) {
      SmallVector<Value> index;
      for (AffineExpr d : e.getMatchingIndexingMap(operand).getResults())
        index.push_back(loops[cast<AffineDimExpr>(d).getPosition()]);
      return index;
    };
    Block &body = e.getRegion().front();
    IRMapping map;
    for (OpOperand *in : e.getDpsInputOperands()) {
      Value arg = body.getArgument(in->getOperandNumber());
      if (in == cIn)
        map.map(arg, v);
      else if (isa<MemRefType>(in->get().getType()))
        map.map(arg, memref::LoadOp::create(b, loc, in->get(), at(in)).getResult());
      else
        map.map(arg, in->get()); // a scalar input
    }
    for (Operation &op : body.without_terminator()) {
      // linalg.index needs its linalg op: the loop value it names.
      if (auto index = dyn_cast<linalg::IndexOp>(op))
        map.map(index.getResult(), loops[index.getDim()]);
      else
        b.clone(op, map);
    }
    Value y = map.lookupOrDefault(cast<linalg::YieldOp>(body.getTerminator()).getValues()[0]);
    OpOperand *out = e.getDpsInitOperand(0);
    memref::StoreOp::create(b, loc, y, out->get(), at(out));
  }

  /// One element of A or B rounded to bf16 (0 outside the operand).
  Value loadBf16(OpOperand *operand, ArrayRef<Value> ivs) {
    auto [index, inBounds] = indices(operand, ivs, /*clamp=*/true);
    Value v = memref::LoadOp::create(b, loc, operand->get(), index);
    Type bf16 = b.getBF16Type();
    if (!v.getType().isBF16())
      v = arith::TruncFOp::create(b, loc, bf16, v);
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(bf16));
    return arith::SelectOp::create(b, loc, inBounds, v, zero);
  }

  /// The same as the 16 bf16 bits in an i32.
  Value loadBits(OpOperand *operand, ArrayRef<Value> ivs) {
    Value bits = arith::BitcastOp::create(b, loc, b.getI16Type(), loadBf16(operand, ivs));
    return arith::ExtUIOp::create(b, loc, b.getI32Type(), bits);
  }

  /// Two elements in one register, `lo` in the low half.
  Value pack(Value lo, Value hi) {
    Value sh = arith::ShLIOp::create(b, loc, hi, arith::ConstantIntOp::create(b, loc, 16, 32));
    return arith::OrIOp::create(b, loc, lo, sh);
  }

  /// The z dimensions' values, delinearised from blockIdx.x / n tiles (the last z
  /// dimension fastest).
  SmallVector<Value> zValues;

  /// Loop values with dimension m = row, n = col, k = kk (z ones fixed).
  SmallVector<Value> ivs(Value row, Value col, Value kk) {
    SmallVector<Value> v(op.getNumLoops());
    for (auto [d, value] : llvm::zip(c.z, zValues))
      v[d] = value;
    v[c.m] = row;
    v[c.n] = col;
    v[c.k] = kk;
    return v;
  }

  /// blockIdx.x enumerates the column tiles fastest, then the z dimensions
  /// (x allows 2^31 - 1 blocks, y and z only 65535); blockIdx.y the row
  /// tiles of `rows`. Sets zValues; returns the tile's first row and column.
  std::pair<Value, Value> blockOrigin(gpu::LaunchOp launch, int64_t rows) {
    Value nTiles = arith::CeilDivUIOp::create(b, loc, sizes[c.n], idx(kBlockN));
    Value bx = arith::RemUIOp::create(b, loc, launch.getBlockIds().x, nTiles);
    Value rest = arith::DivUIOp::create(b, loc, launch.getBlockIds().x, nTiles);
    zValues.assign(c.z.size(), Value());
    for (size_t i = c.z.size(); i-- > 0;) {
      Value size = sizes[c.z[i]];
      zValues[i] = arith::RemUIOp::create(b, loc, rest, size);
      rest = arith::DivUIOp::create(b, loc, rest, size);
    }
    return {arith::MulIOp::create(b, loc, launch.getBlockIds().y, idx(rows)),
            arith::MulIOp::create(b, loc, bx, idx(kBlockN))};
  }

  void build(gpu::LaunchOp launch) {
    Value zeroIdx = idx(0);
    Value tid = launch.getThreadIds().x;
    Value warp = arith::DivUIOp::create(b, loc, tid, idx(32));
    Value lane = arith::RemUIOp::create(b, loc, tid, idx(32));
    Value g = arith::DivUIOp::create(b, loc, lane, idx(4));
    Value t2 = arith::MulIOp::create(b, loc, arith::RemUIOp::create(b, loc, lane, idx(4)),
                                     idx(2));
    auto [m0, nBlock] = blockOrigin(launch, 16);
    Value n0 = add(nBlock, arith::MulIOp::create(b, loc, warp, idx(kTilesPerWarp * 8)));
    Value rowLo = add(m0, g), rowHi = add(rowLo, 8);
    Type f32 = b.getF32Type();

    // Accumulator element e of tile j: row lo/hi (e / 2), column 2t + e % 2.
    auto accPosition = [&](int64_t j, int64_t e) {
      Value row = e < 2 ? rowLo : rowHi;
      Value col = add(add(n0, j * 8 + e % 2), t2);
      return std::pair{row, col};
    };
    SmallVector<Value> init;
    for (int64_t j = 0; j < kTilesPerWarp; ++j)
      for (int64_t e = 0; e < 4; ++e) {
        Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(f32));
        if (zeroInit) {
          init.push_back(zero);
          continue;
        }
        auto [row, col] = accPosition(j, e);
        auto [index, inBounds] = indices(c.c, ivs(row, col, zeroIdx), /*clamp=*/true);
        Value v = memref::LoadOp::create(b, loc, c.c->get(), index);
        init.push_back(arith::SelectOp::create(b, loc, inBounds, v, zero));
      }

    auto loop = scf::ForOp::create(b, loc, zeroIdx, sizes[c.k], idx(16), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value k0 = loop.getInductionVar();
      Value kLo = add(k0, t2), kHi = add(kLo, 8);
      auto aBits = [&](Value row, Value kk) { return loadBits(c.a, ivs(row, zeroIdx, kk)); };
      SmallVector<Value> aRegs = {
          pack(aBits(rowLo, kLo), aBits(rowLo, add(kLo, 1))),
          pack(aBits(rowHi, kLo), aBits(rowHi, add(kLo, 1))),
          pack(aBits(rowLo, kHi), aBits(rowLo, add(kHi, 1))),
          pack(aBits(rowHi, kHi), aBits(rowHi, add(kHi, 1)))};
      auto resultType = LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
      SmallVector<Value> next;
      for (int64_t j = 0; j < kTilesPerWarp; ++j) {
        Value col = add(add(n0, j * 8), g);
        auto bBits = [&](Value kk) { return loadBits(c.b, ivs(zeroIdx, col, kk)); };
        SmallVector<Value> bRegs = {pack(bBits(kLo), bBits(add(kLo, 1))),
                                    pack(bBits(kHi), bBits(add(kHi, 1)))};
        ValueRange acc = loop.getRegionIterArgs().slice(j * 4, 4);
        auto mma = NVVM::MmaOp::create(
            b, loc, resultType, aRegs, bRegs, acc, ArrayRef<int64_t>{16, 8, 16}, std::nullopt,
            std::nullopt,
            std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16, NVVM::MMATypes::bf16},
            std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row, NVVM::MMALayout::col});
        for (int64_t e = 0; e < 4; ++e)
          next.push_back(LLVM::ExtractValueOp::create(b, loc, mma.getRes(), e));
      }
      scf::YieldOp::create(b, loc, next);
    }

    for (int64_t j = 0; j < kTilesPerWarp; ++j)
      for (int64_t e = 0; e < 4; ++e) {
        auto [row, col] = accPosition(j, e);
        auto [index, inBounds] = indices(c.c, ivs(row, col, zeroIdx), /*clamp=*/false);
        auto guard = scf::IfOp::create(b, loc, inBounds, /*withElseRegion=*/false);
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(&guard.getThenRegion().front());
        storeResult(index, loop.getResult(j * 4 + e));
      }
    gpu::TerminatorOp::create(b, loc);
  }

  //===--- sm_90a: one warpgroup, wgmma.mma_async from shared memory ---===//

  /// The byte offset of element (r, kk) of a `rows` x kStageK tile in
  /// shared memory: per k16 step a block of rows x 16, in 8 x 8 core
  /// matrices of 128 contiguous bytes (8 rows of 16 bytes), the two k
  /// halves of an 8-row group side by side. This is wgmma's K-major layout
  /// without swizzling (PTX ISA "Shared Memory Matrix Layout"): leading
  /// (k) byte offset 128, stride (8-row) byte offset 256.
  Value tileOffset(Value r, Value kk, int64_t rows) {
    auto mul = [&](Value x, int64_t y) { return arith::MulIOp::create(b, loc, x, idx(y)); };
    auto div = [&](Value x, int64_t y) { return arith::DivUIOp::create(b, loc, x, idx(y)); };
    auto rem = [&](Value x, int64_t y) { return arith::RemUIOp::create(b, loc, x, idx(y)); };
    // One op after another, never two as one call's arguments (C++ leaves
    // their order to the compiler, and the IR must not depend on it).
    Value step = mul(div(kk, 16), rows * 16);
    Value kHalf = div(rem(kk, 16), 8);
    Value rowGroup = mul(div(r, 8), 2);
    Value core = mul(add(rowGroup, kHalf), 64);
    Value kInCore = rem(kk, 8);
    Value inCore = add(mul(rem(r, 8), 8), kInCore);
    return add(add(step, core), inCore);
  }

  /// The 128 threads copy rows [row0, row0 + rows) x [k0, k0 + kStageK) of
  /// `operand` (A when `isA`, else B) to `tiles` from element `first` on,
  /// as bf16, k fastest.
  void stageTile(Value tiles, Value first, OpOperand *operand, bool isA, int64_t rows,
                 Value row0, Value k0, Value tid) {
    auto loop = scf::ForOp::create(b, loc, tid, idx(rows * kStageK), idx(kWarps * 32));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value e = loop.getInductionVar();
    Value r = arith::DivUIOp::create(b, loc, e, idx(kStageK));
    Value kk = arith::RemUIOp::create(b, loc, e, idx(kStageK));
    Value row = add(row0, r), k = add(k0, kk), zeroIdx = idx(0);
    Value v = loadBf16(operand, isA ? ivs(row, zeroIdx, k) : ivs(zeroIdx, row, k));
    memref::StoreOp::create(b, loc, v, tiles, add(first, tileOffset(r, kk, rows)));
  }

  /// A shared-memory matrix descriptor (PTX ISA "Matrix Descriptor
  /// Format"): bits 0-13 the start address >> 4, 16-29 the leading byte
  /// offset >> 4, 32-45 the stride byte offset >> 4, 62-63 the swizzle
  /// mode (0: none).
  Value descriptor(Value base, int64_t offset) {
    Type i64 = b.getI64Type();
    auto c64 = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, i64, v); };
    Value address = arith::AddIOp::create(b, loc, base, c64(offset));
    address = arith::AndIOp::create(b, loc, address, c64(0x3FFFF));
    address = arith::ShRUIOp::create(b, loc, address, c64(4));
    return arith::OrIOp::create(b, loc, address, c64((128 >> 4) << 16 | (256LL >> 4) << 32));
  }

  void buildWgmma(gpu::LaunchOp launch) {
    Value zeroIdx = idx(0);
    Value tid = launch.getThreadIds().x;
    auto [m0, n0] = blockOrigin(launch, kWgRows);
    // The A tile, then the B tile, from the first 128-byte boundary of the
    // workgroup buffer (attributions are only 2-byte aligned; descriptors
    // drop an address's low 4 bits).
    Value tiles = launch.getWorkgroupAttributions()[0];
    Type i64 = b.getI64Type(), f32 = b.getF32Type();
    Value base = arith::IndexCastUIOp::create(
        b, loc, i64, memref::ExtractAlignedPointerAsIndexOp::create(b, loc, tiles));
    auto c64 = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, i64, v); };
    Value aBase = arith::AndIOp::create(b, loc, arith::AddIOp::create(b, loc, base, c64(127)),
                                        c64(~int64_t(127)));
    Value bBase = arith::AddIOp::create(b, loc, aBase, c64(kWgRows * kStageK * 2));
    Value aFirst = arith::IndexCastUIOp::create(
        b, loc, b.getIndexType(),
        arith::ShRUIOp::create(b, loc, arith::SubIOp::create(b, loc, aBase, base), c64(1)));
    Value bFirst = add(aFirst, kWgRows * kStageK);
    auto accType = LLVM::LLVMStructType::getLiteral(
        b.getContext(), SmallVector<Type>(kWgRows * kBlockN / (kWarps * 32), f32));
    Value zeroAcc = LLVM::ZeroOp::create(b, loc, accType);
    auto loop = scf::ForOp::create(b, loc, zeroIdx, sizes[c.k], idx(kStageK), zeroAcc);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value k0 = loop.getInductionVar();
      // The previous stage's wgmma have completed (wait_group 0) in every
      // warp before the tiles are overwritten.
      gpu::BarrierOp::create(b, loc);
      stageTile(tiles, aFirst, c.a, /*isA=*/true, kWgRows, m0, k0, tid);
      stageTile(tiles, bFirst, c.b, /*isA=*/false, kBlockN, n0, k0, tid);
      // Generic-proxy stores become visible to wgmma's async proxy, then
      // to the whole warpgroup.
      NVVM::FenceProxyOp::create(
          b, loc, NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_shared),
          NVVM::SharedSpaceAttr::get(b.getContext(), NVVM::SharedSpace::shared_cta));
      gpu::BarrierOp::create(b, loc);
      NVVM::WgmmaFenceAlignedOp::create(b, loc);
      Value acc = loop.getRegionIterArgs()[0];
      for (int64_t s = 0; s < kStageK / 16; ++s)
        acc = NVVM::WgmmaMmaAsyncOp::create(
            b, loc, accType, acc, descriptor(aBase, s * kWgRows * 16 * 2),
            descriptor(bBase, s * kBlockN * 16 * 2),
            NVVM::MMAShapeAttr::get(b.getContext(), kWgRows, kBlockN, 16),
            NVVM::WGMMATypes::bf16, NVVM::WGMMATypes::bf16, NVVM::WGMMATypes::f32,
            NVVM::WGMMAScaleOut::one, NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
            NVVM::MMALayout::row, NVVM::MMALayout::col, /*satfinite=*/nullptr);
      NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
      NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
      scf::YieldOp::create(b, loc, acc);
    }

    // Accumulator register i (PTX ISA "wgmma .m64nNk16 register fragment
    // layout for accumulator matrix D"): row 16 warp + g + 8 ((i % 4) / 2),
    // column 8 (i / 4) + 2t + i % 2; added into C where in bounds.
    Value warp = arith::DivUIOp::create(b, loc, tid, idx(32));
    Value lane = arith::RemUIOp::create(b, loc, tid, idx(32));
    Value group = arith::DivUIOp::create(b, loc, lane, idx(4));
    Value rowLo = add(add(m0, arith::MulIOp::create(b, loc, warp, idx(16))), group);
    Value col0 = add(n0, arith::MulIOp::create(b, loc, arith::RemUIOp::create(b, loc, lane, idx(4)),
                                               idx(2)));
    for (int64_t i = 0; i < kWgRows * kBlockN / (kWarps * 32); ++i) {
      Value row = add(rowLo, 8 * ((i % 4) / 2)), col = add(col0, 8 * (i / 4) + i % 2);
      auto [index, inBounds] = indices(c.c, ivs(row, col, zeroIdx), /*clamp=*/false);
      auto guard = scf::IfOp::create(b, loc, inBounds, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(&guard.getThenRegion().front());
      Value v = LLVM::ExtractValueOp::create(b, loc, loop.getResult(0), i);
      if (!zeroInit)
        v = arith::AddFOp::create(b, loc, memref::LoadOp::create(b, loc, c.c->get(), index), v);
      storeResult(index, v);
    }
    gpu::TerminatorOp::create(b, loc);
  }
};

/// Whether `e` can run on each of C's results in registers: all its loops
/// parallel and indexed by C (C read once, its map a permutation), its
/// output not read and written once per element (a permutation too), its
/// body free of memory effects; its output a fresh allocation (two
/// different roots may still be one buffer at run time: loop-carried ones,
/// arguments), not one the kernel reads (A, B, the op's other inputs) nor C.
bool fusible(linalg::GenericOp e, const Contraction &c) {
  Value cBuf = c.c->get();
  if (!e.hasPureBufferSemantics() || e.getNumDpsInits() != 1 || e.getNumReductionLoops() != 0)
    return false;
  Block &body = e.getRegion().front();
  if (!body.getArgument(e.getNumDpsInputs()).use_empty())
    return false;
  for (Operation &o : body.without_terminator())
    if (!isMemoryEffectFree(&o) || o.getNumRegions() != 0)
      return false;
  OpOperand *cIn = nullptr;
  for (OpOperand *in : e.getDpsInputOperands())
    if (in->get() == cBuf) {
      if (cIn)
        return false;
      cIn = in;
    }
  if (!cIn || !e.getMatchingIndexingMap(cIn).isPermutation())
    return false;
  for (AffineMap map : e.getIndexingMapsArray())
    if (!map.isProjectedPermutation())
      return false;
  if (!e.getMatchingIndexingMap(e.getDpsInitOperand(0)).isPermutation())
    return false;
  Value out = k3::bufferRoot(e.getDpsInitOperand(0)->get());
  if (!out.getDefiningOp<memref::AllocOp>() || out == cBuf ||
      out == k3::bufferRoot(c.a->get()) || out == k3::bufferRoot(c.b->get()))
    return false;
  for (OpOperand *in : e.getDpsInputOperands())
    if (in != cIn && (k3::bufferRoot(in->get()) == out || k3::bufferRoot(in->get()) == cBuf))
      return false;
  return true;
}

/// The elementwise linalg.generic ops that consume C, if the kernel can
/// run them on each result instead of storing C (a launch fewer each: a
/// residual add, an activation, a gate; the router's sigmoid and its biased
/// scores side by side): C a fresh allocation that only they read (and a
/// free after); they follow the contraction with only allocations and ops
/// without memory effects between them, each `fusible`, none reading
/// another's output. The launch then goes where the last one is, so that
/// their outputs' allocations come before it.
SmallVector<linalg::GenericOp> epilogueOf(linalg::GenericOp op, const Contraction &c) {
  Value cBuf = c.c->get();
  if (!cBuf.getDefiningOp<memref::AllocOp>())
    return {};
  SmallVector<linalg::GenericOp> found;
  for (Operation *next = op->getNextNode(); next; next = next->getNextNode()) {
    if (auto e = dyn_cast<linalg::GenericOp>(next)) {
      if (!fusible(e, c))
        break;
      found.push_back(e);
    } else if (!isa<memref::AllocOp>(next) && !isMemoryEffectFree(next)) {
      break;
    }
  }
  for (Operation *user : cBuf.getUsers())
    if (user != op && !isa<memref::DeallocOp>(user) &&
        !llvm::is_contained(found, dyn_cast<linalg::GenericOp>(user)))
      return {};
  // Each output fresh (fusible), so a match of roots is the only way one
  // op reads another's output.
  for (linalg::GenericOp e : found)
    for (linalg::GenericOp other : found)
      for (OpOperand &operand : other->getOpOperands())
        if (e != other && k3::bufferRoot(operand.get()) ==
                              k3::bufferRoot(e.getDpsInitOperand(0)->get()))
          return {};
  return found;
}

struct K3GpuMmaContractionsPass
    : k3::impl::K3GpuMmaContractionsPassBase<K3GpuMmaContractionsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<std::pair<linalg::GenericOp, Contraction>> work;
    getOperation()->walk([&](linalg::GenericOp op) {
      if (op->getParentOfType<gpu::LaunchOp>() || op->getParentOfType<gpu::GPUModuleOp>())
        return;
      if (auto c = match(op))
        work.push_back({op, *c});
    });
    for (auto &[op, c] : work) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      KernelBuilder kb{b, loc, op, c, {}};
      // A zero fill of C just before: every element of C is stored once by
      // the kernel (the grid covers its m, n and z extents), so the fill
      // is not needed.
      // (+0.0 only: a k of 0 then still leaves C as the fill would.) A or B
      // reading C's buffer would see the fill, so then it stays.
      Value cRoot = k3::bufferRoot(c.c->get());
      if (auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
          fill && fill.hasPureBufferSemantics() && fill.getDpsInitOperand(0)->get() == c.c->get() &&
          matchPattern(fill.getInputs()[0], m_PosZeroFloat()) && k3::bufferRoot(c.a->get()) != cRoot &&
          k3::bufferRoot(c.b->get()) != cRoot) {
        fill.erase();
        kb.zeroInit = true;
      }
      kb.epilogues = epilogueOf(op, c);
      if (!kb.epilogues.empty())
        b.setInsertionPoint(kb.epilogues.back());
      for (Range r : cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, loc))
        kb.sizes.push_back(getValueOrCreateConstantIndexOp(b, loc, r.size));
      auto ceilDiv = [&](Value v, int64_t d) {
        return arith::CeilDivUIOp::create(b, loc, v, kb.idx(d)).getResult();
      };
      Value one = kb.idx(1);
      // A statically short m (decode's one token) would leave most of
      // wgmma's 64 rows idle: mma.sync's 16-row tiles waste less.
      int64_t mRange = op.getStaticLoopRanges()[c.m];
      bool warpgroup = wgmma && (ShapedType::isDynamic(mRange) || mRange > kMaxMmaSyncRows);
      int64_t rows = warpgroup ? kWgRows : 16;
      Value gx = ceilDiv(kb.sizes[c.n], kBlockN), gy = ceilDiv(kb.sizes[c.m], rows);
      for (unsigned d : c.z)
        gx = arith::MulIOp::create(b, loc, gx, kb.sizes[d]);
      // wgmma's operand tiles live in shared memory (24 KiB, static, plus
      // 128 bytes to align them).
      SmallVector<Type> tiles;
      if (warpgroup)
        tiles.push_back(MemRefType::get(
            {(kWgRows + kBlockN) * kStageK + 64}, b.getBF16Type(), MemRefLayoutAttrInterface(),
            gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup)));
      auto launch = gpu::LaunchOp::create(b, loc, gx, gy, one, kb.idx(kWarps * 32), one, one,
                                          /*dynamicSharedMemorySize=*/nullptr,
                                          /*asyncTokenType=*/nullptr, ValueRange(), tiles);
      b.setInsertionPointToStart(&launch.getBody().front());
      if (warpgroup)
        kb.buildWgmma(launch);
      else
        kb.build(launch);
      op.erase();
      for (linalg::GenericOp e : kb.epilogues)
        e.erase();
    }
  }
};

} // namespace
