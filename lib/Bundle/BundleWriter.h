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

#include <map>
#include <string>
#include <vector>

namespace mlir::k3 {

/// Writes `module` as a .k3b at `path`. The module's functions, after
/// k3-outline-weights, are the entry points: arguments carrying `k3.weight`
/// name the weights to embed, the others are the entry's inputs. `objects`
/// maps an entry's name to its host shared object; such an entry gets one
/// step binding all its arguments, the others only their signature. Without
/// a checkpoint (an op-level module) there are no weights and no layers.
bool writeBundle(ModuleOp module, const ::k3::model::Checkpoint *checkpoint,
                 const std::map<std::string, std::vector<uint8_t>> &objects,
                 const std::string &cpu,
                 const std::string &path, std::string &error);

} // namespace mlir::k3

#endif // LIB_BUNDLE_BUNDLEWRITER_H
