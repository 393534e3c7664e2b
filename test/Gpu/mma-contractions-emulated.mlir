// REQUIRES: openmp
// RUN: k3-opt %s --k3-gpu-mma-contractions --k3-gpu-launches-to-openmp --arith-expand="include-bf16=true" \
// RUN:   --convert-scf-to-cf --convert-openmp-to-llvm --expand-strided-metadata --lower-affine \
// RUN:   --finalize-memref-to-llvm --convert-vector-to-llvm --convert-math-to-llvm \
// RUN:   --convert-arith-to-llvm --convert-index-to-llvm --convert-func-to-llvm --convert-cf-to-llvm \
// RUN:   --reconcile-unrealized-casts | %run_emulated | FileCheck %s
// RUN: k3-opt %s --k3-gpu-mma-contractions=wgmma=true --k3-gpu-launches-to-openmp --arith-expand="include-bf16=true" \
// RUN:   --convert-scf-to-cf --convert-openmp-to-llvm --expand-strided-metadata --lower-affine \
// RUN:   --finalize-memref-to-llvm --convert-vector-to-llvm --convert-math-to-llvm \
// RUN:   --convert-arith-to-llvm --convert-index-to-llvm --convert-func-to-llvm --convert-cf-to-llvm \
// RUN:   --reconcile-unrealized-casts | %run_emulated | FileCheck %s
// RUN: k3-opt %s --k3-gpu-mma-contractions=wgmma=true --k3-gpu-launches-to-openmp | FileCheck %s --check-prefix=WGMMA

// k3-gpu-mma-contractions' mma.sync kernel (the sm_80 form and sm_90a's
// for decode's few rows) and its wgmma kernel (sm_90a, 37 rows > 16: one
// warpgroup, both tiles in shared memory, K in one stage of 64 with 24
// zeros past the 40 inputs) run on the CPU (k3-gpu-launches-to-openmp): a
// projection y += x · wᵀ with 37 rows (3 row tiles, the last of 5), 96
// columns (one block of 128, partly outside) and 40 inputs (two full k16
// steps and one of 8), y starting at 0.5 (the kernel adds into it). The
// inputs are bf16 values, so the products are exact: the relative RMSE
// against loops is that of f32 sums in another order.
// CHECK: linear
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// The same product into a fresh zero-filled buffer read only by an
// elementwise op (a quarter of it plus y): that op runs as the kernel's
// epilogue (no store of the product), against loops.
// CHECK: epilogue
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1

// The shared arena aligned to 2^18, the tiles a view of it, each of the
// stage's four k16 steps one call on the thread's 64 accumulators, and
// none of wgmma's fences or waits left (two kernels: the projection, then
// the one with the epilogue).
// WGMMA: memref.alloc(%{{.+}}) {alignment = 262144 : i64} : memref<?xi8>
// WGMMA: memref.view
// WGMMA-COUNT-4: call @k3emu_wgmma(
// WGMMA: memref.alloc(%{{.+}}) {alignment = 262144 : i64} : memref<?xi8>
// WGMMA: memref.view
// WGMMA-COUNT-4: call @k3emu_wgmma(
// WGMMA-NOT: call @k3emu_wgmma(
// WGMMA-NOT: nvvm.

func.func private @printF32(f32)
func.func private @printI64(i64)
func.func private @printNewline()

