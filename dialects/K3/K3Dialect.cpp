//===- K3Dialect.cpp - The K3 dialect -------------------------------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Dialect.h"
#include "dialects/K3/K3Ops.h"

using namespace mlir;
using namespace mlir::k3;

#include "dialects/K3/K3Dialect.cpp.inc"

void K3Dialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/K3/K3Ops.cpp.inc"
      >();
}
