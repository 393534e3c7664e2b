// RUN: k3-opt %s --split-input-file --k3-outline-layers 2>/dev/null | FileCheck %s
// RUN: k3-opt %s --split-input-file --k3-outline-layers 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK

// Layers 0 and 1 compute the same thing with their own weights: one
// function, called twice; layer 2 is another kind (a product, not a sum).
// The constant layer 0's op hoisted is cloned into each function; the
// output's ops (the final norm) get a function of their own, and the entry
// point holds calls only.
// CHECK-LABEL: func.func private @f_layer_dense(%arg0: tensor<?x4xf32>, %arg1: tensor<4xf32>) -> tensor<?x4xf32>
// CHECK-SAME: attributes {k3.layers = array<i64: 0, 1>}
// CHECK: arith.constant 0 : index
// CHECK: tensor.dim %arg0
// CHECK: k3.rms_norm %arg0, %arg1
// CHECK: arith.addf
// CHECK-LABEL: func.func private @f_layer_dense_1(%arg0: tensor<?x4xf32>, %arg1: tensor<4xf32>) -> tensor<?x4xf32>
// CHECK-SAME: attributes {k3.layers = array<i64: 2>}
// CHECK: arith.mulf
// CHECK-LABEL: func.func private @f_output(%arg0: tensor<?x4xf32>, %arg1: tensor<4xf32>) -> tensor<?x4xf32>
// CHECK-NOT: k3.layers
// CHECK-NEXT: k3.rms_norm %arg0, %arg1
// CHECK-LABEL: func.func @f(
// CHECK-NEXT: %[[C:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[A:.+]] = call @f_layer_dense(%arg0, %arg1)
// CHECK-NEXT: %[[B:.+]] = call @f_layer_dense(%[[A]], %arg2)
// CHECK-NEXT: %[[D:.+]] = call @f_layer_dense_1(%[[B]], %arg3)
// CHECK-NEXT: %[[N:.+]] = call @f_output(%[[D]], %arg4)
// CHECK-NEXT: return %[[N]]
func.func @f(%x: tensor<?x4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>, %w2: tensor<4xf32>,
             %wn: tensor<4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index loc("layers.0")
  %d0 = tensor.dim %x, %c0 : tensor<?x4xf32> loc("layers.0")
  %e0 = tensor.empty(%d0) : tensor<?x4xf32> loc("layers.0")
  %n0 = k3.rms_norm %x, %w0 {eps = 1.0e-05 : f32} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32> loc("layers.0")
  %h0 = arith.addf %x, %n0 : tensor<?x4xf32> loc("layers.0")
  %d1 = tensor.dim %h0, %c0 : tensor<?x4xf32> loc("layers.1")
  %e1 = tensor.empty(%d1) : tensor<?x4xf32> loc("layers.1")
  %n1 = k3.rms_norm %h0, %w1 {eps = 1.0e-05 : f32} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32> loc("layers.1")
  %h1 = arith.addf %h0, %n1 : tensor<?x4xf32> loc("layers.1")
  %n2 = k3.rms_norm %h1, %w2 {eps = 1.0e-05 : f32} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32> loc("layers.2")
  %h2 = arith.mulf %h1, %n2 : tensor<?x4xf32> loc("layers.2")
  %out = k3.rms_norm %h2, %wn {eps = 1.0e-05 : f32} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32> loc("output")
  return %out : tensor<?x4xf32>
}

// -----

// A value of layer 0 used between its ops by an op of no layer would be
// read before the call: the layer stays inline, with a remark; layer 1
// still becomes a function.
// CHECK-LABEL: func.func private @g_layer_dense(
// CHECK-SAME: k3.layers = array<i64: 1>
// CHECK-LABEL: func.func @g(
// CHECK: k3.rms_norm %arg0, %arg1
// CHECK: arith.negf
// CHECK: arith.addf
// CHECK: call @g_layer_dense(
func.func @g(%x: tensor<?x4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>) -> tensor<?x4xf32> {
  // REMARK: remark: {{.*}}layers.0 stays inline: a value it computes is used before its last op
  %n0 = k3.rms_norm %x, %w0 {eps = 1.0e-05 : f32} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32> loc("layers.0")
  %m = arith.negf %n0 : tensor<?x4xf32>
  %h0 = arith.addf %x, %m : tensor<?x4xf32> loc("layers.0")
  %n1 = k3.rms_norm %h0, %w1 {eps = 1.0e-05 : f32} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32> loc("layers.1")
  %h1 = arith.addf %h0, %n1 : tensor<?x4xf32> loc("layers.1")
  return %h1 : tensor<?x4xf32>
}

// -----

// Parts of layers ("layers.N.<part>"): each part is a function, shared by
// every layer whose part is the same. Layer 1 has no residual add (as a
// layer sealing an AttnRes block has none): its mixer is still layer 0's.
// CHECK-LABEL: func.func private @h_mixer(%arg0: tensor<?x4xf32>, %arg1: tensor<4xf32>) -> tensor<?x4xf32>
// CHECK-SAME: attributes {k3.layers = array<i64: 0, 1>}
// CHECK-NEXT: k3.rms_norm %arg0, %arg1
// CHECK-LABEL: func.func private @h_residual(%arg0: tensor<?x4xf32>, %arg1: tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK-SAME: attributes {k3.layers = array<i64: 0>}
// CHECK-NEXT: arith.addf %arg0, %arg1
// CHECK-LABEL: func.func @h(
// CHECK-NEXT: %[[A:.+]] = call @h_mixer(%arg0, %arg1)
// CHECK-NEXT: %[[R:.+]] = call @h_residual(%arg0, %[[A]])
// CHECK-NEXT: %[[B:.+]] = call @h_mixer(%[[R]], %arg2)
// CHECK-NEXT: return %[[B]]
func.func @h(%x: tensor<?x4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>) -> tensor<?x4xf32> {
  %a0 = k3.rms_norm %x, %w0 {eps = 1.0e-05 : f32} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32> loc("layers.0.mixer")
  %r0 = arith.addf %x, %a0 : tensor<?x4xf32> loc("layers.0.residual")
  %a1 = k3.rms_norm %r0, %w1 {eps = 1.0e-05 : f32} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32> loc("layers.1.mixer")
  return %a1 : tensor<?x4xf32>
}

// -----

// A part name k3 does not know is no group: its op stays in the entry.
// CHECK-LABEL: func.func @u(
// CHECK-NEXT: k3.rms_norm
// CHECK-NEXT: return
func.func @u(%x: tensor<?x4xf32>, %w0: tensor<4xf32>) -> tensor<?x4xf32> {
  %a0 = k3.rms_norm %x, %w0 {eps = 1.0e-05 : f32} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32> loc("layers.0.other")
  return %a0 : tensor<?x4xf32>
}
