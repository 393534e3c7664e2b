//===- CpuTarget.h - LLVM dialect → host shared object ----------*- C++ -*-===//
//
// Part of k3. The last CPU phase: a module in the LLVM dialect whose entry
// functions carry `llvm.emit_c_interface` becomes a shared object exporting
// `void k3_entry_<name>(void **args)` for each of them.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_TARGET_CPU_CPUTARGET_H
#define LIB_TARGET_CPU_CPUTARGET_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::k3 {

/// Emits the host shared object of `module` into `so`; `cpu` receives the
/// instruction-set level it targets (see CpuTarget.cpp). `gpuHost`: the
/// module is a GPU target's host program (mgpu* calls, kernel binaries): the
/// object also exports `k3_gpu_attach` / `k3_gpu_detach`.
bool emitHostSharedObject(ModuleOp module, std::vector<uint8_t> &so,
                          std::string &cpu, std::string &error, bool gpuHost = false);

} // namespace mlir::k3

#endif // LIB_TARGET_CPU_CPUTARGET_H
