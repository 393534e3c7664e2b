// RUN: k3-opt %s --split-input-file --k3-quantize-mxfp4 | FileCheck %s
// RUN: k3-opt %s --split-input-file --k3-quantize-mxfp4="scale-rule=ceil inputs=mxfp8" | FileCheck %s --check-prefix=CEIL
// RUN: k3-opt %s --split-input-file --k3-quantize-mxfp4 --k3-outline-weights | FileCheck %s --check-prefix=OUTLINE
// RUN: not k3-opt %s --k3-quantize-mxfp4=scale-rule=even 2>&1 | FileCheck %s --check-prefix=RULE
// RUN: not k3-opt %s --k3-quantize-mxfp4=inputs=fp8 2>&1 | FileCheck %s --check-prefix=INPUTS

// Float experts become MXFP4 codes and E8M0 scales named after the float
// weights and the rule (the bundle writer quantizes the checkpoint values);
// the float weights die, nothing else changes.
// CHECK-LABEL: func.func @float_experts
//   CHECK-DAG:   %[[C1:.+]] = k3.weight "experts.{e}.w1.weight#mxfp4.floor.codes" : tensor<4x96x64xf4E2M1FN>
//   CHECK-DAG:   %[[S1:.+]] = k3.weight "experts.{e}.w1.weight#mxfp4.floor.scales" : tensor<4x96x2xf8E8M0FNU>
//   CHECK-DAG:   %[[C3:.+]] = k3.weight "experts.{e}.w3.weight#mxfp4.floor.codes" : tensor<4x96x64xf4E2M1FN>
//   CHECK-DAG:   %[[S3:.+]] = k3.weight "experts.{e}.w3.weight#mxfp4.floor.scales" : tensor<4x96x2xf8E8M0FNU>
//   CHECK-DAG:   %[[C2:.+]] = k3.weight "experts.{e}.w2.weight#mxfp4.floor.codes" : tensor<4x64x96xf4E2M1FN>
//   CHECK-DAG:   %[[S2:.+]] = k3.weight "experts.{e}.w2.weight#mxfp4.floor.scales" : tensor<4x64x3xf8E8M0FNU>
//   CHECK-NOT:   k3.weight "experts.{e}.w1.weight" :
//       CHECK:   k3.moe %{{.+}} experts(%[[C1]], %[[C3]], %[[C2]]) scales(%[[S1]], %[[S3]], %[[S2]])
//  CHECK-SAME:   {beta1 = 4.000000e+00 : f32}
// CEIL-LABEL: func.func @float_experts
//       CEIL:   k3.weight "experts.{e}.w1.weight#mxfp4.ceil.codes"
//       CEIL:   k3.moe {{.+}} {beta1 = 4.000000e+00 : f32, mxfp8_inputs}
// The codes reach the kernels as packed bytes.
// OUTLINE-LABEL: func.func @float_experts
//  OUTLINE-SAME:   tensor<4x96x32xi8> {k3.packed_e2m1, k3.weight = "experts.{e}.w1.weight#mxfp4.floor.codes"}
//  OUTLINE-SAME:   tensor<4x96x2xf8E8M0FNU> {k3.weight = "experts.{e}.w1.weight#mxfp4.floor.scales"}
//       OUTLINE:   k3.unpack_e2m1 %{{.+}} : tensor<4x96x32xi8> -> tensor<4x96x64xf4E2M1FN>
// RULE: k3-quantize-mxfp4: scale-rule must be floor or ceil, got 'even'
// INPUTS: k3-quantize-mxfp4: inputs must be none or mxfp8, got 'fp8'
func.func @float_experts(%x: tensor<?x64xf32>, %i: tensor<?x2xi32>, %p: tensor<?x2xf32>) -> tensor<?x64xf32> {
  %w1 = k3.weight "experts.{e}.w1.weight" : tensor<4x96x64xf32>
  %w3 = k3.weight "experts.{e}.w3.weight" : tensor<4x96x64xf32>
  %w2 = k3.weight "experts.{e}.w2.weight" : tensor<4x64x96xf32>
  %y = k3.moe %x routed(%i, %p) experts(%w1, %w3, %w2) {beta1 = 4.0 : f32}
      : (tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x96x64xf32>, tensor<4x96x64xf32>,
         tensor<4x64x96xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Experts already in MXFP4 are kept as they are.
// CHECK-LABEL: func.func @packed_experts
//       CHECK:   k3.weight "experts.{e}.w1.weight_packed" : tensor<4x96x64xf4E2M1FN>
//   CHECK-NOT:   #mxfp4
func.func @packed_experts(%x: tensor<?x64xf32>, %i: tensor<?x2xi32>, %p: tensor<?x2xf32>) -> tensor<?x64xf32> {
  %w1 = k3.weight "experts.{e}.w1.weight_packed" : tensor<4x96x64xf4E2M1FN>
  %w3 = k3.weight "experts.{e}.w3.weight_packed" : tensor<4x96x64xf4E2M1FN>
  %w2 = k3.weight "experts.{e}.w2.weight_packed" : tensor<4x64x96xf4E2M1FN>
  %s1 = k3.weight "experts.{e}.w1.weight_scale" : tensor<4x96x2xf8E8M0FNU>
  %s3 = k3.weight "experts.{e}.w3.weight_scale" : tensor<4x96x2xf8E8M0FNU>
  %s2 = k3.weight "experts.{e}.w2.weight_scale" : tensor<4x64x3xf8E8M0FNU>
  %y = k3.moe %x routed(%i, %p) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2) {beta1 = 4.0 : f32}
      : (tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x96x64xf4E2M1FN>,
         tensor<4x96x64xf4E2M1FN>, tensor<4x64x96xf4E2M1FN>, tensor<4x96x2xf8E8M0FNU>,
         tensor<4x96x2xf8E8M0FNU>, tensor<4x64x3xf8E8M0FNU>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
