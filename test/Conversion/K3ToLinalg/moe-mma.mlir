// RUN: k3-opt %s --split-input-file --convert-k3-to-linalg=moe-dispatch=mma | FileCheck %s

// moe-dispatch=mma (the GPU default): packed MXFP4 experts become one
// k3.moe_experts on the latent input (y per slot, weighted, plus its h and
// order scratch, T·k and 3E + T·k long), then the combine, a sum over each
// token's k slots of y viewed as [T, k, Dl]; the latent norm and up
// projection follow as in the other forms.
// CHECK-LABEL: func.func @moe_mx
//       CHECK:   %[[S:.+]] = arith.muli %[[T:.+]], %c2 : index
//       CHECK:   %[[N:.+]] = arith.addi %[[S]], %c24 : index
//       CHECK:   %[[O:.+]] = tensor.empty(%[[N]]) : tensor<?xi32>
//       CHECK:   %[[Y:.+]]:3 = k3.moe_experts %{{.+}} routed(%{{.+}}, %{{.+}}) experts(%{{.+}}, %{{.+}}, %{{.+}}) scales(%{{.+}}, %{{.+}}, %{{.+}}) outs(%{{.+}}, %{{.+}}, %[[O]]) {beta1 = 4.000000e+00 : f32, beta2 = 2.500000e+01 : f32}
//  CHECK-SAME:     (tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<8x96x32xi8>, tensor<8x96x32xi8>, tensor<8x64x48xi8>, tensor<8x96x2xf8E8M0FNU>, tensor<8x96x2xf8E8M0FNU>, tensor<8x64x3xf8E8M0FNU>, tensor<?x64xf32>, tensor<?x96xf32>, tensor<?xi32>)
//       CHECK:   %[[E:.+]] = tensor.expand_shape %[[Y]]#0 {{\[\[}}0, 1], [2]] output_shape [%[[T]], 2, 64] : tensor<?x64xf32> into tensor<?x2x64xf32>
//       CHECK:   linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[E]] : tensor<?x2x64xf32>)
//       CHECK:     arith.addf
//   CHECK-NOT:   k3.moe
func.func @moe_mx(%x: tensor<?x64xf32>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>,
    %wd: tensor<64x64xf32>, %wu: tensor<64x64xf32>, %n: tensor<64xf32>,
    %c1: tensor<8x96x32xi8>, %c3: tensor<8x96x32xi8>, %c2: tensor<8x64x48xi8>,
    %e1: tensor<8x96x2xf8E8M0FNU>, %e3: tensor<8x96x2xf8E8M0FNU>, %e2: tensor<8x64x3xf8E8M0FNU>)
    -> tensor<?x64xf32> {
  %w1 = k3.unpack_e2m1 %c1 : tensor<8x96x32xi8> -> tensor<8x96x64xf4E2M1FN>
  %w3 = k3.unpack_e2m1 %c3 : tensor<8x96x32xi8> -> tensor<8x96x64xf4E2M1FN>
  %w2 = k3.unpack_e2m1 %c2 : tensor<8x64x48xi8> -> tensor<8x64x96xf4E2M1FN>
  %y = k3.moe %x routed(%i, %w) latent(%wd, %wu) norm(%n) experts(%w1, %w3, %w2) scales(%e1, %e3, %e2)
      {beta1 = 4.0 : f32, beta2 = 25.0 : f32, eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<64x64xf32>, tensor<64x64xf32>,
         tensor<64xf32>, tensor<8x96x64xf4E2M1FN>, tensor<8x96x64xf4E2M1FN>, tensor<8x64x96xf4E2M1FN>,
         tensor<8x96x2xf8E8M0FNU>, tensor<8x96x2xf8E8M0FNU>, tensor<8x64x3xf8E8M0FNU>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Float experts and MXFP8-rounded inputs keep the slot GEMMs.
// CHECK-LABEL: func.func @moe_f32
//   CHECK-NOT:   k3.moe_experts
//       CHECK:   linalg.generic
//   CHECK-NOT:   k3.moe_experts
func.func @moe_f32(%x: tensor<?x64xf32>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>,
    %w1: tensor<8x96x64xf32>, %w3: tensor<8x96x64xf32>, %w2: tensor<8x64x96xf32>)
    -> tensor<?x64xf32> {
  %y = k3.moe %x routed(%i, %w) experts(%w1, %w3, %w2)
      {beta1 = 4.0 : f32, beta2 = 25.0 : f32, eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<8x96x64xf32>,
         tensor<8x96x64xf32>, tensor<8x64x96xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// CHECK-LABEL: func.func @moe_mx8
//   CHECK-NOT:   k3.moe_experts
//       CHECK:   linalg.generic
//   CHECK-NOT:   k3.moe_experts
func.func @moe_mx8(%x: tensor<?x64xf32>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>,
    %c1: tensor<8x96x32xi8>, %c3: tensor<8x96x32xi8>, %c2: tensor<8x64x48xi8>,
    %e1: tensor<8x96x2xf8E8M0FNU>, %e3: tensor<8x96x2xf8E8M0FNU>, %e2: tensor<8x64x3xf8E8M0FNU>)
    -> tensor<?x64xf32> {
  %w1 = k3.unpack_e2m1 %c1 : tensor<8x96x32xi8> -> tensor<8x96x64xf4E2M1FN>
  %w3 = k3.unpack_e2m1 %c3 : tensor<8x96x32xi8> -> tensor<8x96x64xf4E2M1FN>
  %w2 = k3.unpack_e2m1 %c2 : tensor<8x64x48xi8> -> tensor<8x64x96xf4E2M1FN>
  %y = k3.moe %x routed(%i, %w) experts(%w1, %w3, %w2) scales(%e1, %e3, %e2)
      {beta1 = 4.0 : f32, beta2 = 25.0 : f32, eps = 1.0e-05 : f32, mxfp8_inputs}
      : (tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<8x96x64xf4E2M1FN>,
         tensor<8x96x64xf4E2M1FN>, tensor<8x64x96xf4E2M1FN>, tensor<8x96x2xf8E8M0FNU>,
         tensor<8x96x2xf8E8M0FNU>, tensor<8x64x3xf8E8M0FNU>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
