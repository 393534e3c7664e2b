//===- Common.cpp - Helpers for lowering k3 ops to linalg -----------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/K3ToLinalg/Common.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

namespace mlir::k3::lowering {

SmallVector<OpFoldResult> sizesOf(OpBuilder &b, Location loc, Value v) {
  SmallVector<OpFoldResult> sizes;
  auto type = cast<RankedTensorType>(v.getType());
  for (int64_t i = 0; i < type.getRank(); ++i)
    sizes.push_back(type.isDynamicDim(i)
                        ? OpFoldResult(tensor::DimOp::create(b, loc, v, i).getResult())
                        : OpFoldResult(b.getIndexAttr(type.getDimSize(i))));
  return sizes;
}

Value empty(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes, Type elt) {
  return tensor::EmptyOp::create(b, loc, sizes, elt);
}

Value zeros(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes) {
  Value e = empty(b, loc, sizes, b.getF32Type());
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  return linalg::FillOp::create(b, loc, zero, e).getResult(0);
}

Value convertScalar(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  if (isa<FloatType>(from) && isa<FloatType>(to))
    return cast<FloatType>(from).getWidth() < cast<FloatType>(to).getWidth()
               ? Value(arith::ExtFOp::create(b, loc, to, v))
               : Value(arith::TruncFOp::create(b, loc, to, v));
  if (isa<IntegerType>(from) && isa<FloatType>(to))
    return arith::SIToFPOp::create(b, loc, to, v);
  return v;
}

int64_t fit(int64_t extent, int64_t preferred) {
  int64_t t = preferred;
  while (t > 1 && extent % t != 0)
    t /= 2;
  return t;
}

Value cst(OpBuilder &b, Location loc, double value) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(value)));
}

Value cstIndex(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

Value sigmoid(OpBuilder &b, Location loc, Value x) {
  Value negExp = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(
      b, loc, cst(b, loc, 1.0), arith::AddFOp::create(b, loc, cst(b, loc, 1.0), negExp));
}

Value kdaDecay(OpBuilder &b, Location loc, bool lowerBound, double lb, Value x, Value aLog,
               Value dt) {
  Value z = arith::AddFOp::create(b, loc, x, dt);
  Value scale = math::ExpOp::create(b, loc, aLog);
  if (lowerBound)
    return arith::MulFOp::create(b, loc, cst(b, loc, lb),
                                 sigmoid(b, loc, arith::MulFOp::create(b, loc, scale, z)));
  Value sp = math::Log1pOp::create(b, loc, math::ExpOp::create(b, loc, z));
  Value big = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, z, cst(b, loc, 20.0));
  sp = arith::SelectOp::create(b, loc, big, z, sp);
  return arith::NegFOp::create(b, loc, arith::MulFOp::create(b, loc, scale, sp));
}

AffineMap identity(MLIRContext *ctx, unsigned n) {
  return AffineMap::getMultiDimIdentityMap(n, ctx);
}

AffineMap project(MLIRContext *ctx, unsigned n, ArrayRef<unsigned> dims) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d : dims)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(n, 0, exprs, ctx);
}

AffineMap leading(MLIRContext *ctx, unsigned n) {
  SmallVector<unsigned> dims;
  for (unsigned i = 0; i + 1 < n; ++i)
    dims.push_back(i);
  return project(ctx, n, dims);
}

SmallVector<Value>
generic(OpBuilder &b, Location loc, ValueRange inputs, ValueRange inits,
        ArrayRef<AffineMap> maps, ArrayRef<utils::IteratorType> iterators,
        std::function<SmallVector<Value>(OpBuilder &, Location, ValueRange)>
            body) {
  SmallVector<Type> resultTypes;
  for (Value init : inits)
    resultTypes.push_back(init.getType());
  auto op = linalg::GenericOp::create(
      b, loc, resultTypes, inputs, inits, maps, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        SmallVector<Value> wide;
        for (Value a : args)
          wide.push_back(isa<FloatType>(a.getType()) ? f32(nb, nl, a) : a);
        SmallVector<Value> results = body(nb, nl, wide);
        for (size_t i = 0; i < results.size(); ++i)
          results[i] = convertScalar(
              nb, nl, results[i],
              cast<RankedTensorType>(inits[i].getType()).getElementType());
        linalg::YieldOp::create(nb, nl, results);
      });
  return SmallVector<Value>(op.getResults());
}

