// RUN: k3-opt %s --split-input-file --k3-quantize-mxfp4 --verify-diagnostics

// The MXFP4 block is 32 wide along the input dimension.
func.func @not_blocks(%x: tensor<?x48xf32>, %i: tensor<?x2xi32>, %p: tensor<?x2xf32>) -> tensor<?x48xf32> {
  %w1 = k3.weight "w1" : tensor<4x64x48xf32>
  %w3 = k3.weight "w3" : tensor<4x64x48xf32>
  %w2 = k3.weight "w2" : tensor<4x48x64xf32>
  // expected-error @+1 {{'k3.moe' op k3-quantize-mxfp4: w1 input dimension 48 is not a multiple of the MXFP4 block size 32}}
  %y = k3.moe %x routed(%i, %p) experts(%w1, %w3, %w2) {beta1 = 4.0 : f32}
      : (tensor<?x48xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x64x48xf32>, tensor<4x64x48xf32>,
         tensor<4x48x64xf32>) -> tensor<?x48xf32>
  return %y : tensor<?x48xf32>
}

// -----

// Only checkpoint weights are quantized (their values are known at compile time).
func.func @not_weights(%x: tensor<?x64xf32>, %i: tensor<?x2xi32>, %p: tensor<?x2xf32>,
                       %w1: tensor<4x96x64xf32>) -> tensor<?x64xf32> {
  %w3 = k3.weight "w3" : tensor<4x96x64xf32>
  %w2 = k3.weight "w2" : tensor<4x64x96xf32>
  // expected-error @+1 {{'k3.moe' op k3-quantize-mxfp4: expert matrix w1 is not a checkpoint weight (k3.weight); only those are quantized}}
  %y = k3.moe %x routed(%i, %p) experts(%w1, %w3, %w2) {beta1 = 4.0 : f32}
      : (tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x96x64xf32>, tensor<4x96x64xf32>,
         tensor<4x64x96xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
