//===- MlaAbsorb.cpp - Expanded MLA → absorbed MLA ------------------------===//
//
// Part of k3. Implements k3-mla-absorb with the cost rule of its
// description: decode always absorbed, prefill chosen at run time.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "k3-mla-absorb"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3MLAABSORBPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;
using namespace mlir::k3;

namespace {

MlaAbsorbedOp absorbed(OpBuilder &b, MlaOp op, int64_t splits) {
  return MlaAbsorbedOp::create(b, op.getLoc(), op.getOut().getType(), op.getNewCache().getType(),
                               op.getQ(), op.getLatent(), op.getKRope(), op.getKvB(),
                               op.getCache(), op.getGate(), op.getScaleAttr(),
                               op.getCausalAttr(), b.getI64IntegerAttr(splits));
}

/// absorbed < expanded under the cost rule, as an i1 computed from T and S.
Value absorbedIsCheaper(OpBuilder &b, MlaOp op) {
  Location loc = op.getLoc();
  auto qType = cast<RankedTensorType>(op.getQ().getType());
  int64_t l = cast<RankedTensorType>(op.getLatent().getType()).getDimSize(1),
          r = cast<RankedTensorType>(op.getKRope().getType()).getDimSize(1),
          vd = cast<RankedTensorType>(op.getOut().getType()).getDimSize(2),
          p = qType.getDimSize(2) - r;
  auto c = [&](int64_t v) { return Value(arith::ConstantIndexOp::create(b, loc, v)); };
  auto mul = [&](Value x, Value y) { return Value(arith::MulIOp::create(b, loc, x, y)); };
  auto add = [&](Value x, Value y) { return Value(arith::AddIOp::create(b, loc, x, y)); };
  Value t = tensor::DimOp::create(b, loc, op.getQ(), 0);
  Value s = tensor::DimOp::create(b, loc, op.getCache(), 0);
  Value all = add(s, t);
  Value expanded = add(mul(all, c(l * (p + vd))), mul(mul(t, all), c(p + r + vd)));
  Value absorbedCost = add(mul(t, c(l * (p + vd))), mul(mul(t, all), c(2 * l + r)));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, absorbedCost, expanded);
}

struct K3MlaAbsorbPass : k3::impl::K3MlaAbsorbPassBase<K3MlaAbsorbPass> {
  using Base::Base;

  void runOnOperation() override {
    if (decodeSplits < 1 || decodeSplits > 256 || (prefill != "cost" && prefill != "absorbed" && prefill != "expanded") ||
        (decode != "absorbed" && decode != "expanded")) {
      getOperation()->emitError() << "k3-mla-absorb: decode-splits " << int64_t(decodeSplits)
                                  << " must be in [1, 256] and prefill '" << prefill
                                  << "' one of cost, absorbed, expanded, decode '" << decode
                                  << "' absorbed or expanded";
      return signalPassFailure();
    }
    SmallVector<MlaOp> ops;
    getOperation()->walk([&](MlaOp op) { ops.push_back(op); });
    for (MlaOp op : ops) {
      OpBuilder b(op);
      SmallVector<Value> results;
      if (cast<RankedTensorType>(op.getQ().getType()).getDimSize(0) == 1) {
        if (decode == "expanded")
          continue;
        results = absorbed(b, op, decodeSplits)->getResults();
      } else if (prefill == "expanded") {
        continue;
      } else if (prefill == "absorbed") {
        results = absorbed(b, op, 1)->getResults();
      } else {
        auto branch = scf::IfOp::create(
            b, op.getLoc(), op->getResultTypes(), absorbedIsCheaper(b, op),
            /*addThenBlock=*/true, /*addElseBlock=*/true);
        OpBuilder then = branch.getThenBodyBuilder();
        scf::YieldOp::create(then, op.getLoc(), absorbed(then, op, 1)->getResults());
        OpBuilder other = branch.getElseBodyBuilder();
        Operation *copy = other.clone(*op);
        scf::YieldOp::create(other, op.getLoc(), copy->getResults());
        results = branch.getResults();
      }
      op->replaceAllUsesWith(results);
      op->erase();
    }
  }
};

} // namespace
