// RUN: k3-opt %s --split-input-file --convert-k3-to-linalg | FileCheck %s

// Factored form, chunks of 8 in sub-chunks of 4, GVA: one scf.for over the
// chunks carrying the state and the output; inside, the cumulative decay
// (a loop over the 8 rows), the row factors with their exponentials, the
// right factors selected below their limit, the two intra-chunk
// contractions and the triangle selected after them, the forward
// substitution over 7 columns, and four sequential contractions marked for
// register tiles (the output tile 4 rows × 4 columns, the reduction of the
// state update over the chunk's rows). Unused boundary states are not built.
// The right factors Kr [numSub, HV, K, C] loop in their own order
// (sub-chunk, head, channel, s): the CPU's threads then write whole rows.
// CHECK-DAG: #[[$KEYS:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d3, d1 floordiv 2, d2)>
// CHECK-DAG: #[[$GREF:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[$GS:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d3, d1, d2)>
// CHECK-DAG: #[[$ID4:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @factored
//       CHECK:   %[[LOOP:.+]]:2 = scf.for %{{.+}} = %c0 to %{{.+}} step %c1 iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<2x4x4xf32>, tensor<?x2x4xf32>)
//       CHECK:     scf.for %{{.+}} = %c0 to %c8 step %c1 iter_args({{.+}}) -> (tensor<2x4xf32>, tensor<8x2x4xf32>)
//       CHECK:     math.exp
//       CHECK:     linalg.generic {indexing_maps = [#[[$KEYS]], #[[$GREF]], #[[$GS]], #[[$ID4]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
//   CHECK-NOT:     linalg.generic
//       CHECK:       linalg.index 3
//       CHECK:       arith.select
//       CHECK:     } -> tensor<2x2x4x8xf32>
//       CHECK:     linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]
//  CHECK-SAME:       k3.tile = array<i64: 1, 1, 4, 1, 8>
//       CHECK:     linalg.generic {{.+}}k3.tile = array<i64: 1, 1, 4, 1, 8>
//       CHECK:     arith.select
//       CHECK:     arith.select
//       CHECK:     scf.for %{{.+}} = %c0 to %c7 step %c1
//       CHECK:     linalg.generic {{.+}} iterator_types = ["parallel", "reduction", "parallel", "parallel"]
//  CHECK-SAME:       k3.tile = array<i64: 1, 1, 4, 4>
//       CHECK:     k3.tile = array<i64: 1, 1, 4, 4>
//       CHECK:     k3.tile = array<i64: 1, 1, 4, 4>
//       CHECK:     linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction", "parallel"]
//  CHECK-SAME:       k3.tile = array<i64: 1, 4, 1, 4>
//       CHECK:   return %[[LOOP]]#1, %[[LOOP]]#0
func.func @factored(%q: tensor<?x1x4xf32>, %k: tensor<?x1x4xf32>, %v: tensor<?x2x4xf32>, %g: tensor<?x2x4xf32>,
                    %beta: tensor<?x2xf32>, %s0: tensor<2x4x4xf32>) -> (tensor<?x2x4xf32>, tensor<2x4x4xf32>) {
  %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.5 chunk = 8 sub_chunk = 4 factored
      : (tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<2x4x4xf32>)
      -> (tensor<?x2x4xf32>, tensor<2x4x4xf32>, tensor<?x2x4x4xf32>)
  return %o, %s1 : tensor<?x2x4xf32>, tensor<2x4x4xf32>
}

// -----

// Safe form: L and Aqk row by row inside the chunk (a loop over its 8 rows
// carrying the transposed decayed keys [HV, K, C] and both matrices): the
// keys decay by e^{g_r} (computed once, before the loop) and column r takes
// k_r, a select; the sums over the channels (register tiles); row r masked
// by selects and inserted. No exponential inside the row loop.
// Used boundary states are a third loop result, one slot per chunk.
// CHECK-LABEL: func.func @safe
//       CHECK:   %[[LOOP:.+]]:3 = scf.for {{.+}} -> (tensor<2x4x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4x4xf32>)
//       CHECK:     scf.for {{.+}} -> (tensor<2x4x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>)
//   CHECK-NOT:       math.exp
//       CHECK:       linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel"]{{.+}}k3.tile = array<i64: 1, 1, 8>
//       CHECK:         arith.cmpi eq
//       CHECK:         arith.select
//       CHECK:       linalg.generic {{.+}} iterator_types = ["parallel", "reduction", "parallel"]{{.+}}k3.tile = array<i64: 1, 1, 8>
//   CHECK-NOT:       math.exp
//       CHECK:         arith.select
//       CHECK:         arith.select
//       CHECK:       tensor.insert_slice {{.+}} : tensor<2x8xf32> into tensor<2x8x8xf32>
//       CHECK:       tensor.insert_slice {{.+}} : tensor<2x8xf32> into tensor<2x8x8xf32>
//       CHECK:     tensor.insert_slice {{.+}} : tensor<2x4x4xf32> into tensor<?x2x4x4xf32>
//       CHECK:   return %[[LOOP]]#2
func.func @safe(%q: tensor<?x1x4xf32>, %k: tensor<?x1x4xf32>, %v: tensor<?x2x4xf32>, %g: tensor<?x2x4xf32>,
                %beta: tensor<?x2xf32>, %s0: tensor<2x4x4xf32>) -> tensor<?x2x4x4xf32> {
  %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.5 chunk = 8 sub_chunk = 4 safe
      : (tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<2x4x4xf32>)
      -> (tensor<?x2x4xf32>, tensor<2x4x4xf32>, tensor<?x2x4x4xf32>)
  return %b : tensor<?x2x4x4xf32>
}

// -----

// Static shapes: the results keep the op's static types (casts).
// CHECK-LABEL: func.func @static
//       CHECK:   tensor.cast %{{.+}} : tensor<?x2x4x4xf32> to tensor<3x2x4x4xf32>
func.func @static(%q: tensor<20x1x4xf32>, %k: tensor<20x1x4xf32>, %v: tensor<20x2x4xf32>, %g: tensor<20x2x4xf32>,
                  %beta: tensor<20x2xf32>, %s0: tensor<2x4x4xf32>) -> (tensor<20x2x4xf32>, tensor<3x2x4x4xf32>) {
  %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.5 chunk = 8 sub_chunk = 4 factored
      : (tensor<20x1x4xf32>, tensor<20x1x4xf32>, tensor<20x2x4xf32>, tensor<20x2x4xf32>, tensor<20x2xf32>, tensor<2x4x4xf32>)
      -> (tensor<20x2x4xf32>, tensor<2x4x4xf32>, tensor<3x2x4x4xf32>)
  return %o, %b : tensor<20x2x4xf32>, tensor<3x2x4x4xf32>
}
