// k3-gpu-merge-launches: independent launches as one, over the
// concatenation of their grids; dependent ones stay apart and in order.
// RUN: k3-opt %s --k3-gpu-merge-launches --split-input-file | FileCheck %s

// Two projections of one row into two buffers: one launch of 2 + 3 blocks
// at the larger block size; the first body (block ids 0-1) keeps its own
// coordinates, the second (2-4) gets (bid - 2) % 3 and a guard for its 32
// threads.
// CHECK-LABEL: func.func @independent(
// CHECK:       gpu.launch blocks(%[[BX:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %[[G:.+]], %{{.+}} = %c1{{.*}}, %{{.+}} = %c1{{.*}}) threads(%[[TX:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %c128
// CHECK:         %[[FIRST:.+]] = arith.cmpi ult, %[[BX]],
// CHECK:         scf.if %[[FIRST]] {
// CHECK:           memref.store {{.+}} %arg1
// CHECK:         } else {
// CHECK:           arith.subi %[[BX]]
// CHECK:           %[[FEW:.+]] = arith.cmpi ult, %[[TX]], %c32
// CHECK:           scf.if %[[FEW]] {
// CHECK:             memref.store {{.+}} %arg2
// CHECK:       gpu.terminator
// CHECK-NOT:   gpu.launch
// CHECK:       return
func.func @independent(%x: memref<64xf32>, %a: memref<256xf32>, %b: memref<96xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %i = arith.muli %bx, %sx : index
    %j = arith.addi %i, %tx : index
    %v = memref.load %x[%tx] : memref<64xf32>
    memref.store %v, %a[%j] : memref<256xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c3, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %i = arith.muli %bx, %sx : index
    %j = arith.addi %i, %tx : index
    %v = memref.load %x[%tx] : memref<64xf32>
    memref.store %v, %b[%j] : memref<96xf32>
    gpu.terminator
  }
  return
}

// -----

// The second reads what the first writes (through a view): two launches.
// A third, independent of both, joins the first; the reader comes after.
// CHECK-LABEL: func.func @dependent(
// CHECK:       gpu.launch blocks{{.*}} in (%{{.+}} = %[[TWO:.+]],
// CHECK:         memref.store {{.+}} %arg1
// CHECK:         memref.store {{.+}} %arg3
// CHECK:       gpu.terminator
// CHECK:       gpu.launch blocks
// CHECK:         memref.load %{{.+}}[%{{.+}}] : memref<32xf32, strided<[1]>>
// CHECK:         memref.store {{.+}} %arg2
// CHECK-NOT:   gpu.launch
// CHECK:       return
func.func @dependent(%x: memref<32xf32>, %a: memref<64xf32>, %b: memref<32xf32>, %c: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<32xf32>
    memref.store %v, %a[%tx] : memref<64xf32>
    gpu.terminator
  }
  %view = memref.subview %a[0] [32] [1] : memref<64xf32> to memref<32xf32, strided<[1]>>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %view[%tx] : memref<32xf32, strided<[1]>>
    memref.store %v, %b[%tx] : memref<32xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<32xf32>
    memref.store %v, %c[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}

// -----

// A body with a barrier keeps its block size: it does not join a launch of
// more threads. A host read between two launches ends the run; a free of
// a buffer neither touches does not.
// CHECK-LABEL: func.func @kept_apart(
// CHECK-COUNT-3: gpu.launch blocks
// CHECK-NOT:   gpu.launch
// CHECK:       return
func.func @kept_apart(%x: memref<32xf32>, %a: memref<32xf32>, %b: memref<32xf32>, %c: memref<32xf32>, %d: memref<32xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<32xf32>
    gpu.barrier
    memref.store %v, %a[%tx] : memref<32xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%c0] : memref<32xf32>
    memref.store %v, %b[%c0] : memref<32xf32>
    gpu.terminator
  }
  %h = memref.load %x[%c0] : memref<32xf32>
  %tmp = memref.alloc() : memref<4xf32>
  memref.dealloc %tmp : memref<4xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<32xf32>
    memref.store %v, %c[%tx] : memref<32xf32>
    gpu.terminator
  }
  return %h : f32
}

// -----

// The free of a buffer the first launch reads ends the run: the first
// launch must not move past it.
// CHECK-LABEL: func.func @freed_between(
// CHECK:       gpu.launch blocks
// CHECK:       memref.dealloc
// CHECK:       gpu.launch blocks
func.func @freed_between(%x: memref<32xf32>, %a: memref<32xf32>, %b: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %t = memref.alloc() : memref<32xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %t[%tx] : memref<32xf32>
    memref.store %v, %a[%tx] : memref<32xf32>
    gpu.terminator
  }
  memref.dealloc %t : memref<32xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<32xf32>
    memref.store %v, %b[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}

