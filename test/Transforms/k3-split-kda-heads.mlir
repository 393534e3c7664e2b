// RUN: k3-opt %s --split-input-file --k3-split-kda-heads | FileCheck %s

// Two key heads with three value heads each (GVA), a dynamic token count,
// every result used: one scf.forall over the six value heads sharing the
// output, the state (the initial state itself, updated in place) and the
// ceil(T / 8) boundary states. Value head %h reads key head %h / 3, and its
// initial state from the shared state it writes back.
// CHECK-LABEL: func.func @gva
//  CHECK-SAME:   (%[[Q:.+]]: tensor<?x2x4xf32>, %[[K:.+]]: tensor<?x2x4xf32>, %[[V:.+]]: tensor<?x6x8xf32>, %[[G:.+]]: tensor<?x6x4xf32>, %[[B:.+]]: tensor<?x6xf32>, %[[S0:.+]]: tensor<6x4x8xf32>)
//       CHECK:   %[[T:.+]] = tensor.dim %[[Q]], %c0
//       CHECK:   %[[OUT:.+]] = tensor.empty(%[[T]]) : tensor<?x6x8xf32>
//       CHECK:   %[[END:.+]] = arith.addi %[[T]], %c7
//       CHECK:   %[[N:.+]] = arith.divui %[[END]], %c8
//       CHECK:   %[[STATES:.+]] = tensor.empty(%[[N]]) : tensor<?x6x4x8xf32>
//       CHECK:   %[[R:.+]]:3 = scf.forall (%[[H:.+]]) in (6) shared_outs(%[[O:[a-z0-9_]+]] = %[[OUT]], %[[S:[a-z0-9_]+]] = %[[S0]], %[[BS:[a-z0-9_]+]] = %[[STATES]])
//       CHECK:     %[[KH:.+]] = arith.divui %[[H]], %c3
//       CHECK:     %[[QH:.+]] = tensor.extract_slice %[[Q]][0, %[[KH]], 0] [%{{.+}}, 1, 4] [1, 1, 1] : tensor<?x2x4xf32> to tensor<?x1x4xf32>
//       CHECK:     %[[KS:.+]] = tensor.extract_slice %[[K]][0, %[[KH]], 0] [%{{.+}}, 1, 4]
//       CHECK:     %[[VH:.+]] = tensor.extract_slice %[[V]][0, %[[H]], 0] [%{{.+}}, 1, 8] [1, 1, 1] : tensor<?x6x8xf32> to tensor<?x1x8xf32>
//       CHECK:     %[[GH:.+]] = tensor.extract_slice %[[G]][0, %[[H]], 0] [%{{.+}}, 1, 4]
//       CHECK:     %[[BH:.+]] = tensor.extract_slice %[[B]][0, %[[H]]] [%{{.+}}, 1]
//       CHECK:     %[[SH:.+]] = tensor.extract_slice %[[S]][%[[H]], 0, 0] [1, 4, 8] [1, 1, 1] : tensor<6x4x8xf32> to tensor<1x4x8xf32>
//       CHECK:     %[[IO:[a-z0-9_]+]], %[[IS:[a-z0-9_]+]], %[[IB:[a-z0-9_]+]] = k3.kda_chunked %[[QH]], %[[KS]], %[[VH]], %[[GH]], %[[BH]], state(%[[SH]]) scale = 5.000000e-01 chunk = 8 sub_chunk = 4 factored
//  CHECK-SAME:       -> (tensor<?x1x8xf32>, tensor<1x4x8xf32>, tensor<?x1x4x8xf32>)
//       CHECK:     scf.forall.in_parallel
//       CHECK:       tensor.parallel_insert_slice %[[IO]] into %[[O]][0, %[[H]], 0] [%{{.+}}, 1, 8]
//       CHECK:       tensor.parallel_insert_slice %[[IS]] into %[[S]][%[[H]], 0, 0] [1, 4, 8]
//       CHECK:       tensor.parallel_insert_slice %[[IB]] into %[[BS]][0, %[[H]], 0, 0] [%{{.+}}, 1, 4, 8]
//   CHECK-NOT:   k3.kda_chunked
//       CHECK:   return %[[R]]#0, %[[R]]#1, %[[R]]#2
func.func @gva(%q: tensor<?x2x4xf32>, %k: tensor<?x2x4xf32>, %v: tensor<?x6x8xf32>, %g: tensor<?x6x4xf32>,
               %beta: tensor<?x6xf32>, %s0: tensor<6x4x8xf32>)
    -> (tensor<?x6x8xf32>, tensor<6x4x8xf32>, tensor<?x6x4x8xf32>) {
  %o, %s, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.5 chunk = 8 sub_chunk = 4 factored
      : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x6x8xf32>, tensor<?x6x4xf32>, tensor<?x6xf32>, tensor<6x4x8xf32>)
      -> (tensor<?x6x8xf32>, tensor<6x4x8xf32>, tensor<?x6x4x8xf32>)
  return %o, %s, %b : tensor<?x6x8xf32>, tensor<6x4x8xf32>, tensor<?x6x4x8xf32>
}

