// RUN: k3-opt %s --k3-gpu-batch-kda-step --split-input-file | FileCheck %s

// decode_batch's KDA mixer after convert-k3-to-linalg (kda-decode=kernel):
// each request's step on its rows, the results inserted back. The loop
// becomes one batched step on rows [0, n) of the whole tensors (n the
// trip count; a tensor may have more rows, which stay as they were): the
// output and the state in their shared outputs' rows, in place; the new
// windows fresh, then inserted into the windows' rows.
// CHECK-LABEL: func.func @fold
//   CHECK-NOT:   scf.forall
//       CHECK:   %[[X:.+]] = tensor.extract_slice %arg0[0, 0] [%arg13, 4] [1, 1]
//   CHECK-NOT:   tensor.extract_slice %arg0
//       CHECK:   %[[Q:.+]] = tensor.extract_slice %arg2[0, 0, 0] [%arg13, 3, 4] [1, 1, 1]
//       CHECK:   %[[O:.+]] = tensor.extract_slice %arg12[0, 0, 0] [%arg13, 1, 4] [1, 1, 1]
//       CHECK:   %[[NQ:.+]] = tensor.empty(%{{.+}}) : tensor<?x3x4xf32>
//       CHECK:   %[[S:.+]] = tensor.extract_slice %arg10[0, 0, 0, 0] [%arg13, 1, 4, 4] [1, 1, 1, 1]
//       CHECK:   %[[R:.+]]:5 = k3.kda_step x(%[[X]], %[[X]], %[[X]]) filters(%arg1, %arg1, %arg1) windows(%[[Q]], %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}})
//  CHECK-SAME:     outs(%[[O]], %[[NQ]], %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %[[S]])
//  CHECK-SAME:     -> (tensor<?x1x4xf32>, tensor<?x3x4xf32>, tensor<?x3x4xf32>, tensor<?x3x4xf32>, tensor<?x1x4x4xf32>)
//       CHECK:   %[[O1:.+]] = tensor.insert_slice %[[R]]#0 into %arg12[0, 0, 0] [%arg13, 1, 4]
//       CHECK:   %[[Q1:.+]] = tensor.insert_slice %[[R]]#1 into %arg2[0, 0, 0] [%arg13, 3, 4]
//       CHECK:   %[[S1:.+]] = tensor.insert_slice %[[R]]#4 into %arg10[0, 0, 0, 0] [%arg13, 1, 4, 4]
//       CHECK:   return %[[O1]], %[[Q1]], %{{.+}}, %{{.+}}, %[[S1]]
func.func @fold(%x: tensor<?x4xf32>, %w: tensor<4x4xf32>, %cq: tensor<?x3x4xf32>, %ck: tensor<?x3x4xf32>,
                %cv: tensor<?x3x4xf32>, %f: tensor<?x1x4xf32>, %a: tensor<1xf32>, %dt: tensor<1x4xf32>,
                %beta: tensor<?x1xf32>, %nw: tensor<4xf32>, %s: tensor<?x1x4x4xf32>, %og: tensor<?x1x4xf32>,
                %out: tensor<?x1x4xf32>, %n: index)
    -> (tensor<?x1x4xf32>, tensor<?x3x4xf32>, tensor<?x3x4xf32>, tensor<?x3x4xf32>, tensor<?x1x4x4xf32>) {
  %r:5 = scf.forall (%i) in (%n) shared_outs(%o = %out, %q = %cq, %k = %ck, %v = %cv, %st = %s)
      -> (tensor<?x1x4xf32>, tensor<?x3x4xf32>, tensor<?x3x4xf32>, tensor<?x3x4xf32>, tensor<?x1x4x4xf32>) {
    %xr = tensor.extract_slice %x[%i, 0] [1, 4] [1, 1] : tensor<?x4xf32> to tensor<1x4xf32>
    %q1 = tensor.extract_slice %q[%i, 0, 0] [1, 3, 4] [1, 1, 1] : tensor<?x3x4xf32> to tensor<1x3x4xf32>
    %qw = tensor.collapse_shape %q1 [[0, 1], [2]] : tensor<1x3x4xf32> into tensor<3x4xf32>
    %k1 = tensor.extract_slice %k[%i, 0, 0] [1, 3, 4] [1, 1, 1] : tensor<?x3x4xf32> to tensor<1x3x4xf32>
    %kw = tensor.collapse_shape %k1 [[0, 1], [2]] : tensor<1x3x4xf32> into tensor<3x4xf32>
    %v1 = tensor.extract_slice %v[%i, 0, 0] [1, 3, 4] [1, 1, 1] : tensor<?x3x4xf32> to tensor<1x3x4xf32>
    %vw = tensor.collapse_shape %v1 [[0, 1], [2]] : tensor<1x3x4xf32> into tensor<3x4xf32>
    %fr = tensor.extract_slice %f[%i, 0, 0] [1, 1, 4] [1, 1, 1] : tensor<?x1x4xf32> to tensor<1x1x4xf32>
    %br = tensor.extract_slice %beta[%i, 0] [1, 1] [1, 1] : tensor<?x1xf32> to tensor<1x1xf32>
    %s1 = tensor.extract_slice %st[%i, 0, 0, 0] [1, 1, 4, 4] [1, 1, 1, 1] : tensor<?x1x4x4xf32> to tensor<1x1x4x4xf32>
    %sr = tensor.collapse_shape %s1 [[0, 1], [2], [3]] : tensor<1x1x4x4xf32> into tensor<1x4x4xf32>
    %gr = tensor.extract_slice %og[%i, 0, 0] [1, 1, 4] [1, 1, 1] : tensor<?x1x4xf32> to tensor<1x1x4xf32>
    %e0 = tensor.empty() : tensor<1x1x4xf32>
    %e1 = tensor.empty() : tensor<3x4xf32>
    %e2 = tensor.empty() : tensor<3x4xf32>
    %e3 = tensor.empty() : tensor<3x4xf32>
    %t:5 = k3.kda_step x(%xr, %xr, %xr) filters(%w, %w, %w) windows(%qw, %kw, %vw)
        gate(%fr, %a, %dt) beta(%br) norm(%nw) out_gate(%gr) outs(%e0, %e1, %e2, %e3, %sr)
        lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
        : (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>,
           tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<1x1x4xf32>, tensor<1xf32>, tensor<1x4xf32>,
           tensor<1x1xf32>, tensor<4xf32>, tensor<1x1x4xf32>,
           tensor<1x1x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<1x4x4xf32>)
        -> (tensor<1x1x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<1x4x4xf32>)
    %nq = tensor.expand_shape %t#1 [[0, 1], [2]] output_shape [1, 3, 4] : tensor<3x4xf32> into tensor<1x3x4xf32>
    %nk = tensor.expand_shape %t#2 [[0, 1], [2]] output_shape [1, 3, 4] : tensor<3x4xf32> into tensor<1x3x4xf32>
    %nv = tensor.expand_shape %t#3 [[0, 1], [2]] output_shape [1, 3, 4] : tensor<3x4xf32> into tensor<1x3x4xf32>
    %ns = tensor.expand_shape %t#4 [[0, 1], [2], [3]] output_shape [1, 1, 4, 4] : tensor<1x4x4xf32> into tensor<1x1x4x4xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %t#0 into %o[%i, 0, 0] [1, 1, 4] [1, 1, 1] : tensor<1x1x4xf32> into tensor<?x1x4xf32>
      tensor.parallel_insert_slice %nq into %q[%i, 0, 0] [1, 3, 4] [1, 1, 1] : tensor<1x3x4xf32> into tensor<?x3x4xf32>
      tensor.parallel_insert_slice %nk into %k[%i, 0, 0] [1, 3, 4] [1, 1, 1] : tensor<1x3x4xf32> into tensor<?x3x4xf32>
      tensor.parallel_insert_slice %nv into %v[%i, 0, 0] [1, 3, 4] [1, 1, 1] : tensor<1x3x4xf32> into tensor<?x3x4xf32>
      tensor.parallel_insert_slice %ns into %st[%i, 0, 0, 0] [1, 1, 4, 4] [1, 1, 1, 1] : tensor<1x1x4x4xf32> into tensor<?x1x4x4xf32>
    }
  }
  return %r#0, %r#1, %r#2, %r#3, %r#4
      : tensor<?x1x4xf32>, tensor<?x3x4xf32>, tensor<?x3x4xf32>, tensor<?x3x4xf32>, tensor<?x1x4x4xf32>
}

