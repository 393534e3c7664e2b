// RUN: not k3-opt %s --k3-gpu-async-launches 2>&1 | FileCheck %s

// A loop nest k3-gpu-map-loops mapped that convert-parallel-loops-to-gpu
// left in the host program would run serially on the host: the pass stops
// with one error on the loop.
// CHECK: host-loop-left.mlir:[[@LINE+6]]:3: error: k3-gpu-async-launches: a loop nest mapped to blocks and threads did not become a kernel (it would run serially on the host)
func.func @f(%m: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    memref.store %z, %m[%i] : memref<16xf32>
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = block_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  return
}