// -----

// Static tokens, bf16 output, boundary states unused: no shared output for
// them (the inner op's are unused too, so the lowering does not build
// them); the state is still read from its shared output.
// CHECK-LABEL: func.func @unused_states
//  CHECK-SAME:   %[[S0:[a-z0-9_]+]]: tensor<3x4x8xf32>)
//       CHECK:   %[[OUT:.+]] = tensor.empty() : tensor<20x3x8xbf16>
//       CHECK:   %[[R:.+]]:2 = scf.forall (%[[H:.+]]) in (3) shared_outs(%{{.+}} = %[[OUT]], %[[S:[a-z0-9_]+]] = %[[S0]]) -> (tensor<20x3x8xbf16>, tensor<3x4x8xf32>)
//       CHECK:     tensor.extract_slice %[[S]][%[[H]], 0, 0] [1, 4, 8]
//       CHECK:     k3.kda_chunked {{.+}} safe
//  CHECK-SAME:       -> (tensor<20x1x8xbf16>, tensor<1x4x8xf32>, tensor<2x1x4x8xf32>)
//       CHECK:     scf.forall.in_parallel
//  CHECK-NEXT:       parallel_insert_slice
//  CHECK-NEXT:       parallel_insert_slice
//  CHECK-NEXT:     }
//       CHECK:   return %[[R]]#0, %[[R]]#1
func.func @unused_states(%q: tensor<20x3x4xbf16>, %k: tensor<20x3x4xbf16>, %v: tensor<20x3x8xbf16>, %g: tensor<20x3x4xf32>,
                         %beta: tensor<20x3xbf16>, %s0: tensor<3x4x8xf32>) -> (tensor<20x3x8xbf16>, tensor<3x4x8xf32>) {
  %o, %s, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.5 chunk = 16 sub_chunk = 16 safe
      : (tensor<20x3x4xbf16>, tensor<20x3x4xbf16>, tensor<20x3x8xbf16>, tensor<20x3x4xf32>, tensor<20x3xbf16>, tensor<3x4x8xf32>)
      -> (tensor<20x3x8xbf16>, tensor<3x4x8xf32>, tensor<2x3x4x8xf32>)
  return %o, %s : tensor<20x3x8xbf16>, tensor<3x4x8xf32>
}

// -----

// Only the state and the boundary states used: the state is the first
// shared output; the output has none.
// CHECK-LABEL: func.func @no_out
//  CHECK-SAME:   %[[S0:[a-z0-9_]+]]: tensor<2x4x4xf32>)
//       CHECK:   scf.forall (%[[H:.+]]) in (2) shared_outs(%[[S:[a-z0-9_]+]] = %[[S0]], %[[BS:[a-z0-9_]+]] = %{{.+}}) -> (tensor<2x4x4xf32>, tensor<?x2x4x4xf32>)
//       CHECK:     tensor.extract_slice %[[S]][%[[H]], 0, 0] [1, 4, 4]
//       CHECK:     scf.forall.in_parallel
//  CHECK-NEXT:       parallel_insert_slice %{{.+}} into %[[S]]
//  CHECK-NEXT:       parallel_insert_slice %{{.+}} into %[[BS]]
//  CHECK-NEXT:     }
func.func @no_out(%q: tensor<?x2x4xf32>, %k: tensor<?x2x4xf32>, %v: tensor<?x2x4xf32>, %g: tensor<?x2x4xf32>,
                  %beta: tensor<?x2xf32>, %s0: tensor<2x4x4xf32>) -> (tensor<2x4x4xf32>, tensor<?x2x4x4xf32>) {
  %o, %s, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.5 chunk = 8 sub_chunk = 4 factored
      : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<2x4x4xf32>)
      -> (tensor<?x2x4xf32>, tensor<2x4x4xf32>, tensor<?x2x4x4xf32>)
  return %s, %b : tensor<2x4x4xf32>, tensor<?x2x4x4xf32>
}

