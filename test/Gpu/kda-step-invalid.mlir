// RUN: k3-opt %s --split-input-file --verify-diagnostics --k3-gpu-kda-step

// The pass builds kernels over buffers: it runs after bufferization.
func.func @tensors(%xq: tensor<1x16xf32>, %xk: tensor<1x16xf32>, %xv: tensor<1x16xf32>, %wq: tensor<16x4xf32>, %wk: tensor<16x4xf32>, %wv: tensor<16x4xf32>, %cq: tensor<3x16xf32>, %ck: tensor<3x16xf32>, %cv: tensor<3x16xf32>, %f: tensor<1x2x16xf32>, %a: tensor<2xf32>, %dt: tensor<2x16xf32>, %b: tensor<1x2xf32>, %nw: tensor<8xf32>, %og: tensor<1x2x8xf32>, %o: tensor<1x2x8xf32>, %nq: tensor<3x16xf32>, %nk: tensor<3x16xf32>, %nv: tensor<3x16xf32>, %s: tensor<2x16x8xf32>) {
  // expected-error @+1 {{k3-gpu-kda-step runs after bufferization, got tensors}}
  %r:5 = k3.kda_step x(%xq, %xk, %xv) filters(%wq, %wk, %wv) windows(%cq, %ck, %cv)
      gate(%f, %a, %dt) beta(%b) norm(%nw) out_gate(%og) outs(%o, %nq, %nk, %nv, %s)
      lower_bound lb = -5.0 scale = 0.0883883476 eps = 1.0e-05
      : (tensor<1x16xf32>, tensor<1x16xf32>, tensor<1x16xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<1x2x16xf32>, tensor<2xf32>, tensor<2x16xf32>, tensor<1x2xf32>, tensor<8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<2x16x8xf32>) -> (tensor<1x2x8xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<2x16x8xf32>)
  return
}

// -----

// The team's loops and shared arrays are sized from static heads and head dims.
func.func @dynamic(%xq: memref<1x16xf32>, %xk: memref<1x16xf32>, %xv: memref<1x16xf32>, %wq: memref<16x4xf32>, %wk: memref<16x4xf32>, %wv: memref<16x4xf32>, %cq: memref<3x16xf32>, %ck: memref<3x16xf32>, %cv: memref<3x16xf32>, %f: memref<1x2x16xf32>, %a: memref<2xf32>, %dt: memref<2x16xf32>, %b: memref<1x2xf32>, %nw: memref<8xf32>, %og: memref<1x2x8xf32>, %o: memref<1x2x8xf32>, %nq: memref<3x16xf32>, %nk: memref<3x16xf32>, %nv: memref<3x16xf32>, %s: memref<?x16x8xf32>) {
  // expected-error @+1 {{k3-gpu-kda-step needs static heads, head dims and windows, got state 'memref<?x16x8xf32>' and windows 'memref<3x16xf32>', 'memref<3x16xf32>', 'memref<3x16xf32>'}}
  k3.kda_step x(%xq, %xk, %xv) filters(%wq, %wk, %wv) windows(%cq, %ck, %cv)
      gate(%f, %a, %dt) beta(%b) norm(%nw) out_gate(%og) outs(%o, %nq, %nk, %nv, %s)
      lower_bound lb = -5.0 scale = 0.0883883476 eps = 1.0e-05
      : (memref<1x16xf32>, memref<1x16xf32>, memref<1x16xf32>, memref<16x4xf32>, memref<16x4xf32>, memref<16x4xf32>, memref<3x16xf32>, memref<3x16xf32>, memref<3x16xf32>, memref<1x2x16xf32>, memref<2xf32>, memref<2x16xf32>, memref<1x2xf32>, memref<8xf32>, memref<1x2x8xf32>, memref<1x2x8xf32>, memref<3x16xf32>, memref<3x16xf32>, memref<3x16xf32>, memref<?x16x8xf32>) -> ()
  return
}

// -----

