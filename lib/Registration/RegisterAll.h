//===- RegisterAll.h - Registration shared by every k3 tool -----*- C++ -*-===//
//
// Part of k3. Every tool registers dialects and passes through this header,
// so k3-opt, k3-compile and the tests see exactly the same set.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_REGISTRATION_REGISTERALL_H
#define LIB_REGISTRATION_REGISTERALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::k3 {

/// Adds the K3 dialect and the upstream dialects the k3 pipeline lowers
/// through (func, arith, math, tensor, linalg, scf, vector, memref,
/// bufferization, gpu, nvgpu, nvvm, llvm) to `registry`.
void registerK3Dialects(DialectRegistry &registry);

/// Registers every K3 pass and the upstream generic passes (canonicalize,
/// cse, ...) with the global pass registry. Idempotent.
void registerK3Passes();

} // namespace mlir::k3

#endif // LIB_REGISTRATION_REGISTERALL_H
