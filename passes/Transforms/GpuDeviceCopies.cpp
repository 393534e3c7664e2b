//===- GpuDeviceCopies.cpp - Buffer copies of a GPU program as kernels ----===//
//
// Part of k3. Implements k3-gpu-device-copies: the `memref.copy`s that
// bufferization leaves in the host program (chunk slices of KDA, cache
// windows) become `linalg.copy`, which the GPU stage maps to kernels like
// any other loop nest. On the host they would be CPU copies through managed
// memory: a synchronisation with the kernels before each one, and pages
// migrated both ways.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#define DEBUG_TYPE "k3-gpu-device-copies"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3GPUDEVICECOPIESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

struct K3GpuDeviceCopiesPass : k3::impl::K3GpuDeviceCopiesPassBase<K3GpuDeviceCopiesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation()->walk([&](memref::CopyOp copy) {
      if (copy->getParentOfType<gpu::LaunchOp>() || copy->getParentOfType<gpu::GPUModuleOp>())
        return;
      // linalg.copy needs ranked operands of one shape (memref.copy's
      // verifier already requires equal shapes).
      auto from = dyn_cast<MemRefType>(copy.getSource().getType());
      auto to = dyn_cast<MemRefType>(copy.getTarget().getType());
      if (from && to && from.getElementType() == to.getElementType())
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(), copy.getTarget());
      copy.erase();
    }
  }
};

} // namespace
