// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// Full K3 LatentMoE: latent projections, routed norm, MXFP4 experts, shared
// experts on the original input.
// CHECK-LABEL: func.func @latent_mxfp4
//       CHECK:   %[[Y:.+]] = k3.moe %{{[a-z0-9_]+}} routed(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) latent(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) norm(%{{[a-z0-9_]+}}) experts(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) scales(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) shared(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) {beta1 = 4.000000e+00 : f32, beta2 = 2.500000e+01 : f32}
//       CHECK:   return %[[Y]]
func.func @latent_mxfp4(%x: tensor<?x64xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>, %ld: tensor<32x64xbf16>,
    %lu: tensor<64x32xbf16>, %n: tensor<32xbf16>, %w1: tensor<8x64x32xf4E2M1FN>, %w3: tensor<8x64x32xf4E2M1FN>,
    %w2: tensor<8x32x64xf4E2M1FN>, %s1: tensor<8x64x1xf8E8M0FNU>, %s3: tensor<8x64x1xf8E8M0FNU>,
    %s2: tensor<8x32x2xf8E8M0FNU>, %sg: tensor<96x64xbf16>, %su: tensor<96x64xbf16>, %sd: tensor<64x96xbf16>) -> tensor<?x64xbf16> {
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2)
      shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32, eps = 1.0e-05 : f32}
      : (tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32xbf16>,
         tensor<8x64x32xf4E2M1FN>, tensor<8x64x32xf4E2M1FN>, tensor<8x32x64xf4E2M1FN>, tensor<8x64x1xf8E8M0FNU>,
         tensor<8x64x1xf8E8M0FNU>, tensor<8x32x2xf8E8M0FNU>, tensor<96x64xbf16>, tensor<96x64xbf16>, tensor<64x96xbf16>)
      -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// Kimi-Linear-style MoE: no latent, bf16 experts, no shared experts, and a
// non-default norm eps is kept (the default is elided).
// CHECK-LABEL: func.func @plain
//       CHECK:   k3.moe %{{[a-z0-9_]+}} routed(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) experts(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) {beta1 = 1.000000e+00 : f32} :
//   CHECK-NOT:   latent(
//   CHECK-NOT:   scales(
func.func @plain(%x: tensor<5x16xf32>, %i: tensor<5x2xi64>, %w: tensor<5x2xf32>, %w1: tensor<4x24x16xbf16>,
                 %w3: tensor<4x24x16xbf16>, %w2: tensor<4x16x24xbf16>) -> tensor<5x16xf32> {
  %y = k3.moe %x routed(%i, %w) experts(%w1, %w3, %w2) {beta1 = 1.0 : f32}
      : (tensor<5x16xf32>, tensor<5x2xi64>, tensor<5x2xf32>, tensor<4x24x16xbf16>, tensor<4x24x16xbf16>, tensor<4x16x24xbf16>)
      -> tensor<5x16xf32>
  return %y : tensor<5x16xf32>
}

// -----

// Latent without the routed norm; a non-default eps survives printing.
// CHECK-LABEL: func.func @latent_no_norm
//       CHECK:   k3.moe %{{[a-z0-9_]+}} routed(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) latent(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) experts(
//  CHECK-SAME:     eps = 9.99999997E-7 : f32
func.func @latent_no_norm(%x: tensor<5x16xf32>, %i: tensor<5x1xi32>, %w: tensor<5x1xf32>, %ld: tensor<8x16xf32>,
    %lu: tensor<16x8xf32>, %w1: tensor<4x12x8xf32>, %w3: tensor<4x12x8xf32>, %w2: tensor<4x8x12xf32>) -> tensor<5x16xf32> {
  %y = k3.moe %x routed(%i, %w) latent(%ld, %lu) experts(%w1, %w3, %w2) {beta1 = 4.0 : f32, eps = 1.0e-06 : f32}
      : (tensor<5x16xf32>, tensor<5x1xi32>, tensor<5x1xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<4x12x8xf32>,
         tensor<4x12x8xf32>, tensor<4x8x12xf32>) -> tensor<5x16xf32>
  return %y : tensor<5x16xf32>
}

// -----

// Kimi Linear's MoE: SwiGLU experts and shared expert, no betas.
// CHECK-LABEL: func.func @swiglu
//       CHECK:   k3.moe %{{[a-z0-9_]+}} routed(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) experts(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) shared(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) activation silu :
//   CHECK-NOT:   beta
func.func @swiglu(%x: tensor<5x16xf32>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>, %w1: tensor<4x24x16xbf16>,
                  %w3: tensor<4x24x16xbf16>, %w2: tensor<4x16x24xbf16>, %sg: tensor<24x16xbf16>,
                  %su: tensor<24x16xbf16>, %sd: tensor<16x24xbf16>) -> tensor<5x16xf32> {
  %y = k3.moe %x routed(%i, %w) experts(%w1, %w3, %w2) shared(%sg, %su, %sd) activation silu
      : (tensor<5x16xf32>, tensor<5x2xi32>, tensor<5x2xf32>, tensor<4x24x16xbf16>, tensor<4x24x16xbf16>,
         tensor<4x16x24xbf16>, tensor<24x16xbf16>, tensor<24x16xbf16>, tensor<16x24xbf16>)
      -> tensor<5x16xf32>
  return %y : tensor<5x16xf32>
}
