// RUN: k3-opt %s --split-input-file --verify-diagnostics --k3-kda-chunkwise | FileCheck %s
// RUN: k3-opt %s --split-input-file --k3-kda-chunkwise="chunk-size=32 sub-chunk=8" 2>/dev/null | FileCheck %s --check-prefix=OPT
// RUN: not k3-opt %s --split-input-file --k3-kda-chunkwise="chunk-size=40 sub-chunk=16" 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: k3-kda-chunkwise: chunk-size 40 must be a positive multiple of sub-chunk 16 and at most 1024

// K3's gate, lb = -5: 16 tokens reach at most -80, so the factored tile form.
// CHECK-LABEL: func.func @lower_bound
//       CHECK:   %[[G:.+]] = k3.kda_gate lower_bound
//       CHECK:   %[[O:.+]], %[[S:.+]], %{{.+}} = k3.kda_chunked %{{.+}}, %{{.+}}, %{{.+}}, %[[G]], %{{.+}}, state(%{{.+}}) scale = 2.500000e-01 chunk = 64 sub_chunk = 16 factored
//  CHECK-SAME:     -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>, tensor<?x4x16x16xf32>)
//   CHECK-NOT:   k3.kda %
//       CHECK:   return %[[O]], %[[S]]
// OPT-LABEL: func.func @lower_bound
//       OPT:   k3.kda_chunked {{.+}} chunk = 32 sub_chunk = 8 factored
func.func @lower_bound(%q: tensor<?x4x16xf32>, %k: tensor<?x4x16xf32>, %v: tensor<?x4x16xf32>, %x: tensor<?x4x16xf32>,
                       %a: tensor<4xf32>, %dt: tensor<4x16xf32>, %beta: tensor<?x4xf32>, %s0: tensor<4x16x16xf32>)
    -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>) {
  %g = k3.kda_gate lower_bound lb = -5.0 %x, %a, %dt : (tensor<?x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<4x16x16xf32>)
      -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>)
  return %o, %s1 : tensor<?x4x16xf32>, tensor<4x16x16xf32>
}

// -----

// Kimi Linear's softplus gate is unbounded below: the safe form (its
// sub-chunk is unused), and a remark that says why.
// CHECK-LABEL: func.func @softplus
//       CHECK:   k3.kda_chunked {{.+}} chunk = 64 sub_chunk = 16 safe
// OPT-LABEL: func.func @softplus
//       OPT:   k3.kda_chunked {{.+}} chunk = 32 sub_chunk = 8 safe
func.func @softplus(%q: tensor<?x4x16xf32>, %k: tensor<?x4x16xf32>, %v: tensor<?x4x16xf32>, %x: tensor<?x4x16xf32>,
                    %a: tensor<4xf32>, %dt: tensor<4x16xf32>, %beta: tensor<?x4xf32>, %s0: tensor<4x16x16xf32>)
    -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>) {
  %g = k3.kda_gate softplus %x, %a, %dt : (tensor<?x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
  // expected-remark @+1 {{k3-kda-chunkwise: safe tile form (exact pairwise decays, no factor above 1): the softplus gate is unbounded below}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<4x16x16xf32>)
      -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>)
  return %o, %s1 : tensor<?x4x16xf32>, tensor<4x16x16xf32>
}

// -----

// A bound of -6 reaches -96 over 16 tokens (safe form, with the numbers), but
// only -48 over 8 (factored, under the OPT options).
// CHECK-LABEL: func.func @low_bound
//       CHECK:   k3.kda_chunked {{.+}} safe
// OPT-LABEL: func.func @low_bound
//       OPT:   k3.kda_chunked {{.+}} chunk = 32 sub_chunk = 8 factored
func.func @low_bound(%q: tensor<?x4x16xf32>, %k: tensor<?x4x16xf32>, %v: tensor<?x4x16xf32>, %x: tensor<?x4x16xf32>,
                     %a: tensor<4xf32>, %dt: tensor<4x16xf32>, %beta: tensor<?x4xf32>, %s0: tensor<4x16x16xf32>)
    -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>) {
  %g = k3.kda_gate lower_bound lb = -6.0 %x, %a, %dt : (tensor<?x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
  // expected-remark-re @+1 {{safe tile form {{.+}}: lower bound -6 over 16-token sub-chunks reaches -96 < -80 (e^96 overflows fp32)}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<4x16x16xf32>)
      -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>)
  return %o, %s1 : tensor<?x4x16xf32>, tensor<4x16x16xf32>
}

// -----

