// REQUIRES: openmp
// RUN: k3-opt %s --k3-gpu-attend-parts --k3-gpu-launches-to-openmp --arith-expand="include-bf16=true" \
// RUN:   --convert-scf-to-cf --convert-openmp-to-llvm --expand-strided-metadata --lower-affine \
// RUN:   --finalize-memref-to-llvm --convert-vector-to-llvm --convert-math-to-llvm \
// RUN:   --convert-arith-to-llvm --convert-index-to-llvm --convert-func-to-llvm --convert-cf-to-llvm \
// RUN:   --reconcile-unrealized-casts | %run_emulated | FileCheck %s

// The fused MLA decode kernel (k3-gpu-attend-parts) run on the CPU, every
// block an OpenMP team of its 256 threads (k3-gpu-launches-to-openmp, the
// mma.sync fragments exchanged through test/Emulation), against loops in
// f32 over the same bf16-rounded queries and rows. Each case prints the
// relative RMSE of max, sum and u and whether each is under 1e-5: the
// reference forms u as the kernel does (tiles of 16 keys, the running max,
// the probabilities rounded to bf16), so only the order of f32 sums
// differs, and a wrong index or mask shows.
//
// K3's shapes: 70 query rows (a full block of 64 and one of 6), rows of 576
// in bf16 (16-byte loads), 512 value columns, 300 keys in parts of 64 (4
// full parts and one of 44: two full tiles and one of 12).
// CHECK: k3 max
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: sum
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: u
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// k3-tiny's: 2 rows, f32 rows of 40 (pairs packed as bf16), 32 values, 37
// keys in parts of 16 (the last one 5 keys).
// CHECK: tiny max
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: sum
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: u
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// q_scale = 0.3 on k3-tiny's queries against the queries scaled first:
// the same floats.
// CHECK: q_scale differing 0
// Odd widths: rows of 41 in bf16 (no vector loads; the last pair half
// outside the row), 33 values, 45 keys in parts of 20 (tiles that cross
// a part's end, a last part of 5).
// CHECK: odd max
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: sum
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: u
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1

func.func private @printF32(f32)
func.func private @printI64(i64)
func.func private @printNewline()

// Prints "<rmse>\n<rmse < bound>\n".
func.func @report(%err: f32, %ref: f32, %bound: f32) {
  %tiny = arith.constant 1.0e-30 : f32
  %r = arith.maximumf %ref, %tiny : f32
  %q = arith.divf %err, %r : f32
  %rmse = math.sqrt %q : f32
  func.call @printF32(%rmse) : (f32) -> ()
  func.call @printNewline() : () -> ()
  %ok = arith.cmpf olt, %rmse, %bound : f32
  %i = arith.extui %ok : i1 to i64
  func.call @printI64(%i) : (i64) -> ()
  func.call @printNewline() : () -> ()
  return
}

// q[m, d] = 0.3 sin(2.37 m + 1.11 d + phase); rows[j, d] = cos(1.73 j + 0.97 d + 0.5):
// neighbouring rows and columns unlike, so that a swapped index shows.
func.func @fill(%q: memref<?x?xf32>, %rows: memref<?x?xf32>, %phase: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.dim %q, %c0 : memref<?x?xf32>
  %d = memref.dim %q, %c1 : memref<?x?xf32>
  %n = memref.dim %rows, %c0 : memref<?x?xf32>
  %a = arith.constant 2.37 : f32
  %b = arith.constant 1.11 : f32
  %c = arith.constant 1.73 : f32
  %e = arith.constant 0.97 : f32
  %h = arith.constant 0.5 : f32
  %s = arith.constant 0.3 : f32
  scf.for %i = %c0 to %m step %c1 {
    scf.for %k = %c0 to %d step %c1 {
      %ii = arith.index_cast %i : index to i64
      %kk = arith.index_cast %k : index to i64
      %fi = arith.sitofp %ii : i64 to f32
      %fk = arith.sitofp %kk : i64 to f32
      %x0 = arith.mulf %fi, %a : f32
      %x1 = arith.mulf %fk, %b : f32
      %x2 = arith.addf %x0, %x1 : f32
      %x3 = arith.addf %x2, %phase : f32
      %x4 = math.sin %x3 : f32
      %x5 = arith.mulf %x4, %s : f32
      // The kernel reads q as bf16: the reference does too.
      %x6 = arith.truncf %x5 : f32 to bf16
      %x7 = arith.extf %x6 : bf16 to f32
      memref.store %x7, %q[%i, %k] : memref<?x?xf32>
    }
  }
  scf.for %j = %c0 to %n step %c1 {
    scf.for %k = %c0 to %d step %c1 {
      %jj = arith.index_cast %j : index to i64
      %kk = arith.index_cast %k : index to i64
      %fj = arith.sitofp %jj : i64 to f32
      %fk = arith.sitofp %kk : i64 to f32
      %x0 = arith.mulf %fj, %c : f32
      %x1 = arith.mulf %fk, %e : f32
      %x2 = arith.addf %x0, %x1 : f32
      %x3 = arith.addf %x2, %h : f32
      %x4 = math.cos %x3 : f32
      %x6 = arith.truncf %x4 : f32 to bf16
      %x7 = arith.extf %x6 : bf16 to f32
      memref.store %x7, %rows[%j, %k] : memref<?x?xf32>
    }
  }
  return
}

