// RUN: k3-opt %s --split-input-file --convert-k3-to-linalg="kda-prefill=chunks" | FileCheck %s

// kda-prefill=chunks (the GPU default): a factored k3.kda_chunked whose
// sub-chunks are a multiple of 16 tokens becomes one k3.kda_chunks writing a
// fresh output, the state over the initial state, a workspace of one
// record per 16 tokens and value head (6400 words at K = V = 128) and,
// when used, the boundary states every `chunk` tokens (⌈T/chunk⌉ of them). Unused
// boundary states are an empty tensor, not a destination.
// CHECK-LABEL: func.func @factored
//  CHECK-SAME:   %[[S0:[^:]+]]: tensor<2x128x128xf32>
//       CHECK:   %[[T:.+]] = tensor.dim %arg0, %c0
//       CHECK:   %[[TV:.+]] = tensor.dim %arg2, %c0
//       CHECK:   %[[O:.+]] = tensor.empty(%[[TV]]) : tensor<?x2x128xf32>
//       CHECK:   %[[W16:.+]] = arith.ceildivui %[[T]], %c16
//       CHECK:   %[[W:.+]] = tensor.empty(%[[W16]]) : tensor<?x2x6400xf32>
//       CHECK:   %[[SLOTS:.+]] = arith.ceildivui %[[T]], %c16
//       CHECK:   %[[B:.+]] = tensor.empty(%[[SLOTS]]) : tensor<?x2x128x128xf32>
//       CHECK:   %[[R:.+]]:4 = k3.kda_chunks %{{.+}} outs(%[[O]], %[[S0]], %[[W]], %[[B]]) scale = 0.0883789062 every = 16
//       CHECK:   return %[[R]]#0, %[[R]]#1, %[[R]]#3
func.func @factored(%q: tensor<?x2x128xf32>, %k: tensor<?x2x128xf32>, %v: tensor<?x2x128xf32>, %g: tensor<?x2x128xf32>,
                    %beta: tensor<?x2xf32>, %s0: tensor<2x128x128xf32>)
    -> (tensor<?x2x128xf32>, tensor<2x128x128xf32>, tensor<?x2x128x128xf32>) {
  %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.08837890625 chunk = 16 sub_chunk = 16 factored
      : (tensor<?x2x128xf32>, tensor<?x2x128xf32>, tensor<?x2x128xf32>, tensor<?x2x128xf32>, tensor<?x2xf32>, tensor<2x128x128xf32>)
      -> (tensor<?x2x128xf32>, tensor<2x128x128xf32>, tensor<?x2x128x128xf32>)
  return %o, %s1, %b : tensor<?x2x128xf32>, tensor<2x128x128xf32>, tensor<?x2x128x128xf32>
}

// -----

// FLA's chunks of 64 in sub-chunks of 16, boundary states unused.
// CHECK-LABEL: func.func @unused
//       CHECK:   k3.kda_chunks %{{.+}} outs(%{{.+}}, %{{.+}}, %{{.+}}) scale = 5.000000e-01 every = 0
//   CHECK-NOT:   tensor.empty{{.+}}x4x4xf32>
func.func @unused(%q: tensor<?x1x4xf32>, %k: tensor<?x1x4xf32>, %v: tensor<?x2x4xf32>, %g: tensor<?x2x4xf32>,
                  %beta: tensor<?x2xf32>, %s0: tensor<2x4x4xf32>) -> (tensor<?x2x4xf32>, tensor<2x4x4xf32>) {
  %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.5 chunk = 64 sub_chunk = 16 factored
      : (tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<2x4x4xf32>)
      -> (tensor<?x2x4xf32>, tensor<2x4x4xf32>, tensor<?x2x4x4xf32>)
  return %o, %s1 : tensor<?x2x4xf32>, tensor<2x4x4xf32>
}

// -----

