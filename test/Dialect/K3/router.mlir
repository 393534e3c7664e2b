// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// K3 router: selection bias, renormalised top-k, scaling 1.
// CHECK-LABEL: func.func @router
//  CHECK-SAME:   %[[B:[^:]+]]: tensor<8xf32>
//       CHECK:   %[[I:.+]], %[[W:.+]] = k3.router %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} bias(%[[B]]) top_k = 2 renormalize scaling = 1.000000e+00
//  CHECK-SAME:     -> (tensor<?x2xi32>, tensor<?x2xf32>)
//       CHECK:   return %[[I]], %[[W]]
func.func @router(%x: tensor<?x64xbf16>, %w: tensor<8x64xbf16>, %b: tensor<8xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>) {
  %i, %p = k3.router %x, %w bias(%b) top_k = 2 renormalize scaling = 1.0
      : (tensor<?x64xbf16>, tensor<8x64xbf16>, tensor<8xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
  return %i, %p : tensor<?x2xi32>, tensor<?x2xf32>
}

// -----

// No bias, no renormalisation, a Kimi-Linear-like scaling, top_k = E.
// CHECK-LABEL: func.func @plain
//       CHECK:   k3.router %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} top_k = 4 scaling = 2.446000e+00 :
//   CHECK-NOT:   renormalize
func.func @plain(%x: tensor<3x16xf32>, %w: tensor<4x16xf32>) -> (tensor<3x4xi64>, tensor<3x4xf32>) {
  %i, %p = k3.router %x, %w top_k = 4 scaling = 2.446
      : (tensor<3x16xf32>, tensor<4x16xf32>) -> (tensor<3x4xi64>, tensor<3x4xf32>)
  return %i, %p : tensor<3x4xi64>, tensor<3x4xf32>
}
