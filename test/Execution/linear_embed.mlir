// RUN: k3-opt %s --k3-cpu-to-llvm | %run_main | FileCheck %s

// embed: rows 2 and 0 of the table; an out-of-range id (7) is clamped to the
// last row instead of reading past the table (the runtime refuses it first).
// CHECK: {{\[\[}}5,   6],
// CHECK-NEXT: [1,   2],
// CHECK-NEXT: [5,   6]]
// linear, y = x · Wᵀ with bf16 weights: [1, 2] · [[1, 0], [0, 1], [1, 1]]ᵀ.
// CHECK: [1,   2,   3]
// The dense MLP (k3-decompose-mlp, then linear + SiTU + linear) with
// identity projections is SiTU-GLU itself: situ(1, 1) = 0.715818.
// CHECK: [0.715818,   0.715818]
// lm_head: f32 logits [T, V].
// CHECK: [1,   2,   3]
func.func private @printMemrefF32(memref<*xf32>)
func.func @main() {
  %table = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xbf16>
  %ids = arith.constant dense<[2, 0, 7]> : tensor<3xi32>
  %e = k3.embed %ids, %table : (tensor<3xi32>, tensor<3x2xbf16>) -> tensor<3x2xf32>
  %em = bufferization.to_buffer %e : tensor<3x2xf32> to memref<3x2xf32>
  %ec = memref.cast %em : memref<3x2xf32> to memref<*xf32>
  call @printMemrefF32(%ec) : (memref<*xf32>) -> ()

  %x = arith.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %w = arith.constant dense<[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]> : tensor<3x2xbf16>
  %y = k3.linear %x, %w : (tensor<1x2xf32>, tensor<3x2xbf16>) -> tensor<1x3xf32>
  %ym = bufferization.to_buffer %y : tensor<1x3xf32> to memref<1x3xf32>
  %yc = memref.cast %ym : memref<1x3xf32> to memref<*xf32>
  call @printMemrefF32(%yc) : (memref<*xf32>) -> ()

  %ones = arith.constant dense<1.0> : tensor<1x2xf32>
  %id = arith.constant dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xbf16>
  %mlp = k3.mlp %ones, %id, %id, %id {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<1x2xf32>, tensor<2x2xbf16>, tensor<2x2xbf16>, tensor<2x2xbf16>) -> tensor<1x2xf32>
  %mm = bufferization.to_buffer %mlp : tensor<1x2xf32> to memref<1x2xf32>
  %mc = memref.cast %mm : memref<1x2xf32> to memref<*xf32>
  call @printMemrefF32(%mc) : (memref<*xf32>) -> ()

  %l = k3.lm_head %x, %w : (tensor<1x2xf32>, tensor<3x2xbf16>) -> tensor<1x3xf32>
  %lm = bufferization.to_buffer %l : tensor<1x3xf32> to memref<1x3xf32>
  %lc = memref.cast %lm : memref<1x3xf32> to memref<*xf32>
  call @printMemrefF32(%lc) : (memref<*xf32>) -> ()
  return
}
