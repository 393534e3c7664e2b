//===- ConvertK3ToLinalg.cpp - The convert-k3-to-linalg pass --------------===//
//
// Part of k3. Assembles the per-family patterns (PlumbingPatterns.cpp,
// MixingPatterns.cpp, TokenMixingPatterns.cpp, ChannelMixingPatterns.cpp) and applies them greedily: an op without a pattern
// stays, and the CPU pipeline's later stages report it.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/K3ToLinalg/Common.h"
#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::k3 {
#define GEN_PASS_DEF_CONVERTK3TOLINALGPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

struct ConvertK3ToLinalgPass
    : k3::impl::ConvertK3ToLinalgPassBase<ConvertK3ToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    if (moeDispatch != "grouped" && moeDispatch != "per-token") {
      emitError(getOperation()->getLoc())
          << "convert-k3-to-linalg: moe-dispatch must be grouped or per-token, got '"
          << moeDispatch << "'";
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    k3::lowering::populateMoePatterns(patterns, moeDispatch == "grouped");
    k3::lowering::populatePlumbingPatterns(patterns);
    k3::lowering::populateChannelMixingPatterns(patterns);
    k3::lowering::populateMixingPatterns(patterns);
    k3::lowering::populateTokenMixingPatterns(patterns);
    k3::lowering::populateKdaChunkedPatterns(patterns);
    k3::lowering::populateKdaDecodePatterns(patterns);
    k3::lowering::populateMlaAbsorbedPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
