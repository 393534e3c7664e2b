//===- BufferRoot.h - The buffer a memref views -----------------*- C++ -*-===//
//
// Part of k3. The root of a memref value: the allocation, argument or other
// value it is a view of, through view-like ops, casts and the base buffer
// of memref.extract_strided_metadata. Passes that compare buffers
// (k3-entry-deallocations, k3-gpu-merge-launches) compare roots.
//
//===----------------------------------------------------------------------===//

#ifndef PASSES_TRANSFORMS_BUFFERROOT_H
#define PASSES_TRANSFORMS_BUFFERROOT_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::k3 {

inline Value bufferRoot(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def))
      v = view.getViewSource();
    else if (auto cast = dyn_cast<memref::CastOp>(def))
      v = cast.getSource();
    else if (auto meta = dyn_cast<memref::ExtractStridedMetadataOp>(def))
      v = meta.getSource();
    else
      break;
  }
  return v;
}

} // namespace mlir::k3

#endif // PASSES_TRANSFORMS_BUFFERROOT_H
