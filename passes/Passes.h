//===- Passes.h - K3 passes -------------------------------------*- C++ -*-===//
//
// Part of k3. Declarations and registration of every K3 pass.
//
//===----------------------------------------------------------------------===//

#ifndef PASSES_PASSES_H
#define PASSES_PASSES_H

#include "dialects/K3/K3Dialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir::k3 {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace mlir::k3

#endif // PASSES_PASSES_H
