// RUN: k3-opt %s --split-input-file --k3-gpu-dedupe-kernels | FileCheck %s

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

// -----

// Copies into two rows of one buffer (the AttnRes seals' writes into the
// blocks' stack) differ only in the static offset of their destination:
// an argument that only loads and stores use takes its offset from the
// descriptor instead, the launches cast to that type, and the two kernels
// are one. @s_kernel's argument is also a subview's source: it keeps its
// static offset, and its own kernel.
// CHECK-LABEL: gpu.module @r0_kernel
// CHECK: gpu.func @r0_kernel(%{{.+}}: memref<4xf32>, %{{.+}}: memref<4xf32, strided<[1], offset: ?>>)
// CHECK-NOT: gpu.module @r1_kernel
// CHECK: gpu.func @s_kernel(%{{.+}}: memref<4xf32, strided<[1], offset: 4>>)
// CHECK-LABEL: func.func @g
// CHECK: %[[A:.+]] = memref.cast %{{.+}} : memref<4xf32, strided<[1]>> to memref<4xf32, strided<[1], offset: ?>>
// CHECK: gpu.launch_func @r0_kernel::@r0_kernel {{.*}} args(%{{.+}} : memref<4xf32>, %[[A]] : memref<4xf32, strided<[1], offset: ?>>)
// CHECK: %[[B:.+]] = memref.cast %{{.+}} : memref<4xf32, strided<[1], offset: 4>> to memref<4xf32, strided<[1], offset: ?>>
// CHECK: gpu.launch_func @r0_kernel::@r0_kernel {{.*}} args(%{{.+}} : memref<4xf32>, %[[B]] : memref<4xf32, strided<[1], offset: ?>>)
// CHECK: gpu.launch_func @s_kernel::@s_kernel
module attributes {gpu.container_module} {
  gpu.module @r0_kernel {
    gpu.func @r0_kernel(%src: memref<4xf32>, %dst: memref<4xf32, strided<[1]>>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %src[%i] : memref<4xf32>
      memref.store %v, %dst[%i] : memref<4xf32, strided<[1]>>
      gpu.return
    }
  }
  gpu.module @r1_kernel {
    gpu.func @r1_kernel(%src: memref<4xf32>, %dst: memref<4xf32, strided<[1], offset: 4>>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %src[%i] : memref<4xf32>
      memref.store %v, %dst[%i] : memref<4xf32, strided<[1], offset: 4>>
      gpu.return
    }
  }
  gpu.module @s_kernel {
    gpu.func @s_kernel(%m: memref<4xf32, strided<[1], offset: 4>>) kernel {
      %i = gpu.thread_id x
      %h = memref.subview %m[0] [2] [1] : memref<4xf32, strided<[1], offset: 4>> to memref<2xf32, strided<[1], offset: 4>>
      %v = memref.load %h[%i] : memref<2xf32, strided<[1], offset: 4>>
      memref.store %v, %h[%i] : memref<2xf32, strided<[1], offset: 4>>
      gpu.return
    }
  }
  func.func @g(%x: memref<4xf32>, %stack: memref<2x4xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %r0 = memref.subview %stack[0, 0] [1, 4] [1, 1] : memref<2x4xf32> to memref<4xf32, strided<[1]>>
    %r1 = memref.subview %stack[1, 0] [1, 4] [1, 1] : memref<2x4xf32> to memref<4xf32, strided<[1], offset: 4>>
    gpu.launch_func @r0_kernel::@r0_kernel blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%x : memref<4xf32>, %r0 : memref<4xf32, strided<[1]>>)
    gpu.launch_func @r1_kernel::@r1_kernel blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%x : memref<4xf32>, %r1 : memref<4xf32, strided<[1], offset: 4>>)
    gpu.launch_func @s_kernel::@s_kernel blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%r1 : memref<4xf32, strided<[1], offset: 4>>)
    return
  }
}
