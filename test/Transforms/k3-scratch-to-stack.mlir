// RUN: k3-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(k3-scratch-to-stack{max-bytes=1024 max-function-bytes=1024}))' | FileCheck %s

// A row freed at the end of each iteration of a sequential loop (through
// an scf.if, used through a view) becomes one slot at the top of the
// function; its free goes.
// CHECK-LABEL: func.func @loop(
// CHECK-NEXT: %[[T:.+]] = memref.alloca() {alignment = 64 : i64} : memref<1x32xf32>
// CHECK: scf.for
// CHECK: scf.if
// CHECK-NOT: memref.alloc(
// CHECK: memref.subview %[[T]]
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @loop(%n: index, %c: i1, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    scf.if %c {
      %t = memref.alloc() {alignment = 64 : i64} : memref<1x32xf32>
      linalg.fill ins(%f : f32) outs(%t : memref<1x32xf32>)
      %row = memref.subview %t[0, 0] [1, 32] [1, 1] : memref<1x32xf32> to memref<32xf32, strided<[1]>>
      %v = memref.load %row[%c0] : memref<32xf32, strided<[1]>>
      memref.store %v, %out[%i] : memref<?xf32>
      memref.dealloc %t : memref<1x32xf32>
    }
  }
  return
}

// -----

// Each thread's iterations of a worksharing loop share the thread's slot,
// made at the top of the parallel region (once per thread), not of the
// function (shared by every thread).
// CHECK-LABEL: func.func @parallel(
// CHECK-NOT: memref.alloca
// CHECK: omp.parallel {
// CHECK-NEXT: memref.alloca() : memref<16xf32>
// CHECK: omp.loop_nest
// CHECK-NOT: memref.alloc(
// CHECK-NOT: memref.dealloc
// CHECK: omp.yield
func.func @parallel(%n: index, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
        %t = memref.alloc() : memref<16xf32>
        %v = memref.load %t[%c0] : memref<16xf32>
        memref.store %v, %out[%i] : memref<?xf32>
        memref.dealloc %t : memref<16xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// -----

// Left on the heap: a dynamic shape, a buffer over max-bytes, one freed in
// another block than its own, one yielded out of its loop, one passed to a
// call, one inside an op the pass does not know (scf.forall: every
// iteration needs its own buffer), one whose byte count overflows int64
// (2^64 bytes, which would wrap to 0), and the third 512-byte buffer of
// the function, past max-function-bytes.
// CHECK-LABEL: func.func @kept(
// CHECK-COUNT-2: memref.alloca() : memref<128xf32>
// CHECK-NOT: memref.alloca
// CHECK: return
func.func private @use(memref<8xf32>)
func.func @kept(%n: index, %c: i1) -> memref<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %dyn = memref.alloc(%n) : memref<?xf32>
  memref.dealloc %dyn : memref<?xf32>
  %big = memref.alloc() : memref<512xf32>
  memref.dealloc %big : memref<512xf32>
  %other = memref.alloc() : memref<8xf32>
  scf.if %c {
    memref.dealloc %other : memref<8xf32>
  }
  %init = memref.alloc() : memref<8xf32>
  %last = scf.for %i = %c0 to %n step %c1 iter_args(%a = %init) -> memref<8xf32> {
    %next = memref.alloc() : memref<8xf32>
    scf.yield %next : memref<8xf32>
  }
  %passed = memref.alloc() : memref<8xf32>
  func.call @use(%passed) : (memref<8xf32>) -> ()
  memref.dealloc %passed : memref<8xf32>
  scf.forall (%i) in (4) {
    %t = memref.alloc() : memref<8xf32>
    memref.dealloc %t : memref<8xf32>
  }
  %huge = memref.alloc() : memref<2x2305843009213693952xf32>
  memref.dealloc %huge : memref<2x2305843009213693952xf32>
  %a = memref.alloc() : memref<128xf32>
  memref.dealloc %a : memref<128xf32>
  %b = memref.alloc() : memref<128xf32>
  memref.dealloc %b : memref<128xf32>
  %d = memref.alloc() : memref<128xf32>
  memref.dealloc %d : memref<128xf32>
  return %last : memref<8xf32>
}

// -----

// A worksharing loop with order(concurrent) may run a thread's iterations
// at once: its buffer stays on the heap.
// CHECK-LABEL: func.func @concurrent(
// CHECK-NOT: memref.alloca
// CHECK: memref.alloc()
// CHECK: memref.dealloc
func.func @concurrent(%n: index, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  omp.parallel {
    omp.wsloop order(concurrent) {
      omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
        %t = memref.alloc() : memref<16xf32>
        %v = memref.load %t[%c0] : memref<16xf32>
        memref.store %v, %out[%i] : memref<?xf32>
        memref.dealloc %t : memref<16xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}
