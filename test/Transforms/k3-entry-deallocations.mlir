// RUN: k3-opt %s --split-input-file --k3-entry-deallocations | FileCheck %s

// An entry point as deallocation leaves it: every call's result, the
// entry's own stack and the returned state in one deallocation at the end.
// The layer's hidden state %h is freed after its last use (the second
// call, through a cast), the stack after the output's call; the returned
// results (%o and the state %s) were never freed by the deallocation and
// leave it, so nothing is left of it.
// CHECK-LABEL: func.func @entry(
// CHECK: %[[H:[0-9]+]]:2 = call @layer(%arg0, %arg1)
// CHECK-NEXT: %[[S:.+]] = memref.alloc()
// CHECK-NEXT: memref.copy %[[H]]#0, %[[S]]
// CHECK-NEXT: %[[C:.+]] = memref.cast %[[H]]#0
// CHECK-NEXT: %[[G:[0-9]+]]:2 = call @layer(%[[C]], %arg1)
// CHECK-NEXT: memref.dealloc %[[H]]#0
// CHECK-NEXT: %[[O:.+]] = call @out(%[[G]]#0, %[[S]])
// CHECK-NEXT: memref.dealloc %[[G]]#0
// CHECK-NEXT: memref.dealloc %[[S]]
// CHECK-NOT: bufferization.dealloc
// CHECK-NOT: extract_strided_metadata
// CHECK-NEXT: return %[[O]], %[[H]]#1, %[[G]]#1
func.func private @layer(%x: memref<4xf32>, %w: memref<4xf32>) -> (memref<4xf32>, memref<2xf32>) {
  %y = memref.alloc() : memref<4xf32>
  %s = memref.alloc() : memref<2xf32>
  return %y, %s : memref<4xf32>, memref<2xf32>
}
func.func private @out(%x: memref<4xf32>, %stack: memref<4xf32>) -> memref<8xf32> {
  %y = memref.alloc() : memref<8xf32>
  return %y : memref<8xf32>
}
func.func @entry(%x: memref<4xf32>, %w: memref<4xf32>) -> (memref<8xf32>, memref<2xf32>, memref<2xf32>) {
  %true = arith.constant true
  %h:2 = call @layer(%x, %w) : (memref<4xf32>, memref<4xf32>) -> (memref<4xf32>, memref<2xf32>)
  %stack = memref.alloc() : memref<4xf32>
  memref.copy %h#0, %stack : memref<4xf32> to memref<4xf32>
  %hc = memref.cast %h#0 : memref<4xf32> to memref<4xf32>
  %g:2 = call @layer(%hc, %w) : (memref<4xf32>, memref<4xf32>) -> (memref<4xf32>, memref<2xf32>)
  %o = call @out(%g#0, %stack) : (memref<4xf32>, memref<4xf32>) -> memref<8xf32>
  %b0, %o0, %z0, %t0 = memref.extract_strided_metadata %h#0 : memref<4xf32> -> memref<f32>, index, index, index
  %b1, %o1, %z1, %t1 = memref.extract_strided_metadata %h#1 : memref<2xf32> -> memref<f32>, index, index, index
  %b2, %o2, %z2, %t2 = memref.extract_strided_metadata %g#0 : memref<4xf32> -> memref<f32>, index, index, index
  %b3, %o3, %z3, %t3 = memref.extract_strided_metadata %g#1 : memref<2xf32> -> memref<f32>, index, index, index
  %b4, %o4, %z4, %t4 = memref.extract_strided_metadata %o : memref<8xf32> -> memref<f32>, index, index, index
  %r:3 = bufferization.dealloc (%b0, %stack, %b1, %b2, %b3, %b4 : memref<f32>, memref<4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>)
      if (%true, %true, %true, %true, %true, %true) retain (%o, %h#1, %g#1 : memref<8xf32>, memref<2xf32>, memref<2xf32>)
  return %o, %h#1, %g#1 : memref<8xf32>, memref<2xf32>, memref<2xf32>
}

// -----

// What cannot be told apart before run time stays in the deallocation: a
// result freed only under a condition (%f), an argument. The ownership
// results are read, so the returned buffer %u stays listed too; the call's
// own allocation %a still goes early.
// CHECK-LABEL: func.func @kept(
// CHECK: %[[A:.+]] = call @fresh(%arg0)
// CHECK-NEXT: %[[F:.+]] = call @fresh(%[[A]])
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: %[[U:.+]] = call @fresh(%[[F]])
// CHECK-NEXT: %[[R:.+]]:2 = bufferization.dealloc (%arg0, %[[F]], %[[U]] : {{.*}}) if (%true, %arg1, %true) retain (%[[U]], %arg0 :
// CHECK-NEXT: return %[[U]], %[[R]]#1
func.func private @fresh(%x: memref<4xf32>) -> memref<4xf32> {
  %y = memref.alloc() : memref<4xf32>
  return %y : memref<4xf32>
}
func.func @kept(%x: memref<4xf32>, %c: i1) -> (memref<4xf32>, i1) {
  %true = arith.constant true
  %a = call @fresh(%x) : (memref<4xf32>) -> memref<4xf32>
  %f = call @fresh(%a) : (memref<4xf32>) -> memref<4xf32>
  %u = call @fresh(%f) : (memref<4xf32>) -> memref<4xf32>
  %r:2 = bufferization.dealloc (%x, %a, %f, %u : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>)
      if (%true, %true, %c, %true) retain (%u, %x : memref<4xf32>, memref<4xf32>)
  return %u, %r#1 : memref<4xf32>, i1
}

// -----

// A callee that may return its argument: its result may be %a under
// another name, which the deallocation would free a second time (or the
// function return). The function keeps its deallocation as it is.
// CHECK-LABEL: func.func @aliased(
// CHECK-NOT: memref.dealloc
// CHECK: bufferization.dealloc (%{{.+}}, %{{.+}} : memref<4xf32>, memref<4xf32>) if (%true, %true) retain (%{{.+}} :
func.func private @fresh(%x: memref<4xf32>) -> memref<4xf32> {
  %y = memref.alloc() : memref<4xf32>
  return %y : memref<4xf32>
}
func.func private @maybe_arg(%x: memref<4xf32>) -> memref<4xf32> {
  return %x : memref<4xf32>
}
func.func @aliased(%x: memref<4xf32>) -> memref<4xf32> {
  %true = arith.constant true
  %a = call @fresh(%x) : (memref<4xf32>) -> memref<4xf32>
  %m = call @maybe_arg(%a) : (memref<4xf32>) -> memref<4xf32>
  %r = bufferization.dealloc (%a, %m : memref<4xf32>, memref<4xf32>) if (%true, %true) retain (%m : memref<4xf32>)
  return %m : memref<4xf32>
}

// -----

// %a listed twice, once under a condition: freed early once, and neither
// entry stays in the deallocation (which would free it again).
// CHECK-LABEL: func.func @twice(
// CHECK: %[[A:.+]] = call @fresh(%arg0)
// CHECK-NEXT: %[[U:.+]] = call @fresh(%[[A]])
// CHECK-NEXT: memref.cast %[[A]]
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: return %[[U]]
func.func private @fresh(%x: memref<4xf32>) -> memref<4xf32> {
  %y = memref.alloc() : memref<4xf32>
  return %y : memref<4xf32>
}
func.func @twice(%x: memref<4xf32>, %c: i1) -> memref<4xf32> {
  %true = arith.constant true
  %a = call @fresh(%x) : (memref<4xf32>) -> memref<4xf32>
  %u = call @fresh(%a) : (memref<4xf32>) -> memref<4xf32>
  %v = memref.cast %a : memref<4xf32> to memref<?xf32>
  %r = bufferization.dealloc (%a, %v, %u : memref<4xf32>, memref<?xf32>, memref<4xf32>) if (%true, %c, %true) retain (%u : memref<4xf32>)
  return %u : memref<4xf32>
}

// -----

// A value made in a region (or by an op that is neither a view nor a call
// of known results) may alias a buffer under another name: the function
// keeps its deallocation.
// CHECK-LABEL: func.func @selected(
// CHECK-NOT: memref.dealloc
// CHECK: bufferization.dealloc
func.func private @fresh(%x: memref<4xf32>) -> memref<4xf32> {
  %y = memref.alloc() : memref<4xf32>
  return %y : memref<4xf32>
}
func.func @selected(%x: memref<4xf32>, %c: i1) -> memref<4xf32> {
  %true = arith.constant true
  %a = call @fresh(%x) : (memref<4xf32>) -> memref<4xf32>
  %b = call @fresh(%x) : (memref<4xf32>) -> memref<4xf32>
  %s = arith.select %c, %a, %b : memref<4xf32>
  %u = call @fresh(%s) : (memref<4xf32>) -> memref<4xf32>
  %r = bufferization.dealloc (%a, %b, %u : memref<4xf32>, memref<4xf32>, memref<4xf32>) if (%true, %true, %true) retain (%u : memref<4xf32>)
  return %u : memref<4xf32>
}