Value elementwise(OpBuilder &b, Location loc, ValueRange inputs,
                  RankedTensorType resultType,
                  std::function<Value(OpBuilder &, Location, ValueRange)> fn) {
  unsigned rank = resultType.getRank();
  Value init = empty(b, loc, sizesOf(b, loc, inputs.front()),
                     resultType.getElementType());
  SmallVector<AffineMap> maps(inputs.size() + 1, identity(b.getContext(), rank));
  SmallVector<utils::IteratorType> its(rank, utils::IteratorType::parallel);
  return generic(b, loc, inputs, init, maps, its,
                 [&](OpBuilder &nb, Location nl, ValueRange args) {
                   return SmallVector<Value>{
                       fn(nb, nl, args.take_front(inputs.size()))};
                 })
      .front();
}

Value contract(OpBuilder &b, Location loc, Value x, Value w) {
  auto xType = cast<RankedTensorType>(x.getType());
  unsigned r = xType.getRank(), loops = r + 1; // leading..., n, k
  MLIRContext *ctx = b.getContext();
  SmallVector<unsigned> xDims, outDims;
  for (unsigned i = 0; i + 1 < r; ++i) {
    xDims.push_back(i);
    outDims.push_back(i);
  }
  xDims.push_back(r);    // k
  outDims.push_back(r - 1); // n
  SmallVector<OpFoldResult> sizes = sizesOf(b, loc, x);
  sizes.back() = sizesOf(b, loc, w).front();
  Value acc = zeros(b, loc, sizes);
  SmallVector<utils::IteratorType> its(loops, utils::IteratorType::parallel);
  its.back() = utils::IteratorType::reduction;
  // The dot products may be reassociated (and fused into FMAs): that lets
  // LLVM vectorise the k-loop; the result differs from the sequential sum
  // by rounding only, far inside the fp32 thresholds.
  return generic(b, loc, {x, w}, acc,
                 {project(ctx, loops, xDims), project(ctx, loops, {r - 1, r}),
                  project(ctx, loops, outDims)},
                 its, multiplyAccumulate)
      .front();
}

SmallVector<Value> multiplyAccumulate(OpBuilder &b, Location loc, ValueRange a) {
  Value m = arith::MulFOp::create(b, loc, a[0], a[1], kReassociable);
  return {arith::AddFOp::create(b, loc, a[2], m, kReassociable)};
}

void finishMla(PatternRewriter &b, Operation *op, Value o, Value gate, Value newCache) {
  Location loc = op->getLoc();
  auto outType = cast<RankedTensorType>(op->getResult(0).getType());
  if (gate)
    o = elementwise(b, loc, {o, gate}, cast<RankedTensorType>(o.getType()),
                    [](OpBuilder &nb, Location nl, ValueRange a) {
                      return Value(arith::MulFOp::create(nb, nl, a[0], sigmoid(nb, nl, a[1])));
                    });
  o = withElementType(b, loc, o, outType.getElementType());
  // Static result shapes (a decode step) refine the dynamic ones built here.
  if (o.getType() != outType)
    o = tensor::CastOp::create(b, loc, outType, o);
  Type cacheType = op->getResult(1).getType();
  if (newCache.getType() != cacheType)
    newCache = tensor::CastOp::create(b, loc, cacheType, newCache);
  b.replaceOp(op, {o, newCache});
}

Value reduceLast(OpBuilder &b, Location loc, ValueRange inputs,
                 std::function<Value(OpBuilder &, Location, ValueRange)> term) {
  auto type = cast<RankedTensorType>(inputs.front().getType());
  unsigned r = type.getRank();
  MLIRContext *ctx = b.getContext();
  SmallVector<OpFoldResult> sizes = sizesOf(b, loc, inputs.front());
  sizes.pop_back();
  Value acc = zeros(b, loc, sizes);
  SmallVector<AffineMap> maps;
  for (Value in : inputs) {
    unsigned ir = cast<RankedTensorType>(in.getType()).getRank();
    // Full-rank inputs follow the loops; rank-1 ones are per last dim.
    maps.push_back(ir == r ? identity(ctx, r) : project(ctx, r, {r - 1}));
  }
  maps.push_back(leading(ctx, r));
  SmallVector<utils::IteratorType> its(r, utils::IteratorType::parallel);
  its.back() = utils::IteratorType::reduction;
  // Reassociable like `contract`'s dot products: the sum vectorises
  // (partial sums per lane) instead of running one add at a time.
  return generic(b, loc, inputs, acc, maps, its,
                 [&](OpBuilder &nb, Location nl, ValueRange a) {
                   Value t = term(nb, nl, a.take_front(inputs.size()));
                   return SmallVector<Value>{
                       arith::AddFOp::create(nb, nl, a.back(), t, kReassociable)};
                 })
      .front();
}