// A decay the pass cannot trace to a gate has no known bound.
// CHECK-LABEL: func.func @unknown
//       CHECK:   k3.kda_chunked {{.+}} safe
func.func @unknown(%q: tensor<?x4x16xf32>, %k: tensor<?x4x16xf32>, %v: tensor<?x4x16xf32>, %g: tensor<?x4x16xf32>,
                   %beta: tensor<?x4xf32>, %s0: tensor<4x16x16xf32>) -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>) {
  // expected-remark @+1 {{the decay is not produced by k3.kda_gate, so no lower bound is known}}
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<4x16x16xf32>)
      -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>)
  return %o, %s1 : tensor<?x4x16xf32>, tensor<4x16x16xf32>
}

// -----

// Decode (one static token) keeps the recurrent step; a static prompt of 40
// tokens gets 3 boundary states.
// CHECK-LABEL: func.func @decode
//       CHECK:   k3.kda %
//   CHECK-NOT:   k3.kda_chunked
// CHECK-LABEL: func.func @static
//       CHECK:   k3.kda_chunked {{.+}} -> (tensor<40x4x16xf32>, tensor<4x16x16xf32>, tensor<1x4x16x16xf32>)
//       OPT:   k3.kda_chunked {{.+}} -> (tensor<40x4x16xf32>, tensor<4x16x16xf32>, tensor<2x4x16x16xf32>)
func.func @decode(%q: tensor<1x4x16xf32>, %k: tensor<1x4x16xf32>, %v: tensor<1x4x16xf32>, %x: tensor<1x4x16xf32>,
                  %a: tensor<4xf32>, %dt: tensor<4x16xf32>, %beta: tensor<1x4xf32>, %s0: tensor<4x16x16xf32>)
    -> (tensor<1x4x16xf32>, tensor<4x16x16xf32>) {
  %g = k3.kda_gate lower_bound lb = -5.0 %x, %a, %dt : (tensor<1x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<1x4x16xf32>
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4xf32>, tensor<4x16x16xf32>)
      -> (tensor<1x4x16xf32>, tensor<4x16x16xf32>)
  return %o, %s1 : tensor<1x4x16xf32>, tensor<4x16x16xf32>
}
func.func @static(%q: tensor<40x4x16xf32>, %k: tensor<40x4x16xf32>, %v: tensor<40x4x16xf32>, %x: tensor<40x4x16xf32>,
                  %a: tensor<4xf32>, %dt: tensor<4x16xf32>, %beta: tensor<40x4xf32>, %s0: tensor<4x16x16xf32>)
    -> (tensor<40x4x16xf32>, tensor<4x16x16xf32>) {
  %g = k3.kda_gate lower_bound lb = -5.0 %x, %a, %dt : (tensor<40x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<40x4x16xf32>
  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25
      : (tensor<40x4x16xf32>, tensor<40x4x16xf32>, tensor<40x4x16xf32>, tensor<40x4x16xf32>, tensor<40x4xf32>, tensor<4x16x16xf32>)
      -> (tensor<40x4x16xf32>, tensor<4x16x16xf32>)
  return %o, %s1 : tensor<40x4x16xf32>, tensor<4x16x16xf32>
}

// -----

// Snapshots every 128 tokens: every second boundary of 64-token chunks,
// from the second on (with the OPT options' 32-token chunks every fourth,
// from the fourth). Every 32 tokens drops the default chunk to 32, with a
// remark (with OPT's chunks, every boundary).
// CHECK-LABEL: func.func @snapshots
//       CHECK:   %{{.+}}, %{{.+}}, %[[B:.+]] = k3.kda_chunked {{.+}} chunk = 64 sub_chunk = 16 factored
//       CHECK:   %[[N:.+]] = arith.divui %{{.+}}, %c128
//       CHECK:   %[[SN:.+]] = tensor.extract_slice %[[B]][1, 0, 0, 0] [%[[N]], 4, 16, 16] [2, 1, 1, 1]
//       CHECK:   k3.kda_chunked {{.+}} chunk = 32 sub_chunk = 16 factored
//       CHECK:   return %[[SN]]
// OPT-LABEL: func.func @snapshots
//       OPT:   tensor.extract_slice %{{.+}}[3, 0, 0, 0] [%{{.+}}, 4, 16, 16] [4, 1, 1, 1]
//       OPT:   tensor.extract_slice %{{.+}}[0, 0, 0, 0] [%{{.+}}, 4, 16, 16] [1, 1, 1, 1]
func.func @snapshots(%q: tensor<?x4x16xf32>, %k: tensor<?x4x16xf32>, %v: tensor<?x4x16xf32>, %x: tensor<?x4x16xf32>,
                     %a: tensor<4xf32>, %dt: tensor<4x16xf32>, %beta: tensor<?x4xf32>, %s0: tensor<4x16x16xf32>)
    -> (tensor<?x4x16x16xf32>, tensor<?x4x16x16xf32>) {
  %g = k3.kda_gate lower_bound lb = -5.0 %x, %a, %dt : (tensor<?x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
  %o, %s1, %sn = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25 snapshots every 128
      : (tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<4x16x16xf32>)
      -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>, tensor<?x4x16x16xf32>)
  // expected-remark @+1 {{k3-kda-chunkwise: chunks of 32 (sub-chunks of 16) so that the snapshots every 32 tokens fall on chunk boundaries}}
  %o2, %s2, %sn2 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25 snapshots every 32
      : (tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<4x16x16xf32>)
      -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>, tensor<?x4x16x16xf32>)
  return %sn, %sn2 : tensor<?x4x16x16xf32>, tensor<?x4x16x16xf32>
}

