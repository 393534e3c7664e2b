//===- K3Ops.h - Ops of the K3 dialect --------------------------*- C++ -*-===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_K3_K3OPS_H
#define DIALECTS_K3_K3OPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"

#include "dialects/K3/K3Dialect.h"
#include "dialects/K3/K3Enums.h.inc"

#define GET_OP_CLASSES
#include "dialects/K3/K3Ops.h.inc"

namespace mlir::k3 {
/// `k3.swiglu` or `k3.situ_glu` (with its betas) for the GLU-carrying ops'
/// `activation`: the one place the lowerings choose between them.
Value createGlu(OpBuilder &b, Location loc, Type type, Value gate, Value up,
                GluActivation act, FloatAttr beta1, FloatAttr beta2);
} // namespace mlir::k3

#endif // DIALECTS_K3_K3OPS_H
