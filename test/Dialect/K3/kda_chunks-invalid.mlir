// RUN: k3-opt %s --split-input-file --verify-diagnostics

// Boundary states must fall on the kernel's 16-token chunks.
func.func @every(%q: memref<?x1x64xf32>, %k: memref<?x1x64xf32>, %v: memref<?x1x32xf32>,
                 %g: memref<?x1x64xf32>, %beta: memref<?x1xf32>, %o: memref<?x1x32xf32>,
                 %s: memref<1x64x32xf32>, %ws: memref<?x1x2240xf32>, %b: memref<?x1x64x32xf32>) {
  // expected-error @+1 {{boundaries every 24 tokens: expected a positive multiple of 16}}
  k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s, %ws, %b) scale = 0.125 every = 24
      : (memref<?x1x64xf32>, memref<?x1x64xf32>, memref<?x1x32xf32>, memref<?x1x64xf32>,
         memref<?x1xf32>, memref<?x1x32xf32>, memref<1x64x32xf32>, memref<?x1x2240xf32>, memref<?x1x64x32xf32>) -> ()
  return
}

// -----

// 40 tokens every 16 are 3 boundary states.
func.func @slots(%q: memref<40x1x64xf32>, %k: memref<40x1x64xf32>, %v: memref<40x1x32xf32>,
                 %g: memref<40x1x64xf32>, %beta: memref<40x1xf32>, %o: memref<40x1x32xf32>,
                 %s: memref<1x64x32xf32>, %ws: memref<3x1x2240xf32>, %b: memref<2x1x64x32xf32>) {
  // expected-error @+1 {{boundaries dim 0 (ceil(T/every)) is 2, expected 3 from T = 40 every 16 tokens}}
  k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s, %ws, %b) scale = 0.125 every = 16
      : (memref<40x1x64xf32>, memref<40x1x64xf32>, memref<40x1x32xf32>, memref<40x1x64xf32>,
         memref<40x1xf32>, memref<40x1x32xf32>, memref<1x64x32xf32>, memref<3x1x2240xf32>, memref<2x1x64x32xf32>) -> ()
  return
}

// -----

func.func @state(%q: memref<?x1x64xf32>, %k: memref<?x1x64xf32>, %v: memref<?x1x32xf32>,
                 %g: memref<?x1x64xf32>, %beta: memref<?x1xf32>, %o: memref<?x1x32xf32>,
                 %s: memref<1x32x32xf32>, %ws: memref<?x1x1440xf32>) {
  // expected-error @+1 {{state dim 1 (K) is 32, expected 64 from q}}
  k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s, %ws) scale = 0.125 every = 0
      : (memref<?x1x64xf32>, memref<?x1x64xf32>, memref<?x1x32xf32>, memref<?x1x64xf32>,
         memref<?x1xf32>, memref<?x1x32xf32>, memref<1x32x32xf32>, memref<?x1x1440xf32>) -> ()
  return
}

// -----

func.func @gva(%q: memref<?x3x64xf32>, %k: memref<?x3x64xf32>, %v: memref<?x4x32xf32>,
               %g: memref<?x4x64xf32>, %beta: memref<?x4xf32>, %o: memref<?x4x32xf32>,
               %s: memref<4x64x32xf32>, %ws: memref<?x4x2240xf32>) {
  // expected-error @+1 {{value heads 4 are not a multiple of the q/k heads 3}}
  k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s, %ws) scale = 0.125 every = 0
      : (memref<?x3x64xf32>, memref<?x3x64xf32>, memref<?x4x32xf32>, memref<?x4x64xf32>,
         memref<?x4xf32>, memref<?x4x32xf32>, memref<4x64x32xf32>, memref<?x4x2240xf32>) -> ()
  return
}

// -----