Value sumOfSquares(OpBuilder &b, Location loc, Value x) {
  return reduceLast(b, loc, x, [](OpBuilder &nb, Location nl, ValueRange a) {
    return Value(arith::MulFOp::create(nb, nl, a[0], a[0]));
  });
}

Value withElementType(OpBuilder &b, Location loc, Value v, Type elt) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getElementType() == elt)
    return v;
  return elementwise(b, loc, v, type.clone(elt),
                     [](OpBuilder &, Location, ValueRange a) { return a[0]; });
}

/// Rows of `a` then rows of `b` (same width and element type), as
/// insert_slices into one tensor.
Value concatRows(OpBuilder &b, Location loc, Value top, Value bottom) {
  SmallVector<OpFoldResult> ts = sizesOf(b, loc, top), bs = sizesOf(b, loc, bottom);
  Value rows = arith::AddIOp::create(
      b, loc, getValueOrCreateConstantIndexOp(b, loc, ts[0]),
      getValueOrCreateConstantIndexOp(b, loc, bs[0]));
  Type elt = cast<RankedTensorType>(top.getType()).getElementType();
  Value out = empty(b, loc, {rows, ts[1]}, elt);
  SmallVector<OpFoldResult> one(2, b.getIndexAttr(1));
  out = tensor::InsertSliceOp::create(b, loc, top, out,
                                      {b.getIndexAttr(0), b.getIndexAttr(0)}, ts, one);
  return tensor::InsertSliceOp::create(b, loc, bottom, out,
                                       {ts[0], b.getIndexAttr(0)}, bs, one);
}

/// Columns [from, from + width) of a 2-D tensor.
Value columns(OpBuilder &b, Location loc, Value m, int64_t from, int64_t width) {
  SmallVector<OpFoldResult> sizes = sizesOf(b, loc, m);
  sizes[1] = b.getIndexAttr(width);
  return tensor::ExtractSliceOp::create(b, loc, m, {b.getIndexAttr(0), b.getIndexAttr(from)},
                                        sizes, {b.getIndexAttr(1), b.getIndexAttr(1)});
}

/// Last-dim slice [from, from + width) of a 3-D tensor.
Value lastDims(OpBuilder &b, Location loc, Value m, int64_t from, int64_t width) {
  SmallVector<OpFoldResult> sizes = sizesOf(b, loc, m);
  sizes[2] = b.getIndexAttr(width);
  return tensor::ExtractSliceOp::create(
      b, loc, m, {b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(from)}, sizes,
      {b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(1)});
}

/// The tensor `cache` is the leading rows of, when that tensor has exactly
/// `newRows` more rows (proved by value bounds: S = dim − T in the IR) and
/// the same type; else null. The new rows inserted after the first S then
/// define every row: the concatenation, built in that tensor.
static Value roomOf(Value cache, OpFoldResult newRows) {
  auto slice = cache.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || slice.getSourceType() != cache.getType() || !slice.hasUnitStride() ||
      !llvm::all_of(slice.getMixedOffsets(), isZeroInteger))
    return nullptr;
  Value room = slice.getSource();
  auto type = cast<RankedTensorType>(room.getType());
  if (type.getRank() != 2 || type.isDynamicDim(1) ||
      getConstantIntValue(slice.getMixedSizes()[1]) != type.getDimSize(1))
    return nullptr;
  MLIRContext *ctx = cache.getContext();
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  using Var = ValueBoundsConstraintSet::Variable;
  FailureOr<bool> equal = ValueBoundsConstraintSet::areEqual(
      Var(room, 0), Var(AffineMap::get(2, 0, d0 + d1),
                        ArrayRef<Var>{Var(slice.getMixedSizes()[0]), Var(newRows)}));
  return succeeded(equal) && *equal ? room : nullptr;
}

