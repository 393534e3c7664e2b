//===- GpuBatchKdaStep.cpp - decode_batch's KDA steps as one kernel -------===//
//
// Part of k3. Implements k3-gpu-batch-kda-step. decode_batch's KDA mixer
// (lib/Import) runs each request's one-token step in an `scf.forall` over
// the B requests: its slices of the projections, windows and state in, the
// new ones written back into the request's slots. On the GPU that step is
// a `k3.kda_step` (`kda-decode=kernel`), and a loop of them would be a host
// loop of launches, or worse, a kernel that launches kernels. This pass
// folds the loop into the op: one batched `k3.kda_step` over the loop's
// whole tensors, which k3-gpu-kda-step builds as one kernel with a block
// per value head and request.
//
// The loop must be exactly that and nothing else, or it is left alone:
//   - one induction variable from 0 by 1;
//   - each of the step's per-token operands (x, f, β, the output gate) a
//     [1, ...] slice at the request of a tensor defined outside the loop
//     (or of a shared output, read before the loop writes it: its initial
//     value), each window a slice with its unit dimension collapsed away;
//     the weights defined outside;
//   - the state's destination the request's (collapsed) slice of a shared
//     output, so the batched step updates that output in place;
//   - every shared output written by one `parallel_insert_slice` at the
//     request of one of the step's results (with the unit dimension put
//     back), each result once.
// The batched step works on rows [0, n) of each tensor, n the loop's trip
// count (slices that vanish where the extents are known equal): the output
// and the state in their shared outputs' rows in place, the new windows
// into fresh tensors (under GVA a new q/k window must not be the buffer of
// the old one) copied into the windows' rows after the step.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3GPUBATCHKDASTEPPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

bool isIndex(OpFoldResult ofr, int64_t value) {
  std::optional<int64_t> c = getConstantIntValue(ofr);
  return c && *c == value;
}

/// Whether `slice` takes the whole of its source except one row at `iv`
/// of the first dimension: offsets [iv, 0, ...], sizes [1, full, ...],
/// unit strides.
bool isRequestRow(tensor::ExtractSliceOp slice, Value iv) {
  auto source = slice.getSourceType();
  if (source.getRank() < 1 || slice.getResultType().getRank() != source.getRank())
    return false;
  SmallVector<OpFoldResult> offsets = slice.getMixedOffsets(), sizes = slice.getMixedSizes(),
                            strides = slice.getMixedStrides();
  if (dyn_cast_if_present<Value>(offsets[0]) != iv || !isIndex(sizes[0], 1))
    return false;
  for (int64_t d = 0; d < source.getRank(); ++d) {
    if (!isIndex(strides[d], 1))
      return false;
    if (d > 0 && (!isIndex(offsets[d], 0) || source.isDynamicDim(d) ||
                  !isIndex(sizes[d], source.getDimSize(d))))
      return false;
  }
  return true;
}

/// Whether `collapse` merges a leading unit dimension into the next one and
/// keeps the rest: [1, a, b, ...] → [a, b, ...].
bool dropsLeadingUnit(tensor::CollapseShapeOp collapse) {
  SmallVector<ReassociationIndices> groups = collapse.getReassociationIndices();
  if (groups.empty() || groups[0] != ReassociationIndices{0, 1} ||
      collapse.getSrcType().getDimSize(0) != 1)
    return false;
  for (size_t g = 1; g < groups.size(); ++g)
    if (groups[g] != ReassociationIndices{int64_t(g) + 1})
      return false;
  return true;
}

struct Folder {
  scf::ForallOp loop;
  Value iv;

  /// The tensor of all requests that `v` is request iv's row of (`collapsed`:
  /// with the unit dimension dropped), or null. A shared output's block
  /// argument stands for its initial value.
  Value whole(Value v, bool collapsed) {
    if (collapsed) {
      auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>();
      if (!collapse || !dropsLeadingUnit(collapse))
        return Value();
      v = collapse.getSrc();
    }
    auto slice = v.getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || !isRequestRow(slice, iv))
      return Value();
    Value source = slice.getSource();
    if (OpOperand *init = sharedOutput(source))
      return init->get();
    return outside(source) ? source : Value();
  }

  /// The loop's operand that `v` is the shared output of, if it is one.
  OpOperand *sharedOutput(Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != loop.getBody() || arg.getArgNumber() < loop.getRank())
      return nullptr;
    return loop.getTiedOpOperand(arg);
  }

  bool outside(Value v) { return !loop->isAncestor(v.getParentRegion()->getParentOp()); }
};

