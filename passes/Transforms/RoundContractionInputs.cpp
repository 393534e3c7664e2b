//===- RoundContractionInputs.cpp - bf16 operands, as on tensor cores -----===//
//
// Part of k3. Implements k3-round-contraction-inputs: the f32 operands of
// every f32-accumulated linalg.generic contraction are rounded to bf16 where
// they enter the product (arith.truncf, then arith.extf back), so that a CPU
// build computes what k3-gpu-mma-contractions' tensor cores do with the same
// operands. The match is that pass's: two inputs, one init of f32, one
// reduction loop, and a body `yield(out + cvt(a) * cvt(b))`.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3ROUNDCONTRACTIONINPUTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

/// The product of a contraction's body, or null.
arith::MulFOp contractionProduct(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 1)
    return nullptr;
  Block &body = op.getRegion().front();
  if (!body.getArgument(2).getType().isF32())
    return nullptr;
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (yield.getValues().size() != 1)
    return nullptr;
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!add)
    return nullptr;
  Value out = body.getArgument(2);
  Value product = add.getLhs() == out ? add.getRhs() : add.getRhs() == out ? add.getLhs() : nullptr;
  return product ? product.getDefiningOp<arith::MulFOp>() : nullptr;
}

struct K3RoundContractionInputsPass
    : k3::impl::K3RoundContractionInputsPassBase<K3RoundContractionInputsPass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation()->walk([&](linalg::GenericOp op) {
      if (op->getParentOfType<gpu::GPUModuleOp>())
        return;
      arith::MulFOp mul = contractionProduct(op);
      if (!mul)
        return;
      Block &body = op.getRegion().front();
      OpBuilder b(mul);
      for (unsigned i = 0; i < 2; ++i) {
        // An f32 input block argument, used directly or through arith.extf
        // (from a narrower float: already exact in bf16 when it is bf16).
        Value arg = body.getArgument(i);
        if (!arg.getType().isF32())
          continue;
        Value bf16 = arith::TruncFOp::create(b, mul.getLoc(), b.getBF16Type(), arg);
        Value rounded = arith::ExtFOp::create(b, mul.getLoc(), b.getF32Type(), bf16);
        mul->replaceUsesOfWith(arg, rounded);
      }
    });
  }
};

} // namespace
