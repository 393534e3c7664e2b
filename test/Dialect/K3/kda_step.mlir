// RUN: k3-opt %s | FileCheck %s
// RUN: k3-opt %s | k3-opt | FileCheck %s
// RUN: k3-opt %s --mlir-print-op-generic | k3-opt | FileCheck %s

// The fused one-token step in destination-passing style; GVA (q/k of 1 head
// of 4 channels, 2 value heads of 4), bf16 activations, the softplus gate.
// CHECK-LABEL: func.func @step
//       CHECK:   k3.kda_step x(%{{.+}}, %{{.+}}, %{{.+}}) filters({{.+}}) windows({{.+}}) gate({{.+}}) beta(%{{.+}}) norm(%{{.+}}) out_gate(%{{.+}}) outs({{.+}}) softplus scale = 5.000000e-01 eps = 9.99999974E-6
//  CHECK-SAME:     -> (tensor<1x2x4xbf16>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x8xbf16>, tensor<2x4x4xf32>)
func.func @step(%xq: tensor<1x4xbf16>, %xk: tensor<1x4xbf16>, %xv: tensor<1x8xbf16>,
                %wq: tensor<4x4xf32>, %wk: tensor<4x4xf32>, %wv: tensor<8x4xf32>,
                %cq: tensor<3x4xf32>, %ck: tensor<3x4xf32>, %cv: tensor<3x8xbf16>,
                %f: tensor<1x2x4xbf16>, %a: tensor<2xf32>, %dt: tensor<2x4xf32>, %b: tensor<1x2xbf16>,
                %s0: tensor<2x4x4xf32>, %nw: tensor<4xbf16>, %og: tensor<1x2x4xbf16>,
                %o0: tensor<1x2x4xbf16>, %nq0: tensor<3x4xf32>, %nk0: tensor<3x4xf32>, %nv0: tensor<3x8xbf16>)
    -> tensor<1x2x4xbf16> {
  %o, %nq, %nk, %nv, %s1 = k3.kda_step x(%xq, %xk, %xv) filters(%wq, %wk, %wv) windows(%cq, %ck, %cv)
      gate(%f, %a, %dt) beta(%b) norm(%nw) out_gate(%og) outs(%o0, %nq0, %nk0, %nv0, %s0)
      softplus scale = 0.5 eps = 1.0e-05
      : (tensor<1x4xbf16>, tensor<1x4xbf16>, tensor<1x8xbf16>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8x4xf32>,
         tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x8xbf16>, tensor<1x2x4xbf16>, tensor<2xf32>, tensor<2x4xf32>,
         tensor<1x2xbf16>, tensor<4xbf16>, tensor<1x2x4xbf16>,
         tensor<1x2x4xbf16>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x8xbf16>, tensor<2x4x4xf32>)
      -> (tensor<1x2x4xbf16>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x8xbf16>, tensor<2x4x4xf32>)
  return %o : tensor<1x2x4xbf16>
}

// After bufferization: no results, the destinations updated; the lower-
// bounded gate.
// CHECK-LABEL: func.func @buffers
//       CHECK:   k3.kda_step {{.+}} lower_bound lb = -5.000000e+00 scale = 2.500000e-01
//  CHECK-SAME:     memref<2x4x4xf32>) -> (){{$}}
func.func @buffers(%xq: memref<1x8xf32>, %xv: memref<1x8xf32>, %w: memref<8x4xf32>, %c: memref<3x8xf32>,
                   %f: memref<1x2x4xf32>, %a: memref<2xf32>, %dt: memref<2x4xf32>, %b: memref<1x2xf32>,
                   %nw: memref<4xf32>, %og: memref<1x2x4xf32>, %o: memref<1x2x4xf32>,
                   %nq: memref<3x8xf32>, %nk: memref<3x8xf32>, %nv: memref<3x8xf32>, %s: memref<2x4x4xf32>) {
  k3.kda_step x(%xq, %xq, %xv) filters(%w, %w, %w) windows(%c, %c, %c)
      gate(%f, %a, %dt) beta(%b) norm(%nw) out_gate(%og) outs(%o, %nq, %nk, %nv, %s)
      lower_bound lb = -5.0 scale = 0.25 eps = 1.0e-05
      : (memref<1x8xf32>, memref<1x8xf32>, memref<1x8xf32>, memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>,
         memref<3x8xf32>, memref<3x8xf32>, memref<3x8xf32>, memref<1x2x4xf32>, memref<2xf32>, memref<2x4xf32>,
         memref<1x2xf32>, memref<4xf32>, memref<1x2x4xf32>,
         memref<1x2x4xf32>, memref<3x8xf32>, memref<3x8xf32>, memref<3x8xf32>, memref<2x4x4xf32>) -> ()
  return
}

// Batched: B requests' steps at once (k3-gpu-batch-kda-step's form): a
// state of rank 4, every per-token operand and window a request's row.
// CHECK-LABEL: func.func @batched
//       CHECK:   k3.kda_step {{.+}} lower_bound lb = -5.000000e+00
//  CHECK-SAME:     -> (tensor<?x2x4xf32>, tensor<?x3x8xf32>, tensor<?x3x8xf32>, tensor<?x3x8xf32>, tensor<?x2x4x4xf32>)
func.func @batched(%xq: tensor<?x8xf32>, %xv: tensor<?x8xf32>, %w: tensor<8x4xf32>, %c: tensor<?x3x8xf32>,
                   %f: tensor<?x2x4xf32>, %a: tensor<2xf32>, %dt: tensor<2x4xf32>, %b: tensor<?x2xf32>,
                   %nw: tensor<4xf32>, %og: tensor<?x2x4xf32>, %o: tensor<?x2x4xf32>,
                   %nq: tensor<?x3x8xf32>, %s: tensor<?x2x4x4xf32>) -> tensor<?x2x4x4xf32> {
  %r:5 = k3.kda_step x(%xq, %xq, %xv) filters(%w, %w, %w) windows(%c, %c, %c)
      gate(%f, %a, %dt) beta(%b) norm(%nw) out_gate(%og) outs(%o, %nq, %nq, %nq, %s)
      lower_bound lb = -5.0 scale = 0.25 eps = 1.0e-05
      : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>,
         tensor<?x3x8xf32>, tensor<?x3x8xf32>, tensor<?x3x8xf32>, tensor<?x2x4xf32>, tensor<2xf32>, tensor<2x4xf32>,
         tensor<?x2xf32>, tensor<4xf32>, tensor<?x2x4xf32>,
         tensor<?x2x4xf32>, tensor<?x3x8xf32>, tensor<?x3x8xf32>, tensor<?x3x8xf32>, tensor<?x2x4x4xf32>)
      -> (tensor<?x2x4xf32>, tensor<?x3x8xf32>, tensor<?x3x8xf32>, tensor<?x3x8xf32>, tensor<?x2x4x4xf32>)
  return %r#4 : tensor<?x2x4x4xf32>
}
