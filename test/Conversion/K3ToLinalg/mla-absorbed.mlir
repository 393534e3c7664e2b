// RUN: k3-opt %s --convert-k3-to-linalg | FileCheck %s
// RUN: k3-opt %s --convert-k3-to-linalg=mla-split-keys=8 | FileCheck %s --check-prefix=KEYS
// RUN: k3-opt %s --convert-k3-to-linalg="mla-split-keys=8 mla-decode=fused" | FileCheck %s --check-prefix=FUSED

// Absorbed MLA, 2 splits: the query absorbed into the latent space (a
// contraction over the 32 nope channels into [T, H, 32]), then the T·H
// query rows together: one dot of L+R = 48 values per cached row, then per
// split max, exponentials, sum and the weighted latent rows ([M, 1, 32]);
// the softmax scale on the queries, the causal mask (linalg.index) on the
// scores;
// the merge (the largest max, the weights e^{m - top}, normalised); W_UV
// after the attention ([T, H, 32] × [H, 32, 32] → [T, H, 32]); the sigmoid
// gate after that; the cache stays [S+T, 48] rows (no per-head keys or
// values). A dynamic token count keeps its splits under mla-split-keys.
// CHECK-LABEL: func.func @absorbed
//       CHECK:   linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction", "parallel"]
//  CHECK-SAME:     outs(%{{.+}} : tensor<?x2x32xf32>)
//       CHECK:   tensor.collapse_shape {{.+}} : tensor<?x2x48xf32> into tensor<?x48xf32>
//       CHECK:   iterator_types = ["parallel", "parallel"]} ins(%{{.+}} : tensor<?x48xf32>)
//       CHECK:   arith.mulf %{{.+}}, %[[SCALE:.+]] : f32
//       CHECK:   linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]
//  CHECK-SAME:     ins(%{{.+}}, %{{.+}} : tensor<?x48xf32>, tensor<?x48xf32>)
//       CHECK:   linalg.index
//       CHECK:   arith.maximumf
//       CHECK:   math.exp
//       CHECK:   linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction", "parallel"]
//  CHECK-SAME:     outs(%{{.+}} : tensor<?x1x32xf32>)
//       CHECK:   arith.maximumf
//       CHECK:   math.exp
//       CHECK:   linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction", "parallel"]
//  CHECK-SAME:     outs(%{{.+}} : tensor<?x1x32xf32>)
//       CHECK:   arith.maximumf
//       CHECK:   arith.maximumf
//       CHECK:   math.exp
//       CHECK:   arith.divf
//       CHECK:   linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
//  CHECK-SAME:     ins(%{{.+}}, %{{.+}} : tensor<?x2x32xf32>, tensor<2x32x32xf32>) outs(%{{.+}} : tensor<?x2x32xf32>)
//       CHECK:   math.exp
//       CHECK:   arith.divf
//       CHECK:   return %{{.+}}, %{{.+}} : tensor<?x2x32xf32>, tensor<?x48xf32>
// KEYS-LABEL: func.func @absorbed
//   KEYS-NOT:   tensor<?x8x32xf32>
//       KEYS:   outs(%{{.+}} : tensor<?x1x32xf32>)
//       KEYS:   outs(%{{.+}} : tensor<?x1x32xf32>)
//       KEYS:   return
func.func @absorbed(%q: tensor<?x2x48xf32>, %c: tensor<?x32xf32>, %kr: tensor<?x16xf32>, %kvb: tensor<128x32xf32>,
                    %c0: tensor<?x48xf32>, %g: tensor<?x2x32xf32>) -> (tensor<?x2x32xf32>, tensor<?x48xf32>) {
  %o, %c1 = k3.mla_absorbed %q, %c, %kr, kv_b(%kvb), cache(%c0) gate(%g) scale = 0.144337565 causal splits = 2
      : (tensor<?x2x48xf32>, tensor<?x32xf32>, tensor<?x16xf32>, tensor<128x32xf32>, tensor<?x48xf32>, tensor<?x2x32xf32>)
      -> (tensor<?x2x32xf32>, tensor<?x48xf32>)
  return %o, %c1 : tensor<?x2x32xf32>, tensor<?x48xf32>
}

