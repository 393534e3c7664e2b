// RUN: k3-opt %s --split-input-file --k3-gpu-moe-experts --verify-diagnostics

// The kernels are built on buffers.
func.func @tensors(%z: tensor<?x32xf32>, %i: tensor<?x1xi32>, %w: tensor<?x1xf32>,
                   %c1: tensor<1x32x16xi8>, %c3: tensor<1x32x16xi8>, %c2: tensor<1x32x16xi8>,
                   %s1: tensor<1x32x1xf8E8M0FNU>, %s3: tensor<1x32x1xf8E8M0FNU>,
                   %s2: tensor<1x32x1xf8E8M0FNU>, %y: tensor<?x32xf32>, %h: tensor<?x32xf32>,
                   %o: tensor<?xi32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{k3-gpu-moe-experts runs after bufferization, got tensors}}
  %y1, %h1, %o1 = k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (tensor<?x32xf32>, tensor<?x1xi32>, tensor<?x1xf32>, tensor<1x32x16xi8>,
         tensor<1x32x16xi8>, tensor<1x32x16xi8>, tensor<1x32x1xf8E8M0FNU>,
         tensor<1x32x1xf8E8M0FNU>, tensor<1x32x1xf8E8M0FNU>, tensor<?x32xf32>,
         tensor<?x32xf32>, tensor<?xi32>)
      -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?xi32>)
  return %y1 : tensor<?x32xf32>
}

// -----

// The codes are read as 32-bit words of one contiguous buffer.
func.func @strided(%z: memref<?x32xf32>, %i: memref<?x1xi32>, %w: memref<?x1xf32>,
                   %c1: memref<1x32x16xi8, strided<[1024, 32, 1]>>, %c3: memref<1x32x16xi8>,
                   %c2: memref<1x32x16xi8>, %s1: memref<1x32x1xf8E8M0FNU>,
                   %s3: memref<1x32x1xf8E8M0FNU>, %s2: memref<1x32x1xf8E8M0FNU>,
                   %y: memref<?x32xf32>, %h: memref<?x32xf32>, %o: memref<?xi32>) {
  // expected-error @+1 {{k3-gpu-moe-experts reads the codes as 32-bit words and needs contiguous expert buffers, got 'memref<1x32x16xi8, strided<[1024, 32, 1]>>'}}
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (memref<?x32xf32>, memref<?x1xi32>, memref<?x1xf32>,
         memref<1x32x16xi8, strided<[1024, 32, 1]>>, memref<1x32x16xi8>, memref<1x32x16xi8>,
         memref<1x32x1xf8E8M0FNU>, memref<1x32x1xf8E8M0FNU>, memref<1x32x1xf8E8M0FNU>,
         memref<?x32xf32>, memref<?x32xf32>, memref<?xi32>) -> ()
  return
}

// -----

// The sort counts every expert in shared memory: 12000 experts need
// (12000 + 384) · 4 bytes, over the 48 KiB of a launch.
func.func @too_many_experts(%z: memref<?x32xf32>, %i: memref<?x1xi32>, %w: memref<?x1xf32>,
                            %c1: memref<12000x32x16xi8>, %c3: memref<12000x32x16xi8>,
                            %c2: memref<12000x32x16xi8>, %s1: memref<12000x32x1xf8E8M0FNU>,
                            %s3: memref<12000x32x1xf8E8M0FNU>, %s2: memref<12000x32x1xf8E8M0FNU>,
                            %y: memref<?x32xf32>, %h: memref<?x32xf32>, %o: memref<?xi32>) {
  // expected-error @+1 {{k3-gpu-moe-experts counts the experts in shared memory: 12000 experts need 49536 bytes, over 49152}}
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (memref<?x32xf32>, memref<?x1xi32>, memref<?x1xf32>, memref<12000x32x16xi8>,
         memref<12000x32x16xi8>, memref<12000x32x16xi8>, memref<12000x32x1xf8E8M0FNU>,
         memref<12000x32x1xf8E8M0FNU>, memref<12000x32x1xf8E8M0FNU>, memref<?x32xf32>,
         memref<?x32xf32>, memref<?xi32>) -> ()
  return
}
