// RUN: k3-opt %s --split-input-file --k3-tile-contractions | FileCheck %s

// C[i, j] += A[i, k] · B[k, j] over loops (i, k, j), marked for 4 × 16 tiles:
// the i and j tiles one scf.forall (independent tiles: the thread pool's
// work), the reduction loop inside carrying the 4 × 16 accumulator as a
// vector (read before it, written after it).
// CHECK-LABEL: func.func @matmul
//       CHECK:   scf.forall (%{{.+}}, %{{.+}}) = (0, 0) to (8, 32) step (4, 16)
//       CHECK:       %[[ACC:.+]] = vector.transfer_read {{.+}} : tensor<4x16xf32>, vector<4x16xf32>
//       CHECK:       %[[R:.+]]:2 = scf.for %{{.+}} = %c0 to %c64 step %c1 iter_args({{.+}}, %[[V:.+]] = %[[ACC]]) -> ({{.+}}, vector<4x16xf32>)
//       CHECK:         arith.mulf {{.+}} : vector<4x16xf32>
//       CHECK:         arith.addf {{.+}} : vector<64xf32>
//       CHECK:         scf.yield {{.+}} : {{.+}}, vector<4x16xf32>
//       CHECK:       %[[W:.+]] = vector.transfer_write %[[R]]#1
//       CHECK:       tensor.parallel_insert_slice %[[W]]
//   CHECK-NOT:   linalg.generic
//   CHECK-NOT:   k3.tile
#a = affine_map<(i, k, j) -> (i, k)>
#b = affine_map<(i, k, j) -> (k, j)>
#c = affine_map<(i, k, j) -> (i, j)>
func.func @matmul(%a: tensor<8x64xf32>, %b: tensor<64x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"], k3.tile = array<i64: 4, 1, 16>}
      ins(%a, %b : tensor<8x64xf32>, tensor<64x32xf32>) outs(%c : tensor<8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

// Sizes that do not divide the loop extents (6 rows in tiles of 4) leave the
// op whole; the mark is dropped either way.
// CHECK-LABEL: func.func @uneven
//       CHECK:   linalg.generic
//   CHECK-NOT:   k3.tile
//   CHECK-NOT:   scf.for
#a = affine_map<(i, k, j) -> (i, k)>
#b = affine_map<(i, k, j) -> (k, j)>
#c = affine_map<(i, k, j) -> (i, j)>
func.func @uneven(%a: tensor<6x64xf32>, %b: tensor<64x32xf32>, %c: tensor<6x32xf32>) -> tensor<6x32xf32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"], k3.tile = array<i64: 4, 1, 16>}
      ins(%a, %b : tensor<6x64xf32>, tensor<64x32xf32>) outs(%c : tensor<6x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<6x32xf32>
  return %r : tensor<6x32xf32>
}

// -----

// Unmarked generics are not touched.
// CHECK-LABEL: func.func @unmarked
//       CHECK:   linalg.generic
//   CHECK-NOT:   vector.
#a = affine_map<(i, k, j) -> (i, k)>
#b = affine_map<(i, k, j) -> (k, j)>
#c = affine_map<(i, k, j) -> (i, j)>
func.func @unmarked(%a: tensor<8x64xf32>, %b: tensor<64x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : tensor<8x64xf32>, tensor<64x32xf32>) outs(%c : tensor<8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
