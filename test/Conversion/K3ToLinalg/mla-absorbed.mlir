// RUN: k3-opt %s --convert-k3-to-linalg | FileCheck %s

// Absorbed MLA, 2 splits: the query absorbed into the latent space (a
// contraction over the 32 nope channels into [T, H, 32]), one dot of L+R = 48
// values per cached row, then per split max, exponentials, sum, the weighted
// latent rows and the log-sum-exp; the merge; W_UV after the attention
// ([T, H, 32] × [H, 32, 32] → [T, H, 32]); the sigmoid gate after that; the
// cache stays [S+T, 48] rows (no per-head keys or values).
// CHECK-LABEL: func.func @absorbed
//       CHECK:   linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction", "parallel"]
//  CHECK-SAME:     outs(%{{.+}} : tensor<?x2x32xf32>)
//       CHECK:   linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
//  CHECK-SAME:     ins(%{{.+}}, %{{.+}} : tensor<?x2x48xf32>, tensor<?x48xf32>)
//       CHECK:   arith.maximumf
//       CHECK:   math.exp
//       CHECK:   math.log
//       CHECK:   arith.maximumf
//       CHECK:   math.exp
//       CHECK:   math.log
//       CHECK:   linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
//  CHECK-SAME:     ins(%{{.+}}, %{{.+}} : tensor<?x2x32xf32>, tensor<2x32x32xf32>) outs(%{{.+}} : tensor<?x2x32xf32>)
//       CHECK:   math.exp
//       CHECK:   arith.divf
//       CHECK:   return %{{.+}}, %{{.+}} : tensor<?x2x32xf32>, tensor<?x48xf32>
func.func @absorbed(%q: tensor<?x2x48xf32>, %c: tensor<?x32xf32>, %kr: tensor<?x16xf32>, %kvb: tensor<128x32xf32>,
                    %c0: tensor<?x48xf32>, %g: tensor<?x2x32xf32>) -> (tensor<?x2x32xf32>, tensor<?x48xf32>) {
  %o, %c1 = k3.mla_absorbed %q, %c, %kr, kv_b(%kvb), cache(%c0) gate(%g) scale = 0.144337565 causal splits = 2
      : (tensor<?x2x48xf32>, tensor<?x32xf32>, tensor<?x16xf32>, tensor<128x32xf32>, tensor<?x48xf32>, tensor<?x2x32xf32>)
      -> (tensor<?x2x32xf32>, tensor<?x48xf32>)
  return %o, %c1 : tensor<?x2x32xf32>, tensor<?x48xf32>
}