// One token, mla-split-keys = 8: the keys as ⌊keys / 8⌋ parts of 8 side by
// side (scores [2, P, 8], latent rows [P, 8, 32], the weighted rows one
// contraction with P a batch dimension), then the rest as one part; the
// merge folds each part axis (loops (m, l, part), the part innermost).
// KEYS-LABEL: func.func @decode
//       KEYS:   arith.divui %{{.+}}, %c8
//       KEYS:   tensor.expand_shape {{.+}} output_shape [%{{.+}}, 8, 32] : tensor<?x32xf32> into tensor<?x8x32xf32>
//       KEYS:   tensor.expand_shape {{.+}} output_shape [2, %{{.+}}, 8] : tensor<2x?xf32> into tensor<2x?x8xf32>
//       KEYS:   linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction", "parallel"]
//  KEYS-SAME:     ins(%{{.+}}, %{{.+}} : tensor<2x?x8xf32>, tensor<?x8x32xf32>) outs(%{{.+}} : tensor<2x?x32xf32>)
//       KEYS:   tensor.expand_shape {{.+}} output_shape [1, %{{.+}}, 32] : tensor<?x32xf32> into tensor<1x?x32xf32>
//       KEYS:   iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x?x32xf32>, tensor<2x?xf32>, tensor<2xf32>, tensor<2xf32>)
//       KEYS:   iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x1x32xf32>, tensor<2x1xf32>, tensor<2xf32>, tensor<2xf32>)
// One token sees every key: no causal mask (no linalg.index), and the
// softmax scale multiplies the 2 queries, not the scores.
// With mla-decode=fused, decode's ⌈(S+1)/8⌉ parts (the last one short) are
// one k3.attend_parts over the queries (the softmax scale its q_scale:
// no scaling loop nest) and the rows, in place of the scores and the
// per-part softmax; the merge reads its three results.
// The multi-token op keeps its splits.
// FUSED-LABEL: func.func @absorbed
//   FUSED-NOT:   k3.attend_parts
// FUSED-LABEL: func.func @decode
//       FUSED:   %[[ROWS:.+]] = tensor.insert_slice %{{.+}} into %{{.+}}[%{{.+}}, 0] [1, 48] [1, 1] : tensor<1x48xf32> into tensor<?x48xf32>
//       FUSED:   %[[N:.+]] = tensor.dim %[[ROWS]], %c0
//       FUSED:   %[[Q:.+]] = tensor.collapse_shape %{{.+}} {{\[}}[0, 1], [2]] : tensor<?x2x48xf32> into tensor<?x48xf32>
//   FUSED-NOT:   linalg.generic
//       FUSED:   %[[P:.+]] = arith.ceildivui %[[N]], %c8
//       FUSED:   %[[A:.+]]:3 = k3.attend_parts %[[Q]], %[[ROWS]] outs(%{{.+}}, %{{.+}}, %{{.+}}) part_keys = 8 {q_scale = 0.144337565 : f32}
//  FUSED-SAME:     -> (tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?x32xf32>)
// The parts' merge as one loop nest over (head, column), each element
// folding the parts' maximum, weighted sum and its column in turn (one
// kernel on a GPU, not three reductions).
//       FUSED:   %[[NP:.+]] = tensor.dim %[[A]]#2, %c1
//       FUSED:   linalg.generic {{.+}} iterator_types = ["parallel", "parallel"]} outs(%{{.+}} : tensor<2x32xf32>)
//       FUSED:     %[[H:.+]] = linalg.index 0
//       FUSED:     %[[C:.+]] = linalg.index 1
//       FUSED:     %[[TOP:.+]] = scf.for %[[P1:.+]] = %c0 to %[[NP]] step %c1
//       FUSED:       tensor.extract %[[A]]#0[%[[H]], %[[P1]]]
//       FUSED:       arith.maximumf
//       FUSED:     %[[TOTAL:.+]] = scf.for %[[P2:.+]] = %c0 to %[[NP]] step %c1
//       FUSED:       arith.subf %{{.+}}, %[[TOP]]
//       FUSED:       math.exp
//       FUSED:       tensor.extract %[[A]]#1[%[[H]], %[[P2]]]
//       FUSED:     %[[OUT:.+]] = scf.for %[[P3:.+]] = %c0 to %[[NP]] step %c1
//       FUSED:       arith.divf %{{.+}}, %[[TOTAL]]
//       FUSED:       tensor.extract %[[A]]#2[%[[H]], %[[P3]], %[[C]]]
//       FUSED:     linalg.yield %[[OUT]]
//       FUSED:   return
// CHECK-LABEL: func.func @decode
//   CHECK-NOT:   tensor<2x?x8xf32>
//       CHECK:   %[[S:.+]] = arith.constant 0.144337565 : f32
//   CHECK-NOT:   linalg.index
//       CHECK:   iterator_types = ["parallel", "parallel"]} ins(%{{.+}} : tensor<{{.+}}x48xf32>)
//       CHECK:   arith.mulf %{{.+}}, %[[S]] : f32
//   CHECK-NOT:   linalg.index
//       CHECK:   return
func.func @decode(%q: tensor<1x2x48xf32>, %c: tensor<1x32xf32>, %kr: tensor<1x16xf32>, %kvb: tensor<128x32xf32>,
                  %c0: tensor<?x48xf32>, %g: tensor<1x2x32xf32>) -> (tensor<1x2x32xf32>, tensor<?x48xf32>) {
  %o, %c1 = k3.mla_absorbed %q, %c, %kr, kv_b(%kvb), cache(%c0) gate(%g) scale = 0.144337565 causal splits = 1
      : (tensor<1x2x48xf32>, tensor<1x32xf32>, tensor<1x16xf32>, tensor<128x32xf32>, tensor<?x48xf32>, tensor<1x2x32xf32>)
      -> (tensor<1x2x32xf32>, tensor<?x48xf32>)
  return %o, %c1 : tensor<1x2x32xf32>, tensor<?x48xf32>
}

