// RUN: k3-opt %s --k3-cpu-to-llvm | %run_main | FileCheck %s

// One token through the whole LatentMoE of MOE_MXFP4.md §6: latent down,
// two selected experts (1 then 0, weights 0.7 and 0.3) with SiTU-GLU (4, 25),
// the f32 combine, the routed RMSNorm, the up-projection and a shared expert
// on the original input. Expected from a float64 transcription of the spec:
// [-1.397127, -0.695803].
// CHECK: {{\[\[}}-1.39713,   -0.695803]]
func.func private @printMemrefF32(memref<*xf32>)
func.func @main() {
  %x = arith.constant dense<[[1.0, -1.0]]> : tensor<1x2xf32>
  %xd = tensor.cast %x : tensor<1x2xf32> to tensor<?x2xf32>
  %i = arith.constant dense<[[1, 0]]> : tensor<1x2xi32>
  %id = tensor.cast %i : tensor<1x2xi32> to tensor<?x2xi32>
  %p = arith.constant dense<[[0.7, 0.3]]> : tensor<1x2xf32>
  %pd = tensor.cast %p : tensor<1x2xf32> to tensor<?x2xf32>
  %ld = arith.constant dense<[[1.0, 0.0], [0.5, 1.0]]> : tensor<2x2xbf16>
  %lu = arith.constant dense<[[1.0, 0.0], [1.0, 1.0]]> : tensor<2x2xbf16>
  %n = arith.constant dense<[1.0, 2.0]> : tensor<2xbf16>
  %w1 = arith.constant dense<[[[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.5], [1.0, -1.0]]]> : tensor<2x2x2xf32>
  %w3 = arith.constant dense<[[[1.0, 1.0], [1.0, -1.0]], [[2.0, 0.0], [0.0, 2.0]]]> : tensor<2x2x2xf32>
  %w2 = arith.constant dense<[[[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]]> : tensor<2x2x2xf32>
  %sg = arith.constant dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xbf16>
  %su = arith.constant dense<[[1.0, 1.0], [0.0, 1.0]]> : tensor<2x2xbf16>
  %sd = arith.constant dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xbf16>
  %y = k3.moe %xd routed(%id, %pd) latent(%ld, %lu) norm(%n) experts(%w1, %w3, %w2)
      shared(%sg, %su, %sd) {beta1 = 4.0 : f32, beta2 = 25.0 : f32, eps = 1.0e-05 : f32}
      : (tensor<?x2xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<2x2xbf16>, tensor<2x2xbf16>, tensor<2xbf16>,
         tensor<2x2x2xf32>, tensor<2x2x2xf32>, tensor<2x2x2xf32>, tensor<2x2xbf16>, tensor<2x2xbf16>, tensor<2x2xbf16>)
      -> tensor<?x2xf32>
  %ym = bufferization.to_buffer %y : tensor<?x2xf32> to memref<?x2xf32>
  %yc = memref.cast %ym : memref<?x2xf32> to memref<*xf32>
  call @printMemrefF32(%yc) : (memref<*xf32>) -> ()
  return
}
