// RUN: k3-opt %s --k3-gpu-async-launches | FileCheck %s

// Launches chain on one token; a free joins the chain and loses its own
// wait; a loop of launches is chained per iteration without waiting; the
// host waits (once, for everything queued: the runtime's one stream) only
// before it reads memory, inside a loop whose previous iteration launched,
// and before returning.
// CHECK-LABEL: func.func @chain
// CHECK: %[[BUF:.*]] = gpu.alloc host_shared
// CHECK-NEXT: %[[S:.*]] = gpu.wait async
// CHECK-NEXT: %[[L1:.*]] = gpu.launch_func async [%[[S]]] @k::@f
// CHECK-NEXT: %[[L2:.*]] = gpu.launch_func async [%[[L1]]] @k::@f
// CHECK-NEXT: %[[F:.*]] = gpu.dealloc async [%[[L2]]] %[[BUF]]
// CHECK-NEXT: scf.for
// CHECK-NEXT: %[[S2:.*]] = gpu.wait async
// CHECK-NEXT: gpu.launch_func async [%[[S2]]] @k::@f
// CHECK-NEXT: }
// CHECK-NEXT: gpu.wait [%[[F]]]
// CHECK-NEXT: memref.load
// CHECK-NEXT: scf.for
// CHECK-NEXT: %[[S3:.*]] = gpu.wait async
// CHECK-NEXT: gpu.wait [%[[S3]]]
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.store
// CHECK-NEXT: %[[S4:.*]] = gpu.wait async
// CHECK-NEXT: gpu.launch_func async [%[[S4]]] @k::@f
// CHECK-NEXT: }
// CHECK-NEXT: %[[S5:.*]] = gpu.wait async
// CHECK-NEXT: gpu.wait [%[[S5]]]
// CHECK-NEXT: return
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @f(%m: memref<8xf32>) kernel { gpu.return }
  }
  func.func @chain(%a: memref<8xf32>, %n: index) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %buf = gpu.alloc host_shared () : memref<8xf32>
    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<8xf32>)
    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%buf : memref<8xf32>)
    %s = gpu.wait async
    %f = gpu.dealloc async [%s] %buf : memref<8xf32>
    gpu.wait [%f]
    scf.for %i = %c0 to %n step %c1 {
      gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<8xf32>)
    }
    %v = memref.load %a[%c0] : memref<8xf32>
    scf.for %i = %c0 to %n step %c1 {
      %w = memref.load %a[%i] : memref<8xf32>
      memref.store %w, %a[%c0] : memref<8xf32>
      gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<8xf32>)
    }
    return %v : f32
  }

  // Nothing launched: nothing waits. A host load before any launch needs no
  // wait; an scf.if whose branch launches leaves work pending after it.
  // CHECK-LABEL: func.func @branch
  // CHECK-NOT: gpu.wait
  // CHECK: memref.load
  // CHECK-NEXT: scf.if
  // CHECK-NEXT: %[[T:.*]] = gpu.wait async
  // CHECK-NEXT: gpu.launch_func async [%[[T]]]
  // CHECK: }
  // CHECK-NEXT: %[[E:.*]] = gpu.wait async
  // CHECK-NEXT: gpu.wait [%[[E]]]
  // CHECK-NEXT: memref.store
  // CHECK-NEXT: return
  func.func @branch(%a: memref<8xf32>, %p: i1) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %v = memref.load %a[%c0] : memref<8xf32>
    scf.if %p {
      gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<8xf32>)
    }
    memref.store %v, %a[%c1] : memref<8xf32>
    return
  }

  // A host loop reading what a kernel wrote (top-k routing over logits):
  // one wait before the loop, none in its iterations.
  // CHECK-LABEL: func.func @routing
  // CHECK: %[[L:.*]] = gpu.launch_func async
  // CHECK-NEXT: gpu.wait [%[[L]]]
  // CHECK-NEXT: scf.for
  // CHECK-NOT: gpu.wait
  // CHECK: return
  func.func @routing(%a: memref<8xf32>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<8xf32>)
    scf.for %i = %c0 to %n step %c1 {
      %w = memref.load %a[%i] : memref<8xf32>
      memref.store %w, %a[%c0] : memref<8xf32>
    }
    return
  }

  // CHECK-LABEL: func.func @idle
  // CHECK-NOT: gpu.wait
  // CHECK: return
  func.func @idle(%a: memref<8xf32>) -> f32 {
    %c0 = arith.constant 0 : index
    %v = memref.load %a[%c0] : memref<8xf32>
    return %v : f32
  }

  // A layer function (private, its host code only launches and frees):
  // neither its return nor the calls to it wait; the entry point waits once,
  // before it reads memory. A private function that reads host memory is
  // called as before: a wait before the call, and its return waits.
  // CHECK-LABEL: func.func private @layer
  // CHECK: gpu.launch_func async
  // CHECK-NOT: gpu.wait [
  // CHECK: return
  func.func private @layer(%a: memref<8xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<8xf32>)
    return
  }
  // CHECK-LABEL: func.func private @reads
  // CHECK: memref.load
  // CHECK: gpu.launch_func async
  // CHECK-NEXT: gpu.wait [
  // CHECK-NEXT: return
  func.func private @reads(%a: memref<8xf32>) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %v = memref.load %a[%c0] : memref<8xf32>
    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<8xf32>)
    return %v : f32
  }
  // CHECK-LABEL: func.func @layers
  // CHECK-NEXT: %[[C0:.*]] = arith.constant 0
  // CHECK-NEXT: call @layer
  // CHECK-NEXT: call @layer
  // CHECK-NEXT: %[[W:.*]] = gpu.wait async
  // CHECK-NEXT: gpu.wait [%[[W]]]
  // CHECK-NEXT: call @reads
  // CHECK-NEXT: call @layer
  // CHECK-NEXT: %[[W2:.*]] = gpu.wait async
  // CHECK-NEXT: gpu.wait [%[[W2]]]
  // CHECK-NEXT: memref.load
  func.func @layers(%a: memref<8xf32>) -> f32 {
    %c0 = arith.constant 0 : index
    func.call @layer(%a) : (memref<8xf32>) -> ()
    func.call @layer(%a) : (memref<8xf32>) -> ()
    %r = func.call @reads(%a) : (memref<8xf32>) -> f32
    func.call @layer(%a) : (memref<8xf32>) -> ()
    %v = memref.load %a[%c0] : memref<8xf32>
    %s = arith.addf %r, %v : f32
    return %s : f32
  }

  // Host-only buffers (HostLocal.h: host allocations k3-share-host-memory
  // left, written and passed to a private helper that launches nothing)
  // need no wait: their allocation, stores, call and free follow the layer
  // call directly; the return waits.
  // CHECK-LABEL: func.func @checks
  // CHECK-NEXT: %[[C0:.*]] = arith.constant 0
  // CHECK-NEXT: call @layer
  // CHECK-NEXT: %[[P:.*]] = memref.alloc()
  // CHECK-NEXT: memref.store
  // CHECK-NEXT: call @helper(%[[P]])
  // CHECK-NEXT: memref.dealloc %[[P]]
  // CHECK-NEXT: %[[W:.*]] = gpu.wait async
  // CHECK-NEXT: gpu.wait [%[[W]]]
  // CHECK-NEXT: return
  func.func private @helper(%p: memref<2xindex>) {
    return
  }
  func.func @checks(%a: memref<8xf32>) {
    %c0 = arith.constant 0 : index
    func.call @layer(%a) : (memref<8xf32>) -> ()
    %p = memref.alloc() : memref<2xindex>
    memref.store %c0, %p[%c0] : memref<2xindex>
    func.call @helper(%p) : (memref<2xindex>) -> ()
    memref.dealloc %p : memref<2xindex>
    return
  }
}