// The reference: per row and part, max, sum and u by loops, then the
// squared errors of the kernel's outputs and of the reference: prints
// three reports.
func.func @check(%q: memref<?x?xf32>, %rows: memref<?x?xf32>, %n: index, %l: index,
                 %km: memref<?x?xf32>, %ks: memref<?x?xf32>, %ku: memref<?x?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %m = memref.dim %q, %c0 : memref<?x?xf32>
  %d = memref.dim %q, %c1 : memref<?x?xf32>
  %keys = memref.dim %rows, %c0 : memref<?x?xf32>
  %p = memref.dim %km, %c1 : memref<?x?xf32>
  %s = memref.alloc(%keys) : memref<?xf32>
  %ref = memref.alloc(%l) : memref<?xf32>
  %acc = memref.alloc() : memref<6xf32>
  scf.for %i = %c0 to %c6 step %c1 {
    memref.store %zero, %acc[%i] : memref<6xf32>
  }
  scf.for %r = %c0 to %m step %c1 {
    scf.for %j = %c0 to %keys step %c1 {
      %dot = scf.for %k = %c0 to %d step %c1 iter_args(%a = %zero) -> f32 {
        %x = memref.load %q[%r, %k] : memref<?x?xf32>
        %y = memref.load %rows[%j, %k] : memref<?x?xf32>
        %xy = arith.mulf %x, %y : f32
        %a1 = arith.addf %a, %xy : f32
        scf.yield %a1 : f32
      }
      memref.store %dot, %s[%j] : memref<?xf32>
    }
    scf.for %pp = %c0 to %p step %c1 {
      %first = arith.muli %pp, %n : index
      %end0 = arith.addi %first, %n : index
      %end = arith.minui %end0, %keys : index
      %mx = scf.for %j = %first to %end step %c1 iter_args(%a = %ninf) -> f32 {
        %x = memref.load %s[%j] : memref<?xf32>
        %a1 = arith.maximumf %a, %x : f32
        scf.yield %a1 : f32
      }
      %sum = scf.for %j = %first to %end step %c1 iter_args(%a = %zero) -> f32 {
        %x = memref.load %s[%j] : memref<?xf32>
        %y = arith.subf %x, %mx : f32
        %e = math.exp %y : f32
        %a1 = arith.addf %a, %e : f32
        scf.yield %a1 : f32
      }
      %gm = memref.load %km[%r, %pp] : memref<?x?xf32>
      %gs = memref.load %ks[%r, %pp] : memref<?x?xf32>
      func.call @accumulate(%acc, %c0, %gm, %mx) : (memref<6xf32>, index, f32, f32) -> ()
      func.call @accumulate(%acc, %c2, %gs, %sum) : (memref<6xf32>, index, f32, f32) -> ()
      // u as the kernel forms it: tiles of 16 keys, the running max, the
      // probabilities rounded to bf16 (sums in f32 in another order are
      // all that differs).
      scf.for %col = %c0 to %l step %c1 {
        memref.store %zero, %ref[%col] : memref<?xf32>
      }
      %mrunEnd = scf.for %t = %first to %end step %c16 iter_args(%mrun = %ninf) -> f32 {
        %tend0 = arith.addi %t, %c16 : index
        %tend = arith.minui %tend0, %end : index
        %tmax = scf.for %j = %t to %tend step %c1 iter_args(%a = %ninf) -> f32 {
          %x = memref.load %s[%j] : memref<?xf32>
          %a1 = arith.maximumf %a, %x : f32
          scf.yield %a1 : f32
        }
        %mnew = arith.maximumf %mrun, %tmax : f32
        %dm = arith.subf %mrun, %mnew : f32
        %alpha = math.exp %dm : f32
        scf.for %col = %c0 to %l step %c1 {
          %a = memref.load %ref[%col] : memref<?xf32>
          %a1 = arith.mulf %a, %alpha : f32
          memref.store %a1, %ref[%col] : memref<?xf32>
        }
        scf.for %j = %t to %tend step %c1 {
          %x = memref.load %s[%j] : memref<?xf32>
          %y = arith.subf %x, %mnew : f32
          %e = math.exp %y : f32
          %eb = arith.truncf %e : f32 to bf16
          %pj = arith.extf %eb : bf16 to f32
          scf.for %col = %c0 to %l step %c1 {
            %a = memref.load %ref[%col] : memref<?xf32>
            %v = memref.load %rows[%j, %col] : memref<?x?xf32>
            %pv = arith.mulf %pj, %v : f32
            %a1 = arith.addf %a, %pv : f32
            memref.store %a1, %ref[%col] : memref<?xf32>
          }
        }
        scf.yield %mnew : f32
      }
      scf.for %col = %c0 to %l step %c1 {
        %want = memref.load %ref[%col] : memref<?xf32>
        %gu = memref.load %ku[%r, %pp, %col] : memref<?x?x?xf32>
        func.call @accumulate(%acc, %c4, %gu, %want) : (memref<6xf32>, index, f32, f32) -> ()
      }
    }
  }
  %fine = arith.constant 1.0e-5 : f32
  %e0 = memref.load %acc[%c0] : memref<6xf32>
  %r0 = memref.load %acc[%c1] : memref<6xf32>
  %e1 = memref.load %acc[%c2] : memref<6xf32>
  %r1 = memref.load %acc[%c3] : memref<6xf32>
  %e2 = memref.load %acc[%c4] : memref<6xf32>
  %r2 = memref.load %acc[%c5] : memref<6xf32>
  vector.print str "max\n"
  func.call @report(%e0, %r0, %fine) : (f32, f32, f32) -> ()
  vector.print str "sum\n"
  func.call @report(%e1, %r1, %fine) : (f32, f32, f32) -> ()
  vector.print str "u\n"
  func.call @report(%e2, %r2, %fine) : (f32, f32, f32) -> ()
  memref.dealloc %s : memref<?xf32>
  memref.dealloc %ref : memref<?xf32>
  memref.dealloc %acc : memref<6xf32>
  return
}

