// RUN: k3-opt %s --split-input-file --verify-diagnostics --k3-gpu-row-norm

// The pass builds kernels over buffers: it runs after bufferization.
func.func @tensors(%x: tensor<?x64xf32>, %w: tensor<64xf32>, %o: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{k3-gpu-row-norm runs after bufferization, got tensors}}
  %y = k3.row_norm %x, %w outs(%o) {eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// The team and each thread's channels come from a static row width.
func.func @dynamic(%x: memref<?x?xf32>, %w: memref<?xf32>, %o: memref<?x?xf32>) {
  // expected-error @+1 {{k3-gpu-row-norm needs a static row width that a team of 32 to 256 threads (a power of two dividing it, at most 32 channels each) covers, got 'memref<?x?xf32>'}}
  k3.row_norm %x, %w outs(%o) {eps = 1.0e-05 : f32} : (memref<?x?xf32>, memref<?xf32>, memref<?x?xf32>) -> ()
  return
}

// -----

// 48 values: a power-of-two team dividing 48 has at most 16 threads.
func.func @narrow(%x: memref<?x48xf32>, %w: memref<48xf32>, %o: memref<?x48xf32>) {
  // expected-error @+1 {{covers, got 'memref<?x48xf32>'}}
  k3.row_norm %x, %w outs(%o) {eps = 1.0e-05 : f32} : (memref<?x48xf32>, memref<48xf32>, memref<?x48xf32>) -> ()
  return
}

// -----

func.func @mixed(%x: tensor<?x64xf32>, %w: tensor<64xf32>, %o: memref<?x64xf32>) {
  // expected-error @+1 {{operands must be all ranked tensors or all memrefs}}
  k3.row_norm %x, %w outs(%o) {eps = 1.0e-05 : f32} : (tensor<?x64xf32>, tensor<64xf32>, memref<?x64xf32>) -> ()
  return
}

// -----

func.func @width(%x: memref<?x64xf32>, %w: memref<32xf32>, %o: memref<?x64xf32>) {
  // expected-error @+1 {{weight dim 0 (D) is 32, expected 64 from x}}
  k3.row_norm %x, %w outs(%o) {eps = 1.0e-05 : f32} : (memref<?x64xf32>, memref<32xf32>, memref<?x64xf32>) -> ()
  return
}

// -----

func.func @rank(%x: memref<?x2x2x64xf32>, %w: memref<64xf32>, %o: memref<?x64xf32>) {
  // expected-error @+1 {{x must have rank 2 [R, D] or 3 [R, K, D] (summed over K), got rank 4}}
  k3.row_norm %x, %w outs(%o) {eps = 1.0e-05 : f32} : (memref<?x2x2x64xf32>, memref<64xf32>, memref<?x64xf32>) -> ()
  return
}

// -----

// Rows summed over picks: out is [R, D].
func.func @picks_out(%x: memref<?x2x64xf32>, %w: memref<64xf32>, %o: memref<?x2x64xf32>) {
  // expected-error @+1 {{out must have rank 2 [R, D], got rank 3}}
  k3.row_norm %x, %w outs(%o) {eps = 1.0e-05 : f32} : (memref<?x2x64xf32>, memref<64xf32>, memref<?x2x64xf32>) -> ()
  return
}

// -----

func.func @picks_rows(%x: memref<4x2x64xf32>, %w: memref<64xf32>, %o: memref<3x64xf32>) {
  // expected-error @+1 {{out dim 0 (R) is 3, expected 4 from x}}
  k3.row_norm %x, %w outs(%o) {eps = 1.0e-05 : f32} : (memref<4x2x64xf32>, memref<64xf32>, memref<3x64xf32>) -> ()
  return
}

// -----

func.func @picks_width(%x: memref<4x2x64xf32>, %w: memref<32xf32>, %o: memref<4x64xf32>) {
  // expected-error @+1 {{weight dim 0 (D) is 32, expected 64 from x}}
  k3.row_norm %x, %w outs(%o) {eps = 1.0e-05 : f32} : (memref<4x2x64xf32>, memref<32xf32>, memref<4x64xf32>) -> ()
  return
}

// -----

func.func @picks_gate(%x: memref<4x2x64xf32>, %w: memref<64xf32>, %g: memref<4x64xf32>, %o: memref<4x64xf32>) {
  // expected-error @+1 {{a gate needs rank-2 x [R, D], got x [R, K, D] summed over K}}
  k3.row_norm %x, %w gate(%g) outs(%o) {eps = 1.0e-05 : f32} : (memref<4x2x64xf32>, memref<64xf32>, memref<4x64xf32>, memref<4x64xf32>) -> ()
  return
}

// -----

func.func @gate(%x: memref<4x64xf32>, %w: memref<64xf32>, %g: memref<2x64xf32>, %o: memref<4x64xf32>) {
  // expected-error @+1 {{gate}}
  k3.row_norm %x, %w gate(%g) outs(%o) {eps = 1.0e-05 : f32} : (memref<4x64xf32>, memref<64xf32>, memref<2x64xf32>, memref<4x64xf32>) -> ()
  return
}

// -----

// out and gate are indexed alike: a dynamic x does not hide their mismatch.
func.func @rows(%x: memref<?x64xf32>, %w: memref<64xf32>, %g: memref<2x64xf32>, %o: memref<4x64xf32>) {
  // expected-error @+1 {{gate}}
  k3.row_norm %x, %w gate(%g) outs(%o) {eps = 1.0e-05 : f32} : (memref<?x64xf32>, memref<64xf32>, memref<2x64xf32>, memref<4x64xf32>) -> ()
  return
}

// -----

// The kernel takes D from out: it must be the weight's.
func.func @out_width(%x: memref<?x?xf32>, %w: memref<32xf32>, %o: memref<?x64xf32>) {
  // expected-error @+1 {{out dim 1 is 64, expected 32 from weight}}
  k3.row_norm %x, %w outs(%o) {eps = 1.0e-05 : f32} : (memref<?x?xf32>, memref<32xf32>, memref<?x64xf32>) -> ()
  return
}

// -----

func.func @eps(%x: memref<?x64xf32>, %w: memref<64xf32>, %o: memref<?x64xf32>) {
  // expected-error @+1 {{eps must be positive and finite, got 0}}
  k3.row_norm %x, %w outs(%o) {eps = 0.0 : f32} : (memref<?x64xf32>, memref<64xf32>, memref<?x64xf32>) -> ()
  return
}
