// RUN: k3-opt %s --split-input-file --k3-round-contraction-inputs | FileCheck %s

// A projection's contraction (f32 activations, bf16 weights, f32
// accumulator): the activation is rounded to bf16 where it enters the
// product, the bf16 weight (exact already) is not touched.
// CHECK-LABEL: func.func @projection
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[W:.*]]: bf16, %[[OUT:.*]]: f32):
// CHECK-NEXT: %[[WF:.*]] = arith.extf %[[W]] : bf16 to f32
// CHECK-NEXT: %[[T:.*]] = arith.truncf %[[X]] : f32 to bf16
// CHECK-NEXT: %[[XR:.*]] = arith.extf %[[T]] : bf16 to f32
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[XR]], %[[WF]] : f32
// CHECK-NEXT: arith.addf %[[OUT]], %[[P]] : f32
func.func @projection(%x: tensor<4x8xf32>, %w: tensor<16x8xbf16>, %acc: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
                                        affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<4x8xf32>, tensor<16x8xbf16>) outs(%acc : tensor<4x16xf32>) {
  ^bb0(%a: f32, %b: bf16, %o: f32):
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bf : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

// Both operands f32 (an attention score): both rounded.
// CHECK-LABEL: func.func @scores
// CHECK-COUNT-2: arith.truncf %{{.*}} : f32 to bf16
// CHECK: arith.mulf
func.func @scores(%q: tensor<4x8xf32>, %k: tensor<16x8xf32>, %acc: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
                                        affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<4x8xf32>, tensor<16x8xf32>) outs(%acc : tensor<4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

// Not contractions: an elementwise product (no reduction) and a sum of
// squares (one input) are left alone.
// CHECK-LABEL: func.func @others
// CHECK-NOT: arith.truncf
func.func @others(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %acc: tensor<4xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  %e = linalg.generic {indexing_maps = [affine_map<(m, k) -> (m, k)>, affine_map<(m, k) -> (m, k)>,
                                        affine_map<(m, k) -> (m, k)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%x : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(m, k) -> (m, k)>, affine_map<(m, k) -> (m)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %a : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %e, %q : tensor<4x8xf32>, tensor<4xf32>
}
