// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// Plain RMSNorm over the hidden dimension.
// CHECK-LABEL: func.func @rms_norm
//       CHECK:   %[[Y:.+]] = k3.rms_norm %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} {eps = 9.99999974E-6 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
//       CHECK:   return %[[Y]]
func.func @rms_norm(%x: tensor<?x64xbf16>, %w: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = k3.rms_norm %x, %w {eps = 1.0e-05 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// Head-wise norm with the KDA output gate fused in: rank 3, weight [K].
// CHECK-LABEL: func.func @gated
//  CHECK-SAME:   (%[[O:.+]]: tensor<?x4x16xf32>, %[[W:.+]]: tensor<16xf32>, %[[G:.+]]: tensor<?x4x16xbf16>)
//       CHECK:   k3.rms_norm %[[O]], %[[W]] gate(%[[G]]) {eps = 9.99999974E-6 : f32}
func.func @gated(%o: tensor<?x4x16xf32>, %w: tensor<16xf32>, %g: tensor<?x4x16xbf16>) -> tensor<?x4x16xf32> {
  %y = k3.rms_norm %o, %w gate(%g) {eps = 1.0e-05 : f32} : (tensor<?x4x16xf32>, tensor<16xf32>, tensor<?x4x16xbf16>) -> tensor<?x4x16xf32>
  return %y : tensor<?x4x16xf32>
}
