// RUN: k3-opt %s --k3-gpu-register-accumulators | FileCheck %s
// RUN: k3-opt %s --k3-gpu-register-accumulators --convert-linalg-to-parallel-loops \
// RUN:   --convert-scf-to-cf --expand-strided-metadata --lower-affine --finalize-memref-to-llvm \
// RUN:   --convert-arith-to-llvm --convert-index-to-llvm --convert-func-to-llvm --convert-cf-to-llvm \
// RUN:   --reconcile-unrealized-casts | %run_main | FileCheck %s --check-prefix=EXEC
// RUN: k3-opt %s --convert-linalg-to-parallel-loops \
// RUN:   --convert-scf-to-cf --expand-strided-metadata --lower-affine --finalize-memref-to-llvm \
// RUN:   --convert-arith-to-llvm --convert-index-to-llvm --convert-func-to-llvm --convert-cf-to-llvm \
// RUN:   --reconcile-unrealized-casts | %run_main | FileCheck %s --check-prefix=EXEC

// A row sum: the output element is loaded once before the reduction loop,
// carried through it and stored once after it.
// CHECK-LABEL: func.func @row_sum
//       CHECK:   scf.parallel (%[[I:.+]]) =
//       CHECK:     %[[INIT:.+]] = memref.load %[[OUT:.+]][%[[I]]]
//       CHECK:     %[[R:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %[[INIT]]) -> (f32) {
//       CHECK:       %[[X:.+]] = memref.load %arg0
//   CHECK-NOT:       memref.load
//       CHECK:       %[[S:.+]] = arith.addf %[[X]], %[[ACC]]
//  CHECK-NEXT:       scf.yield %[[S]]
//       CHECK:     memref.store %[[R]], %[[OUT]][%[[I]]]
func.func @row_sum(%x: memref<?x?xf32>, %y: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x?xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// Two reductions nested, and two outputs (max and sum of squares): each
// element stays in a register through both loops.
// CHECK-LABEL: func.func @two_outputs
//       CHECK:   scf.parallel
//   CHECK-DAG:     memref.load %arg1
//   CHECK-DAG:     memref.load %arg2
//       CHECK:     scf.for {{.+}} iter_args({{.+}}) -> (f32, f32) {
//       CHECK:       scf.for {{.+}} iter_args({{.+}}) -> (f32, f32) {
//       CHECK:         memref.load %arg0
//   CHECK-NOT:         memref.load
//   CHECK-NOT:         memref.store
//       CHECK:         scf.yield
//   CHECK-NOT:       memref.store
//       CHECK:       scf.yield
//   CHECK-DAG:     memref.store {{.+}}, %arg1
//   CHECK-DAG:     memref.store {{.+}}, %arg2
func.func @two_outputs(%x: memref<3x4x5xf32>, %m: memref<3xf32>, %q: memref<3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i)>,
                                   affine_map<(i, j, k) -> (i)>],
                  iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x : memref<3x4x5xf32>) outs(%m, %q : memref<3xf32>, memref<3xf32>) {
  ^bb0(%a: f32, %mx: f32, %sq: f32):
    %n = arith.maximumf %a, %mx : f32
    %p = arith.mulf %a, %a : f32
    %s = arith.addf %p, %sq : f32
    linalg.yield %n, %s : f32, f32
  }
  return
}

