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

#include <set>
#include <string>
#include <vector>

namespace mlir::k3 {

/// One GPU kernel of the bundle (lib/Target/Gpu): PTX, an optional cubin,
/// the launch block and ptxas's figures (-1 where unknown).
struct DeviceKernel {
  std::string name;
  std::string ptx;
  std::vector<uint8_t> cubin;
  std::vector<int32_t> block{1, 1, 1};
  uint32_t sharedMemoryBytes = 0;
  int32_t registers = -1;
  int32_t spillBytes = -1;
};

/// The code of a bundle: the target ("cpu", "sm_90a", "sm_80"), the entry
/// points' one host object (the kernels themselves on the CPU; the program
/// that launches the device kernels on a GPU target; the runtime calls
/// `k3_entry_<entry name>` in it) with the instruction-set level it needs,
/// and the device kernels.
struct BundleCode {
  std::string target = "cpu";
  std::vector<uint8_t> hostObject; ///< empty: signatures only
  std::string cpu;
  std::vector<DeviceKernel> deviceKernels;
  /// Entry points whose GPU host program a CUDA graph may capture (their
  /// gpu phase's `k3.graph_capturable`).
  std::set<std::string> graphCapturable;
};

/// Writes `module` as a .k3b at `path`. The module's functions, after
/// k3-outline-weights, are the entry points: arguments carrying `k3.weight`
/// name the weights to embed, the others are the entry's inputs. With a host
/// object, each entry gets one step binding all its arguments, else only
/// its signature. Device kernels follow the
/// host kernels in the kernel table. Without a checkpoint (an op-level
/// module) there are no weights and no layers.
/// With `omitWeights` the weight table is complete (names, shapes, offsets,
/// checksums) but the file ends before the weight region: the runtime fills
/// it with synthetic values (k3rt_bundle_open_synthetic).
///
/// A module compiled for a grid of ranks (its `k3.grid` attribute, from
/// k3-lower-collectives) is written once per rank with `rank` set: the
/// bundle records the grid and the rank, and holds that rank's block of
/// every split weight (`k3.split_dim`/`k3.split_axes` on the argument), cut
/// from the stored tensor before any derivation (dequantization,
/// quantization), so a rank's file never holds another rank's bytes.
bool writeBundle(ModuleOp module, const ::k3::model::Checkpoint *checkpoint,
                 const BundleCode &code, const std::string &path, std::string &error,
                 bool omitWeights = false, int64_t rank = 0);

/// The grid of a module compiled for one (`k3.grid`), or {} for one process.
std::vector<int64_t> moduleGrid(ModuleOp module);

} // namespace mlir::k3

#endif // LIB_BUNDLE_BUNDLEWRITER_H
