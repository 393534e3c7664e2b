// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// Packed bytes viewed as MXFP4 codes: the last dimension doubles.
// CHECK-LABEL: func.func @unpack
//       CHECK:   k3.unpack_e2m1 %{{.+}} : tensor<8x64x16xi8> -> tensor<8x64x32xf4E2M1FN>
func.func @unpack(%b: tensor<8x64x16xi8>) -> tensor<8x64x32xf4E2M1FN> {
  %c = k3.unpack_e2m1 %b : tensor<8x64x16xi8> -> tensor<8x64x32xf4E2M1FN>
  return %c : tensor<8x64x32xf4E2M1FN>
}

// -----

// Leading dimensions may be dynamic.
// CHECK-LABEL: func.func @dynamic_rows
//       CHECK:   k3.unpack_e2m1 %{{.+}} : tensor<?x16xi8> -> tensor<?x32xf4E2M1FN>
func.func @dynamic_rows(%b: tensor<?x16xi8>) -> tensor<?x32xf4E2M1FN> {
  %c = k3.unpack_e2m1 %b : tensor<?x16xi8> -> tensor<?x32xf4E2M1FN>
  return %c : tensor<?x32xf4E2M1FN>
}
