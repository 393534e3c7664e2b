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

// A strided host buffer cannot become a gpu.alloc.
func.func @strided() {
  // expected-error @+1 {{k3-share-host-memory: cannot share a buffer of type 'memref<4x4xf32, strided<[8, 1]>>' (needs an identity layout)}}
  %b = memref.alloc() : memref<4x4xf32, strided<[8, 1]>>
  return
}
