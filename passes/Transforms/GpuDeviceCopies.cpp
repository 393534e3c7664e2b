//===- GpuDeviceCopies.cpp - Buffer copies of a GPU program as kernels ----===//
//
// Part of k3. Implements k3-gpu-device-copies: the `memref.copy`s that
// bufferization leaves in the host program (chunk slices of KDA, cache
// windows) become `linalg.copy`, which the GPU stage maps to kernels like
// any other loop nest; a strided view's offset becomes dynamic, so that
// copies into different places of one buffer share their kernel. On the host they would be CPU copies through managed
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

/// A strided view with its offset made dynamic: the copy kernel then takes
/// the offset as an argument, so that copies into different places of one
/// buffer (the AttnRes seals' rows of the blocks' stack) are one kernel.
Value dynamicOffset(OpBuilder &b, Value v) {
  auto type = cast<MemRefType>(v.getType());
  auto strided = dyn_cast<StridedLayoutAttr>(type.getLayout());
  if (!strided || ShapedType::isDynamic(strided.getOffset()))
    return v;
  auto layout = StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                                       strided.getStrides());
  return memref::CastOp::create(
      b, v.getLoc(),
      MemRefType::get(type.getShape(), type.getElementType(), layout, type.getMemorySpace()), v);
}

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
      linalg::CopyOp::create(b, copy.getLoc(), dynamicOffset(b, copy.getSource()),
                             dynamicOffset(b, copy.getTarget()));
      copy.erase();
    }
  }
};

} // namespace
