// RUN: k3-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --buffer-deallocation-pipeline --k3-return-arguments | FileCheck %s
// Without the pass, deallocation returns a clone (a copy) of each argument:
// RUN: k3-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --buffer-deallocation-pipeline | FileCheck %s --check-prefix=CLONE
// CLONE-LABEL: func.func @step
// CLONE: bufferization.clone %arg0

#map = affine_map<(d0) -> (d0)>

// A state updated in place and an input returned as it is: both are the
// arguments themselves; the fresh result stays an allocation.
// CHECK-LABEL: func.func @step(%arg0: memref<4xf32>, %arg1: memref<4xf32>)
// CHECK-NOT: bufferization.clone
// CHECK: linalg.generic {{.*}} ins(%arg1 : memref<4xf32>) outs(%arg0 : memref<4xf32>)
// CHECK: %[[NEW:.*]] = memref.alloc
// CHECK-NOT: bufferization.clone
// CHECK: return %arg0, %arg1, %[[NEW]]
func.func @step(%state: tensor<4xf32>, %x: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %s = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%state : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  return %s, %x, %y : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// A function called in the module keeps its clones: the caller owns and
// frees what it returns.
// CHECK-LABEL: func.func @callee
// CHECK: %[[C:.*]] = bufferization.clone %arg0
// CHECK: return %[[C]]
func.func @callee(%state: tensor<4xf32>) -> tensor<4xf32> {
  return %state : tensor<4xf32>
}
func.func @caller(%state: tensor<4xf32>) -> tensor<4xf32> {
  %r = func.call @callee(%state) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// A private function (not an entry point) keeps its clone too.
// CHECK-LABEL: func.func private @helper
// CHECK: bufferization.clone %arg0
func.func private @helper(%state: tensor<4xf32>) -> tensor<4xf32> {
  return %state : tensor<4xf32>
}

// An argument returned twice: the first result is the argument, the second
// stays a copy (two results on one buffer would be two state tensors the
// next call updates over each other).
// CHECK-LABEL: func.func @twice
// CHECK: %[[C:.*]] = bufferization.clone %arg0
// CHECK: return %arg0, %[[C]]
func.func @twice(%state: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  return %state, %state : tensor<4xf32>, tensor<4xf32>
}