// A fill of the output just before a reduction: the fill goes and the
// loop starts from its value (each element is stored by one parallel
// iteration). The max's fill of -inf also goes; a fill before a generic
// that reads the filled buffer as an input stays.
// CHECK-LABEL: func.func @filled
//   CHECK-NOT:   linalg.fill
//   CHECK-DAG:   %[[Z:.+]] = arith.constant 0.000000e+00 : f32
//   CHECK-DAG:   %[[NINF:.+]] = arith.constant 0xFF800000 : f32
//   CHECK-NOT:   linalg.fill
//       CHECK:   scf.parallel (%[[I:.+]]) =
//   CHECK-NOT:     memref.load %arg1[
//       CHECK:     %[[R:.+]] = scf.for {{.+}} iter_args(%{{.+}} = %[[Z]]) -> (f32) {
//       CHECK:     memref.store %[[R]], %arg1[%[[I]]]
//   CHECK-NOT:   linalg.fill
//       CHECK:   scf.for {{.+}} iter_args(%{{.+}} = %[[NINF]]) -> (f32) {
//       CHECK:   return
// CHECK-LABEL: func.func @read_back
//       CHECK:   linalg.fill
func.func @filled(%x: memref<3x20xf32>, %y: memref<3xf32>, %m: memref<3xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<3xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<3x20xf32>) outs(%y : memref<3xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%ninf : f32) outs(%m : memref<3xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<3x20xf32>) outs(%m : memref<3xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.maximumf %a, %acc : f32
    linalg.yield %s : f32
  }
  return
}
func.func @read_back(%x: memref<3x3xf32>, %y: memref<3xf32>) {
  %zero = arith.constant 0.0 : f32
  %view = memref.subview %x[0, 0] [3, 1] [1, 1] : memref<3x3xf32> to memref<3xf32, strided<[3]>>
  linalg.fill ins(%zero : f32) outs(%view : memref<3xf32, strided<[3]>>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<3x3xf32>) outs(%view : memref<3xf32, strided<[3]>>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// Two outputs, each allocated and filled just before: the allocation
// between the fills is looked past, both fills go.
// CHECK-LABEL: func.func @two_filled
//   CHECK-NOT:   linalg.fill
//       CHECK:   scf.parallel
//       CHECK:     scf.for {{.+}} iter_args(%{{.+}} = %[[Z2:.+]], %{{.+}} = %[[Z2]]) -> (f32, f32) {
//   CHECK-NOT:   linalg.fill
//       CHECK:   return
func.func @two_filled(%x: memref<3x20xf32>) -> (memref<3xf32>, memref<3xf32>) {
  %zero = arith.constant 0.0 : f32
  %s = memref.alloc() : memref<3xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<3xf32>)
  %q = memref.alloc() : memref<3xf32>
  linalg.fill ins(%zero : f32) outs(%q : memref<3xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                                   affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<3x20xf32>) outs(%s, %q : memref<3xf32>, memref<3xf32>) {
  ^bb0(%a: f32, %acc: f32, %sq: f32):
    %t = arith.addf %a, %acc : f32
    %p = arith.mulf %a, %a : f32
    %u = arith.addf %p, %sq : f32
    linalg.yield %t, %u : f32, f32
  }
  return %s, %q : memref<3xf32>, memref<3xf32>
}

// A reduction to a 0-d output lowers to a bare scf.for, which the
// accumulator rewrite replaces: its fill stays (the pass once kept a
// pointer to the replaced loop and read it after it was freed).
// CHECK-LABEL: func.func @scalar_filled
//       CHECK:   linalg.fill ins(%{{.+}} : f32) outs(%arg1 : memref<f32>)
//       CHECK:   %[[I:.+]] = memref.load %arg1[]
//       CHECK:   %[[R:.+]] = scf.for {{.+}} iter_args(%{{.+}} = %[[I]]) -> (f32) {
//       CHECK:   memref.store %[[R]], %arg1[]
func.func @scalar_filled(%x: memref<20xf32>, %y: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<f32>)
  linalg.generic {indexing_maps = [affine_map<(j) -> (j)>, affine_map<(j) -> ()>],
                  iterator_types = ["reduction"]}
      ins(%x : memref<20xf32>) outs(%y : memref<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %p = arith.mulf %a, %a : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// A loop storing back the value it loaded: the carried value passes
// through.
// CHECK-LABEL: func.func @store_back
//       CHECK:   %[[I0:.+]] = memref.load %arg0[%{{.+}}]
//       CHECK:   %[[R0:.+]] = scf.for {{.+}} iter_args(%[[A0:.+]] = %[[I0]]) -> (f32) {
//  CHECK-NEXT:     scf.yield %[[A0]]
//       CHECK:   memref.store %[[R0]], %arg0[%{{.+}}]
func.func @store_back(%y: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %k = %c0 to %n step %c1 {
      %a = memref.load %y[%i] : memref<8xf32>
      memref.store %a, %y[%i] : memref<8xf32>
    }
    scf.reduce
  }
  return
}

// Left alone: the loop also reads the output's buffer through a view (the
// same root) or the same global; the element moves with the loop; a call
// may touch memory; the index is data, not a parallel loop's (a loop of no
// iterations might then be guarding an index that is out of bounds).
// CHECK-LABEL: func.func @aliased
//       CHECK:   scf.for
//   CHECK-NOT:     iter_args
//       CHECK:     memref.store
// CHECK-LABEL: func.func @global
//       CHECK:   scf.for
//   CHECK-NOT:     iter_args
//       CHECK:     memref.store
// CHECK-LABEL: func.func @moving
//       CHECK:   scf.for
//   CHECK-NOT:     iter_args
//       CHECK:     memref.store
// CHECK-LABEL: func.func @call
//       CHECK:   scf.for
//   CHECK-NOT:     iter_args
//       CHECK:     memref.store
// CHECK-LABEL: func.func @data_index
//       CHECK:   scf.for
//   CHECK-NOT:     iter_args
//       CHECK:     memref.store
func.func @aliased(%y: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %view = memref.subview %y[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    scf.for %k = %c0 to %n step %c1 {
      %a = memref.load %y[%i] : memref<8xf32>
      %b = memref.load %view[%k] : memref<4xf32, strided<[1], offset: 4>>
      %s = arith.addf %a, %b : f32
      memref.store %s, %y[%i] : memref<8xf32>
    }
    scf.reduce
  }
  return
}
memref.global "private" @acc : memref<8xf32> = dense<0.0>
func.func @global(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %y = memref.get_global @acc : memref<8xf32>
  %z = memref.get_global @acc : memref<8xf32>
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    scf.for %k = %c0 to %n step %c1 {
      %a = memref.load %y[%i] : memref<8xf32>
      %b = memref.load %z[%k] : memref<8xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %y[%i] : memref<8xf32>
    }
    scf.reduce
  }
  return
}
func.func @moving(%y: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %k = %c0 to %n step %c1 {
    %a = memref.load %y[%k] : memref<8xf32>
    %s = arith.addf %a, %a : f32
    memref.store %s, %y[%k] : memref<8xf32>
  }
  return
}
func.func @call(%y: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %k = %c0 to %n step %c1 {
      %a = memref.load %y[%i] : memref<8xf32>
      func.call @touch() : () -> ()
      %s = arith.addf %a, %a : f32
      memref.store %s, %y[%i] : memref<8xf32>
    }
    scf.reduce
  }
  return
}
func.func @touch() {
  return
}
func.func @data_index(%y: memref<8xf32>, %ids: memref<8xindex>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %e = memref.load %ids[%i] : memref<8xindex>
    scf.for %k = %c0 to %n step %c1 {
      %a = memref.load %y[%e] : memref<8xf32>
      %s = arith.addf %a, %a : f32
      memref.store %s, %y[%e] : memref<8xf32>
    }
    scf.reduce
  }
  return
}

