// RUN: k3-opt %s --k3-cpu-to-llvm | %run_main | FileCheck %s

// The compiled MXFP4 decode is bit-exact with the OCP tables (MOE_MXFP4.md
// §1, §3): a k3.linear over packed bytes, times the identity, prints its
// decoded weight (the dot-product decode; the grouped MoE's panel decode
// shares decodeE2m1 and is checked against the reference by
// moe-grouped.test). Each row holds the 16 codes twice, low nibble first
// (byte 0x10 is code 0 then code 1); scales 2^0, 2^2 and 2^-15.
// (The product with the identity adds +0, so code 8's -0 prints as 0.)
// CHECK:      {{\[\[}}0, 0.5, 1, 1.5, 2, 3, 4, 6, 0, -0.5, -1, -1.5, -2, -3, -4, -6, 0, 0.5, 1, 1.5, 2, 3, 4, 6, 0, -0.5, -1, -1.5, -2, -3, -4, -6],
// CHECK-NEXT: [0, 2, 4, 6, 8, 12, 16, 24, 0, -2, -4, -6, -8, -12, -16, -24, 0, 2, 4, 6, 8, 12, 16, 24, 0, -2, -4, -6, -8, -12, -16, -24],
// CHECK-NEXT: [0, 1.52588e-05, 3.05176e-05, 4.57764e-05, 6.10352e-05, 9.15527e-05, 0.00012207, 0.000183105, 0, -1.52588e-05, -3.05176e-05, -4.57764e-05, -6.10352e-05, -9.15527e-05, -0.00012207, -0.000183105, 0, 1.52588e-05, 3.05176e-05, 4.57764e-05, 6.10352e-05, 9.15527e-05, 0.00012207, 0.000183105, 0, -1.52588e-05, -3.05176e-05, -4.57764e-05, -6.10352e-05, -9.15527e-05, -0.00012207, -0.000183105]]
func.func private @printMemrefF32(memref<*xf32>)
func.func @main() {
  // 0x10 0x32 0x54 0x76 0x98 0xBA 0xDC 0xFE, twice per row (as signed i8).
  %bytes = arith.constant dense<[
      [16, 50, 84, 118, -104, -70, -36, -2, 16, 50, 84, 118, -104, -70, -36, -2],
      [16, 50, 84, 118, -104, -70, -36, -2, 16, 50, 84, 118, -104, -70, -36, -2],
      [16, 50, 84, 118, -104, -70, -36, -2, 16, 50, 84, 118, -104, -70, -36, -2]]> : tensor<3x16xi8>
  %codes = k3.unpack_e2m1 %bytes : tensor<3x16xi8> -> tensor<3x32xf4E2M1FN>
  %s = arith.constant dense<[[127], [129], [112]]> : tensor<3x1xi8>
  %scales = arith.bitcast %s : tensor<3x1xi8> to tensor<3x1xf8E8M0FNU>
  %eye = arith.constant dense<1.0> : tensor<32xf32>
  %z = arith.constant dense<0.0> : tensor<32x32xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%eye : tensor<32xf32>) outs(%z : tensor<32x32xf32>) {
  ^bb0(%one: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %d = arith.cmpi eq, %i, %j : index
    %v = arith.select %d, %one, %o : f32
    linalg.yield %v : f32
  } -> tensor<32x32xf32>
  %y = k3.linear %x, %codes scales(%scales)
      : (tensor<32x32xf32>, tensor<3x32xf4E2M1FN>, tensor<3x1xf8E8M0FNU>) -> tensor<32x3xf32>
  // Print Wᵀ's transpose: row n of the weight.
  %e = tensor.empty() : tensor<3x32xf32>
  %w = linalg.transpose ins(%y : tensor<32x3xf32>) outs(%e : tensor<3x32xf32>) permutation = [1, 0]
  %wm = bufferization.to_buffer %w : tensor<3x32xf32> to memref<3x32xf32>
  %wc = memref.cast %wm : memref<3x32xf32> to memref<*xf32>
  call @printMemrefF32(%wc) : (memref<*xf32>) -> ()
  return
}
