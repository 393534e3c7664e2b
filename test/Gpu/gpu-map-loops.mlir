// RUN: k3-opt %s --k3-gpu-map-loops | FileCheck %s
// RUN: k3-opt %s --k3-gpu-map-loops=threads=32 | FileCheck %s --check-prefix=T32
// RUN: not k3-opt %s --k3-gpu-map-loops=threads=2048 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: k3-opt %s --k3-gpu-map-loops=min-blocks=132 | FileCheck %s --check-prefix=SM
// RUN: k3-opt %s --k3-gpu-map-loops=min-blocks=64 | FileCheck %s --check-prefix=SM64
// RUN: not k3-opt %s --k3-gpu-map-loops=min-blocks=-1 2>&1 | FileCheck %s --check-prefix=BADMIN

// The innermost dimension is tiled by 128 (threadIdx.x); the outer loop's
// dimensions (rows, column tiles) are collapsed into one on blockIdx.x, the
// column tiles fastest; the tile loop keeps a constant trip count with a
// guard for the tail.
// CHECK-LABEL: func.func @rows
// CHECK: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[STEP:.*]] = arith.muli %{{.*}}, %[[C128]]
// CHECK: %[[TILES:.*]] = affine.apply #{{.*}}()[%[[STEP]]]
// CHECK: scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK: arith.remsi %[[B]], %[[TILES]]
// CHECK: arith.divsi %[[B]], %[[TILES]]
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to (%{{.*}}, %[[STEP]])
// CHECK: scf.if
// CHECK: memref.store
// CHECK: mapping = [#gpu.loop_dim_map<processor = sequential, map = (d0) -> (d0), bound = (d0) -> (d0)>, #gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]
// T32-LABEL: func.func @rows
// T32: arith.constant 32 : index
// BAD: k3-gpu-map-loops: threads=2048 is outside [1, 1024]
// BADMIN: k3-gpu-map-loops: min-blocks=-1 is negative
// A dynamic extent keeps its 128 threads whatever min-blocks says.
// SM-LABEL: func.func @rows
// SM: arith.constant 128 : index
// SM-LABEL: func.func @small
// SM: %[[T3:.+]] = arith.muli %{{.+}}, %c3{{.*}} : index
// SM: scf.parallel ({{.*}}) = ({{.*}}) to (%{{.*}}, %{{.*}}, %{{.*}}, %[[T3]])
func.func @rows(%x: memref<?x300xf32>, %y: memref<?x300xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c300 = arith.constant 300 : index
  %t = memref.dim %x, %c0 : memref<?x300xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%t, %c300) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<?x300xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %y[%i, %j] : memref<?x300xf32>
    scf.reduce
  }
  return
}

// A small static extent gets exactly that many threads; four outer
// dimensions collapse into blockIdx.x too.
// CHECK-LABEL: func.func @small
// CHECK: arith.constant 3 : index
// CHECK: processor = thread_x
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]
func.func @small(%x: memref<2x2x2x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%a, %b, %c, %d) = (%c0, %c0, %c0, %c0) to (%c2, %c2, %c2, %c3) step (%c1, %c1, %c1, %c1) {
    memref.store %z, %x[%a, %b, %c, %d] : memref<2x2x2x3xf32>
    scf.reduce
  }
  return
}

// 64 x 128 (the KDA scan's heads and columns): 64 blocks of 128 threads;
// to reach 132 blocks (an H200's SMs), blocks of 32 (256 blocks), in whole
// warps; 64 blocks are enough for min-blocks=64. The 2 x 2 x 2 x 3 nest
// has fewer threads than a warp: it keeps its 3.
// CHECK-LABEL: func.func @heads
// CHECK: %[[T:.+]] = arith.muli %{{.+}}, %c128{{.*}} : index
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to (%{{.*}}, %[[T]])
// SM-LABEL: func.func @heads
// SM: %[[T:.+]] = arith.muli %{{.+}}, %c32{{.*}} : index
// SM: scf.parallel ({{.*}}) = ({{.*}}) to (%{{.*}}, %[[T]])
// SM: processor = thread_x
// SM64-LABEL: func.func @heads
// SM64: %[[T:.+]] = arith.muli %{{.+}}, %c128{{.*}} : index
// SM64: scf.parallel ({{.*}}) = ({{.*}}) to (%{{.*}}, %[[T]])
func.func @heads(%x: memref<64x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%h, %j) = (%c0, %c0) to (%c64, %c128) step (%c1, %c1) {
    memref.store %z, %x[%h, %j] : memref<64x128xf32>
    scf.reduce
  }
  return
}

// Loops already inside a GPU region are left alone.
// CHECK-LABEL: func.func @inside_launch
// CHECK-NOT: mapping
// CHECK: return
func.func @inside_launch(%x: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %z = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
      memref.store %z, %x[%i] : memref<8xf32>
      scf.reduce
    }
    gpu.terminator
  }
  return
}
