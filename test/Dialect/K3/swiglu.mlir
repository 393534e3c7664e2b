// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// Kimi Linear's SwiGLU: no parameters.
// CHECK-LABEL: func.func @swiglu
//       CHECK:   %[[H:.+]] = k3.swiglu %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<?x96xbf16>
//       CHECK:   return %[[H]]
func.func @swiglu(%g: tensor<?x96xbf16>, %u: tensor<?x96xbf16>) -> tensor<?x96xbf16> {
  %h = k3.swiglu %g, %u : tensor<?x96xbf16>
  return %h : tensor<?x96xbf16>
}
