// RUN: k3-opt %s --split-input-file --k3-mla-absorb | FileCheck %s
// RUN: k3-opt %s --split-input-file --k3-mla-absorb="decode-splits=4 prefill=absorbed" | FileCheck %s --check-prefix=ABS
// RUN: k3-opt %s --split-input-file --k3-mla-absorb="prefill=expanded decode=expanded" | FileCheck %s --check-prefix=EXP
// RUN: not k3-opt %s --split-input-file --k3-mla-absorb="decode-splits=0" 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: k3-mla-absorb: decode-splits 0 must be in [1, 256] and prefill 'cost' one of cost, absorbed, expanded, decode 'absorbed' absorbed or expanded

// Decode is absorbed; the scale (1/sqrt(P+R)), the gate and causality are
// kept, the cache stays [S, L+R] (no per-head keys or values anywhere).
// CHECK-LABEL: func.func @decode
//       CHECK:   %[[O:.+]], %[[C:.+]] = k3.mla_absorbed %{{.+}}, kv_b(%{{.+}}), cache(%{{.+}}) gate(%{{.+}}) scale = 0.144337565 causal splits = 1
//  CHECK-SAME:     -> (tensor<1x2x32xf32>, tensor<?x48xf32>)
//   CHECK-NOT:   k3.mla %
//       CHECK:   return %[[O]], %[[C]]
// ABS-LABEL: func.func @decode
//       ABS:   k3.mla_absorbed {{.+}} splits = 4
// EXP-LABEL: func.func @decode
//       EXP:   k3.mla %
func.func @decode(%q: tensor<1x2x48xf32>, %c: tensor<1x32xf32>, %kr: tensor<1x16xf32>, %kvb: tensor<128x32xf32>,
                  %c0: tensor<?x48xf32>, %g: tensor<1x2x32xf32>) -> (tensor<1x2x32xf32>, tensor<?x48xf32>) {
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) gate(%g) scale = 0.144337565 causal
      : (tensor<1x2x48xf32>, tensor<1x32xf32>, tensor<1x16xf32>, tensor<128x32xf32>, tensor<?x48xf32>, tensor<1x2x32xf32>)
      -> (tensor<1x2x32xf32>, tensor<?x48xf32>)
  return %o, %c1 : tensor<1x2x32xf32>, tensor<?x48xf32>
}

// -----

// Prefill: both forms behind the run-time cost rule on T and S
// (absorbed iff T·L·(P+Vd) + T·(S+T)·(2L+R) < (S+T)·L·(P+Vd) + T·(S+T)·(P+R+Vd),
// here L = 32, P = 32, R = 16, Vd = 32: 2048, 80, 2048 and 80 as constants).
// CHECK-LABEL: func.func @prefill
//       CHECK:   %[[T:.+]] = tensor.dim %{{.+}}, %c0
//       CHECK:   %[[S:.+]] = tensor.dim %{{.+}}, %c0
//       CHECK:   arith.cmpi ult
//       CHECK:   scf.if
//       CHECK:     k3.mla_absorbed {{.+}} scale = 0.144337565 causal splits = 1
//       CHECK:   } else {
//       CHECK:     k3.mla %
// ABS-LABEL: func.func @prefill
//   ABS-NOT:   scf.if
//       ABS:   k3.mla_absorbed {{.+}} splits = 1
// EXP-LABEL: func.func @prefill
//       EXP:   k3.mla %
func.func @prefill(%q: tensor<?x2x48xf32>, %c: tensor<?x32xf32>, %kr: tensor<?x16xf32>, %kvb: tensor<128x32xf32>,
                   %c0: tensor<?x48xf32>, %g: tensor<?x2x32xf32>) -> (tensor<?x2x32xf32>, tensor<?x48xf32>) {
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) gate(%g) scale = 0.144337565 causal
      : (tensor<?x2x48xf32>, tensor<?x32xf32>, tensor<?x16xf32>, tensor<128x32xf32>, tensor<?x48xf32>, tensor<?x2x32xf32>)
      -> (tensor<?x2x32xf32>, tensor<?x48xf32>)
  return %o, %c1 : tensor<?x2x32xf32>, tensor<?x48xf32>
}