// -----

// A trip count equal to the tensors' static extent: no slices.
// CHECK-LABEL: func.func @whole
//   CHECK-NOT:   tensor.extract_slice
//   CHECK-NOT:   tensor.insert_slice
//       CHECK:   k3.kda_step x(%arg0, %arg0, %arg0) {{.+}} outs(%arg12, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %arg10)
//  CHECK-SAME:     -> (tensor<2x1x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x1x4x4xf32>)
func.func @whole(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>, %cq: tensor<2x3x4xf32>, %ck: tensor<2x3x4xf32>,
                %cv: tensor<2x3x4xf32>, %f: tensor<2x1x4xf32>, %a: tensor<1xf32>, %dt: tensor<1x4xf32>,
                %beta: tensor<2x1xf32>, %nw: tensor<4xf32>, %s: tensor<2x1x4x4xf32>, %og: tensor<2x1x4xf32>,
                %out: tensor<2x1x4xf32>)
    -> (tensor<2x1x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x1x4x4xf32>) {
  %r:5 = scf.forall (%i) in (2) shared_outs(%o = %out, %q = %cq, %k = %ck, %v = %cv, %st = %s)
      -> (tensor<2x1x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x1x4x4xf32>) {
    %xr = tensor.extract_slice %x[%i, 0] [1, 4] [1, 1] : tensor<2x4xf32> to tensor<1x4xf32>
    %q1 = tensor.extract_slice %q[%i, 0, 0] [1, 3, 4] [1, 1, 1] : tensor<2x3x4xf32> to tensor<1x3x4xf32>
    %qw = tensor.collapse_shape %q1 [[0, 1], [2]] : tensor<1x3x4xf32> into tensor<3x4xf32>
    %k1 = tensor.extract_slice %k[%i, 0, 0] [1, 3, 4] [1, 1, 1] : tensor<2x3x4xf32> to tensor<1x3x4xf32>
    %kw = tensor.collapse_shape %k1 [[0, 1], [2]] : tensor<1x3x4xf32> into tensor<3x4xf32>
    %v1 = tensor.extract_slice %v[%i, 0, 0] [1, 3, 4] [1, 1, 1] : tensor<2x3x4xf32> to tensor<1x3x4xf32>
    %vw = tensor.collapse_shape %v1 [[0, 1], [2]] : tensor<1x3x4xf32> into tensor<3x4xf32>
    %fr = tensor.extract_slice %f[%i, 0, 0] [1, 1, 4] [1, 1, 1] : tensor<2x1x4xf32> to tensor<1x1x4xf32>
    %br = tensor.extract_slice %beta[%i, 0] [1, 1] [1, 1] : tensor<2x1xf32> to tensor<1x1xf32>
    %s1 = tensor.extract_slice %st[%i, 0, 0, 0] [1, 1, 4, 4] [1, 1, 1, 1] : tensor<2x1x4x4xf32> to tensor<1x1x4x4xf32>
    %sr = tensor.collapse_shape %s1 [[0, 1], [2], [3]] : tensor<1x1x4x4xf32> into tensor<1x4x4xf32>
    %gr = tensor.extract_slice %og[%i, 0, 0] [1, 1, 4] [1, 1, 1] : tensor<2x1x4xf32> to tensor<1x1x4xf32>
    %e0 = tensor.empty() : tensor<1x1x4xf32>
    %e1 = tensor.empty() : tensor<3x4xf32>
    %e2 = tensor.empty() : tensor<3x4xf32>
    %e3 = tensor.empty() : tensor<3x4xf32>
    %t:5 = k3.kda_step x(%xr, %xr, %xr) filters(%w, %w, %w) windows(%qw, %kw, %vw)
        gate(%fr, %a, %dt) beta(%br) norm(%nw) out_gate(%gr) outs(%e0, %e1, %e2, %e3, %sr)
        lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
        : (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>,
           tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<1x1x4xf32>, tensor<1xf32>, tensor<1x4xf32>,
           tensor<1x1xf32>, tensor<4xf32>, tensor<1x1x4xf32>,
           tensor<1x1x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<1x4x4xf32>)
        -> (tensor<1x1x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<1x4x4xf32>)
    %nq = tensor.expand_shape %t#1 [[0, 1], [2]] output_shape [1, 3, 4] : tensor<3x4xf32> into tensor<1x3x4xf32>
    %nk = tensor.expand_shape %t#2 [[0, 1], [2]] output_shape [1, 3, 4] : tensor<3x4xf32> into tensor<1x3x4xf32>
    %nv = tensor.expand_shape %t#3 [[0, 1], [2]] output_shape [1, 3, 4] : tensor<3x4xf32> into tensor<1x3x4xf32>
    %ns = tensor.expand_shape %t#4 [[0, 1], [2], [3]] output_shape [1, 1, 4, 4] : tensor<1x4x4xf32> into tensor<1x1x4x4xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %t#0 into %o[%i, 0, 0] [1, 1, 4] [1, 1, 1] : tensor<1x1x4xf32> into tensor<2x1x4xf32>
      tensor.parallel_insert_slice %nq into %q[%i, 0, 0] [1, 3, 4] [1, 1, 1] : tensor<1x3x4xf32> into tensor<2x3x4xf32>
      tensor.parallel_insert_slice %nk into %k[%i, 0, 0] [1, 3, 4] [1, 1, 1] : tensor<1x3x4xf32> into tensor<2x3x4xf32>
      tensor.parallel_insert_slice %nv into %v[%i, 0, 0] [1, 3, 4] [1, 1, 1] : tensor<1x3x4xf32> into tensor<2x3x4xf32>
      tensor.parallel_insert_slice %ns into %st[%i, 0, 0, 0] [1, 1, 4, 4] [1, 1, 1, 1] : tensor<1x1x4x4xf32> into tensor<2x1x4x4xf32>
    }
  }
  return %r#0, %r#1, %r#2, %r#3, %r#4
      : tensor<2x1x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x1x4x4xf32>
}


