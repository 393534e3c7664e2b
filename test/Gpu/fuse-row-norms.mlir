// RUN: k3-opt %s --split-input-file --k3-gpu-fuse-row-norms | FileCheck %s

// AttnRes then the sublayer's input norm: one mix writing the norm's
// destination, the norm's weight and eps carried as then_norm/then_eps.
// CHECK-LABEL: func.func @mix_then_norm
//  CHECK-SAME: (%[[S:.*]]: tensor<?x?x64xf32>, %[[R:.*]]: tensor<?x64xf32>, %[[N:.*]]: tensor<64xbf16>, %[[Q:.*]]: tensor<64xbf16>, %[[W:.*]]: tensor<64xbf16>, %{{.*}}: tensor<?x64xf32>, %[[O2:.*]]: tensor<?x64xbf16>)
//       CHECK: %[[Y:.*]] = k3.attn_res_mix [%[[S]], %[[R]]] norm(%[[N]]) query(%[[Q]]) then_norm(%[[W]]) outs(%[[O2]]) {eps = 9.99999974E-6 : f32, then_eps = 1.000000e-03 : f32}
//  CHECK-NEXT: return %[[Y]]
func.func @mix_then_norm(%s: tensor<?x?x64xf32>, %r: tensor<?x64xf32>, %n: tensor<64xbf16>, %q: tensor<64xbf16>, %w: tensor<64xbf16>, %o1: tensor<?x64xf32>, %o2: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %h = k3.attn_res_mix [%s, %r] norm(%n) query(%q) outs(%o1) {eps = 1.0e-05 : f32}
      : (tensor<?x?x64xf32>, tensor<?x64xf32>, tensor<64xbf16>, tensor<64xbf16>, tensor<?x64xf32>) -> tensor<?x64xf32>
  %y = k3.row_norm %h, %w outs(%o2) {eps = 1.0e-03 : f32} : (tensor<?x64xf32>, tensor<64xbf16>, tensor<?x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// The mix is used again (the residual): both stay.
// CHECK-LABEL: func.func @mix_used_twice
//       CHECK: k3.attn_res_mix
//   CHECK-NOT: then_norm
//       CHECK: k3.row_norm
func.func @mix_used_twice(%r: tensor<?x64xf32>, %n: tensor<64xf32>, %q: tensor<64xf32>, %w: tensor<64xf32>, %o1: tensor<?x64xf32>, %o2: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %h = k3.attn_res_mix [%r] norm(%n) query(%q) outs(%o1) {eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  %y = k3.row_norm %h, %w outs(%o2) {eps = 1.0e-05 : f32} : (tensor<?x64xf32>, tensor<64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %h, %y : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// A bf16 mix is rounded before the norm reads it: not folded (the fused
// kernel norms the f32 mix). A gated norm is not folded either.
// CHECK-LABEL: func.func @bf16_mix_and_gate
//   CHECK-NOT: then_norm
//   CHECK-COUNT-2: k3.row_norm
func.func @bf16_mix_and_gate(%r: tensor<?x64xf32>, %n: tensor<64xf32>, %q: tensor<64xf32>, %w: tensor<64xf32>, %g: tensor<?x64xf32>, %o1: tensor<?x64xbf16>, %o2: tensor<?x64xf32>, %o3: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %h = k3.attn_res_mix [%r] norm(%n) query(%q) outs(%o1) {eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<?x64xbf16>) -> tensor<?x64xbf16>
  %y = k3.row_norm %h, %w outs(%o2) {eps = 1.0e-05 : f32} : (tensor<?x64xbf16>, tensor<64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  %h2 = k3.attn_res_mix [%r] norm(%n) query(%q) outs(%o2) {eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  %z = k3.row_norm %h2, %w gate(%g) outs(%o3) {eps = 1.0e-05 : f32} : (tensor<?x64xf32>, tensor<64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %y, %z : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// The MoE's combine over picks, then its latent norm: the norm sums the
// [T, K, D] rows itself; the generic and its fill go.
#in = affine_map<(r, d, k) -> (r, k, d)>
#out = affine_map<(r, d, k) -> (r, d)>
// CHECK-LABEL: func.func @picks_then_norm
//  CHECK-SAME: (%[[Y:.*]]: tensor<4x2x32xf32>, %[[W:.*]]: tensor<32xbf16>
//   CHECK-NOT: linalg
//       CHECK: %[[N:.*]] = k3.row_norm %[[Y]], %[[W]] outs(%{{.*}}) {eps = 9.99999974E-6 : f32} : (tensor<4x2x32xf32>, tensor<32xbf16>, tensor<4x32xf32>)
//  CHECK-NEXT: return %[[N]]
func.func @picks_then_norm(%y: tensor<4x2x32xf32>, %w: tensor<32xbf16>) -> tensor<4x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4x32xf32>) -> tensor<4x32xf32>
  %sum = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%y : tensor<4x2x32xf32>) outs(%init : tensor<4x32xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<4x32xf32>
  %o = tensor.empty() : tensor<4x32xf32>
  %n = k3.row_norm %sum, %w outs(%o) {eps = 1.0e-05 : f32} : (tensor<4x32xf32>, tensor<32xbf16>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %n : tensor<4x32xf32>
}

// -----

// Not a plain sum from +0.0: a fill of 1.0, a product, a sum over the
// last dimension. Each stays a generic before its norm.
#in = affine_map<(r, d, k) -> (r, k, d)>
#last = affine_map<(r, d, k) -> (r, d, k)>
#out = affine_map<(r, d, k) -> (r, d)>
// CHECK-LABEL: func.func @not_pick_sums
//   CHECK-COUNT-3: linalg.generic
//   CHECK-NOT: k3.row_norm {{.*}}x2x32xf32
func.func @not_pick_sums(%y: tensor<4x2x32xf32>, %z: tensor<4x32x2xf32>, %w: tensor<32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<4x32xf32>
  %i0 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x32xf32>) -> tensor<4x32xf32>
  %i1 = linalg.fill ins(%one : f32) outs(%e : tensor<4x32xf32>) -> tensor<4x32xf32>
  %a = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%y : tensor<4x2x32xf32>) outs(%i1 : tensor<4x32xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<4x32xf32>
  %b = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%y : tensor<4x2x32xf32>) outs(%i0 : tensor<4x32xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.mulf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<4x32xf32>
  %c = linalg.generic {indexing_maps = [#last, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%z : tensor<4x32x2xf32>) outs(%i0 : tensor<4x32xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<4x32xf32>
  %na = k3.row_norm %a, %w outs(%e) {eps = 1.0e-05 : f32} : (tensor<4x32xf32>, tensor<32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %nb = k3.row_norm %b, %w outs(%e) {eps = 1.0e-05 : f32} : (tensor<4x32xf32>, tensor<32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %nc = k3.row_norm %c, %w outs(%e) {eps = 1.0e-05 : f32} : (tensor<4x32xf32>, tensor<32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %na, %nb, %nc : tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

// A pick sum used again, or from a fill of -0.0 (whose sum of -0.0 rows
// stays -0.0 where the norm's start of +0.0 gives +0.0), or a mix outside
// the norm's loop (fused, it would run every iteration): each stays.
#in = affine_map<(r, d, k) -> (r, k, d)>
#out = affine_map<(r, d, k) -> (r, d)>
// CHECK-LABEL: func.func @left_alone
//   CHECK-COUNT-2: linalg.generic
//       CHECK: k3.attn_res_mix
//   CHECK-NOT: then_norm
//       CHECK: scf.for
//       CHECK:   k3.row_norm
func.func @left_alone(%y: tensor<4x2x32xf32>, %w: tensor<32xf32>, %r: tensor<?x32xf32>, %o: tensor<?x32xf32>, %n: index) -> (tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>, tensor<?x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %minus = arith.constant -0.0 : f32
  %e = tensor.empty() : tensor<4x32xf32>
  %i0 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x32xf32>) -> tensor<4x32xf32>
  %i1 = linalg.fill ins(%minus : f32) outs(%e : tensor<4x32xf32>) -> tensor<4x32xf32>
  %a = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%y : tensor<4x2x32xf32>) outs(%i0 : tensor<4x32xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<4x32xf32>
  %b = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%y : tensor<4x2x32xf32>) outs(%i1 : tensor<4x32xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<4x32xf32>
  %na = k3.row_norm %a, %w outs(%e) {eps = 1.0e-05 : f32} : (tensor<4x32xf32>, tensor<32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %nb = k3.row_norm %b, %w outs(%e) {eps = 1.0e-05 : f32} : (tensor<4x32xf32>, tensor<32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %h = k3.attn_res_mix [%r] norm(%w) query(%w) outs(%o) {eps = 1.0e-05 : f32}
      : (tensor<?x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<?x32xf32>) -> tensor<?x32xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %l = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %o) -> (tensor<?x32xf32>) {
    %m = k3.row_norm %h, %w outs(%acc) {eps = 1.0e-05 : f32} : (tensor<?x32xf32>, tensor<32xf32>, tensor<?x32xf32>) -> tensor<?x32xf32>
    scf.yield %m : tensor<?x32xf32>
  }
  return %na, %nb, %a, %l : tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>, tensor<?x32xf32>
}
