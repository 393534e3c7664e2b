// RUN: k3-opt %s --k3-return-arguments | FileCheck %s
// The pass on deallocated memref IR: a clone is replaced only when nothing
// that writes a buffer (only clones, deallocations, metadata) lies between
// it and the return.

// CHECK-LABEL: func.func @frees_between
// CHECK-NOT: bufferization.clone %arg0
// CHECK: %[[N:.*]] = bufferization.clone %alloc
// CHECK-NOT: bufferization.clone %arg0
// CHECK: return %arg0, %[[N]] :
func.func @frees_between(%a: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>) {
  %t = memref.alloc() : memref<4xf32>
  %c = bufferization.clone %a : memref<4xf32> to memref<4xf32>
  %n = bufferization.clone %t : memref<4xf32> to memref<4xf32>
  %base, %off, %size, %stride = memref.extract_strided_metadata %t : memref<4xf32> -> memref<f32>, index, index, index
  memref.dealloc %t : memref<4xf32>
  return %c, %n : memref<4xf32>, memref<4xf32>
}

// A write to the argument after the clone: the clone holds the value before
// it, so it stays.
// CHECK-LABEL: func.func @written_after
// CHECK: %[[C:.*]] = bufferization.clone %arg0
// CHECK: linalg.fill
// CHECK: return %[[C]]
func.func @written_after(%a: memref<4xf32>) -> memref<4xf32> {
  %c = bufferization.clone %a : memref<4xf32> to memref<4xf32>
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%a : memref<4xf32>)
  return %c : memref<4xf32>
}

// A clone of something other than an argument stays.
// CHECK-LABEL: func.func @not_an_argument
// CHECK: bufferization.clone %[[V:.*]] :
func.func @not_an_argument(%a: memref<8xf32>) -> memref<4xf32> {
  %v = memref.subview %a[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  %c = bufferization.clone %v : memref<4xf32, strided<[1]>> to memref<4xf32, strided<[1]>>
  %r = memref.cast %c : memref<4xf32, strided<[1]>> to memref<4xf32>
  return %r : memref<4xf32>
}