// The safe form (no proven decay bound: the softplus gate) and a factored
// form whose bound covers sub-chunks shorter than the kernel's 16 tokens
// become the `pairwise` kernels (exact exponents per chunk-matrix entry).
// Boundary states every 8 tokens (they would fall off the kernel's chunks)
// and K = 256 (over the kernel's registers) keep the column scan: one
// scf.forall over the state's columns.
// CHECK-LABEL: func.func @safe
//       CHECK:   k3.kda_chunks %{{.+}} scale = 5.000000e-01 every = 0 pairwise
//   CHECK-NOT:   scf.forall
// CHECK-LABEL: func.func @short_sub_chunks_no_states
//       CHECK:   k3.kda_chunks %{{.+}} scale = 5.000000e-01 every = 0 pairwise
// CHECK-LABEL: func.func @short_sub_chunks
//   CHECK-NOT:   k3.kda_chunks
//       CHECK:   scf.forall
// CHECK-LABEL: func.func @wide_keys
//   CHECK-NOT:   k3.kda_chunks
//       CHECK:   scf.forall
func.func @safe(%q: tensor<?x1x4xf32>, %k: tensor<?x1x4xf32>, %v: tensor<?x2x4xf32>, %g: tensor<?x2x4xf32>,
                %beta: tensor<?x2xf32>, %s0: tensor<2x4x4xf32>) -> (tensor<?x2x4xf32>, tensor<2x4x4xf32>) {
  %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.5 chunk = 16 sub_chunk = 16 safe
      : (tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<2x4x4xf32>)
      -> (tensor<?x2x4xf32>, tensor<2x4x4xf32>, tensor<?x2x4x4xf32>)
  return %o, %s1 : tensor<?x2x4xf32>, tensor<2x4x4xf32>
}
func.func @short_sub_chunks_no_states(%q: tensor<?x1x4xf32>, %k: tensor<?x1x4xf32>, %v: tensor<?x2x4xf32>, %g: tensor<?x2x4xf32>,
                                      %beta: tensor<?x2xf32>, %s0: tensor<2x4x4xf32>) -> tensor<?x2x4xf32> {
  %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.5 chunk = 8 sub_chunk = 8 factored
      : (tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<2x4x4xf32>)
      -> (tensor<?x2x4xf32>, tensor<2x4x4xf32>, tensor<?x2x4x4xf32>)
  return %o : tensor<?x2x4xf32>
}
func.func @short_sub_chunks(%q: tensor<?x1x4xf32>, %k: tensor<?x1x4xf32>, %v: tensor<?x2x4xf32>, %g: tensor<?x2x4xf32>,
                            %beta: tensor<?x2xf32>, %s0: tensor<2x4x4xf32>) -> tensor<?x2x4x4xf32> {
  %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.5 chunk = 8 sub_chunk = 8 factored
      : (tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<2x4x4xf32>)
      -> (tensor<?x2x4xf32>, tensor<2x4x4xf32>, tensor<?x2x4x4xf32>)
  return %b : tensor<?x2x4x4xf32>
}
func.func @wide_keys(%q: tensor<?x1x256xf32>, %k: tensor<?x1x256xf32>, %v: tensor<?x1x4xf32>, %g: tensor<?x1x256xf32>,
                     %beta: tensor<?x1xf32>, %s0: tensor<1x256x4xf32>) -> (tensor<?x1x4xf32>, tensor<1x256x4xf32>) {
  %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.5 chunk = 16 sub_chunk = 16 factored
      : (tensor<?x1x256xf32>, tensor<?x1x256xf32>, tensor<?x1x4xf32>, tensor<?x1x256xf32>, tensor<?x1xf32>, tensor<1x256x4xf32>)
      -> (tensor<?x1x4xf32>, tensor<1x256x4xf32>, tensor<?x1x256x4xf32>)
  return %o, %s1 : tensor<?x1x4xf32>, tensor<1x256x4xf32>
}
