//===- k3-opt.cpp - Transform K3 IR like mlir-opt -------------------------===//
//
// Part of k3. `k3-opt in.mlir --k3-<pass>` runs any k3 or upstream pass with
// the standard MLIR pass-manager, printing and debugging options.
//
//===----------------------------------------------------------------------===//

#include "lib/Registration/RegisterAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::k3::registerK3Passes();
  mlir::DialectRegistry registry;
  mlir::k3::registerK3Dialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "k3 optimizer driver\n", registry));
}
