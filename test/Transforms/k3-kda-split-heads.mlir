// RUN: k3-opt %s --split-input-file --k3-kda-split-heads | FileCheck %s

// Two key heads with two value heads each (GVA), a dynamic token count,
// every result used: one scf.forall over the key heads sharing the output,
// the state (the initial state itself, updated in place) and the boundary
// states. Each head's op reads key head %h and value heads [2h, 2h + 2),
// and its initial state from the shared state it writes back.
// CHECK-LABEL: func.func @gva
//  CHECK-SAME:   (%[[Q:.+]]: tensor<?x2x4xf32>, %[[K:.+]]: tensor<?x2x4xf32>, %[[V:.+]]: tensor<?x4x8xf32>, %[[G:.+]]: tensor<?x4x4xf32>, %[[B:.+]]: tensor<?x4xf32>, %[[S0:.+]]: tensor<4x4x8xf32>)
//       CHECK:   %[[T:.+]] = tensor.dim %[[Q]], %c0
//       CHECK:   %[[OUT:.+]] = tensor.empty(%[[T]]) : tensor<?x4x8xf32>
//       CHECK:   %[[N:.+]] = arith.divui
//       CHECK:   %[[STATES:.+]] = tensor.empty(%[[N]]) : tensor<?x4x4x8xf32>
//       CHECK:   %[[R:.+]]:3 = scf.forall (%[[H:.+]]) in (2) shared_outs(%[[O:[a-z0-9_]+]] = %[[OUT]], %[[S:[a-z0-9_]+]] = %[[S0]], %[[BS:[a-z0-9_]+]] = %[[STATES]])
//       CHECK:     %[[HV:.+]] = arith.muli %[[H]], %c2
//       CHECK:     %[[QH:.+]] = tensor.extract_slice %[[Q]][0, %[[H]], 0] [%{{.+}}, 1, 4] [1, 1, 1] : tensor<?x2x4xf32> to tensor<?x1x4xf32>
//       CHECK:     %[[KH:.+]] = tensor.extract_slice %[[K]][0, %[[H]], 0] [%{{.+}}, 1, 4]
//       CHECK:     %[[VH:.+]] = tensor.extract_slice %[[V]][0, %[[HV]], 0] [%{{.+}}, 2, 8] [1, 1, 1] : tensor<?x4x8xf32> to tensor<?x2x8xf32>
//       CHECK:     %[[GH:.+]] = tensor.extract_slice %[[G]][0, %[[HV]], 0] [%{{.+}}, 2, 4]
//       CHECK:     %[[BH:.+]] = tensor.extract_slice %[[B]][0, %[[HV]]] [%{{.+}}, 2]
//       CHECK:     %[[SH:.+]] = tensor.extract_slice %[[S]][%[[HV]], 0, 0] [2, 4, 8] [1, 1, 1] : tensor<4x4x8xf32> to tensor<2x4x8xf32>
//       CHECK:     %[[IO:[a-z0-9_]+]], %[[IS:[a-z0-9_]+]], %[[IB:[a-z0-9_]+]] = k3.kda_chunked %[[QH]], %[[KH]], %[[VH]], %[[GH]], %[[BH]], state(%[[SH]]) scale = 5.000000e-01 chunk = 8 sub_chunk = 4 factored
//  CHECK-SAME:       -> (tensor<?x2x8xf32>, tensor<2x4x8xf32>, tensor<?x2x4x8xf32>)
//       CHECK:     scf.forall.in_parallel
//       CHECK:       tensor.parallel_insert_slice %[[IO]] into %[[O]][0, %[[HV]], 0] [%{{.+}}, 2, 8]
//       CHECK:       tensor.parallel_insert_slice %[[IS]] into %[[S]][%[[HV]], 0, 0] [2, 4, 8]
//       CHECK:       tensor.parallel_insert_slice %[[IB]] into %[[BS]][0, %[[HV]], 0, 0] [%{{.+}}, 2, 4, 8]
//   CHECK-NOT:   k3.kda_chunked
//       CHECK:   return %[[R]]#0, %[[R]]#1, %[[R]]#2
func.func @gva(%q: tensor<?x2x4xf32>, %k: tensor<?x2x4xf32>, %v: tensor<?x4x8xf32>, %g: tensor<?x4x4xf32>,
               %beta: tensor<?x4xf32>, %s0: tensor<4x4x8xf32>)
    -> (tensor<?x4x8xf32>, tensor<4x4x8xf32>, tensor<?x4x4x8xf32>) {
  %o, %s, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.5 chunk = 8 sub_chunk = 4 factored
      : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x4x8xf32>, tensor<?x4x4xf32>, tensor<?x4xf32>, tensor<4x4x8xf32>)
      -> (tensor<?x4x8xf32>, tensor<4x4x8xf32>, tensor<?x4x4x8xf32>)
  return %o, %s, %b : tensor<?x4x8xf32>, tensor<4x4x8xf32>, tensor<?x4x4x8xf32>
}

// -----

// Static tokens, bf16 output, boundary states unused: no shared output for
// them (the inner op's are unused too, so the lowering does not build them).
// CHECK-LABEL: func.func @unused_states
//       CHECK:   %[[OUT:.+]] = tensor.empty() : tensor<20x3x8xbf16>
//       CHECK:   %[[R:.+]]:2 = scf.forall (%{{.+}}) in (3) shared_outs(%{{.+}} = %[[OUT]], %{{.+}} = %{{.+}}) -> (tensor<20x3x8xbf16>, tensor<3x4x8xf32>)
//       CHECK:     k3.kda_chunked {{.+}} safe
//  CHECK-SAME:       -> (tensor<20x1x8xbf16>, tensor<1x4x8xf32>, tensor<2x1x4x8xf32>)
//       CHECK:     scf.forall.in_parallel
//       CHECK:       parallel_insert_slice
//       CHECK:       parallel_insert_slice
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

// One key head: nothing to split.
// CHECK-LABEL: func.func @one_head
//   CHECK-NOT:   scf.forall
//       CHECK:   k3.kda_chunked
func.func @one_head(%q: tensor<?x1x4xf32>, %k: tensor<?x1x4xf32>, %v: tensor<?x2x4xf32>, %g: tensor<?x2x4xf32>,
                    %beta: tensor<?x2xf32>, %s0: tensor<2x4x4xf32>) -> (tensor<?x2x4xf32>, tensor<2x4x4xf32>) {
  %o, %s, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.5 chunk = 8 sub_chunk = 4 factored
      : (tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<2x4x4xf32>)
      -> (tensor<?x2x4xf32>, tensor<2x4x4xf32>, tensor<?x2x4x4xf32>)
  return %o, %s : tensor<?x2x4xf32>, tensor<2x4x4xf32>
}