// acc[at] += (got - want)^2, acc[at + 1] += want^2.
func.func @accumulate(%acc: memref<6xf32>, %at: index, %got: f32, %want: f32) {
  %c1 = arith.constant 1 : index
  %next = arith.addi %at, %c1 : index
  %d = arith.subf %got, %want : f32
  %dd = arith.mulf %d, %d : f32
  %ww = arith.mulf %want, %want : f32
  %a = memref.load %acc[%at] : memref<6xf32>
  %b = memref.load %acc[%next] : memref<6xf32>
  %a1 = arith.addf %a, %dd : f32
  %b1 = arith.addf %b, %ww : f32
  memref.store %a1, %acc[%at] : memref<6xf32>
  memref.store %b1, %acc[%next] : memref<6xf32>
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %phase = arith.constant 0.25 : f32

  // K3: M = 70, D = 576, L = 512, N = 300, parts of 64 (5).
  %c70 = arith.constant 70 : index
  %c576 = arith.constant 576 : index
  %c300 = arith.constant 300 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  %q = memref.alloc(%c70, %c576) : memref<?x?xf32>
  %rowsF = memref.alloc(%c300, %c576) : memref<?x?xf32>
  func.call @fill(%q, %rowsF, %phase) : (memref<?x?xf32>, memref<?x?xf32>, f32) -> ()
  %rows = memref.alloc() : memref<300x576xbf16>
  scf.for %j = %c0 to %c300 step %c1 {
    scf.for %k = %c0 to %c576 step %c1 {
      %x = memref.load %rowsF[%j, %k] : memref<?x?xf32>
      %y = arith.truncf %x : f32 to bf16
      memref.store %y, %rows[%j, %k] : memref<300x576xbf16>
    }
  }
  %qs = memref.cast %q : memref<?x?xf32> to memref<70x576xf32>
  %m = memref.alloc() : memref<70x5xf32>
  %s = memref.alloc() : memref<70x5xf32>
  %u = memref.alloc() : memref<70x5x512xf32>
  k3.attend_parts %qs, %rows outs(%m, %s, %u) part_keys = 64
      : (memref<70x576xf32>, memref<300x576xbf16>, memref<70x5xf32>, memref<70x5xf32>,
         memref<70x5x512xf32>) -> ()
  %md = memref.cast %m : memref<70x5xf32> to memref<?x?xf32>
  %sd = memref.cast %s : memref<70x5xf32> to memref<?x?xf32>
  %ud = memref.cast %u : memref<70x5x512xf32> to memref<?x?x?xf32>
  vector.print str "k3 "
  func.call @check(%q, %rowsF, %c64, %c512, %md, %sd, %ud)
      : (memref<?x?xf32>, memref<?x?xf32>, index, index, memref<?x?xf32>, memref<?x?xf32>, memref<?x?x?xf32>) -> ()

  // k3-tiny: M = 2, D = 40 (f32 rows), L = 32, N = 37, parts of 16 (3).
  %c2 = arith.constant 2 : index
  %c40 = arith.constant 40 : index
  %c37 = arith.constant 37 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %tq = memref.alloc(%c2, %c40) : memref<?x?xf32>
  %trows = memref.alloc(%c37, %c40) : memref<?x?xf32>
  func.call @fill(%tq, %trows, %phase) : (memref<?x?xf32>, memref<?x?xf32>, f32) -> ()
  %tqs = memref.cast %tq : memref<?x?xf32> to memref<2x40xf32>
  %trs = memref.cast %trows : memref<?x?xf32> to memref<37x40xf32>
  %tm = memref.alloc() : memref<2x3xf32>
  %ts = memref.alloc() : memref<2x3xf32>
  %tu = memref.alloc() : memref<2x3x32xf32>
  k3.attend_parts %tqs, %trs outs(%tm, %ts, %tu) part_keys = 16
      : (memref<2x40xf32>, memref<37x40xf32>, memref<2x3xf32>, memref<2x3xf32>,
         memref<2x3x32xf32>) -> ()
  %tmd = memref.cast %tm : memref<2x3xf32> to memref<?x?xf32>
  %tsd = memref.cast %ts : memref<2x3xf32> to memref<?x?xf32>
  %tud = memref.cast %tu : memref<2x3x32xf32> to memref<?x?x?xf32>
  vector.print str "tiny "
  func.call @check(%tq, %trows, %c16, %c32, %tmd, %tsd, %tud)
      : (memref<?x?xf32>, memref<?x?xf32>, index, index, memref<?x?xf32>, memref<?x?xf32>, memref<?x?x?xf32>) -> ()

  // q_scale: the kernel on k3-tiny's unscaled queries with q_scale = 0.3
  // against the kernel on the queries times 0.3 (a loop here): the same
  // product before the bf16 rounding, so no element of max, sum or u differs.
  %scale = arith.constant 0.3 : f32
  %pq = memref.alloc() : memref<2x40xf32>
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %k = %c0 to %c40 step %c1 {
      %x = memref.load %tq[%i, %k] : memref<?x?xf32>
      %y = arith.mulf %x, %scale : f32
      memref.store %y, %pq[%i, %k] : memref<2x40xf32>
    }
  }
  %pm = memref.alloc() : memref<2x3xf32>
  %ps = memref.alloc() : memref<2x3xf32>
  %pu = memref.alloc() : memref<2x3x32xf32>
  k3.attend_parts %pq, %trs outs(%pm, %ps, %pu) part_keys = 16
      : (memref<2x40xf32>, memref<37x40xf32>, memref<2x3xf32>, memref<2x3xf32>,
         memref<2x3x32xf32>) -> ()
  %km = memref.alloc() : memref<2x3xf32>
  %ks = memref.alloc() : memref<2x3xf32>
  %ku = memref.alloc() : memref<2x3x32xf32>
  k3.attend_parts %tqs, %trs outs(%km, %ks, %ku) part_keys = 16 {q_scale = 0.3 : f32}
      : (memref<2x40xf32>, memref<37x40xf32>, memref<2x3xf32>, memref<2x3xf32>,
         memref<2x3x32xf32>) -> ()
  %c3p = arith.constant 3 : index
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %differ = scf.for %i = %c0 to %c2 step %c1 iter_args(%n0 = %zero) -> (i64) {
    %n3 = scf.for %p = %c0 to %c3p step %c1 iter_args(%n1 = %n0) -> (i64) {
      %a = memref.load %pm[%i, %p] : memref<2x3xf32>
      %b = memref.load %km[%i, %p] : memref<2x3xf32>
      %c = memref.load %ps[%i, %p] : memref<2x3xf32>
      %d = memref.load %ks[%i, %p] : memref<2x3xf32>
      %ne0 = arith.cmpf une, %a, %b : f32
      %ne1 = arith.cmpf une, %c, %d : f32
      %ne = arith.ori %ne0, %ne1 : i1
      %add = arith.select %ne, %one, %zero : i64
      %n2 = arith.addi %n1, %add : i64
      %n5 = scf.for %k = %c0 to %c32 step %c1 iter_args(%n4 = %n2) -> (i64) {
        %e = memref.load %pu[%i, %p, %k] : memref<2x3x32xf32>
        %f = memref.load %ku[%i, %p, %k] : memref<2x3x32xf32>
        %neu = arith.cmpf une, %e, %f : f32
        %addu = arith.select %neu, %one, %zero : i64
        %n6 = arith.addi %n4, %addu : i64
        scf.yield %n6 : i64
      }
      scf.yield %n5 : i64
    }
    scf.yield %n3 : i64
  }
  vector.print str "q_scale differing "
  func.call @printI64(%differ) : (i64) -> ()
  func.call @printNewline() : () -> ()

  // Odd: M = 3, D = 41 (bf16 rows), L = 33, N = 45, parts of 20 (3).
  %c3 = arith.constant 3 : index
  %c41 = arith.constant 41 : index
  %c45 = arith.constant 45 : index
  %c20 = arith.constant 20 : index
  %c33 = arith.constant 33 : index
  %oq = memref.alloc(%c3, %c41) : memref<?x?xf32>
  %orowsF = memref.alloc(%c45, %c41) : memref<?x?xf32>
  func.call @fill(%oq, %orowsF, %phase) : (memref<?x?xf32>, memref<?x?xf32>, f32) -> ()
  %orows = memref.alloc() : memref<45x41xbf16>
  scf.for %j = %c0 to %c45 step %c1 {
    scf.for %k = %c0 to %c41 step %c1 {
      %x = memref.load %orowsF[%j, %k] : memref<?x?xf32>
      %y = arith.truncf %x : f32 to bf16
      memref.store %y, %orows[%j, %k] : memref<45x41xbf16>
    }
  }
  %oqs = memref.cast %oq : memref<?x?xf32> to memref<3x41xf32>
  %om = memref.alloc() : memref<3x3xf32>
  %os = memref.alloc() : memref<3x3xf32>
  %ou = memref.alloc() : memref<3x3x33xf32>
  k3.attend_parts %oqs, %orows outs(%om, %os, %ou) part_keys = 20
      : (memref<3x41xf32>, memref<45x41xbf16>, memref<3x3xf32>, memref<3x3xf32>,
         memref<3x3x33xf32>) -> ()
  %omd = memref.cast %om : memref<3x3xf32> to memref<?x?xf32>
  %osd = memref.cast %os : memref<3x3xf32> to memref<?x?xf32>
  %oud = memref.cast %ou : memref<3x3x33xf32> to memref<?x?x?xf32>
  vector.print str "odd "
  func.call @check(%oq, %orowsF, %c20, %c33, %omd, %osd, %oud)
      : (memref<?x?xf32>, memref<?x?xf32>, index, index, memref<?x?xf32>, memref<?x?xf32>, memref<?x?x?xf32>) -> ()
  return
}
