//===- K3Dialect.h - The K3 dialect -----------------------------*- C++ -*-===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_K3_K3DIALECT_H
#define DIALECTS_K3_K3DIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/K3/K3Dialect.h.inc"

#endif // DIALECTS_K3_K3DIALECT_H
