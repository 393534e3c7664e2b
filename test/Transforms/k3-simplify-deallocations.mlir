// RUN: k3-opt %s --split-input-file --k3-simplify-deallocations | FileCheck %s

// Upstream's simplification runs in the layer function (a memref its
// deallocation also retains is never freed: the deallocation goes, its
// result is the memref's condition), not in the entry point that calls it: there it is left
// as it is, for the run-time alias check.
// CHECK-LABEL: func.func private @layer(
// CHECK-NEXT: return %arg1
// CHECK-LABEL: func.func @entry(
// CHECK-NEXT: call @layer(
// CHECK-NEXT: bufferization.dealloc (%arg0 : memref<2xf32>) if (%arg1) retain (%arg0 : memref<2xf32>)
// CHECK-NEXT: return
func.func private @layer(%a: memref<2xf32>, %c: i1) -> i1 {
  %0 = bufferization.dealloc (%a : memref<2xf32>) if (%c) retain (%a : memref<2xf32>)
  return %0 : i1
}
func.func @entry(%a: memref<2xf32>, %c: i1) -> (i1, i1) {
  %x = call @layer(%a, %c) : (memref<2xf32>, i1) -> i1
  %0 = bufferization.dealloc (%a : memref<2xf32>) if (%c) retain (%a : memref<2xf32>)
  return %x, %0 : i1, i1
}

// -----

// An entry point that calls nothing (--unroll-layers, one-op modules) is
// simplified like any function.
// CHECK-LABEL: func.func @alone(
// CHECK-NEXT: return %arg1
func.func @alone(%a: memref<2xf32>, %c: i1) -> i1 {
  %0 = bufferization.dealloc (%a : memref<2xf32>) if (%c) retain (%a : memref<2xf32>)
  return %0 : i1
}