// The cache as the first dim - 1 rows of an argument with room for the new
// row (the importer's entry points): the row goes into that argument, whose
// buffer bufferization then updates in place; no [S+1] tensor is built.
// CHECK-LABEL: func.func @decode_in_room
//       CHECK:   %[[N:.+]] = tensor.dim %arg4
//       CHECK:   %[[S:.+]] = arith.subi %[[N]], %c1
//   CHECK-NOT:   tensor.empty(%{{.+}}) : tensor<?x48xf32>
//       CHECK:   %[[FULL:.+]] = tensor.insert_slice %{{.+}} into %arg4[%[[S]], 0] [1, 48] [1, 1]
//       CHECK:   return %{{.+}}, %[[FULL]]
func.func @decode_in_room(%q: tensor<1x2x48xf32>, %c: tensor<1x32xf32>, %kr: tensor<1x16xf32>,
                          %kvb: tensor<128x32xf32>, %room: tensor<?x48xf32>, %g: tensor<1x2x32xf32>)
    -> (tensor<1x2x32xf32>, tensor<?x48xf32>) {
  %i0 = arith.constant 0 : index
  %i1 = arith.constant 1 : index
  %n = tensor.dim %room, %i0 : tensor<?x48xf32>
  %s = arith.subi %n, %i1 : index
  %c0 = tensor.extract_slice %room[0, 0] [%s, 48] [1, 1] : tensor<?x48xf32> to tensor<?x48xf32>
  %o, %c1 = k3.mla_absorbed %q, %c, %kr, kv_b(%kvb), cache(%c0) gate(%g) scale = 0.144337565 causal splits = 1
      : (tensor<1x2x48xf32>, tensor<1x32xf32>, tensor<1x16xf32>, tensor<128x32xf32>, tensor<?x48xf32>, tensor<1x2x32xf32>)
      -> (tensor<1x2x32xf32>, tensor<?x48xf32>)
  return %o, %c1 : tensor<1x2x32xf32>, tensor<?x48xf32>
}

// A prefix two rows short of its source is no room for one new row: the
// cache is concatenated into a fresh [S+1] tensor as without room.
// CHECK-LABEL: func.func @decode_short_room
//       CHECK:   %[[E:.+]] = tensor.empty(%{{.+}}) : tensor<?x48xf32>
//       CHECK:   tensor.insert_slice %{{.+}} into %[[E]][0, 0]
//       CHECK:   return
func.func @decode_short_room(%q: tensor<1x2x48xf32>, %c: tensor<1x32xf32>, %kr: tensor<1x16xf32>,
                             %kvb: tensor<128x32xf32>, %room: tensor<?x48xf32>, %g: tensor<1x2x32xf32>)
    -> (tensor<1x2x32xf32>, tensor<?x48xf32>) {
  %i0 = arith.constant 0 : index
  %i2 = arith.constant 2 : index
  %n = tensor.dim %room, %i0 : tensor<?x48xf32>
  %s = arith.subi %n, %i2 : index
  %c0 = tensor.extract_slice %room[0, 0] [%s, 48] [1, 1] : tensor<?x48xf32> to tensor<?x48xf32>
  %o, %c1 = k3.mla_absorbed %q, %c, %kr, kv_b(%kvb), cache(%c0) gate(%g) scale = 0.144337565 causal splits = 1
      : (tensor<1x2x48xf32>, tensor<1x32xf32>, tensor<1x16xf32>, tensor<128x32xf32>, tensor<?x48xf32>, tensor<1x2x32xf32>)
      -> (tensor<1x2x32xf32>, tensor<?x48xf32>)
  return %o, %c1 : tensor<1x2x32xf32>, tensor<?x48xf32>
}