// -----

// 40 static tokens hold no 128-token snapshot: an empty tensor, not a slice
// past the boundary states.
// CHECK-LABEL: func.func @no_snapshot
//       CHECK:   %[[E:.+]] = tensor.empty() : tensor<0x4x16x16xf32>
//       CHECK:   return %[[E]]
// OPT-LABEL: func.func @no_snapshot
func.func @no_snapshot(%q: tensor<40x4x16xf32>, %k: tensor<40x4x16xf32>, %v: tensor<40x4x16xf32>, %x: tensor<40x4x16xf32>,
                       %a: tensor<4xf32>, %dt: tensor<4x16xf32>, %beta: tensor<40x4xf32>, %s0: tensor<4x16x16xf32>)
    -> tensor<0x4x16x16xf32> {
  %g = k3.kda_gate lower_bound lb = -5.0 %x, %a, %dt : (tensor<40x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<40x4x16xf32>
  %o, %s1, %sn = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.25 snapshots every 128
      : (tensor<40x4x16xf32>, tensor<40x4x16xf32>, tensor<40x4x16xf32>, tensor<40x4x16xf32>, tensor<40x4xf32>, tensor<4x16x16xf32>)
      -> (tensor<40x4x16xf32>, tensor<4x16x16xf32>, tensor<0x4x16x16xf32>)
  return %sn : tensor<0x4x16x16xf32>
}

// -----

// A segment's decay is a slice of the gate's output: still bounded.
// CHECK-LABEL: func.func @sliced_gate
//       CHECK:   k3.kda_chunked {{.+}} factored
// OPT-LABEL: func.func @sliced_gate
func.func @sliced_gate(%q: tensor<?x4x16xf32>, %k: tensor<?x4x16xf32>, %v: tensor<?x4x16xf32>, %x: tensor<?x4x16xf32>,
                       %a: tensor<4xf32>, %dt: tensor<4x16xf32>, %beta: tensor<?x4xf32>, %s0: tensor<4x16x16xf32>, %n: index)
    -> tensor<4x16x16xf32> {
  %g = k3.kda_gate lower_bound lb = -5.0 %x, %a, %dt : (tensor<?x4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
  %gs = tensor.extract_slice %g[0, 0, 0] [%n, 4, 16] [1, 1, 1] : tensor<?x4x16xf32> to tensor<?x4x16xf32>
  %qs = tensor.extract_slice %q[0, 0, 0] [%n, 4, 16] [1, 1, 1] : tensor<?x4x16xf32> to tensor<?x4x16xf32>
  %ks = tensor.extract_slice %k[0, 0, 0] [%n, 4, 16] [1, 1, 1] : tensor<?x4x16xf32> to tensor<?x4x16xf32>
  %vs = tensor.extract_slice %v[0, 0, 0] [%n, 4, 16] [1, 1, 1] : tensor<?x4x16xf32> to tensor<?x4x16xf32>
  %bs = tensor.extract_slice %beta[0, 0] [%n, 4] [1, 1] : tensor<?x4xf32> to tensor<?x4xf32>
  %o, %s1 = k3.kda %qs, %ks, %vs, %gs, %bs, state(%s0) scale = 0.25
      : (tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<4x16x16xf32>)
      -> (tensor<?x4x16xf32>, tensor<4x16x16xf32>)
  return %s1 : tensor<4x16x16xf32>
}