// -----

// A function some call passes one buffer for two arguments: its arguments
// may alias, so it is left alone.
// CHECK-LABEL: func.func private @maybe_aliased(
// CHECK-COUNT-2: gpu.launch blocks
func.func private @maybe_aliased(%x: memref<32xf32>, %a: memref<32xf32>, %b: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<32xf32>
    memref.store %v, %a[%tx] : memref<32xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<32xf32>
    memref.store %v, %b[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}
func.func @caller(%x: memref<32xf32>, %a: memref<32xf32>) {
  call @maybe_aliased(%x, %a, %a) : (memref<32xf32>, memref<32xf32>, memref<32xf32>) -> ()
  return
}

// -----

// A body that reads its thread id as an op (not the launch's argument)
// would see the merged launch's: left alone.
// CHECK-LABEL: func.func @id_ops(
// CHECK-COUNT-2: gpu.launch blocks
func.func @id_ops(%x: memref<32xf32>, %a: memref<32xf32>, %b: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %t = gpu.thread_id x
    %v = memref.load %x[%t] : memref<32xf32>
    memref.store %v, %a[%t] : memref<32xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<32xf32>
    memref.store %v, %b[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}

// -----

// Two bodies that declare the same workgroup buffer share it (one body
// runs in a block): 2 x 32 KiB would be over a block's 48 KiB of static
// shared memory side by side. The block size is still an affine.apply of
// constants here, as convert-parallel-loops-to-gpu leaves it: folded.
// CHECK-LABEL: func.func @shared_tiles(
// CHECK:       gpu.launch {{.*}} workgroup(%[[TILE:.+]] : memref<16384xbf16, #gpu.address_space<workgroup>>) {
// CHECK:         memref.store {{.+}}, %[[TILE]]
// CHECK:       } else {
// CHECK:         memref.store {{.+}}, %[[TILE]]
// CHECK-NOT:   gpu.launch
func.func @shared_tiles(%x: memref<32xbf16>, %a: memref<32xbf16>, %b: memref<32xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %t = affine.apply affine_map<(d0)[s0, s1] -> ((d0 - s0) ceildiv s1)>(%c32)[%c0, %c1]
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %t, %sy = %c1, %sz = %c1)
             workgroup(%tile : memref<16384xbf16, #gpu.address_space<workgroup>>) {
    %v = memref.load %x[%tx] : memref<32xbf16>
    memref.store %v, %tile[%tx] : memref<16384xbf16, #gpu.address_space<workgroup>>
    gpu.barrier
    %w = memref.load %tile[%tx] : memref<16384xbf16, #gpu.address_space<workgroup>>
    memref.store %w, %a[%tx] : memref<32xbf16>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %t, %sy = %c1, %sz = %c1)
             workgroup(%tile : memref<16384xbf16, #gpu.address_space<workgroup>>) {
    %v = memref.load %x[%tx] : memref<32xbf16>
    memref.store %v, %tile[%tx] : memref<16384xbf16, #gpu.address_space<workgroup>>
    gpu.barrier
    %w = memref.load %tile[%tx] : memref<16384xbf16, #gpu.address_space<workgroup>>
    memref.store %w, %b[%tx] : memref<32xbf16>
    gpu.terminator
  }
  return
}

// -----

// Different workgroup buffers sit side by side, each body keeping its own
// (the first body's two stay two).
// CHECK-LABEL: func.func @side_by_side(
// CHECK:       gpu.launch {{.*}} workgroup(%[[S0:.+]] : memref<32xf32, #gpu.address_space<workgroup>>, %[[S1:.+]] : memref<32xf32, #gpu.address_space<workgroup>>, %[[T0:.+]] : memref<16xf32, #gpu.address_space<workgroup>>)
// CHECK:         memref.store {{.+}}, %[[S0]]
// CHECK:         memref.store {{.+}}, %[[S1]]
// CHECK:       } else {
// CHECK:         memref.store {{.+}}, %[[T0]]
func.func @side_by_side(%x: memref<32xf32>, %a: memref<32xf32>, %b: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
             workgroup(%s0 : memref<32xf32, #gpu.address_space<workgroup>>,
                       %s1 : memref<32xf32, #gpu.address_space<workgroup>>) {
    %v = memref.load %x[%tx] : memref<32xf32>
    memref.store %v, %s0[%tx] : memref<32xf32, #gpu.address_space<workgroup>>
    memref.store %v, %s1[%tx] : memref<32xf32, #gpu.address_space<workgroup>>
    %w = memref.load %s1[%tx] : memref<32xf32, #gpu.address_space<workgroup>>
    memref.store %w, %a[%tx] : memref<32xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
             workgroup(%t0 : memref<16xf32, #gpu.address_space<workgroup>>) {
    %v = memref.load %x[%tx] : memref<32xf32>
    memref.store %v, %t0[%c0] : memref<16xf32, #gpu.address_space<workgroup>>
    memref.store %v, %b[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}

// -----

// Buffers the pass cannot tell apart stay apart: a select of two buffers
// (it may be %a, which the other launch reads), a body reading its global
// id as an op, and a function whose caller was called with one buffer
// twice (the callee gets the aliases passed on).
// CHECK-LABEL: func.func @unknown_root(
// CHECK-COUNT-2: gpu.launch blocks
// CHECK-LABEL: func.func @global_id(
// CHECK-COUNT-2: gpu.launch blocks
// CHECK-LABEL: func.func private @inner(
// CHECK-COUNT-2: gpu.launch blocks
func.func @unknown_root(%c: i1, %x: memref<32xf32>, %a: memref<32xf32>, %b: memref<32xf32>, %d: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %m = arith.select %c, %a, %b : memref<32xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<32xf32>
    memref.store %v, %m[%tx] : memref<32xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %a[%tx] : memref<32xf32>
    memref.store %v, %d[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}
func.func @global_id(%x: memref<64xf32>, %a: memref<64xf32>, %b: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %g = gpu.global_id x
    %v = memref.load %x[%g] : memref<64xf32>
    memref.store %v, %a[%g] : memref<64xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<64xf32>
    memref.store %v, %b[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}
func.func private @inner(%x: memref<32xf32>, %a: memref<32xf32>, %b: memref<32xf32>, %d: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<32xf32>
    memref.store %v, %a[%tx] : memref<32xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %b[%tx] : memref<32xf32>
    memref.store %v, %d[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}
func.func private @outer(%x: memref<32xf32>, %a: memref<32xf32>, %b: memref<32xf32>, %d: memref<32xf32>) {
  call @inner(%x, %a, %b, %d) : (memref<32xf32>, memref<32xf32>, memref<32xf32>, memref<32xf32>) -> ()
  return
}
func.func @entry(%x: memref<32xf32>, %a: memref<32xf32>, %d: memref<32xf32>) {
  call @outer(%x, %a, %a, %d) : (memref<32xf32>, memref<32xf32>, memref<32xf32>, memref<32xf32>) -> ()
  return
}

// -----

// Warpgroup tensor-core kernels merge with each other only (a decode
// batch's projections of one row on sm_90a): the two wgmma bodies share
// their staging tile in one launch; the plain launch beside them, as
// independent, stays apart (merged, it would be compiled to a wgmma
// kernel's registers).
// CHECK-LABEL: func.func @warpgroups(
// CHECK:       gpu.launch blocks({{.+}}) in (%{{.+}} = %{{.+}}, {{.+}}) threads({{.+}}) in (%{{.+}} = %c128{{.*}}, {{.+}}) workgroup(%[[TILE:.+]] : memref<64xbf16, #gpu.address_space<workgroup>>)
// CHECK:         nvvm.wgmma.fence.aligned
// CHECK:         memref.store {{.+}} %arg1
// CHECK:       } else {
// CHECK:         nvvm.wgmma.fence.aligned
// CHECK:         memref.store {{.+}} %arg2
// CHECK:       gpu.terminator
// CHECK:       gpu.launch
// CHECK-NOT:     nvvm.wgmma
// CHECK:         memref.store {{.+}} %arg3
// CHECK-NOT:   gpu.launch
// CHECK:       return
func.func @warpgroups(%x: memref<64xf32>, %a: memref<128xf32>, %b: memref<128xf32>, %c: memref<128xf32>) {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1)
             workgroup(%tile : memref<64xbf16, #gpu.address_space<workgroup>>) {
    nvvm.wgmma.fence.aligned
    %v = memref.load %x[%bx] : memref<64xf32>
    memref.store %v, %a[%tx] : memref<128xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1)
             workgroup(%tile : memref<64xbf16, #gpu.address_space<workgroup>>) {
    nvvm.wgmma.fence.aligned
    %v = memref.load %x[%bx] : memref<64xf32>
    memref.store %v, %b[%tx] : memref<128xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%bx] : memref<64xf32>
    memref.store %v, %c[%tx] : memref<128xf32>
    gpu.terminator
  }
  return
}
