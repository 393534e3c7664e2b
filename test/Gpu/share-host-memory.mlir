// RUN: k3-opt %s --split-input-file --verify-diagnostics --k3-share-host-memory | FileCheck %s

// Host allocations become managed (host_shared) buffers, freed on a fresh
// stream (gpu-to-llvm lowers only the async gpu.dealloc); constants are
// copied into one where they are read and freed at the end of that block.
// Code inside gpu.module kernels is left alone.
// CHECK-LABEL: func.func @host
// CHECK: %[[S:.*]] = gpu.alloc host_shared () : memref<4xf32>
// CHECK: %[[T:.*]] = memref.get_global @table : memref<4xf32>
// CHECK: memref.copy %[[T]], %[[S]]
// CHECK: %[[B:.*]] = gpu.alloc host_shared (%{{.*}}) : memref<?xf32>
// CHECK: gpu.launch_func @kernels::@k {{.*}} args(%[[S]] : memref<4xf32>, %[[B]] : memref<?xf32>)
// CHECK: %[[W:.*]] = gpu.wait async
// CHECK: %[[D:.*]] = gpu.dealloc async [%[[W]]] %[[B]]
// CHECK: gpu.wait [%[[D]]]
// CHECK: gpu.dealloc async
// CHECK: return
// CHECK: gpu.module @kernels
// CHECK: memref.alloca
module attributes {gpu.container_module} {
  memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
  func.func @host(%n: index) {
    %t = memref.get_global @table : memref<4xf32>
    %b = memref.alloc(%n) : memref<?xf32>
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%t : memref<4xf32>, %b : memref<?xf32>)
    memref.dealloc %b : memref<?xf32>
    return
  }
  gpu.module @kernels {
    gpu.func @k(%t: memref<4xf32>, %b: memref<?xf32>) kernel {
      %s = memref.alloca() : memref<4xf32, 5>
      gpu.return
    }
  }
}

// -----

// Buffers no kernel can reach (the deallocation's alias-check arrays: host
// stores, a pointer read, a call to a private helper that launches
// nothing) stay host allocations: the host writes them without waiting for
// the stream (k3-gpu-async-launches), so they must not be pool buffers a
// queued kernel may still read. A buffer passed to a function that
// launches is shared.
// A buffer passed to a private function that calls one that launches is
// shared too (the callee could hand it to a kernel).
// CHECK-LABEL: func.func @checks
// CHECK: %[[P:.*]] = memref.alloc() : memref<2xindex>
// CHECK: %[[O:.*]] = memref.alloc() : memref<2xi1>
// CHECK: %[[K:.*]] = gpu.alloc host_shared () : memref<4xf32>
// CHECK: %[[V:.*]] = gpu.alloc host_shared () : memref<4xf32>
// CHECK: call @helper(%[[P]], %[[O]])
// CHECK: call @layer(%[[K]])
// CHECK: call @via(%[[V]])
// CHECK: memref.dealloc %[[P]]
// CHECK: memref.dealloc %[[O]]
// CHECK: gpu.dealloc async
module attributes {gpu.container_module} {
  func.func private @helper(%p: memref<2xindex>, %o: memref<2xi1>) {
    return
  }
  func.func private @layer(%b: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%b : memref<4xf32>)
    return
  }
  func.func private @via(%b: memref<4xf32>) {
    func.call @layer(%b) : (memref<4xf32>) -> ()
    return
  }
  func.func @checks(%x: memref<8xf32>) {
    %c0 = arith.constant 0 : index
    %true = arith.constant true
    %p = memref.alloc() : memref<2xindex>
    %o = memref.alloc() : memref<2xi1>
    %k = memref.alloc() : memref<4xf32>
    %v = memref.alloc() : memref<4xf32>
    %ptr = memref.extract_aligned_pointer_as_index %x : memref<8xf32> -> index
    memref.store %ptr, %p[%c0] : memref<2xindex>
    memref.store %true, %o[%c0] : memref<2xi1>
    func.call @helper(%p, %o) : (memref<2xindex>, memref<2xi1>) -> ()
    func.call @layer(%k) : (memref<4xf32>) -> ()
    func.call @via(%v) : (memref<4xf32>) -> ()
    memref.dealloc %p : memref<2xindex>
    memref.dealloc %o : memref<2xi1>
    memref.dealloc %k : memref<4xf32>
    memref.dealloc %v : memref<4xf32>
    return
  }
  gpu.module @kernels {
    gpu.func @k(%b: memref<4xf32>) kernel {
      gpu.return
    }
  }
}

// -----

// A strided host buffer cannot become a gpu.alloc.
func.func @strided() -> memref<4x4xf32, strided<[8, 1]>> {
  // expected-error @+1 {{k3-share-host-memory: cannot share a buffer of type 'memref<4x4xf32, strided<[8, 1]>>' (needs an identity layout)}}
  %b = memref.alloc() : memref<4x4xf32, strided<[8, 1]>>
  return %b : memref<4x4xf32, strided<[8, 1]>>
}
