// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// Per-head L2 norm of q/k before the KDA recurrence.
// CHECK-LABEL: func.func @l2_norm
//       CHECK:   %[[Y:.+]] = k3.l2_norm %{{[a-z0-9_]+}} {eps = 9.99999997E-7 : f32} : tensor<?x4x16xf32>
//       CHECK:   return %[[Y]]
func.func @l2_norm(%q: tensor<?x4x16xf32>) -> tensor<?x4x16xf32> {
  %y = k3.l2_norm %q {eps = 1.0e-06 : f32} : tensor<?x4x16xf32>
  return %y : tensor<?x4x16xf32>
}