/// Folds `loop` into one batched step; false if it is not the form above.
bool fold(scf::ForallOp loop, IRRewriter &rewriter) {
  if (loop.getRank() != 1 || !isIndex(loop.getMixedLowerBound()[0], 0) ||
      !isIndex(loop.getMixedStep()[0], 1) || loop.getMapping())
    return false;
  Block *body = loop.getBody();
  k3::KdaStepOp step;
  for (Operation &op : body->without_terminator()) {
    if (auto s = dyn_cast<k3::KdaStepOp>(op)) {
      if (step || s.isBatched())
        return false;
      step = s;
    } else if (!isa<tensor::ExtractSliceOp, tensor::CollapseShapeOp, tensor::ExpandShapeOp,
                     tensor::EmptyOp>(op)) {
      return false;
    }
  }
  if (!step)
    return false;
  Folder f{loop, loop.getInductionVar(0)};

  // The inputs over all requests.
  enum Kind { Token, Window, Weight };
  const Kind kinds[15] = {Token,  Token,  Token,  Weight, Weight, Weight, Window, Window,
                          Window, Token,  Weight, Weight, Token,  Weight, Token};
  SmallVector<Value> inputs;
  for (auto [operand, kind] : llvm::zip(step->getOperands().take_front(15), kinds)) {
    Value v = kind == Weight ? (f.outside(operand) ? operand : Value())
                             : f.whole(operand, kind == Window);
    if (!v)
      return false;
    inputs.push_back(v);
  }
  // The state is updated in place: its destination is a shared output's
  // row.
  auto stateArg = dyn_cast_if_present<BlockArgument>([&]() -> Value {
    auto collapse = step.getStateInit().getDefiningOp<tensor::CollapseShapeOp>();
    if (!collapse || !dropsLeadingUnit(collapse))
      return Value();
    auto slice = collapse.getSrc().getDefiningOp<tensor::ExtractSliceOp>();
    return slice && isRequestRow(slice, f.iv) ? slice.getSource() : Value();
  }());
  if (!stateArg || !f.sharedOutput(stateArg))
    return false;

  // Each shared output receives one of the step's results, each result
  // goes to one output.
  SmallVector<int64_t> resultOf(loop.getNumResults(), -1);
  SmallVector<bool> stored(step.getNumResults(), false);
  for (Operation &op : loop.getTerminator().getYieldingOps()) {
    auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(op);
    if (!insert)
      return false;
    OpOperand *destOperand = f.sharedOutput(insert.getDest());
    OpResult tied = destOperand ? loop.getTiedOpResult(destOperand) : OpResult();
    if (!tied || resultOf[tied.getResultNumber()] != -1)
      return false;
    // The row at the request, whole: the same test as an extract's.
    SmallVector<OpFoldResult> offsets = insert.getMixedOffsets(), sizes = insert.getMixedSizes(),
                              strides = insert.getMixedStrides();
    auto destType = cast<RankedTensorType>(insert.getDest().getType());
    if (destType.getRank() < 1 || dyn_cast_if_present<Value>(offsets[0]) != f.iv || !isIndex(sizes[0], 1) ||
        insert.getSourceType().getRank() != destType.getRank())
      return false;
    for (int64_t d = 0; d < destType.getRank(); ++d)
      if (!isIndex(strides[d], 1) ||
          (d > 0 && (!isIndex(offsets[d], 0) || destType.isDynamicDim(d) ||
                     !isIndex(sizes[d], destType.getDimSize(d)))))
        return false;
    Value source = insert.getSource();
    if (auto expand = source.getDefiningOp<tensor::ExpandShapeOp>())
      source = expand.getSrc();
    auto result = dyn_cast<OpResult>(source);
    if (!result || result.getOwner() != step || stored[result.getResultNumber()])
      return false;
    stored[result.getResultNumber()] = true;
    resultOf[tied.getResultNumber()] = result.getResultNumber();
  }
  if (llvm::is_contained(resultOf, -1))
    return false;
  // The state's row is written back where it was read.
  if (resultOf[loop.getTiedOpResult(loop.getTiedOpOperand(stateArg)).getResultNumber()] != 4)
    return false;

  // The batched step, before the loop, on rows [0, n) of each tensor (n
  // the loop's trip count: a tensor may have more rows, which the loop
  // never touches): the output and the state in their shared outputs'
  // rows, in place; the new windows fresh (under GVA a new q/k window
  // must not be the old one's buffer), then copied into their rows.
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(loop);
  Location loc = step.getLoc();
  OpFoldResult trips = loop.getMixedUpperBound()[0];
  auto wholeRows = [&](Value whole) {
    auto type = cast<RankedTensorType>(whole.getType());
    std::optional<int64_t> n = getConstantIntValue(trips);
    return n && !type.isDynamicDim(0) && type.getDimSize(0) == *n;
  };
  auto box = [&](Value whole, SmallVector<OpFoldResult> &offsets,
                 SmallVector<OpFoldResult> &sizes, SmallVector<OpFoldResult> &strides) {
    auto type = cast<RankedTensorType>(whole.getType());
    offsets.assign(type.getRank(), rewriter.getIndexAttr(0));
    strides.assign(type.getRank(), rewriter.getIndexAttr(1));
    sizes.assign({trips});
    for (int64_t d = 1; d < type.getRank(); ++d) // static: isRequestRow
      sizes.push_back(rewriter.getIndexAttr(type.getDimSize(d)));
  };
  DenseMap<Value, Value> sliced; // one slice per tensor
  auto rows = [&](Value whole) -> Value {
    if (wholeRows(whole))
      return whole;
    Value &part = sliced[whole];
    if (!part) {
      SmallVector<OpFoldResult> offsets, sizes, strides;
      box(whole, offsets, sizes, strides);
      part = tensor::ExtractSliceOp::create(rewriter, loc, whole, offsets, sizes, strides);
    }
    return part;
  };
  auto back = [&](Value part, Value whole) -> Value {
    if (wholeRows(whole) && part.getType() == whole.getType())
      return part;
    SmallVector<OpFoldResult> offsets, sizes, strides;
    box(whole, offsets, sizes, strides);
    return tensor::InsertSliceOp::create(rewriter, loc, part, whole, offsets, sizes, strides);
  };
  auto fresh = [&](Value like) {
    auto type = cast<RankedTensorType>(like.getType());
    SmallVector<OpFoldResult> sizes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      sizes.push_back(type.isDynamicDim(d)
                          ? OpFoldResult(tensor::DimOp::create(rewriter, loc, like, d).getResult())
                          : OpFoldResult(rewriter.getIndexAttr(type.getDimSize(d))));
    return Value(tensor::EmptyOp::create(rewriter, loc, sizes, type.getElementType()));
  };
  for (auto [operand, kind, input] : llvm::zip(step->getOperands().take_front(15), kinds, inputs))
    if (kind != Weight)
      input = rows(input);
  // The shared output each of the step's results goes to.
  SmallVector<Value> destOf(5);
  for (auto [k, i] : llvm::enumerate(resultOf))
    destOf[i] = loop.getOutputs()[k];
  SmallVector<Value> inits{rows(destOf[0]), fresh(inputs[6]), fresh(inputs[7]), fresh(inputs[8]),
                           rows(destOf[4])};
  SmallVector<Type> types;
  for (Value v : inits)
    types.push_back(v.getType());
  auto batched = k3::KdaStepOp::create(
      rewriter, loc, types, inputs[0], inputs[1], inputs[2], inputs[3], inputs[4], inputs[5],
      inputs[6], inputs[7], inputs[8], inputs[9], inputs[10], inputs[11], inputs[12], inputs[13],
      inputs[14], inits[0], inits[1], inits[2], inits[3], inits[4], step.getFormAttr(),
      step.getLbAttr(), step.getScaleAttr(), step.getEpsAttr());
  // The rows' tensors could still disagree on B (two static extents):
  // the verifier says, quietly.
  bool valid;
  {
    ScopedDiagnosticHandler quiet(rewriter.getContext(), [](Diagnostic &) { return success(); });
    valid = succeeded(mlir::verify(batched));
  }
  if (!valid) {
    rewriter.eraseOp(batched);
    return false;
  }
  SmallVector<Value> results;
  for (auto [i, old] : llvm::enumerate(loop.getResults())) {
    Value r = back(batched.getResult(resultOf[i]), loop.getOutputs()[i]);
    results.push_back(r.getType() == old.getType()
                          ? r
                          : Value(tensor::CastOp::create(rewriter, loc, old.getType(), r)));
  }
  rewriter.replaceOp(loop, results);
  return true;
}

struct K3GpuBatchKdaStepPass : k3::impl::K3GpuBatchKdaStepPassBase<K3GpuBatchKdaStepPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<scf::ForallOp> loops;
    getOperation()->walk([&](scf::ForallOp loop) { loops.push_back(loop); });
    IRRewriter rewriter(&getContext());
    for (scf::ForallOp loop : loops)
      fold(loop, rewriter);
  }
};

} // namespace
