//===- KdaChunksPattern.cpp - KDA prefill as the GPU's chunk kernels ------===//
//
// Part of k3. `k3.kda_chunked` (`kda-prefill=chunks`, the GPU default) as
// one `k3.kda_chunks`, which k3-gpu-kda-chunks builds into two kernels: one
// preparing every 16-token chunk at once, one walking them on tensor cores
// with the state in registers. It applies to static heads and head dims
// within kdaChunksKernelFits, in one of two ways:
//
//   - the factored form with sub-chunks a multiple of 16 tokens: the form
//     promises each aligned sub-chunk's cumulative decay within 80 nat
//     (k3-kda-chunkwise chose it from the gate's lower bound), so each of
//     the kernel's 16-token chunks, inside one sub-chunk, is within 80 nat
//     too, which the factors against the chunk's row 8 need (they need
//     only any 8 tokens within 80; a shorter sub-chunk's promise does not
//     cover a chunk that straddles two);
//   - any other chunked op (the safe form: the softplus gate, an unknown
//     bound, or a bound promised over shorter sub-chunks) as `pairwise`
//     kernels, whose chunk matrices take exact exponents e^{G_r − G_s} ≤ 1
//     per entry: no bound needed, one exponential per entry and channel.
//
// Boundary states, when used, come every `chunk` tokens, which must be a
// multiple of the kernel's 16.
//
// Elsewhere the column scan (KdaScanPattern.cpp, lower benefit) takes the
// op. The initial state is the state destination: the kernels read it and
// write the final state over it (bufferization copies it first if the
// initial state is still read afterwards).
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Conversion/K3ToLinalg/Common.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::k3;
using namespace mlir::k3::lowering;

namespace {

struct ChunksKdaChunked : OpRewritePattern<KdaChunkedOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(KdaChunkedOp op, PatternRewriter &b) const override {
    const bool pairwise = op.getForm() != KdaTileForm::factored || op.getSubChunk() % 16 != 0;
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    auto sType = cast<RankedTensorType>(op.getInitialState().getType());
    if (!sType.hasStaticShape() || qType.isDynamicDim(1) || qType.isDynamicDim(2))
      return b.notifyMatchFailure(op, "heads and head dims must be static");
    if (!kdaChunksKernelFits(sType.getDimSize(1), sType.getDimSize(2)))
      return b.notifyMatchFailure(op, "the kernel does not fit these head dims");
    Value boundaries = op.getBoundaryStates();
    const bool wantBoundaries = !boundaries.use_empty();
    // The kernels' boundaries fall on their 16-token chunks (a factored
    // op's chunk is a multiple of its sub-chunk, so of 16).
    if (wantBoundaries && op.getChunk() % 16 != 0)
      return b.notifyMatchFailure(op, "boundary states must fall every multiple of 16 tokens");

    Location loc = op.getLoc();
    Value tokens = tensor::DimOp::create(b, loc, op.getQ(), 0);
    auto outType = cast<RankedTensorType>(op.getOut().getType());
    Value out = empty(b, loc, sizesOf(b, loc, op.getV()), outType.getElementType());
    Value state = op.getInitialState();
    // The kernels' scratch: a record per (chunk of 16, value head).
    Value chunksOf16 = arith::CeilDivUIOp::create(b, loc, tokens, cstIndex(b, loc, 16));
    Value workspace = empty(
        b, loc,
        {OpFoldResult(chunksOf16), b.getIndexAttr(sType.getDimSize(0)),
         b.getIndexAttr(kdaChunksWorkspaceWords(sType.getDimSize(1), sType.getDimSize(2)))},
        b.getF32Type());
    // The boundary states, one per chunk (an uninitialised tensor of the
    // result's type when nobody reads them).
    SmallVector<OpFoldResult> sizes{
        OpFoldResult(arith::CeilDivUIOp::create(b, loc, tokens, cstIndex(b, loc, op.getChunk())))};
    for (int64_t d : sType.getShape())
      sizes.push_back(b.getIndexAttr(d));
    Value states = empty(b, loc, sizes, b.getF32Type());
    SmallVector<Type> types{out.getType(), state.getType(), workspace.getType()};
    if (wantBoundaries)
      types.push_back(states.getType());
    auto chunks = KdaChunksOp::create(
        b, loc, types, op.getQ(), op.getK(), op.getV(), op.getG(), op.getBeta(), out, state,
        workspace, wantBoundaries ? states : Value(), op.getScaleAttr(),
        b.getI64IntegerAttr(wantBoundaries ? op.getChunk() : 0),
        pairwise ? b.getUnitAttr() : UnitAttr());
    auto as = [&](Value v, Type type) {
      return v.getType() == type ? v : Value(tensor::CastOp::create(b, loc, type, v));
    };
    SmallVector<Value> results{as(chunks.getResult(0), op.getOut().getType()),
                               as(chunks.getResult(1), op.getFinalState().getType())};
    results.push_back(
        as(wantBoundaries ? chunks.getResult(3) : states, boundaries.getType()));
    b.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::k3::lowering::populateKdaChunksPatterns(RewritePatternSet &patterns) {
  // Over the scan (benefit 2) and the host-loop lowerings.
  patterns.add<ChunksKdaChunked>(patterns.getContext(), /*benefit=*/3);
}