#xk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c37 = arith.constant 37 : index
  %c40 = arith.constant 40 : index
  %c96 = arith.constant 96 : index
  %half = arith.constant 0.5 : f32
  %zero = arith.constant 0.0 : f32
  %a = arith.constant 2.37 : f32
  %b = arith.constant 1.11 : f32
  %x = memref.alloc() : memref<37x40xf32>
  %w = memref.alloc() : memref<96x40xbf16>
  %y = memref.alloc() : memref<37x96xf32>
  scf.for %i = %c0 to %c37 step %c1 {
    scf.for %k = %c0 to %c40 step %c1 {
      %ii = arith.index_cast %i : index to i64
      %kk = arith.index_cast %k : index to i64
      %fi = arith.sitofp %ii : i64 to f32
      %fk = arith.sitofp %kk : i64 to f32
      %t0 = arith.mulf %fi, %a : f32
      %t1 = arith.mulf %fk, %b : f32
      %t2 = arith.addf %t0, %t1 : f32
      %t3 = math.sin %t2 : f32
      %t4 = arith.truncf %t3 : f32 to bf16
      %t5 = arith.extf %t4 : bf16 to f32
      memref.store %t5, %x[%i, %k] : memref<37x40xf32>
    }
    scf.for %n = %c0 to %c96 step %c1 {
      memref.store %half, %y[%i, %n] : memref<37x96xf32>
    }
  }
  scf.for %n = %c0 to %c96 step %c1 {
    scf.for %k = %c0 to %c40 step %c1 {
      %nn = arith.index_cast %n : index to i64
      %kk = arith.index_cast %k : index to i64
      %fn = arith.sitofp %nn : i64 to f32
      %fk = arith.sitofp %kk : i64 to f32
      %t0 = arith.mulf %fn, %b : f32
      %t1 = arith.mulf %fk, %a : f32
      %t2 = arith.addf %t0, %t1 : f32
      %t3 = math.cos %t2 : f32
      %t4 = arith.truncf %t3 : f32 to bf16
      memref.store %t4, %w[%n, %k] : memref<96x40xbf16>
    }
  }
  linalg.generic {indexing_maps = [#xk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<37x40xf32>, memref<96x40xbf16>) outs(%y : memref<37x96xf32>) {
  ^bb0(%p: f32, %q: bf16, %acc: f32):
    %qf = arith.extf %q : bf16 to f32
    %pq = arith.mulf %p, %qf : f32
    %s = arith.addf %acc, %pq : f32
    linalg.yield %s : f32
  }
  // The reference by loops, and the squared errors.
  %err:2 = scf.for %i = %c0 to %c37 step %c1 iter_args(%e = %zero, %r = %zero) -> (f32, f32) {
    %row:2 = scf.for %n = %c0 to %c96 step %c1 iter_args(%e1 = %e, %r1 = %r) -> (f32, f32) {
      %dot = scf.for %k = %c0 to %c40 step %c1 iter_args(%s = %half) -> f32 {
        %p = memref.load %x[%i, %k] : memref<37x40xf32>
        %q = memref.load %w[%n, %k] : memref<96x40xbf16>
        %qf = arith.extf %q : bf16 to f32
        %pq = arith.mulf %p, %qf : f32
        %s1 = arith.addf %s, %pq : f32
        scf.yield %s1 : f32
      }
      %got = memref.load %y[%i, %n] : memref<37x96xf32>
      %d = arith.subf %got, %dot : f32
      %dd = arith.mulf %d, %d : f32
      %ww = arith.mulf %dot, %dot : f32
      %e2 = arith.addf %e1, %dd : f32
      %r2 = arith.addf %r1, %ww : f32
      scf.yield %e2, %r2 : f32, f32
    }
    scf.yield %row#0, %row#1 : f32, f32
  }
  %ratio = arith.divf %err#0, %err#1 : f32
  %rmse = math.sqrt %ratio : f32
  vector.print str "linear\n"
  func.call @printF32(%rmse) : (f32) -> ()
  func.call @printNewline() : () -> ()
  %bound = arith.constant 1.0e-5 : f32
  %ok = arith.cmpf olt, %rmse, %bound : f32
  %oki = arith.extui %ok : i1 to i64
  func.call @printI64(%oki) : (i64) -> ()
  func.call @printNewline() : () -> ()

  %quarter = arith.constant 0.25 : f32
  %c = memref.alloc() : memref<37x96xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<37x96xf32>)
  linalg.generic {indexing_maps = [#xk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<37x40xf32>, memref<96x40xbf16>) outs(%c : memref<37x96xf32>) {
  ^bb0(%p: f32, %q: bf16, %acc: f32):
    %qf = arith.extf %q : bf16 to f32
    %pq = arith.mulf %p, %qf : f32
    %s = arith.addf %acc, %pq : f32
    linalg.yield %s : f32
  }
  %o = memref.alloc() : memref<37x96xf32>
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>,
                                   affine_map<(m, n) -> (m, n)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c, %y : memref<37x96xf32>, memref<37x96xf32>) outs(%o : memref<37x96xf32>) {
  ^bb0(%v: f32, %r: f32, %out: f32):
    %vq = arith.mulf %v, %quarter : f32
    %e = arith.addf %vq, %r : f32
    linalg.yield %e : f32
  }
  memref.dealloc %c : memref<37x96xf32>
  %err2:2 = scf.for %i = %c0 to %c37 step %c1 iter_args(%e = %zero, %r = %zero) -> (f32, f32) {
    %row:2 = scf.for %n = %c0 to %c96 step %c1 iter_args(%e1 = %e, %r1 = %r) -> (f32, f32) {
      %dot = scf.for %k = %c0 to %c40 step %c1 iter_args(%s = %zero) -> f32 {
        %p = memref.load %x[%i, %k] : memref<37x40xf32>
        %q = memref.load %w[%n, %k] : memref<96x40xbf16>
        %qf = arith.extf %q : bf16 to f32
        %pq = arith.mulf %p, %qf : f32
        %s1 = arith.addf %s, %pq : f32
        scf.yield %s1 : f32
      }
      %res = memref.load %y[%i, %n] : memref<37x96xf32>
      %dq = arith.mulf %dot, %quarter : f32
      %want = arith.addf %dq, %res : f32
      %got = memref.load %o[%i, %n] : memref<37x96xf32>
      %d = arith.subf %got, %want : f32
      %dd = arith.mulf %d, %d : f32
      %ww = arith.mulf %want, %want : f32
      %e2 = arith.addf %e1, %dd : f32
      %r2 = arith.addf %r1, %ww : f32
      scf.yield %e2, %r2 : f32, f32
    }
    scf.yield %row#0, %row#1 : f32, f32
  }
  %ratio2 = arith.divf %err2#0, %err2#1 : f32
  %rmse2 = math.sqrt %ratio2 : f32
  vector.print str "epilogue\n"
  func.call @printF32(%rmse2) : (f32) -> ()
  func.call @printNewline() : () -> ()
  %ok2 = arith.cmpf olt, %rmse2, %bound : f32
  %oki2 = arith.extui %ok2 : i1 to i64
  func.call @printI64(%oki2) : (i64) -> ()
  func.call @printNewline() : () -> ()
  return
}
