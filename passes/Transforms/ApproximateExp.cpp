//===- ApproximateExp.cpp - Polynomial f32 exp, log1p and tanh ------------===//
//
// Part of k3. Implements k3-approximate-exp with the upstream math
// polynomial approximation patterns, restricted to `exp`, `log1p` (and the
// `log` its expansion leaves) and `tanh`.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "k3-approximate-exp"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3APPROXIMATEEXPPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

struct K3ApproximateExpPass : k3::impl::K3ApproximateExpPassBase<K3ApproximateExpPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) {
          return name == math::ExpOp::getOperationName() ||
                 name == math::Log1pOp::getOperationName() ||
                 name == math::LogOp::getOperationName() ||
                 name == math::TanhOp::getOperationName();
        });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
