// RUN: k3-opt %s | FileCheck %s
// RUN: k3-opt %s | k3-opt | FileCheck %s
// RUN: k3-opt %s --mlir-print-op-generic | k3-opt | FileCheck %s

// decode_batch's MLA: B requests' one token each over a pool of bf16 pages
// through a block table, their cached lengths, the output gate; the new
// rows come back in the pages' type.
// CHECK-LABEL: func.func @decode_batch
//       CHECK:   k3.mla_paged %{{.+}}, %{{.+}}, %{{.+}}, kv_b(%{{.+}}), pages(%{{.+}}) table(%{{.+}}) lengths(%{{.+}}) gate(%{{.+}}) scale = 0.144337565
//  CHECK-SAME:     -> (tensor<?x2x32xf32>, tensor<?x48xbf16>)
func.func @decode_batch(%q: tensor<?x2x48xf32>, %c: tensor<?x32xf32>, %kr: tensor<?x16xf32>,
                        %kvb: tensor<128x32xbf16>, %pages: tensor<?x?x48xbf16>,
                        %table: tensor<?x?xi32>, %len: tensor<?xi32>, %g: tensor<?x2x32xf32>)
    -> (tensor<?x2x32xf32>, tensor<?x48xbf16>) {
  %o, %rows = k3.mla_paged %q, %c, %kr, kv_b(%kvb), pages(%pages) table(%table) lengths(%len)
      gate(%g) scale = 0.144337565
      : (tensor<?x2x48xf32>, tensor<?x32xf32>, tensor<?x16xf32>, tensor<128x32xbf16>,
         tensor<?x?x48xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?x2x32xf32>)
      -> (tensor<?x2x32xf32>, tensor<?x48xbf16>)
  return %o, %rows : tensor<?x2x32xf32>, tensor<?x48xbf16>
}

// Without a gate, static B.
// CHECK-LABEL: func.func @no_gate
//       CHECK:   k3.mla_paged {{.+}} lengths(%{{.+}}) scale = 2.500000e-01 :
func.func @no_gate(%q: tensor<4x2x48xf32>, %c: tensor<4x32xf32>, %kr: tensor<4x16xf32>,
                   %kvb: tensor<128x32xf32>, %pages: tensor<8x16x48xf32>,
                   %table: tensor<4x3xi32>, %len: tensor<4xi32>) {
  %o, %rows = k3.mla_paged %q, %c, %kr, kv_b(%kvb), pages(%pages) table(%table) lengths(%len)
      scale = 0.25
      : (tensor<4x2x48xf32>, tensor<4x32xf32>, tensor<4x16xf32>, tensor<128x32xf32>,
         tensor<8x16x48xf32>, tensor<4x3xi32>, tensor<4xi32>) -> (tensor<4x2x32xf32>, tensor<4x48xf32>)
  return
}
