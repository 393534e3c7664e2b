// RUN: k3-opt %s --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file | k3-opt --split-input-file | FileCheck %s
// RUN: k3-opt %s --split-input-file --mlir-print-op-generic | k3-opt --split-input-file | FileCheck %s

// Prefill over a cache, with the K3 output gate; the scale is stored as given
// (1/sqrt(P+R) = 1/sqrt(48) here), never recomputed from the cache width.
// CHECK-LABEL: func.func @mla
//  CHECK-SAME:   %[[C0:[^:]+]]: tensor<?x48xf32>, %[[G:[^:]+]]: tensor<?x2x32xf32>
//       CHECK:   %[[O:.+]], %[[C1:.+]] = k3.mla %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, kv_b(%{{[a-z0-9_]+}}), cache(%[[C0]]) gate(%[[G]]) scale = 0.144337565 causal
//  CHECK-SAME:     -> (tensor<?x2x32xf32>, tensor<?x48xf32>)
//       CHECK:   return %[[O]], %[[C1]]
func.func @mla(%q: tensor<?x2x48xf32>, %c: tensor<?x32xf32>, %kr: tensor<?x16xf32>, %kvb: tensor<128x32xf32>,
               %c0: tensor<?x48xf32>, %g: tensor<?x2x32xf32>) -> (tensor<?x2x32xf32>, tensor<?x48xf32>) {
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) gate(%g) scale = 0.144337565 causal
      : (tensor<?x2x48xf32>, tensor<?x32xf32>, tensor<?x16xf32>, tensor<128x32xf32>, tensor<?x48xf32>, tensor<?x2x32xf32>)
      -> (tensor<?x2x32xf32>, tensor<?x48xf32>)
  return %o, %c1 : tensor<?x2x32xf32>, tensor<?x48xf32>
}

// -----

// One decode token over 7 cached tokens, bf16 cache, no gate, not causal
// (a single query sees everything anyway): the new cache has 8 rows.
// CHECK-LABEL: func.func @decode
//       CHECK:   k3.mla %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, kv_b(%{{[a-z0-9_]+}}), cache(%{{[a-z0-9_]+}}) scale = 1.250000e-01 :
//   CHECK-NOT:   gate(
//  CHECK-SAME:     -> (tensor<1x2x32xf32>, tensor<8x48xbf16>)
func.func @decode(%q: tensor<1x2x48xf32>, %c: tensor<1x32xf32>, %kr: tensor<1x16xf32>, %kvb: tensor<128x32xf32>,
                  %c0: tensor<7x48xbf16>) -> (tensor<1x2x32xf32>, tensor<8x48xbf16>) {
  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) scale = 0.125
      : (tensor<1x2x48xf32>, tensor<1x32xf32>, tensor<1x16xf32>, tensor<128x32xf32>, tensor<7x48xbf16>)
      -> (tensor<1x2x32xf32>, tensor<8x48xbf16>)
  return %o, %c1 : tensor<1x2x32xf32>, tensor<8x48xbf16>
}
