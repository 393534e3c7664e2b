// RUN: k3-opt %s --split-input-file --verify-diagnostics --k3-gpu-attn-res

// The pass builds kernels over buffers: it runs after bufferization.
func.func @tensors(%r: tensor<?x64xf32>, %n: tensor<64xf32>, %q: tensor<64xf32>, %o: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{k3-gpu-attn-res runs after bufferization, got tensors}}
  %y = k3.attn_res_mix [%r] norm(%n) query(%q) outs(%o) {eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// The team and each thread's channels come from a static row width.
func.func @dynamic(%r: memref<?x?xf32>, %n: memref<?xf32>, %q: memref<?xf32>, %o: memref<?x?xf32>) {
  // expected-error @+1 {{k3-gpu-attn-res needs a static row width that a team of 32 to 256 threads (a power of two dividing it, at most 32 channels each) covers, got 'memref<?x?xf32>'}}
  k3.attn_res_mix [%r] norm(%n) query(%q) outs(%o) {eps = 1.0e-05 : f32}
      : (memref<?x?xf32>, memref<?xf32>, memref<?xf32>, memref<?x?xf32>) -> ()
  return
}

// -----

func.func @mixed(%r: tensor<?x64xf32>, %n: tensor<64xf32>, %q: tensor<64xf32>, %o: memref<?x64xf32>) {
  // expected-error @+1 {{operands must be all ranked tensors or all memrefs}}
  k3.attn_res_mix [%r] norm(%n) query(%q) outs(%o) {eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>, memref<?x64xf32>) -> ()
  return
}

// -----

func.func @width(%r: memref<?x64xf32>, %n: memref<32xf32>, %q: memref<64xf32>, %o: memref<?x64xf32>) {
  // expected-error @+1 {{norm}}
  k3.attn_res_mix [%r] norm(%n) query(%q) outs(%o) {eps = 1.0e-05 : f32}
      : (memref<?x64xf32>, memref<32xf32>, memref<64xf32>, memref<?x64xf32>) -> ()
  return
}

// -----

func.func @stack(%s: memref<?x?x32xf32>, %r: memref<?x64xf32>, %n: memref<64xf32>, %q: memref<64xf32>, %o: memref<?x64xf32>) {
  // expected-error @+1 {{source 0}}
  k3.attn_res_mix [%s, %r] norm(%n) query(%q) outs(%o) {eps = 1.0e-05 : f32}
      : (memref<?x?x32xf32>, memref<?x64xf32>, memref<64xf32>, memref<64xf32>, memref<?x64xf32>) -> ()
  return
}

// -----

// A norm folded into the mix (k3-gpu-fuse-row-norms) comes with its eps.
func.func @then_norm_alone(%r: memref<?x64xf32>, %n: memref<64xf32>, %q: memref<64xf32>, %w: memref<64xf32>, %o: memref<?x64xf32>) {
  // expected-error @+1 {{then_norm and then_eps come together, got then_norm alone}}
  k3.attn_res_mix [%r] norm(%n) query(%q) then_norm(%w) outs(%o) {eps = 1.0e-05 : f32}
      : (memref<?x64xf32>, memref<64xf32>, memref<64xf32>, memref<64xf32>, memref<?x64xf32>) -> ()
  return
}

// -----

func.func @then_eps_alone(%r: memref<?x64xf32>, %n: memref<64xf32>, %q: memref<64xf32>, %o: memref<?x64xf32>) {
  // expected-error @+1 {{then_norm and then_eps come together, got then_eps alone}}
  k3.attn_res_mix [%r] norm(%n) query(%q) outs(%o) {eps = 1.0e-05 : f32, then_eps = 1.0e-05 : f32}
      : (memref<?x64xf32>, memref<64xf32>, memref<64xf32>, memref<?x64xf32>) -> ()
  return
}

// -----

func.func @then_norm_width(%r: memref<?x64xf32>, %n: memref<64xf32>, %q: memref<64xf32>, %w: memref<32xf32>, %o: memref<?x64xf32>) {
  // expected-error @+1 {{then_norm dim 0 (D) is 32, expected 64 from out}}
  k3.attn_res_mix [%r] norm(%n) query(%q) then_norm(%w) outs(%o) {eps = 1.0e-05 : f32, then_eps = 1.0e-05 : f32}
      : (memref<?x64xf32>, memref<64xf32>, memref<64xf32>, memref<32xf32>, memref<?x64xf32>) -> ()
  return
}

// -----

func.func @then_eps(%r: memref<?x64xf32>, %n: memref<64xf32>, %q: memref<64xf32>, %w: memref<64xf32>, %o: memref<?x64xf32>) {
  // expected-error @+1 {{then_eps must be positive and finite, got 0}}
  k3.attn_res_mix [%r] norm(%n) query(%q) then_norm(%w) outs(%o) {eps = 1.0e-05 : f32, then_eps = 0.0 : f32}
      : (memref<?x64xf32>, memref<64xf32>, memref<64xf32>, memref<64xf32>, memref<?x64xf32>) -> ()
  return
}
