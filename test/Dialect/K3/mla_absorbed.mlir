// RUN: k3-opt %s | FileCheck %s
// RUN: k3-opt %s | k3-opt | FileCheck %s
// RUN: k3-opt %s --mlir-print-op-generic | k3-opt | FileCheck %s

// The absorbed form of a decode step: k3.mla's operands plus the key splits;
// the scale stays 1/sqrt(P+R) (here 1/sqrt(48)).
// CHECK-LABEL: func.func @decode
//       CHECK:   k3.mla_absorbed %{{.+}}, %{{.+}}, %{{.+}}, kv_b(%{{.+}}), cache(%{{.+}}) gate(%{{.+}}) scale = 0.144337565 causal splits = 4
//  CHECK-SAME:     -> (tensor<1x2x32xbf16>, tensor<?x48xbf16>)
func.func @decode(%q: tensor<1x2x48xbf16>, %c: tensor<1x32xbf16>, %kr: tensor<1x16xbf16>, %kvb: tensor<128x32xbf16>,
                  %c0: tensor<?x48xbf16>, %g: tensor<1x2x32xbf16>) -> (tensor<1x2x32xbf16>, tensor<?x48xbf16>) {
  %o, %c1 = k3.mla_absorbed %q, %c, %kr, kv_b(%kvb), cache(%c0) gate(%g) scale = 0.144337565 causal splits = 4
      : (tensor<1x2x48xbf16>, tensor<1x32xbf16>, tensor<1x16xbf16>, tensor<128x32xbf16>, tensor<?x48xbf16>, tensor<1x2x32xbf16>)
      -> (tensor<1x2x32xbf16>, tensor<?x48xbf16>)
  return %o, %c1 : tensor<1x2x32xbf16>, tensor<?x48xbf16>
}
