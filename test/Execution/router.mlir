// RUN: k3-opt %s --k3-cpu-to-llvm | %run_main | FileCheck %s
// RUN: k3-opt %s --k3-cpu-to-llvm="router=picks" | %run_main | FileCheck %s

// Token 0 is the router toy of MOE_MXFP4.md §5: logits [2, 0.5, -1, 1],
// bias [-0.5, 0.4, 0, 0], k = 2 → experts {1, 3}, weights from the unbiased
// scores renormalised: [0.459883, 0.540117].
// Token 1 routed without bias has all-zero logits: its 4 exact ties go to
// the lowest ids, {0, 1}, with weights [0.5, 0.5]. The same from the GPU's
// form, one loop nest over (token, pick) (router=picks).
// CHECK:      {{\[\[}}1,   3],
// CHECK-NEXT:  [0,   1]]
// CHECK:      {{\[\[}}0.459883,   0.540117],
// CHECK-NEXT:  [0.5,   0.5]]
func.func private @printMemrefI32(memref<*xi32>)
func.func private @printMemrefF32(memref<*xf32>)
func.func @main() {
  %x = arith.constant dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>
  %w = arith.constant dense<[[2.0, 0.0], [0.5, 0.0], [-1.0, 0.0], [1.0, 0.0]]> : tensor<4x2xf32>
  %b = arith.constant dense<[-0.5, 0.4, 0.0, 0.0]> : tensor<4xf32>
  %xd = tensor.cast %x : tensor<2x2xf32> to tensor<?x2xf32>
  %i, %p = k3.router %xd, %w bias(%b) top_k = 2 renormalize scaling = 1.0
      : (tensor<?x2xf32>, tensor<4x2xf32>, tensor<4xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
  %z = arith.constant dense<0.0> : tensor<4xf32>
  %i2, %p2 = k3.router %xd, %w bias(%z) top_k = 2 renormalize scaling = 1.0
      : (tensor<?x2xf32>, tensor<4x2xf32>, tensor<4xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
  // Row 0 from the biased router, row 1 from the unbiased one.
  %r0i = tensor.extract_slice %i[0, 0] [1, 2] [1, 1] : tensor<?x2xi32> to tensor<1x2xi32>
  %r1i = tensor.extract_slice %i2[1, 0] [1, 2] [1, 1] : tensor<?x2xi32> to tensor<1x2xi32>
  %r0p = tensor.extract_slice %p[0, 0] [1, 2] [1, 1] : tensor<?x2xf32> to tensor<1x2xf32>
  %r1p = tensor.extract_slice %p2[1, 0] [1, 2] [1, 1] : tensor<?x2xf32> to tensor<1x2xf32>
  %ii = tensor.concat dim(0) %r0i, %r1i : (tensor<1x2xi32>, tensor<1x2xi32>) -> tensor<2x2xi32>
  %pp = tensor.concat dim(0) %r0p, %r1p : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<2x2xf32>
  %im = bufferization.to_buffer %ii : tensor<2x2xi32> to memref<2x2xi32>
  %ic = memref.cast %im : memref<2x2xi32> to memref<*xi32>
  call @printMemrefI32(%ic) : (memref<*xi32>) -> ()
  %pm = bufferization.to_buffer %pp : tensor<2x2xf32> to memref<2x2xf32>
  %pc = memref.cast %pm : memref<2x2xf32> to memref<*xf32>
  call @printMemrefF32(%pc) : (memref<*xf32>) -> ()
  return
}
