// RUN: k3-opt %s --split-input-file --k3-cpu-parallel-loops --verify-diagnostics | FileCheck %s

// A nest with enough work (128 × 256 = 32768 innermost iterations) stays
// parallel; the parallel loop inside it becomes scf.for loops.
// CHECK-LABEL: func.func @big
//       CHECK:   scf.parallel (%{{.+}}) = (%c0) to (%c128) step (%c1)
//       CHECK:     scf.for %{{.+}} = %c0 to %c16 step %c1
//       CHECK:       scf.for %{{.+}} = %c0 to %c16 step %c1
//       CHECK:         memref.store
//   CHECK-NOT:   scf.parallel
func.func @big(%m: memref<128x16x16xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  scf.parallel (%i) = (%c0) to (%c128) step (%c1) {
    scf.parallel (%j, %k) = (%c0, %c0) to (%c16, %c16) step (%c1, %c1) {
      memref.store %v, %m[%i, %j, %k] : memref<128x16x16xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}

// -----

// A decode step's norm over one token (1 × 1024 iterations): one thread,
// the fork and join would cost more than the loop.
// CHECK-LABEL: func.func @small
//       CHECK:   scf.for %{{.+}} = %c0 to %c1 step %c1
//       CHECK:     scf.for %{{.+}} = %c0 to %c1024 step %c1
//   CHECK-NOT:   scf.parallel
func.func @small(%m: memref<1x1024xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1024 = arith.constant 1024 : index
  scf.parallel (%t) = (%c0) to (%c1) step (%c1) {
    scf.for %d = %c0 to %c1024 step %c1 {
      memref.store %v, %m[%t, %d] : memref<1x1024xf32>
    }
    scf.reduce
  }
  return
}

// -----

// A dynamic extent (a prompt's tokens) counts as 64: 64 × 512 iterations
// are worth the pool, but the loop forks only when its actual iterations
// (512 per token here) reach 16384 and number two or more, and runs a
// serial copy otherwise (a decode step's one token, an expert routed none). Forked, with 64 tokens
// or more its innermost dimension is a serial loop inside each token's
// iteration (unit stride: LLVM vectorises it; OpenMP would collapse both
// dimensions into one flat index); with fewer, both stay parallel.
// CHECK-LABEL: func.func @dynamic
//       CHECK:   %[[TRIPS:.+]] = arith.ceildivsi
//       CHECK:   %[[POS:.+]] = arith.maxsi %[[TRIPS]]
//       CHECK:   %[[DYN:.+]] = arith.muli %{{.+}}, %[[POS]]
//       CHECK:   %[[TOTAL:.+]] = arith.muli %c512{{.*}}, %[[DYN]]
//       CHECK:   %[[ENOUGH:.+]] = arith.cmpi sge, %[[TOTAL]], %c16384
//       CHECK:   %[[OWN:.+]] = arith.muli %c512{{.*}}, %[[DYN]]
//       CHECK:   %[[TWO:.+]] = arith.cmpi sge, %[[OWN]], %c2
//       CHECK:   %[[FORK:.+]] = arith.andi %[[ENOUGH]], %[[TWO]]
//       CHECK:   scf.if %[[FORK]] {
//       CHECK:     %[[OUTER:.+]] = arith.muli
//       CHECK:     %[[WIDE:.+]] = arith.cmpi sge, %[[OUTER]], %c64
//       CHECK:     scf.if %[[WIDE]] {
//       CHECK:       scf.parallel (%{{.+}}) = (%c0) to (%arg1) step (%c1) {
//       CHECK:         scf.for %{{.+}} = %c0 to %c512 step %c1 {
//       CHECK:     } else {
//       CHECK:       scf.parallel (%{{.+}}, %{{.+}}) = (%c0, %c0) to (%arg1, %c512)
//       CHECK:     }
//       CHECK:   } else {
//       CHECK:     scf.for %{{.+}} = %c0 to %arg1 step %c1
//       CHECK:       scf.for %{{.+}} = %c0 to %c512 step %c1
//       CHECK:   }
func.func @dynamic(%m: memref<?x512xf32>, %n: index, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  scf.parallel (%t, %d) = (%c0, %c0) to (%n, %c512) step (%c1, %c1) {
    memref.store %v, %m[%t, %d] : memref<?x512xf32>
    scf.reduce
  }
  return
}

// -----

// Two dynamic dimensions (AttnRes's [blocks, tokens] rows) are versioned
// on their actual product too: a decode step's one token over three blocks
// is 192 iterations, not the estimate's 64 · 64 · 64 (their trips once
// multiplied to a positive count, and the loop forked on every call).
// CHECK-LABEL: func.func @two_dynamic
//       CHECK:   %[[A:.+]] = arith.maxsi
//       CHECK:   %[[DA:.+]] = arith.muli %{{.+}}, %[[A]]
//       CHECK:   %[[B:.+]] = arith.maxsi
//       CHECK:   %[[DB:.+]] = arith.muli %[[DA]], %[[B]]
//       CHECK:   %[[TOTAL:.+]] = arith.muli %c64{{.*}}, %[[DB]]
//       CHECK:   %[[ENOUGH:.+]] = arith.cmpi sge, %[[TOTAL]], %c16384
//       CHECK:   %[[FORK:.+]] = arith.andi %[[ENOUGH]]
//       CHECK:   scf.if %[[FORK]] {
//       CHECK:     scf.parallel (%{{.+}}) = (%c0) to (%arg1)
//       CHECK:     scf.parallel (%{{.+}}, %{{.+}}) = (%c0, %c0) to (%arg1, %arg2)
//       CHECK:   } else {
//  CHECK-NEXT:     scf.for %{{.+}} = %c0 to %arg1 step %c1
//  CHECK-NEXT:       scf.for %{{.+}} = %c0 to %arg2 step %c1
//  CHECK-NEXT:         scf.for %{{.+}} = %c0 to %c64 step %c1
func.func @two_dynamic(%m: memref<?x?x64xf32>, %n: index, %t: index, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %t) step (%c1, %c1) {
    scf.for %d = %c0 to %c64 step %c1 {
      memref.store %v, %m[%i, %j, %d] : memref<?x?x64xf32>
    }
    scf.reduce
  }
  return
}

// -----

// A dynamic loop forks only with two iterations or more: one (decode_batch
// with one request) would run on one thread with the loops inside it
// serial. Its serial copy keeps them as candidates: the heads loop, with
// work enough, stays parallel there.
// CHECK-LABEL: func.func @one_request
//       CHECK:   %[[TRIPS:.+]] = arith.maxsi
//       CHECK:   %[[ENOUGH:.+]] = arith.cmpi sge, %{{.+}}, %c16384
//       CHECK:   %[[TWO:.+]] = arith.cmpi sge, %{{.+}}, %c2
//       CHECK:   %[[FORK:.+]] = arith.andi %[[ENOUGH]], %[[TWO]]
//       CHECK:   scf.if %[[FORK]] {
//       CHECK:     scf.parallel (%{{.+}}) = (%c0) to (%arg1) step (%c1) {
//   CHECK-NOT:       scf.parallel
//       CHECK:   } else {
//       CHECK:     scf.for %{{.+}} = %c0 to %arg1 step %c1 {
//       CHECK:       scf.parallel (%{{.+}}) = (%c0) to (%c32) step (%c1) {
//       CHECK:         scf.for %{{.+}} = %c0 to %c1024 step %c1 {
//       CHECK:   return
func.func @one_request(%m: memref<?x32x1024xf32>, %n: index, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c1024 = arith.constant 1024 : index
  scf.parallel (%r) = (%c0) to (%n) step (%c1) {
    scf.parallel (%h) = (%c0) to (%c32) step (%c1) {
      scf.for %i = %c0 to %c1024 step %c1 {
        memref.store %v, %m[%r, %h, %i] : memref<?x32x1024xf32>
      }
      scf.reduce
    }
    scf.reduce
  }
  return
}

// -----

// A loop of static trips whose work lies in an inner loop of dynamic trips
// known before it starts (a GEMM's panels around its rows, a token count
// the call decides) forks only when that work, counted at run time,
// reaches the threshold: 8 × 512 per row, so 4 rows or more.
// CHECK-LABEL: func.func @known_inner
//       CHECK:   %[[ROWS:.+]] = arith.maxsi
//       CHECK:   %[[WORK:.+]] = arith.muli %{{.+}}, %[[ROWS]]
//       CHECK:   %[[TOTAL:.+]] = arith.muli %c4096{{.*}}, %[[WORK]]
//       CHECK:   %[[ENOUGH:.+]] = arith.cmpi sge, %[[TOTAL]], %c16384
//       CHECK:   %[[FORK:.+]] = arith.andi %[[ENOUGH]]
//       CHECK:   scf.if %[[FORK]] {
//       CHECK:     scf.parallel (%{{.+}}) = (%c0) to (%c8) step (%c1) {
//       CHECK:   } else {
//       CHECK:     scf.for %{{.+}} = %c0 to %c8 step %c1 {
func.func @known_inner(%m: memref<?x8x512xf32>, %n: index, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c512 = arith.constant 512 : index
  scf.parallel (%p) = (%c0) to (%c8) step (%c1) {
    scf.for %t = %c0 to %n step %c1 {
      scf.for %k = %c0 to %c512 step %c1 {
        memref.store %v, %m[%t, %p, %k] : memref<?x8x512xf32>
      }
    }
    scf.reduce
  }
  return
}

// -----

// Static bounds decide at compile time: 128 outer iterations peel the
// innermost dimension into a serial loop; 8 keep both parallel.
// CHECK-LABEL: func.func @wide
//       CHECK:   scf.parallel (%{{.+}}) = (%c0) to (%c128) step (%c1) {
//       CHECK:     scf.for %{{.+}} = %c0 to %c512 step %c1 {
//       CHECK:       memref.store
// CHECK-LABEL: func.func @narrow
//       CHECK:   scf.parallel (%{{.+}}, %{{.+}}) = (%c0, %c0) to (%c8, %c4096)
//   CHECK-NOT:   scf.for
func.func @wide(%m: memref<128x512xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %c512 = arith.constant 512 : index
  scf.parallel (%t, %d) = (%c0, %c0) to (%c128, %c512) step (%c1, %c1) {
    memref.store %v, %m[%t, %d] : memref<128x512xf32>
    scf.reduce
  }
  return
}
func.func @narrow(%m: memref<8x4096xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c4096 = arith.constant 4096 : index
  scf.parallel (%t, %d) = (%c0, %c0) to (%c8, %c4096) step (%c1, %c1) {
    memref.store %v, %m[%t, %d] : memref<8x4096xf32>
    scf.reduce
  }
  return
}

// -----

// Nested parallel loops inside a peeled loop, and inside the copy kept for
// fewer than 64 tokens, are serial: one OpenMP region per nest.
// CHECK-LABEL: func.func @nested_dynamic
//       CHECK:   scf.if %{{.+}} {
//       CHECK:     scf.if %{{.+}} {
//       CHECK:       scf.parallel (%{{.+}}) = (%c0) to (%arg1) step (%c1) {
//   CHECK-NOT:         scf.parallel
//       CHECK:     } else {
//       CHECK:       scf.parallel (%{{.+}}, %{{.+}}) = (%c0, %c0) to (%arg1, %c16)
//   CHECK-NOT:         scf.parallel
//       CHECK:     }
//       CHECK:   } else {
//   CHECK-NOT:     scf.parallel
//       CHECK:   return
func.func @nested_dynamic(%m: memref<?x16x32x32xf32>, %n: index, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  scf.parallel (%t, %h) = (%c0, %c0) to (%n, %c16) step (%c1, %c1) {
    scf.parallel (%i, %j) = (%c0, %c0) to (%c32, %c32) step (%c1, %c1) {
      memref.store %v, %m[%t, %h, %i, %j] : memref<?x16x32x32xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}

// -----

// The static part of the outer dimensions decides where it reaches 64: a
// dynamic extent counts as one, so (n, 64) outer iterations peel without a
// run-time check; 8 × 8 = 64 peel; 63 do not.
// CHECK-LABEL: func.func @static_part
//       CHECK:   %[[ENOUGH:.+]] = arith.cmpi sge, %{{.+}}, %c16384
//       CHECK:   %[[FORK:.+]] = arith.andi %[[ENOUGH]]
//       CHECK:   scf.if %[[FORK]] {
//   CHECK-NEXT:     scf.parallel (%{{.+}}, %{{.+}}) = (%c0, %c0) to (%arg1, %c64) step (%c1, %c1) {
//   CHECK-NEXT:       scf.for %{{.+}} = %c0 to %c128 step %c1 {
// CHECK-LABEL: func.func @three
//       CHECK:   scf.parallel (%{{.+}}, %{{.+}}) = (%c0, %c0) to (%c8, %c8) step (%c1, %c1) {
//       CHECK:     scf.for %{{.+}} = %c0 to %c512 step %c1 {
// CHECK-LABEL: func.func @below
//       CHECK:   scf.parallel (%{{.+}}, %{{.+}}) = (%c0, %c0) to (%c63, %c512)
//   CHECK-NOT:   scf.for
func.func @static_part(%m: memref<?x64x128xf32>, %n: index, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  scf.parallel (%t, %h, %d) = (%c0, %c0, %c0) to (%n, %c64, %c128) step (%c1, %c1, %c1) {
    memref.store %v, %m[%t, %h, %d] : memref<?x64x128xf32>
    scf.reduce
  }
  return
}
func.func @three(%m: memref<8x8x512xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c512 = arith.constant 512 : index
  scf.parallel (%a, %b, %d) = (%c0, %c0, %c0) to (%c8, %c8, %c512) step (%c1, %c1, %c1) {
    memref.store %v, %m[%a, %b, %d] : memref<8x8x512xf32>
    scf.reduce
  }
  return
}
func.func @below(%m: memref<63x512xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c63 = arith.constant 63 : index
  %c512 = arith.constant 512 : index
  scf.parallel (%t, %d) = (%c0, %c0) to (%c63, %c512) step (%c1, %c1) {
    memref.store %v, %m[%t, %d] : memref<63x512xf32>
    scf.reduce
  }
  return
}

// -----

// Peeled loops, then one-iteration loops (a decode step's token) around
// parallel loops: each inner loop is a candidate and stays parallel (an
// erased loop left in the pass's kept set could alias a later op and
// serialise it).
// CHECK-LABEL: func.func @after_peel
// CHECK-COUNT-4: scf.parallel (%{{.+}}) = (%c0) to (%c128)
// CHECK-COUNT-4: scf.parallel (%{{.+}}) = (%c0) to (%c65536)
func.func @after_peel(%m: memref<128x512xf32>, %w: memref<65536xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %c512 = arith.constant 512 : index
  %c65536 = arith.constant 65536 : index
  scf.parallel (%t, %d) = (%c0, %c0) to (%c128, %c512) step (%c1, %c1) {
    memref.store %v, %m[%t, %d] : memref<128x512xf32>
    scf.reduce
  }
  scf.parallel (%t, %d) = (%c0, %c0) to (%c128, %c512) step (%c1, %c1) {
    memref.store %v, %m[%t, %d] : memref<128x512xf32>
    scf.reduce
  }
  scf.parallel (%t, %d) = (%c0, %c0) to (%c128, %c512) step (%c1, %c1) {
    memref.store %v, %m[%t, %d] : memref<128x512xf32>
    scf.reduce
  }
  scf.parallel (%t, %d) = (%c0, %c0) to (%c128, %c512) step (%c1, %c1) {
    memref.store %v, %m[%t, %d] : memref<128x512xf32>
    scf.reduce
  }
  scf.parallel (%t) = (%c0) to (%c1) step (%c1) {
    scf.parallel (%i) = (%c0) to (%c65536) step (%c1) {
      memref.store %v, %w[%i] : memref<65536xf32>
      scf.reduce
    }
    scf.reduce
  }
  scf.parallel (%t) = (%c0) to (%c1) step (%c1) {
    scf.parallel (%i) = (%c0) to (%c65536) step (%c1) {
      memref.store %v, %w[%i] : memref<65536xf32>
      scf.reduce
    }
    scf.reduce
  }
  scf.parallel (%t) = (%c0) to (%c1) step (%c1) {
    scf.parallel (%i) = (%c0) to (%c65536) step (%c1) {
      memref.store %v, %w[%i] : memref<65536xf32>
      scf.reduce
    }
    scf.reduce
  }
  scf.parallel (%t) = (%c0) to (%c1) step (%c1) {
    scf.parallel (%i) = (%c0) to (%c65536) step (%c1) {
      memref.store %v, %w[%i] : memref<65536xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}

// -----

// The CPU lowering makes no parallel reductions: one would be a bug.
func.func @reduction(%n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{has 1 reductions; the CPU lowering makes none}}
  %r = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%zero) -> f32 {
    %one = arith.constant 1.0 : f32
    scf.reduce(%one : f32) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      scf.reduce.return %s : f32
    }
  }
  return %r : f32
}
