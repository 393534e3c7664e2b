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
    if (moeDispatch != "grouped" && moeDispatch != "slots" && moeDispatch != "mma" &&
        moeDispatch != "per-token") {
      emitError(getOperation()->getLoc())
          << "convert-k3-to-linalg: moe-dispatch must be grouped, slots, mma or per-token, got '"
          << moeDispatch << "'";
      return signalPassFailure();
    }
    if (kdaDecode != "per-head" && kdaDecode != "heads" && kdaDecode != "batched" &&
        kdaDecode != "kernel") {
      emitError(getOperation()->getLoc())
          << "convert-k3-to-linalg: kda-decode must be per-head, heads, batched or kernel, got '"
          << kdaDecode
          << "'";
      return signalPassFailure();
    }
    if (attnRes != "linalg" && attnRes != "kernel") {
      emitError(getOperation()->getLoc())
          << "convert-k3-to-linalg: attn-res must be linalg or kernel, got '" << attnRes << "'";
      return signalPassFailure();
    }
    if (norm != "linalg" && norm != "kernel") {
      emitError(getOperation()->getLoc())
          << "convert-k3-to-linalg: norm must be linalg or kernel, got '" << norm << "'";
      return signalPassFailure();
    }
    if (mlaPaged != "loops" && mlaPaged != "kernel") {
      emitError(getOperation()->getLoc())
          << "convert-k3-to-linalg: mla-paged must be loops or kernel, got '" << mlaPaged << "'";
      return signalPassFailure();
    }
    if (kdaPrefill != "loops" && kdaPrefill != "scan" && kdaPrefill != "chunks") {
      emitError(getOperation()->getLoc())
          << "convert-k3-to-linalg: kda-prefill must be loops, scan or chunks, got '" << kdaPrefill
          << "'";
      return signalPassFailure();
    }
    if (router != "loops" && router != "picks") {
      emitError(getOperation()->getLoc())
          << "convert-k3-to-linalg: router must be loops or picks, got '" << router << "'";
      return signalPassFailure();
    }
    if (mlaSplitKeys < 0) {
      emitError(getOperation()->getLoc())
          << "convert-k3-to-linalg: mla-split-keys must be 0 (the op's splits) or a part "
             "length, got "
          << int64_t(mlaSplitKeys);
      return signalPassFailure();
    }
    if (mlaDecode != "parts" && mlaDecode != "fused") {
      emitError(getOperation()->getLoc())
          << "convert-k3-to-linalg: mla-decode must be parts or fused, got '" << mlaDecode
          << "'";
      return signalPassFailure();
    }
    if (linear != "dot" && linear != "blocked") {
      emitError(getOperation()->getLoc())
          << "convert-k3-to-linalg: linear must be dot or blocked, got '" << linear << "'";
      return signalPassFailure();
    }
    if (panelColumns != 16 && panelColumns != 32) {
      emitError(getOperation()->getLoc())
          << "convert-k3-to-linalg: panel-columns must be 16 or 32, got "
          << int64_t(panelColumns);
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    // chunks: the kernel where it applies, the scan for the rest.
    if (kdaPrefill == "chunks")
      k3::lowering::populateKdaChunksPatterns(patterns);
    if (kdaPrefill == "scan" || kdaPrefill == "chunks")
      k3::lowering::populateKdaScanPatterns(patterns);
    // kernel: k3.kda_step, over the loop forms (all three need static head
    // shapes; a dynamic step stays and a later stage reports it).
    if (kdaDecode == "kernel")
      k3::lowering::populateKdaStepPatterns(patterns);
    if (attnRes == "kernel")
      k3::lowering::populateAttnResMixPatterns(patterns);
    if (norm == "kernel")
      k3::lowering::populateRowNormPatterns(patterns);
    k3::lowering::populateMoePatterns(patterns, moeDispatch, panelColumns);
    k3::lowering::populatePlumbingPatterns(patterns, linear == "blocked", panelColumns);
    k3::lowering::populateChannelMixingPatterns(patterns, router == "picks");
    k3::lowering::populateMixingPatterns(patterns);
    k3::lowering::populateTokenMixingPatterns(patterns);
    k3::lowering::populateKdaChunkedPatterns(patterns);
    k3::lowering::populateKdaDecodePatterns(patterns, kdaDecode == "batched" || kdaDecode == "kernel",
                                            kdaDecode == "heads");
    k3::lowering::populateMlaAbsorbedPatterns(patterns, mlaSplitKeys, mlaDecode == "fused",
                                             mlaPaged == "kernel");
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
