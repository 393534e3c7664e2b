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

/// The instruction-set level of a CPU build for `requested`: `host` (the
/// best level this machine runs: x86-64-v4 with AVX-512, x86-64-v3 with
/// AVX2 and FMA, else baseline x86-64; `generic` off x86-64; at most
/// $K3RT_CPU_LEVEL where that is set) or one of
/// x86-64, x86-64-v3, x86-64-v4 by name. Empty, with `error` set, for
/// anything else or a level off this machine's architecture.
std::string cpuLevel(llvm::StringRef requested, std::string &error);

/// f32 lanes of the widest vector registers of `level` (4, 8 or 16).
int64_t cpuVectorLanes(llvm::StringRef level);

/// Emits the host shared object of `module` for the CPU level `cpu` (from
/// `cpuLevel`) into `so`. `gpuHost`: the module is a GPU target's host
/// program (mgpu* calls, kernel binaries): the object also exports
/// `k3_gpu_attach` / `k3_gpu_detach`.
bool emitHostSharedObject(ModuleOp module, std::vector<uint8_t> &so,
                          const std::string &cpu, std::string &error, bool gpuHost = false);

} // namespace mlir::k3

#endif // LIB_TARGET_CPU_CPUTARGET_H