// Left alone as well: an element shared by the iterations of a parallel
// dimension that does not index it (j), or by every iteration (a constant
// index inside an scf.parallel); a trip count that depends on the
// parallel loop (only rows i < %used of y exist, and the loop runs no
// iteration for the others: hoisted, their load and store would be out of
// bounds); an index defined inside the loop (hoisted, its load would come
// before its definition); an output that is a select of two buffers, one
// of which the loop reads (a root that is not an argument, allocation or
// global may be any buffer).
// CHECK-LABEL: func.func @shared_by_j
//       CHECK:   scf.for
//   CHECK-NOT:     iter_args
//       CHECK:     memref.store
// CHECK-LABEL: func.func @shared_constant
//       CHECK:   scf.for
//   CHECK-NOT:     iter_args
//       CHECK:     memref.store
// CHECK-LABEL: func.func @guarded_trips
//       CHECK:   scf.for
//   CHECK-NOT:     iter_args
//       CHECK:     memref.store
// CHECK-LABEL: func.func @index_inside
//       CHECK:   scf.for
//   CHECK-NOT:     iter_args
//       CHECK:     memref.store
// CHECK-LABEL: func.func @selected
//       CHECK:   scf.for
//   CHECK-NOT:     iter_args
//       CHECK:     memref.store
func.func @shared_by_j(%x: memref<4x2x8xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c2) step (%c1, %c1) {
    scf.for %k = %c0 to %c8 step %c1 {
      %a = memref.load %y[%i] : memref<4xf32>
      %b = memref.load %x[%i, %j, %k] : memref<4x2x8xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %y[%i] : memref<4xf32>
    }
    scf.reduce
  }
  return
}
func.func @shared_constant(%x: memref<4x8xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    scf.for %k = %c0 to %c8 step %c1 {
      %a = memref.load %y[%c0] : memref<4xf32>
      %b = memref.load %x[%i, %k] : memref<4x8xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %y[%c0] : memref<4xf32>
    }
    scf.reduce
  }
  return
}
func.func @guarded_trips(%x: memref<?x8xf32>, %y: memref<?xf32>, %used: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %in = arith.cmpi ult, %i, %used : index
    %ub = arith.select %in, %c8, %c0 : index
    scf.for %k = %c0 to %ub step %c1 {
      %a = memref.load %y[%i] : memref<?xf32>
      %b = memref.load %x[%i, %k] : memref<?x8xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %y[%i] : memref<?xf32>
    }
    scf.reduce
  }
  return
}
func.func @index_inside(%x: memref<8xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %k = %c0 to %c8 step %c1 {
    %c3 = arith.constant 3 : index
    %a = memref.load %y[%c3] : memref<4xf32>
    %b = memref.load %x[%k] : memref<8xf32>
    %s = arith.addf %a, %b : f32
    memref.store %s, %y[%c3] : memref<4xf32>
  }
  return
}

