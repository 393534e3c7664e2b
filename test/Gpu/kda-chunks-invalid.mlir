// RUN: k3-opt %s --split-input-file --verify-diagnostics --k3-gpu-kda-chunks

// More key channels than the kernel keeps in registers (K / 2 state
// accumulators per lane).
func.func @keys(%q: memref<?x1x256xf32>, %k: memref<?x1x256xf32>, %v: memref<?x1x64xf32>,
                %g: memref<?x1x256xf32>, %beta: memref<?x1xf32>, %o: memref<?x1x64xf32>,
                %s: memref<1x256x64xf32>) {
  // expected-error @+1 {{k3-gpu-kda-chunks keeps the state's 1 to 128 key channels in registers, got K = 256}}
  k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s) scale = 0.0625 every = 0
      : (memref<?x1x256xf32>, memref<?x1x256xf32>, memref<?x1x64xf32>, memref<?x1x256xf32>,
         memref<?x1xf32>, memref<?x1x64xf32>, memref<1x256x64xf32>) -> ()
  return
}

// -----

func.func @tensors(%q: tensor<?x1x64xf32>, %k: tensor<?x1x64xf32>, %v: tensor<?x1x32xf32>,
                   %g: tensor<?x1x64xf32>, %beta: tensor<?x1xf32>, %o: tensor<?x1x32xf32>,
                   %s: tensor<1x64x32xf32>) {
  // expected-error @+1 {{k3-gpu-kda-chunks runs after bufferization, got tensors}}
  %a, %b = k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s) scale = 0.125 every = 0
      : (tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<?x1x32xf32>, tensor<?x1x64xf32>,
         tensor<?x1xf32>, tensor<?x1x32xf32>, tensor<1x64x32xf32>)
      -> (tensor<?x1x32xf32>, tensor<1x64x32xf32>)
  return
}
