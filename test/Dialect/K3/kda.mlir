// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// One KDA head group: state [HV, K, V] in f32, bf16 activations.
// CHECK-LABEL: func.func @kda
//  CHECK-SAME:   %[[S0:[^:]+]]: tensor<4x16x8xf32>
//       CHECK:   %[[O:.+]], %[[S1:.+]] = k3.kda %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, state(%[[S0]]) scale = 2.500000e-01
//  CHECK-SAME:     -> (tensor<?x4x8xbf16>, tensor<4x16x8xf32>)
//       CHECK:   return %[[O]], %[[S1]]
func.func @kda(%q: tensor<?x4x16xbf16>, %k: tensor<?x4x16xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4x16xf32>,
               %beta: tensor<?x4xf32>, %s0: tensor<4x16x8xf32>) -> (tensor<?x4x8xbf16>, tensor<4x16x8xf32>) {
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<?x4x16xbf16>, tensor<?x4x16xbf16>, tensor<?x4x8xbf16>, tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>)
      -> (tensor<?x4x8xbf16>, tensor<4x16x8xf32>)
  return %o, %s1 : tensor<?x4x8xbf16>, tensor<4x16x8xf32>
}

// -----

// GVA: 2 q/k heads shared by 4 value heads.
// CHECK-LABEL: func.func @gva
//       CHECK:   k3.kda {{.+}} -> (tensor<5x4x16xf32>, tensor<4x16x16xf32>)
func.func @gva(%q: tensor<5x2x16xf32>, %k: tensor<5x2x16xf32>, %v: tensor<5x4x16xf32>, %g: tensor<5x4x16xf32>,
               %beta: tensor<5x4xf32>, %s0: tensor<4x16x16xf32>) -> (tensor<5x4x16xf32>, tensor<4x16x16xf32>) {
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<5x2x16xf32>, tensor<5x2x16xf32>, tensor<5x4x16xf32>, tensor<5x4x16xf32>, tensor<5x4xf32>, tensor<4x16x16xf32>)
      -> (tensor<5x4x16xf32>, tensor<4x16x16xf32>)
  return %o, %s1 : tensor<5x4x16xf32>, tensor<4x16x16xf32>
}

// -----

// Snapshots: the state after every 512 tokens as a third result.
// CHECK-LABEL: func.func @snapshots
//       CHECK:   %{{.+}}, %{{.+}}, %[[SN:.+]] = k3.kda {{.+}} scale = 2.500000e-01 snapshots every 512 :
//  CHECK-SAME:     -> (tensor<?x4x8xf32>, tensor<4x16x8xf32>, tensor<?x4x16x8xf32>)
//       CHECK:   return %[[SN]]
func.func @snapshots(%q: tensor<?x4x16xf32>, %k: tensor<?x4x16xf32>, %v: tensor<?x4x8xf32>, %g: tensor<?x4x16xf32>,
                     %beta: tensor<?x4xf32>, %s0: tensor<4x16x8xf32>) -> tensor<?x4x16x8xf32> {
  %o, %s1, %sn = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25 snapshots every 512
      : (tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x8xf32>, tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>)
      -> (tensor<?x4x8xf32>, tensor<4x16x8xf32>, tensor<?x4x16x8xf32>)
  return %sn : tensor<?x4x16x8xf32>
}