// -----

// One key head read by two value heads (group 2), the final state
// unused: no shared state; each head reads its initial slice from the
// initial state itself, and both read key head 0.
// CHECK-LABEL: func.func @mqa
//  CHECK-SAME:   %[[S0:[a-z0-9_]+]]: tensor<2x4x8xf32>)
//       CHECK:   scf.forall (%[[H:.+]]) in (2) shared_outs(%{{[a-z0-9_]+}} = %{{.+}}) -> (tensor<?x2x8xf32>)
//       CHECK:     %[[KH:.+]] = arith.divui %[[H]], %c2
//       CHECK:     tensor.extract_slice %{{.+}}[0, %[[KH]], 0] [%{{.+}}, 1, 4]
//       CHECK:     tensor.extract_slice %[[S0]][%[[H]], 0, 0] [1, 4, 8]
//       CHECK:     scf.forall.in_parallel
//  CHECK-NEXT:       parallel_insert_slice
//  CHECK-NEXT:     }
func.func @mqa(%q: tensor<?x1x4xf32>, %k: tensor<?x1x4xf32>, %v: tensor<?x2x8xf32>, %g: tensor<?x2x4xf32>,
               %beta: tensor<?x2xf32>, %s0: tensor<2x4x8xf32>) -> tensor<?x2x8xf32> {
  %o, %s, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.5 chunk = 8 sub_chunk = 4 factored
      : (tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x2x8xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<2x4x8xf32>)
      -> (tensor<?x2x8xf32>, tensor<2x4x8xf32>, tensor<?x2x4x8xf32>)
  return %o : tensor<?x2x8xf32>
}

// -----

// Not split (each lowers as before): one value head; an output with a
// dynamic head dimension; a dynamic initial state; a static initial state
// whose final state is typed dynamic.
// CHECK-LABEL: func.func @kept
//   CHECK-NOT:   scf.forall
//       CHECK:   k3.kda_chunked
//   CHECK-NOT:   scf.forall
//       CHECK:   k3.kda_chunked
//   CHECK-NOT:   scf.forall
//       CHECK:   k3.kda_chunked
//   CHECK-NOT:   scf.forall
//       CHECK:   k3.kda_chunked
//   CHECK-NOT:   scf.forall
//       CHECK:   return
func.func @kept(%q: tensor<?x1x4xf32>, %k: tensor<?x1x4xf32>, %v: tensor<?x1x4xf32>, %g: tensor<?x1x4xf32>,
                %beta: tensor<?x1xf32>, %s0: tensor<1x4x4xf32>,
                %v2: tensor<?x2x4xf32>, %g2: tensor<?x2x4xf32>, %beta2: tensor<?x2xf32>, %s2: tensor<2x4x4xf32>,
                %sd: tensor<?x4x4xf32>)
    -> (tensor<?x1x4xf32>, tensor<?x?x4xf32>, tensor<2x4x4xf32>, tensor<?x4x4xf32>) {
  %o, %s, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.5 chunk = 8 sub_chunk = 4 factored
      : (tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x1xf32>, tensor<1x4x4xf32>)
      -> (tensor<?x1x4xf32>, tensor<1x4x4xf32>, tensor<?x1x4x4xf32>)
  %o2, %s3, %b2 = k3.kda_chunked %q, %k, %v2, %g2, %beta2, state(%s2) scale = 0.5 chunk = 8 sub_chunk = 4 factored
      : (tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<2x4x4xf32>)
      -> (tensor<?x?x4xf32>, tensor<2x4x4xf32>, tensor<?x2x4x4xf32>)
  %o3, %s4, %b3 = k3.kda_chunked %q, %k, %v2, %g2, %beta2, state(%sd) scale = 0.5 chunk = 8 sub_chunk = 4 factored
      : (tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<?x4x4xf32>)
      -> (tensor<?x2x4xf32>, tensor<2x4x4xf32>, tensor<?x2x4x4xf32>)
  %o4, %s5, %b4 = k3.kda_chunked %q, %k, %v2, %g2, %beta2, state(%s2) scale = 0.5 chunk = 8 sub_chunk = 4 factored
      : (tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<2x4x4xf32>)
      -> (tensor<?x2x4xf32>, tensor<?x4x4xf32>, tensor<?x2x4x4xf32>)
  return %o, %o2, %s4, %s5 : tensor<?x1x4xf32>, tensor<?x?x4xf32>, tensor<2x4x4xf32>, tensor<?x4x4xf32>
}
