// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// The KDA beta activation.
// CHECK-LABEL: func.func @sigmoid
//       CHECK:   %[[Y:.+]] = k3.sigmoid %{{[a-z0-9_]+}} : tensor<?x4xf32>
//       CHECK:   return %[[Y]]
func.func @sigmoid(%b: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = k3.sigmoid %b : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
