// RUN: k3-opt %s --k3-gpu-device-copies | FileCheck %s

// A host copy between buffers (a strided slice here) becomes linalg.copy,
// which the GPU stage maps to a kernel; a copy inside a kernel stays.
// CHECK-LABEL: func.func @slice
// CHECK: %[[V:.*]] = memref.subview
// CHECK-NEXT: linalg.copy ins(%[[V]] : memref<4x16xf32, strided<[16, 1], offset: ?>>) outs(%{{.*}} : memref<4x16xf32>)
// CHECK-NOT: memref.copy
// CHECK: gpu.launch
// CHECK: memref.copy
// CHECK: gpu.terminator
func.func @slice(%a: memref<16x4x16xf32>, %b: memref<4x16xf32>, %i: index) {
  %v = memref.subview %a[%i, 0, 0] [1, 4, 16] [1, 1, 1] : memref<16x4x16xf32> to memref<4x16xf32, strided<[16, 1], offset: ?>>
  memref.copy %v, %b : memref<4x16xf32, strided<[16, 1], offset: ?>> to memref<4x16xf32>
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%x, %y, %z) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%bx = %c1, %by = %c1, %bz = %c1) {
    memref.copy %v, %b : memref<4x16xf32, strided<[16, 1], offset: ?>> to memref<4x16xf32>
    gpu.terminator
  }
  return
}