// The new rows as the cache stores them (Common.h); appendCacheRows joins
// them to a cache, k3.mla_paged's lowering returns them.
Value newCacheRows(OpBuilder &b, Location loc, Type cacheElt, Value latent, Value kRope) {
  int64_t l = cast<RankedTensorType>(latent.getType()).getDimSize(1),
          r = cast<RankedTensorType>(kRope.getType()).getDimSize(1);
  SmallVector<OpFoldResult> newSizes{sizesOf(b, loc, latent)[0], b.getIndexAttr(l + r)};
  Value rows = empty(b, loc, newSizes, cacheElt);
  SmallVector<OpFoldResult> one(2, b.getIndexAttr(1));
  rows = tensor::InsertSliceOp::create(b, loc, withElementType(b, loc, latent, cacheElt), rows,
                                       {b.getIndexAttr(0), b.getIndexAttr(0)},
                                       sizesOf(b, loc, latent), one);
  return tensor::InsertSliceOp::create(b, loc, withElementType(b, loc, kRope, cacheElt), rows,
                                       {b.getIndexAttr(0), b.getIndexAttr(l)},
                                       sizesOf(b, loc, kRope), one);
}

Value appendCacheRows(OpBuilder &b, Location loc, Value cache, Value latent, Value kRope) {
  Value rows = newCacheRows(b, loc, cast<RankedTensorType>(cache.getType()).getElementType(),
                            latent, kRope);
  // The rows' count as the latent's (value bounds see through its dim).
  SmallVector<OpFoldResult> newSizes{sizesOf(b, loc, latent)[0], sizesOf(b, loc, rows)[1]};
  SmallVector<OpFoldResult> one(2, b.getIndexAttr(1));
  if (Value room = roomOf(cache, newSizes[0]))
    return tensor::InsertSliceOp::create(b, loc, rows, room,
                                         {sizesOf(b, loc, cache)[0], b.getIndexAttr(0)},
                                         sizesOf(b, loc, rows), one);
  return concatRows(b, loc, cache, rows);
}


SmallVector<OpFoldResult> ones(OpBuilder &b, unsigned n) {
  return SmallVector<OpFoldResult>(n, b.getIndexAttr(1));
}

Value tile(OpBuilder &b, Location loc, Value m, OpFoldResult r, OpFoldResult c, int64_t rows,
           int64_t cols) {
  return tensor::ExtractSliceOp::create(b, loc, m, {r, c},
                                        {b.getIndexAttr(rows), b.getIndexAttr(cols)}, ones(b, 2));
}

Value place(OpBuilder &b, Location loc, Value part, Value into, OpFoldResult r, OpFoldResult c) {
  return tensor::InsertSliceOp::create(b, loc, part, into, {r, c}, sizesOf(b, loc, part),
                                       ones(b, 2));
}

scf::ForOp loop(OpBuilder &b, Location loc, Value lo, Value hi, Value step, ValueRange init,
                function_ref<SmallVector<Value>(OpBuilder &, Location, Value, ValueRange)> body) {
  return scf::ForOp::create(b, loc, lo, hi, step, init,
                            [&](OpBuilder &nb, Location nl, Value i, ValueRange it) {
                              scf::YieldOp::create(nb, nl, body(nb, nl, i, it));
                            });
}

scf::ForOp loop(OpBuilder &b, Location loc, Value n, int64_t step, ValueRange init,
                function_ref<SmallVector<Value>(OpBuilder &, Location, Value, ValueRange)> body) {
  return loop(b, loc, cstIndex(b, loc, 0), n, cstIndex(b, loc, step), init, body);
}

Value panels(OpBuilder &b, Location loc, Value into, int64_t extent, int64_t width,
             function_ref<Value(OpBuilder &, Location, Value, Value)> body) {
  auto forall = scf::ForallOp::create(b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(extent / width)},
                                      ValueRange{into}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  Value shared = forall.getRegionIterArgs()[0];
  Value n0 = arith::MulIOp::create(b, loc, forall.getInductionVar(0), cstIndex(b, loc, width));
  Value rows = tensor::DimOp::create(b, loc, shared, 0);
  SmallVector<OpFoldResult> at{b.getIndexAttr(0), n0},
      sizes{OpFoldResult(rows), b.getIndexAttr(width)};
  Value block = tensor::ExtractSliceOp::create(b, loc, shared, at, sizes, ones(b, 2));
  Value next = body(b, loc, n0, block);
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(b, loc, next, shared, at, sizes, ones(b, 2));
  return forall.getResult(0);
}

} // namespace mlir::k3::lowering