func.func @selected(%y: memref<8xf32>, %z: memref<8xf32>, %c: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %out = arith.select %c, %y, %z : memref<8xf32>
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    scf.for %k = %c0 to %c8 step %c1 {
      %a = memref.load %out[%i] : memref<8xf32>
      %b = memref.load %y[%k] : memref<8xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %out[%i] : memref<8xf32>
    }
    scf.reduce
  }
  return
}

// Run on the host, with and without the pass: the same sums, maxima and
// sums of squares. x[i, j, k] = i + j - k / 2.
// EXEC: [10,  30,  50]
// EXEC: [3,  4,  5]
// EXEC: [40,  80,  160]
// EXEC: [10,  30,  50]
// EXEC: [3,  4,  5]
// EXEC: [5]
// EXEC: [10,  30,  50]
// EXEC: [40,  80,  160]
func.func private @printMemrefF32(memref<*xf32>)
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %half = arith.constant 0.5 : f32
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %x = memref.alloc() : memref<3x4x5xf32>
  scf.for %i = %c0 to %c3 step %c1 {
    scf.for %j = %c0 to %c4 step %c1 {
      scf.for %k = %c0 to %c5 step %c1 {
        %ij = arith.addi %i, %j : index
        %a = arith.index_cast %ij : index to i32
        %b = arith.index_cast %k : index to i32
        %af = arith.sitofp %a : i32 to f32
        %bf = arith.sitofp %b : i32 to f32
        %h = arith.mulf %bf, %half : f32
        %v = arith.subf %af, %h : f32
        memref.store %v, %x[%i, %j, %k] : memref<3x4x5xf32>
      }
    }
  }
  %flat = memref.collapse_shape %x [[0], [1, 2]] : memref<3x4x5xf32> into memref<3x20xf32>
  %dyn = memref.cast %flat : memref<3x20xf32> to memref<?x?xf32>
  %sum = memref.alloc() : memref<3xf32>
  %m = memref.alloc() : memref<3xf32>
  %q = memref.alloc() : memref<3xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<3xf32>)
  linalg.fill ins(%ninf : f32) outs(%m : memref<3xf32>)
  linalg.fill ins(%zero : f32) outs(%q : memref<3xf32>)
  %sumd = memref.cast %sum : memref<3xf32> to memref<?xf32>
  call @row_sum(%dyn, %sumd) : (memref<?x?xf32>, memref<?xf32>) -> ()
  call @two_outputs(%x, %m, %q) : (memref<3x4x5xf32>, memref<3xf32>, memref<3xf32>) -> ()
  %p0 = memref.cast %sum : memref<3xf32> to memref<*xf32>
  call @printMemrefF32(%p0) : (memref<*xf32>) -> ()
  %p1 = memref.cast %m : memref<3xf32> to memref<*xf32>
  call @printMemrefF32(%p1) : (memref<*xf32>) -> ()
  %p2 = memref.cast %q : memref<3xf32> to memref<*xf32>
  call @printMemrefF32(%p2) : (memref<*xf32>) -> ()
  // Filled in @filled itself (7 in the buffers first: the fill must win).
  %seven = arith.constant 7.0 : f32
  linalg.fill ins(%seven : f32) outs(%sum : memref<3xf32>)
  linalg.fill ins(%seven : f32) outs(%m : memref<3xf32>)
  call @filled(%flat, %sum, %m) : (memref<3x20xf32>, memref<3xf32>, memref<3xf32>) -> ()
  call @printMemrefF32(%p0) : (memref<*xf32>) -> ()
  call @printMemrefF32(%p1) : (memref<*xf32>) -> ()
  // A 0-d sum of squares of twenty halves, filled in @scalar_filled.
  %halves = memref.alloc() : memref<20xf32>
  linalg.fill ins(%half : f32) outs(%halves : memref<20xf32>)
  %s0 = memref.alloc() : memref<f32>
  linalg.fill ins(%seven : f32) outs(%s0 : memref<f32>)
  call @scalar_filled(%halves, %s0) : (memref<20xf32>, memref<f32>) -> ()
  %p3 = memref.cast %s0 : memref<f32> to memref<*xf32>
  call @printMemrefF32(%p3) : (memref<*xf32>) -> ()
  %ts, %tq = call @two_filled(%flat) : (memref<3x20xf32>) -> (memref<3xf32>, memref<3xf32>)
  %p4 = memref.cast %ts : memref<3xf32> to memref<*xf32>
  call @printMemrefF32(%p4) : (memref<*xf32>) -> ()
  %p5 = memref.cast %tq : memref<3xf32> to memref<*xf32>
  call @printMemrefF32(%p5) : (memref<*xf32>) -> ()
  return
}