func.func @mixed(%q: tensor<?x1x64xf32>, %k: memref<?x1x64xf32>, %v: memref<?x1x32xf32>,
                 %g: memref<?x1x64xf32>, %beta: memref<?x1xf32>, %o: memref<?x1x32xf32>,
                 %s: memref<1x64x32xf32>, %ws: tensor<?x1x2240xf32>) {
  // expected-error @+1 {{operands must be all ranked tensors or all memrefs}}
  k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s, %ws) scale = 0.125 every = 0
      : (tensor<?x1x64xf32>, memref<?x1x64xf32>, memref<?x1x32xf32>, memref<?x1x64xf32>,
         memref<?x1xf32>, memref<?x1x32xf32>, memref<1x64x32xf32>, tensor<?x1x2240xf32>) -> ()
  return
}

// -----

func.func @bf16state(%q: memref<?x1x64xf32>, %k: memref<?x1x64xf32>, %v: memref<?x1x32xf32>,
                     %g: memref<?x1x64xf32>, %beta: memref<?x1xf32>, %o: memref<?x1x32xf32>,
                     %s: memref<1x64x32xbf16>, %ws: memref<?x1x2240xf32>) {
  // expected-error @+1 {{g, state, workspace and boundaries must be f32}}
  k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s, %ws) scale = 0.125 every = 0
      : (memref<?x1x64xf32>, memref<?x1x64xf32>, memref<?x1x32xf32>, memref<?x1x64xf32>,
         memref<?x1xf32>, memref<?x1x32xf32>, memref<1x64x32xbf16>, memref<?x1x2240xf32>) -> ()
  return
}

// -----

func.func @scale(%q: memref<?x1x64xf32>, %k: memref<?x1x64xf32>, %v: memref<?x1x32xf32>,
                 %g: memref<?x1x64xf32>, %beta: memref<?x1xf32>, %o: memref<?x1x32xf32>,
                 %s: memref<1x64x32xf32>, %ws: memref<?x1x2240xf32>) {
  // expected-error @+1 {{scale must be positive and finite, got 0}}
  k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s, %ws) scale = 0.0 every = 0
      : (memref<?x1x64xf32>, memref<?x1x64xf32>, memref<?x1x32xf32>, memref<?x1x64xf32>,
         memref<?x1xf32>, memref<?x1x32xf32>, memref<1x64x32xf32>, memref<?x1x2240xf32>) -> ()
  return
}

// -----

func.func @integers(%q: memref<?x1x64xi32>, %k: memref<?x1x64xf32>, %v: memref<?x1x32xf32>,
                    %g: memref<?x1x64xf32>, %beta: memref<?x1xf32>, %o: memref<?x1x32xf32>,
                    %s: memref<1x64x32xf32>, %ws: memref<?x1x2240xf32>) {
  // expected-error @+1 {{q, k, v, beta and out must be bf16, f16 or f32}}
  k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s, %ws) scale = 0.125 every = 0
      : (memref<?x1x64xi32>, memref<?x1x64xf32>, memref<?x1x32xf32>, memref<?x1x64xf32>,
         memref<?x1xf32>, memref<?x1x32xf32>, memref<1x64x32xf32>, memref<?x1x2240xf32>) -> ()
  return
}

// -----

// One workspace record per 16 tokens: 40 tokens need 3.
func.func @workspace(%q: memref<40x1x64xf32>, %k: memref<40x1x64xf32>, %v: memref<40x1x32xf32>,
                     %g: memref<40x1x64xf32>, %beta: memref<40x1xf32>, %o: memref<40x1x32xf32>,
                     %s: memref<1x64x32xf32>, %ws: memref<2x1x2240xf32>) {
  // expected-error @+1 {{workspace dim 0 (ceil(T/16)) is 2, expected 3 from T = 40 in chunks of 16}}
  k3.kda_chunks %q, %k, %v, %g, %beta outs(%o, %s, %ws) scale = 0.125 every = 0
      : (memref<40x1x64xf32>, memref<40x1x64xf32>, memref<40x1x32xf32>, memref<40x1x64xf32>,
         memref<40x1xf32>, memref<40x1x32xf32>, memref<1x64x32xf32>, memref<2x1x2240xf32>) -> ()
  return
}
