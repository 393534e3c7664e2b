//===- BundleWriter.h - Write .k3b binaries ---------------------*- C++ -*-===//
//
// Part of k3. Serialises a compiled module into the runtime's container
// (runtime/schemas/k3_bundle.fbs): metadata, entry points, kernels and the
// weights the module names, then re-opens the file with the runtime's
// verifier (verify after write).
//
//===----------------------------------------------------------------------===//

#ifndef LIB_BUNDLE_BUNDLEWRITER_H
#define LIB_BUNDLE_BUNDLEWRITER_H

#include "lib/Model/Checkpoint.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::k3 {

/// Writes `module` (its `k3.weight` ops name the weights to embed, its
/// functions the entry points) as a .k3b at `path`. The current backend
/// records no kernels yet: entry points have no steps.
bool writeBundle(ModuleOp module, const ::k3::model::Checkpoint &checkpoint,
                 const std::string &path, std::string &error);

} // namespace mlir::k3

#endif // LIB_BUNDLE_BUNDLEWRITER_H
