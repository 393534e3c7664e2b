// RUN: k3-opt %s | FileCheck %s
// RUN: k3-opt %s | k3-opt | FileCheck %s
// RUN: k3-opt %s --mlir-print-op-generic | k3-opt | FileCheck %s

// The tensor form (destinations and results) and the memref form (no
// results) of the MXFP4 experts on tensor cores: y by slot, h and order
// as scratch destinations; beta2 is optional.
// CHECK-LABEL: func.func @tensors
//       CHECK:   k3.moe_experts %{{.+}} routed(%{{.+}}, %{{.+}}) experts(%{{.+}}, %{{.+}}, %{{.+}}) scales(%{{.+}}, %{{.+}}, %{{.+}}) outs(%{{.+}}, %{{.+}}, %{{.+}}) {beta1 = 4.000000e+00 : f32, beta2 = 2.500000e+01 : f32}
//  CHECK-SAME:     -> (tensor<?x64xf32>, tensor<?x96xf32>, tensor<?xi32>)
func.func @tensors(%z: tensor<?x64xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>,
                   %c1: tensor<8x96x32xi8>, %c3: tensor<8x96x32xi8>, %c2: tensor<8x64x48xi8>,
                   %s1: tensor<8x96x2xf8E8M0FNU>, %s3: tensor<8x96x2xf8E8M0FNU>,
                   %s2: tensor<8x64x3xf8E8M0FNU>, %y: tensor<?x64xf32>, %h: tensor<?x96xf32>,
                   %o: tensor<?xi32>) -> tensor<?x64xf32> {
  %y1, %h1, %o1 = k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<8x96x32xi8>,
         tensor<8x96x32xi8>, tensor<8x64x48xi8>, tensor<8x96x2xf8E8M0FNU>,
         tensor<8x96x2xf8E8M0FNU>, tensor<8x64x3xf8E8M0FNU>, tensor<?x64xf32>,
         tensor<?x96xf32>, tensor<?xi32>)
      -> (tensor<?x64xf32>, tensor<?x96xf32>, tensor<?xi32>)
  return %y1 : tensor<?x64xf32>
}

// CHECK-LABEL: func.func @memrefs
//       CHECK:   k3.moe_experts %{{.+}} routed(%{{.+}}, %{{.+}}) experts(%{{.+}}, %{{.+}}, %{{.+}}) scales(%{{.+}}, %{{.+}}, %{{.+}}) outs(%{{.+}}, %{{.+}}, %{{.+}}) {beta1 = 4.000000e+00 : f32}
//  CHECK-SAME:     memref<17xi32>) -> ()
func.func @memrefs(%z: memref<4x32xf32>, %i: memref<4x2xi64>, %w: memref<4x2xf32>,
                   %c1: memref<3x64x16xi8>, %c3: memref<3x64x16xi8>, %c2: memref<3x32x32xi8>,
                   %s1: memref<3x64x1xf8E8M0FNU>, %s3: memref<3x64x1xf8E8M0FNU>,
                   %s2: memref<3x32x2xf8E8M0FNU>, %y: memref<8x32xf32>, %h: memref<8x64xf32>,
                   %o: memref<17xi32>) {
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) {beta1 = 4.0 : f32}
      : (memref<4x32xf32>, memref<4x2xi64>, memref<4x2xf32>, memref<3x64x16xi8>,
         memref<3x64x16xi8>, memref<3x32x32xi8>, memref<3x64x1xf8E8M0FNU>,
         memref<3x64x1xf8E8M0FNU>, memref<3x32x2xf8E8M0FNU>, memref<8x32xf32>,
         memref<8x64xf32>, memref<17xi32>) -> ()
  return
}

// -----

// SwiGLU in GEMM1's epilogue (Kimi Linear).
// CHECK-LABEL: func.func @swiglu
//       CHECK:   k3.moe_experts {{.+}} outs(%{{.+}}, %{{.+}}, %{{.+}}) activation silu :
func.func @swiglu(%z: memref<4x32xf32>, %i: memref<4x2xi32>, %w: memref<4x2xf32>,
                  %c1: memref<3x64x16xi8>, %c3: memref<3x64x16xi8>, %c2: memref<3x32x32xi8>,
                  %s1: memref<3x64x1xf8E8M0FNU>, %s3: memref<3x64x1xf8E8M0FNU>,
                  %s2: memref<3x32x2xf8E8M0FNU>, %y: memref<8x32xf32>, %h: memref<8x64xf32>,
                  %o: memref<17xi32>) {
  k3.moe_experts %z routed(%i, %w) experts(%c1, %c3, %c2) scales(%s1, %s3, %s2)
      outs(%y, %h, %o) activation silu
      : (memref<4x32xf32>, memref<4x2xi32>, memref<4x2xf32>, memref<3x64x16xi8>, memref<3x64x16xi8>, memref<3x32x32xi8>, memref<3x64x1xf8E8M0FNU>, memref<3x64x1xf8E8M0FNU>, memref<3x32x2xf8E8M0FNU>, memref<8x32xf32>, memref<8x64xf32>, memref<17xi32>) -> ()
  return
}