// -----

// A loop doing anything else stays: here a request reads the next one's
// projection (offset i + 1), which no batched step expresses.
// CHECK-LABEL: func.func @other_row
//       CHECK:   scf.forall
//       CHECK:   k3.kda_step x(%{{.+}}) {{.+}} -> (tensor<1x1x4xf32>
func.func @other_row(%x: tensor<?x4xf32>, %w: tensor<4x4xf32>, %c: tensor<3x4xf32>,
                     %f: tensor<?x1x4xf32>, %a: tensor<1xf32>, %dt: tensor<1x4xf32>,
                     %beta: tensor<?x1xf32>, %nw: tensor<4xf32>, %s: tensor<1x4x4xf32>, %og: tensor<?x1x4xf32>,
                     %out: tensor<?x1x4xf32>, %n: index) -> tensor<?x1x4xf32> {
  %r = scf.forall (%i) in (%n) shared_outs(%o = %out) -> (tensor<?x1x4xf32>) {
    %j = affine.apply affine_map<(d0) -> (d0 + 1)>(%i)
    %xr = tensor.extract_slice %x[%j, 0] [1, 4] [1, 1] : tensor<?x4xf32> to tensor<1x4xf32>
    %fr = tensor.extract_slice %f[%i, 0, 0] [1, 1, 4] [1, 1, 1] : tensor<?x1x4xf32> to tensor<1x1x4xf32>
    %br = tensor.extract_slice %beta[%i, 0] [1, 1] [1, 1] : tensor<?x1xf32> to tensor<1x1xf32>
    %gr = tensor.extract_slice %og[%i, 0, 0] [1, 1, 4] [1, 1, 1] : tensor<?x1x4xf32> to tensor<1x1x4xf32>
    %e0 = tensor.empty() : tensor<1x1x4xf32>
    %t:5 = k3.kda_step x(%xr, %xr, %xr) filters(%w, %w, %w) windows(%c, %c, %c)
        gate(%fr, %a, %dt) beta(%br) norm(%nw) out_gate(%gr) outs(%e0, %c, %c, %c, %s)
        lower_bound lb = -5.0 scale = 0.5 eps = 1.0e-05
        : (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>,
           tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<1x1x4xf32>, tensor<1xf32>, tensor<1x4xf32>,
           tensor<1x1xf32>, tensor<4xf32>, tensor<1x1x4xf32>,
           tensor<1x1x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<1x4x4xf32>)
        -> (tensor<1x1x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<1x4x4xf32>)
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %t#0 into %o[%i, 0, 0] [1, 1, 4] [1, 1, 1] : tensor<1x1x4xf32> into tensor<?x1x4xf32>
    }
  }
  return %r : tensor<?x1x4xf32>
}
