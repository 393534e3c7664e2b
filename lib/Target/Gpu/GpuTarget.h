//===- GpuTarget.h - PTX kernels to cubins and bundle kernels ---*- C++ -*-===//
//
// Part of k3. Between the GPU path's `ptx` and `host` stages: each
// `gpu.binary` (PTX from LLVM's NVPTX backend) becomes a bundle kernel —
// its PTX, a cubin from ptxas when ptxas is installed, ptxas's register,
// spill and shared-memory figures, and its launch block — and the binary's
// object in the host program becomes the reference `k3-kernel:<name>`,
// which the runtime resolves against the bundle's kernel table.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_TARGET_GPU_GPUTARGET_H
#define LIB_TARGET_GPU_GPUTARGET_H

#include "lib/Bundle/BundleWriter.h"

#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <string>
#include <vector>

namespace mlir::k3 {

struct GpuTargetOptions {
  /// ptxas's -arch (sm_90a, sm_80).
  std::string chip = "sm_90a";
  /// ptxas to run; empty: PTX only (the driver compiles it at load).
  std::string ptxas;
  /// Largest spill (store bytes) a kernel may have; -1: no limit.
  int64_t maxSpillBytes = 64;
  /// Called as each kernel's ptxas run ends (kernels done, of how many),
  /// from one thread at a time.
  std::function<void(size_t, size_t)> progress;
};

/// The prefix of a kernel reference in the host program's binaries.
inline constexpr const char *kKernelReferencePrefix = "k3-kernel:";

/// ptxas: `--ptxas=PATH` if given, else CUDA's default install, else PATH;
/// empty when none is found.
std::string findPtxas(const std::string &requested);

/// The CUDA toolkit whose libdevice the kernels link: $CUDA_HOME,
/// $CUDA_PATH or $CUDA_ROOT when set, else the directory above ptxas's bin/
/// or /usr/local/cuda, whichever has libdevice. Empty (and `error` set)
/// when there is none.
std::string findCudaToolkit(const std::string &ptxas, std::string &error);

/// Moves every gpu.binary's PTX into `kernels` (assembling it with ptxas when
/// `options.ptxas` is set) and leaves references in the module. Fails with
/// one line: ptxas errors (its first error line), a spill over the budget, a
/// binary without PTX.
bool extractDeviceKernels(ModuleOp module, const GpuTargetOptions &options,
                          std::vector<DeviceKernel> &kernels, std::string &error);

} // namespace mlir::k3

#endif // LIB_TARGET_GPU_GPUTARGET_H
