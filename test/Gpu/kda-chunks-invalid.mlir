// RUN: k3-opt %s --split-input-file --verify-diagnostics --k3-gpu-kda-chunks

// More key channels than the kernel keeps in registers (K / 2 state
// accumulators per lane).
func.func @keys(%q: memref<?x1x256xf32>, %k: memref<?x1x256xf32>, %v: memref<?x1x64xf32>,
                %g: memref<?x1x256xf32>, %beta: memref<?x1xf32>, %o: memref<?x1x64xf32>,
                %s: memref<1x256x64xf32>, %ws: memref<?x1x7552xf32>) {
  // expected-error @+1 {{k3-gpu-kda-chunks keeps the state's 1 to 128 key channels in registers, got K = 256}}
  k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s, %ws) scale = 0.0625 every = 0
      : (memref<?x1x256xf32>, memref<?x1x256xf32>, memref<?x1x64xf32>, memref<?x1x256xf32>,
         memref<?x1xf32>, memref<?x1x64xf32>, memref<1x256x64xf32>, memref<?x1x7552xf32>) -> ()
  return
}

// -----

func.func @tensors(%q: tensor<?x1x64xf32>, %k: tensor<?x1x64xf32>, %v: tensor<?x1x32xf32>,
                   %g: tensor<?x1x64xf32>, %beta: tensor<?x1xf32>, %o: tensor<?x1x32xf32>,
                   %s: tensor<1x64x32xf32>, %ws: tensor<?x1x2240xf32>) {
  // expected-error @+1 {{k3-gpu-kda-chunks runs after bufferization, got tensors}}
  %a, %b, %wsr = k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s, %ws) scale = 0.125 every = 0
      : (tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<?x1x32xf32>, tensor<?x1x64xf32>,
         tensor<?x1xf32>, tensor<?x1x32xf32>, tensor<1x64x32xf32>, tensor<?x1x2240xf32>)
      -> (tensor<?x1x32xf32>, tensor<1x64x32xf32>, tensor<?x1x2240xf32>)
  return
}

// -----

// The workspace's records must have the kernels' layout (25 Kp + 16 V + 128
// words: 2240 at K = 64, V = 32).
func.func @record(%q: memref<?x1x64xf32>, %k: memref<?x1x64xf32>, %v: memref<?x1x32xf32>,
                  %g: memref<?x1x64xf32>, %beta: memref<?x1xf32>, %o: memref<?x1x32xf32>,
                  %s: memref<1x64x32xf32>, %ws: memref<?x1x100xf32>) {
  // expected-error @+1 {{workspace records have 100 words, expected 2752 for K = 64 and V = 32}}
  k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s, %ws) scale = 0.125 every = 0
      : (memref<?x1x64xf32>, memref<?x1x64xf32>, memref<?x1x32xf32>, memref<?x1x64xf32>,
         memref<?x1xf32>, memref<?x1x32xf32>, memref<1x64x32xf32>, memref<?x1x100xf32>) -> ()
  return
}
