// RUN: k3-opt %s --k3-gpu-dedupe-kernels | FileCheck %s

// @a_kernel and @b_kernel_3 are the same kernel under two names: one stays
// and both launches use it. @c_kernel multiplies instead: it stays its own.
// CHECK: gpu.module @a_kernel
// CHECK-NOT: gpu.module @b_kernel_3
// CHECK: gpu.module @c_kernel
// CHECK-NOT: gpu.module
// CHECK-LABEL: func.func @f
// CHECK: gpu.launch_func @a_kernel::@a_kernel
// CHECK: gpu.launch_func @a_kernel::@a_kernel
// CHECK: gpu.launch_func @c_kernel::@c_kernel
module attributes {gpu.container_module} {
  gpu.module @a_kernel {
    gpu.func @a_kernel(%m: memref<4xf32>) kernel attributes {known_block_size = array<i32: 4, 1, 1>} {
      %i = gpu.thread_id x
      %v = memref.load %m[%i] : memref<4xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %m[%i] : memref<4xf32>
      gpu.return
    }
  }
  gpu.module @b_kernel_3 {
    gpu.func @b_kernel_3(%m: memref<4xf32>) kernel attributes {known_block_size = array<i32: 4, 1, 1>} {
      %i = gpu.thread_id x
      %v = memref.load %m[%i] : memref<4xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %m[%i] : memref<4xf32>
      gpu.return
    }
  }
  gpu.module @c_kernel {
    gpu.func @c_kernel(%m: memref<4xf32>) kernel attributes {known_block_size = array<i32: 4, 1, 1>} {
      %i = gpu.thread_id x
      %v = memref.load %m[%i] : memref<4xf32>
      %w = arith.mulf %v, %v : f32
      memref.store %w, %m[%i] : memref<4xf32>
      gpu.return
    }
  }
  func.func @f(%m: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    gpu.launch_func @a_kernel::@a_kernel blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%m : memref<4xf32>)
    gpu.launch_func @b_kernel_3::@b_kernel_3 blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%m : memref<4xf32>)
    gpu.launch_func @c_kernel::@c_kernel blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%m : memref<4xf32>)
    return
  }
}
