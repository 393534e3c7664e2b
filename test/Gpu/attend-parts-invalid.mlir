// RUN: k3-opt %s --split-input-file --verify-diagnostics --k3-gpu-attend-parts

// More value columns than the kernel keeps in registers (4 per n8 tile and
// lane: 128 at L = 512).
func.func @values(%q: memref<64x1088xf32>, %rows: memref<?x1088xbf16>, %m: memref<64x?xf32>,
                  %l: memref<64x?xf32>, %u: memref<64x?x1024xf32>) {
  // expected-error @+1 {{k3-gpu-attend-parts keeps at most 512 value columns in registers, got L = 1024}}
  k3.attend_parts %q, %rows outs(%m, %l, %u) part_keys = 256
      : (memref<64x1088xf32>, memref<?x1088xbf16>, memref<64x?xf32>, memref<64x?xf32>, memref<64x?x1024xf32>) -> ()
  return
}

// -----

// Rows too wide for the 80 rows of Q and K in shared memory.
func.func @wide(%q: memref<64x2048xf32>, %rows: memref<?x2048xbf16>, %m: memref<64x?xf32>,
                %l: memref<64x?xf32>, %u: memref<64x?x256xf32>) {
  // expected-error @+1 {{k3-gpu-attend-parts needs 336640 bytes of shared memory for rows of D = 2048, over sm_80's 166912}}
  k3.attend_parts %q, %rows outs(%m, %l, %u) part_keys = 256
      : (memref<64x2048xf32>, memref<?x2048xbf16>, memref<64x?xf32>, memref<64x?xf32>, memref<64x?x256xf32>) -> ()
  return
}

// -----

// Pairs of an odd-width row next to 512 accumulators would spill.
func.func @odd(%q: memref<64x578xf32>, %rows: memref<?x578xbf16>, %m: memref<64x?xf32>,
               %l: memref<64x?xf32>, %u: memref<64x?x512xf32>) {
  // expected-error @+1 {{k3-gpu-attend-parts needs rows a multiple of 8 wide for more than 256 value columns, got D = 578 and L = 512}}
  k3.attend_parts %q, %rows outs(%m, %l, %u) part_keys = 256
      : (memref<64x578xf32>, memref<?x578xbf16>, memref<64x?xf32>, memref<64x?xf32>, memref<64x?x512xf32>) -> ()
  return
}

// -----

func.func @tensors(%q: tensor<2x40xf32>, %rows: tensor<37x40xf32>, %m: tensor<2x3xf32>,
                   %l: tensor<2x3xf32>, %u: tensor<2x3x32xf32>) {
  // expected-error @+1 {{k3-gpu-attend-parts runs after bufferization, got tensors}}
  %a, %b, %c = k3.attend_parts %q, %rows outs(%m, %l, %u) part_keys = 16
      : (tensor<2x40xf32>, tensor<37x40xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3x32xf32>)
      -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3x32xf32>)
  return
}
