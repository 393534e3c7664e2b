//===- CpuPipeline.cpp - k3 ops to LLVM for the host CPU ------------------===//
//
// Part of k3. The named pipeline `k3-cpu-to-llvm`: k3 → linalg on tensors →
// one-shot bufferization → loops → LLVM dialect. The stages are upstream
// passes; their order is the usual one for a linalg-on-tensors program:
// bufferize before lowering linalg to loops, expand strided metadata before
// the memref → LLVM conversion, reconcile casts last. log1p goes to libm:
// the LLVM-dialect expansion log(1 + x) rounds softplus(-30) to 0. Strided
// memref copies call `memrefCopy`, which lib/Target/Cpu links into each
// kernel object itself (the runtime loads kernels without MLIR's runner
// library). Temporaries are freed by the ownership-based deallocation
// pipeline.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

namespace {

constexpr const char *kCpuPipeline =
    "k3-outline-weights,k3-decompose-mlp,convert-k3-to-linalg,"
    "convert-elementwise-to-linalg,"
    "canonicalize,"
    "one-shot-bufferize{bufferize-function-boundaries "
    "allow-return-allocs-from-loops "
    "function-boundary-type-conversion=identity-layout-map},"
    "buffer-deallocation-pipeline,convert-bufferization-to-memref,"
    "convert-linalg-to-loops,convert-scf-to-cf,expand-strided-metadata,"
    "lower-affine,"
    "convert-math-to-llvm{approximate-log1p=false},convert-math-to-libm,"
    "finalize-memref-to-llvm,"
    "convert-arith-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,"
    "reconcile-unrealized-casts";

} // namespace

void mlir::k3::registerK3Pipelines() {
  PassPipelineRegistration<>(
      "k3-cpu-to-llvm",
      "Lower k3 ops through linalg and bufferization to the LLVM dialect for "
      "the host CPU",
      [](OpPassManager &pm) {
        // The pipeline text only names registered passes: parsing cannot
        // fail unless registration is broken, which the lit tests catch.
        (void)parsePassPipeline(kCpuPipeline, pm);
      });
}