// GVA (2 value heads per q/k head) with the q/k windows shifted in place:
// the group's second block would read the window its first block rewrites.
func.func @in_place(%xq: memref<1x16xf32>, %xk: memref<1x16xf32>, %xv: memref<1x16xf32>, %wq: memref<16x4xf32>, %wk: memref<16x4xf32>, %wv: memref<16x4xf32>, %cq: memref<3x16xf32>, %ck: memref<3x16xf32>, %cv: memref<3x16xf32>, %f: memref<1x2x16xf32>, %a: memref<2xf32>, %dt: memref<2x16xf32>, %b: memref<1x2xf32>, %nw: memref<8xf32>, %og: memref<1x2x8xf32>, %o: memref<1x2x8xf32>, %nv: memref<3x16xf32>, %s: memref<2x16x8xf32>) {
  // expected-error @+1 {{k3-gpu-kda-step cannot shift a q/k window in place when 2 value heads share each q/k head}}
  k3.kda_step x(%xq, %xk, %xv) filters(%wq, %wk, %wv) windows(%cq, %ck, %cv)
      gate(%f, %a, %dt) beta(%b) norm(%nw) out_gate(%og) outs(%o, %cq, %ck, %nv, %s)
      lower_bound lb = -5.0 scale = 0.0883883476 eps = 1.0e-05
      : (memref<1x16xf32>, memref<1x16xf32>, memref<1x16xf32>, memref<16x4xf32>, memref<16x4xf32>, memref<16x4xf32>, memref<3x16xf32>, memref<3x16xf32>, memref<3x16xf32>, memref<1x2x16xf32>, memref<2xf32>, memref<2x16xf32>, memref<1x2xf32>, memref<8xf32>, memref<1x2x8xf32>, memref<1x2x8xf32>, memref<3x16xf32>, memref<3x16xf32>, memref<3x16xf32>, memref<2x16x8xf32>) -> ()
  return
}

// -----

// 5 K + 2 V + 3 · 128 words of shared memory: K = 4096 is over the 48 KB a
// launch gets without opting in.
func.func @shared(%xq: memref<1x4096xf32>, %xk: memref<1x4096xf32>, %xv: memref<1x8xf32>, %wq: memref<4096x4xf32>, %wk: memref<4096x4xf32>, %wv: memref<8x4xf32>, %cq: memref<3x4096xf32>, %ck: memref<3x4096xf32>, %cv: memref<3x8xf32>, %f: memref<1x1x4096xf32>, %a: memref<1xf32>, %dt: memref<1x4096xf32>, %b: memref<1x1xf32>, %nw: memref<8xf32>, %og: memref<1x1x8xf32>, %o: memref<1x1x8xf32>, %nq: memref<3x4096xf32>, %nk: memref<3x4096xf32>, %nv: memref<3x8xf32>, %s: memref<1x4096x8xf32>) {
  // expected-error @+1 {{k3-gpu-kda-step needs 83520 bytes of shared memory for K = 4096 and V = 8, over 49152}}
  k3.kda_step x(%xq, %xk, %xv) filters(%wq, %wk, %wv) windows(%cq, %ck, %cv)
      gate(%f, %a, %dt) beta(%b) norm(%nw) out_gate(%og) outs(%o, %nq, %nk, %nv, %s)
      lower_bound lb = -5.0 scale = 0.0883883476 eps = 1.0e-05
      : (memref<1x4096xf32>, memref<1x4096xf32>, memref<1x8xf32>, memref<4096x4xf32>, memref<4096x4xf32>, memref<8x4xf32>, memref<3x4096xf32>, memref<3x4096xf32>, memref<3x8xf32>, memref<1x1x4096xf32>, memref<1xf32>, memref<1x4096xf32>, memref<1x1xf32>, memref<8xf32>, memref<1x1x8xf32>, memref<1x1x8xf32>, memref<3x4096xf32>, memref<3x4096xf32>, memref<3x8xf32>, memref<1x4096x8xf32>) -> ()
  return
}
