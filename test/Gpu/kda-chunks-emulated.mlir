// REQUIRES: openmp
// RUN: k3-opt %s --convert-k3-to-linalg="kda-prefill=chunks" --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   --scf-forall-to-for --convert-linalg-to-loops --k3-gpu-kda-chunks --k3-gpu-launches-to-openmp --arith-expand="include-bf16=true" \
// RUN:   --convert-scf-to-cf --convert-openmp-to-llvm --expand-strided-metadata --lower-affine \
// RUN:   --finalize-memref-to-llvm --convert-vector-to-llvm --convert-math-to-llvm \
// RUN:   --convert-arith-to-llvm --convert-index-to-llvm --convert-func-to-llvm --convert-cf-to-llvm \
// RUN:   --reconcile-unrealized-casts | %run_emulated | FileCheck %s
// RUN: k3-opt %s --convert-k3-to-linalg="kda-prefill=chunks" --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   --scf-forall-to-for --convert-linalg-to-loops --k3-gpu-kda-chunks="split-operands=false" --k3-gpu-launches-to-openmp --arith-expand="include-bf16=true" \
// RUN:   --convert-scf-to-cf --convert-openmp-to-llvm --expand-strided-metadata --lower-affine \
// RUN:   --finalize-memref-to-llvm --convert-vector-to-llvm --convert-math-to-llvm \
// RUN:   --convert-arith-to-llvm --convert-index-to-llvm --convert-func-to-llvm --convert-cf-to-llvm \
// RUN:   --reconcile-unrealized-casts | %run_emulated | FileCheck %s --check-prefix=BF16

// The chunked KDA kernels (k3-gpu-kda-chunks) run on the CPU, every block an
// OpenMP team (k3-gpu-launches-to-openmp, the mma.sync fragments exchanged
// through test/Emulation), against the token recurrence of KDA.md §2 in
// f32 loops (decay, predict, update, read). Each case prints the relative
// RMSE of the output, the final state and the boundary states, and whether
// each is under KDA.md §9's 5e-3 for bf16 tensor-core inputs. q and k are
// L2-normalised, β = sigmoid, the initial state is non-zero.
//
// K3's head shape: K = V = 128 (two blocks of 4 warps per head), 2 heads,
// 40 tokens (two chunks and one of 8), gates in (-5, 0), boundaries every 16.
// CHECK: k3 out
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: state
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: boundaries
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// Gates saturated at -5 on every channel (KDA.md §9 case 1), T = 63
// (3 full chunks and one of 15), K = 64, V = 32, boundaries every 32.
// CHECK: saturated out
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: state
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: boundaries
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// Saturated at -10: the kernel's limit (any 8 tokens' decay within 80 nat:
// factors against row 8 up to e^80).
// CHECK: saturated10 out
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: state
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: boundaries
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// Odd widths and GVA: K = 40 (padded to 48), V = 24 (2 warps, the second
// half masked), 2 q/k heads for 4 value heads, T = 17 and T = 1.
// CHECK: odd17 out
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: state
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: boundaries
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK: odd1 out
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: state
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: boundaries
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// Through the conversion (convert-k3-to-linalg, kda-prefill=chunks) and
// bufferization: a factored k3.kda_chunked (chunks of 32, boundary states
// used) against the same op's column scan form (k3.kda, which the same
// option lowers as the scan), both called on one initial-state tensor: the
// kernel's in-place state update must not reach the second call.
// CHECK: converted out
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: state
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: boundaries
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// The unbounded (softplus) gate, `pairwise` kernels: per-token log-decays
// of -50 on every fourth key channel, softplus values in (-3.05, -0.05) on
// the others, K = 64, V = 32, one q/k head for two value heads, boundaries
// every 16, T = 1, 15, 63 and 70.
// CHECK: unbounded1 out
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: state
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: boundaries
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK: unbounded15 out
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: state
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: boundaries
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK: unbounded63 out
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: state
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: boundaries
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK: unbounded70 out
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: state
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: boundaries
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// The same inputs through the factored kernels (no `pairwise`): 8 tokens
// of -50 make the factors e^400, and the output is lost (nan or far off).
// This is why the softplus gate needs the pairwise form.
// CHECK: factored63 out
// CHECK-NEXT: {{^.+$}}
// CHECK-NEXT: 0
// Through the conversion: a safe-form k3.kda_chunked (chunks of 32,
// sub-chunks of 2) becomes the pairwise kernels, against the column scan,
// T = 70.
// CHECK: convertedSafe out
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: state
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// CHECK-NEXT: boundaries
// CHECK-NEXT: {{[0-9.e+-]+$}}
// CHECK-NEXT: 1
// Without split operands (one bf16 rounding of the state and the deltas
// per product) the same cases still pass KDA.md's bf16 bound.
// BF16: k3 out
// BF16-NEXT: {{[0-9.e+-]+$}}
// BF16-NEXT: 1
// BF16: saturated out
// BF16-NEXT: {{[0-9.e+-]+$}}
// BF16-NEXT: 1
// BF16: unbounded63 out
// BF16-NEXT: {{[0-9.e+-]+$}}
// BF16-NEXT: 1

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

// m[a, b, c] = amp sin(1.37 a + 0.71 b + 2.13 c + phase) + offset.
func.func @fill(%m: memref<?x?x?xf32>, %amp: f32, %offset: f32, %phase: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n0 = memref.dim %m, %c0 : memref<?x?x?xf32>
  %n1 = memref.dim %m, %c1 : memref<?x?x?xf32>
  %n2 = memref.dim %m, %c2 : memref<?x?x?xf32>
  %fa = arith.constant 1.37 : f32
  %fb = arith.constant 0.71 : f32
  %fc = arith.constant 2.13 : f32
  scf.for %a = %c0 to %n0 step %c1 {
    scf.for %b = %c0 to %n1 step %c1 {
      scf.for %c = %c0 to %n2 step %c1 {
        %ia = arith.index_cast %a : index to i64
        %ib = arith.index_cast %b : index to i64
        %ic = arith.index_cast %c : index to i64
        %xa = arith.sitofp %ia : i64 to f32
        %xb = arith.sitofp %ib : i64 to f32
        %xc = arith.sitofp %ic : i64 to f32
        %ya = arith.mulf %xa, %fa : f32
        %yb = arith.mulf %xb, %fb : f32
        %yc = arith.mulf %xc, %fc : f32
        %s0 = arith.addf %ya, %yb : f32
        %s1 = arith.addf %s0, %yc : f32
        %s2 = arith.addf %s1, %phase : f32
        %sn = math.sin %s2 : f32
        %v0 = arith.mulf %sn, %amp : f32
        %v1 = arith.addf %v0, %offset : f32
        memref.store %v1, %m[%a, %b, %c] : memref<?x?x?xf32>
      }
    }
  }
  return
}

// Each m[a, b, :] divided by sqrt(Σ m² + 1e-6) (KDA.md §2 step 2).
func.func @normalize(%m: memref<?x?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %eps = arith.constant 1.0e-6 : f32
  %n0 = memref.dim %m, %c0 : memref<?x?x?xf32>
  %n1 = memref.dim %m, %c1 : memref<?x?x?xf32>
  %n2 = memref.dim %m, %c2 : memref<?x?x?xf32>
  scf.for %a = %c0 to %n0 step %c1 {
    scf.for %b = %c0 to %n1 step %c1 {
      %ss = scf.for %c = %c0 to %n2 step %c1 iter_args(%acc = %zero) -> f32 {
        %x = memref.load %m[%a, %b, %c] : memref<?x?x?xf32>
        %x2 = arith.mulf %x, %x : f32
        %r = arith.addf %acc, %x2 : f32
        scf.yield %r : f32
      }
      %se = arith.addf %ss, %eps : f32
      %inv = math.rsqrt %se : f32
      scf.for %c = %c0 to %n2 step %c1 {
        %x = memref.load %m[%a, %b, %c] : memref<?x?x?xf32>
        %y = arith.mulf %x, %inv : f32
        memref.store %y, %m[%a, %b, %c] : memref<?x?x?xf32>
      }
    }
  }
  return
}

// g = lb · sigmoid(x) (the lower-bounded gate) over a filled tensor;
// x = 40 gives lb to f32 precision.
func.func @gate(%m: memref<?x?x?xf32>, %lb: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %one = arith.constant 1.0 : f32
  %n0 = memref.dim %m, %c0 : memref<?x?x?xf32>
  %n1 = memref.dim %m, %c1 : memref<?x?x?xf32>
  %n2 = memref.dim %m, %c2 : memref<?x?x?xf32>
  scf.for %a = %c0 to %n0 step %c1 {
    scf.for %b = %c0 to %n1 step %c1 {
      scf.for %c = %c0 to %n2 step %c1 {
        %x = memref.load %m[%a, %b, %c] : memref<?x?x?xf32>
        %nx = arith.negf %x : f32
        %e = math.exp %nx : f32
        %d = arith.addf %one, %e : f32
        %s = arith.divf %one, %d : f32
        %g = arith.mulf %s, %lb : f32
        memref.store %g, %m[%a, %b, %c] : memref<?x?x?xf32>
      }
    }
  }
  return
}

// The token recurrence per value head (KDA.md §2), in place on `s`
// ([HV, K, V]); `o` gets the outputs, `b` the state after every `every`
// tokens and after the last one.
func.func @reference(%q: memref<?x?x?xf32>, %k: memref<?x?x?xf32>, %v: memref<?x?x?xf32>,
                     %g: memref<?x?x?xf32>, %beta: memref<?x?x?xf32>, %scale: f32,
                     %every: index, %s: memref<?x?x?xf32>, %o: memref<?x?x?xf32>,
                     %b: memref<?x?x?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %t = memref.dim %q, %c0 : memref<?x?x?xf32>
  %h = memref.dim %q, %c1 : memref<?x?x?xf32>
  %dk = memref.dim %q, %c2 : memref<?x?x?xf32>
  %hv = memref.dim %v, %c1 : memref<?x?x?xf32>
  %dv = memref.dim %v, %c2 : memref<?x?x?xf32>
  %group = arith.divui %hv, %h : index
  %last = arith.subi %t, %c1 : index
  %p = memref.alloc(%dv) : memref<?xf32>
  scf.for %tt = %c0 to %t step %c1 {
    scf.for %hh = %c0 to %hv step %c1 {
      %hq = arith.divui %hh, %group : index
      %bt = memref.load %beta[%tt, %hh, %c0] : memref<?x?x?xf32>
      // Decay, then predict with the decayed state.
      scf.for %i = %c0 to %dk step %c1 {
        %gi = memref.load %g[%tt, %hh, %i] : memref<?x?x?xf32>
        %a = math.exp %gi : f32
        scf.for %j = %c0 to %dv step %c1 {
          %x = memref.load %s[%hh, %i, %j] : memref<?x?x?xf32>
          %y = arith.mulf %x, %a : f32
          memref.store %y, %s[%hh, %i, %j] : memref<?x?x?xf32>
        }
      }
      scf.for %j = %c0 to %dv step %c1 {
        %pj = scf.for %i = %c0 to %dk step %c1 iter_args(%acc = %zero) -> f32 {
          %x = memref.load %s[%hh, %i, %j] : memref<?x?x?xf32>
          %ki = memref.load %k[%tt, %hq, %i] : memref<?x?x?xf32>
          %m = arith.mulf %x, %ki : f32
          %r = arith.addf %acc, %m : f32
          scf.yield %r : f32
        }
        %vj = memref.load %v[%tt, %hh, %j] : memref<?x?x?xf32>
        %d = arith.subf %vj, %pj : f32
        %db = arith.mulf %d, %bt : f32
        memref.store %db, %p[%j] : memref<?xf32>
      }
      // Update, then read with the updated state.
      scf.for %i = %c0 to %dk step %c1 {
        %ki = memref.load %k[%tt, %hq, %i] : memref<?x?x?xf32>
        scf.for %j = %c0 to %dv step %c1 {
          %x = memref.load %s[%hh, %i, %j] : memref<?x?x?xf32>
          %dj = memref.load %p[%j] : memref<?xf32>
          %m = arith.mulf %ki, %dj : f32
          %y = arith.addf %x, %m : f32
          memref.store %y, %s[%hh, %i, %j] : memref<?x?x?xf32>
        }
      }
      scf.for %j = %c0 to %dv step %c1 {
        %oj = scf.for %i = %c0 to %dk step %c1 iter_args(%acc = %zero) -> f32 {
          %x = memref.load %s[%hh, %i, %j] : memref<?x?x?xf32>
          %qi = memref.load %q[%tt, %hq, %i] : memref<?x?x?xf32>
          %qs = arith.mulf %qi, %scale : f32
          %m = arith.mulf %x, %qs : f32
          %r = arith.addf %acc, %m : f32
          scf.yield %r : f32
        }
        memref.store %oj, %o[%tt, %hh, %j] : memref<?x?x?xf32>
      }
    }
    // A boundary after every `every` tokens and after the last.
    %n = arith.addi %tt, %c1 : index
    %r = arith.remui %n, %every : index
    %full = arith.cmpi eq, %r, %c0 : index
    %end = arith.cmpi eq, %tt, %last : index
    %closes = arith.ori %full, %end : i1
    scf.if %closes {
      %slot = arith.divui %tt, %every : index
      scf.for %hh = %c0 to %hv step %c1 {
        scf.for %i = %c0 to %dk step %c1 {
          scf.for %j = %c0 to %dv step %c1 {
            %x = memref.load %s[%hh, %i, %j] : memref<?x?x?xf32>
            memref.store %x, %b[%slot, %hh, %i, %j] : memref<?x?x?x?xf32>
          }
        }
      }
    }
  }
  return
}

// Σ (x − y)² and Σ y² over two buffers of `n` elements (flat views).
func.func @errors(%x: memref<?xf32>, %y: memref<?xf32>) -> (f32, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?xf32>
  %e:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %zero, %b = %zero) -> (f32, f32) {
    %xi = memref.load %x[%i] : memref<?xf32>
    %yi = memref.load %y[%i] : memref<?xf32>
    %d = arith.subf %xi, %yi : f32
    %d2 = arith.mulf %d, %d : f32
    %y2 = arith.mulf %yi, %yi : f32
    %a1 = arith.addf %a, %d2 : f32
    %b1 = arith.addf %b, %y2 : f32
    scf.yield %a1, %b1 : f32, f32
  }
  return %e#0, %e#1 : f32, f32
}

func.func @compare(%x: memref<?xf32>, %y: memref<?xf32>) {
  %bound = arith.constant 5.0e-3 : f32
  %e:2 = func.call @errors(%x, %y) : (memref<?xf32>, memref<?xf32>) -> (f32, f32)
  func.call @report(%e#0, %e#1, %bound) : (f32, f32, f32) -> ()
  return
}

// Inputs for T tokens, H q/k heads, HV value heads, K and V channels:
// q, k, v, g (the gate's bound lb), beta (as [T, HV, 1]) and the initial
// state, filled.
func.func @inputs(%t: index, %h: index, %hv: index, %dk: index, %dv: index, %saturated: i1,
                  %lb: f32)
    -> (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>,
        memref<?x?x?xf32>, memref<?x?x?xf32>) {
  %c1 = arith.constant 1 : index
  %q = memref.alloc(%t, %h, %dk) : memref<?x?x?xf32>
  %k = memref.alloc(%t, %h, %dk) : memref<?x?x?xf32>
  %v = memref.alloc(%t, %hv, %dv) : memref<?x?x?xf32>
  %g = memref.alloc(%t, %hv, %dk) : memref<?x?x?xf32>
  %beta = memref.alloc(%t, %hv, %c1) : memref<?x?x?xf32>
  %s = memref.alloc(%hv, %dk, %dv) : memref<?x?x?xf32>
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %pq = arith.constant 0.1 : f32
  %pk = arith.constant 1.3 : f32
  %pv = arith.constant 2.9 : f32
  %pg = arith.constant 0.6 : f32
  %pb = arith.constant 4.4 : f32
  %ps = arith.constant 5.2 : f32
  %tenth = arith.constant 0.1 : f32
  %three = arith.constant 3.0 : f32
  %forty = arith.constant 40.0 : f32
  func.call @fill(%q, %one, %zero, %pq) : (memref<?x?x?xf32>, f32, f32, f32) -> ()
  func.call @fill(%k, %one, %zero, %pk) : (memref<?x?x?xf32>, f32, f32, f32) -> ()
  func.call @normalize(%q) : (memref<?x?x?xf32>) -> ()
  func.call @normalize(%k) : (memref<?x?x?xf32>) -> ()
  func.call @fill(%v, %one, %zero, %pv) : (memref<?x?x?xf32>, f32, f32, f32) -> ()
  // Gate inputs in (-3, 3), or 40 (saturated).
  %gamp = arith.select %saturated, %zero, %three : f32
  %goff = arith.select %saturated, %forty, %zero : f32
  func.call @fill(%g, %gamp, %goff, %pg) : (memref<?x?x?xf32>, f32, f32, f32) -> ()
  func.call @gate(%g, %lb) : (memref<?x?x?xf32>, f32) -> ()
  // β = sigmoid(x): the gate's −5 sigmoid(x) times −1/5.
  func.call @fill(%beta, %three, %zero, %pb) : (memref<?x?x?xf32>, f32, f32, f32) -> ()
  %five = arith.constant -5.0 : f32
  func.call @gate(%beta, %five) : (memref<?x?x?xf32>, f32) -> ()
  %fifth = arith.constant -0.2 : f32
  %bf = memref.collapse_shape %beta [[0], [1, 2]] : memref<?x?x?xf32> into memref<?x?xf32>
  %c0 = arith.constant 0 : index
  %bn0 = memref.dim %bf, %c0 : memref<?x?xf32>
  %bn1 = memref.dim %bf, %c1 : memref<?x?xf32>
  scf.for %a = %c0 to %bn0 step %c1 {
    scf.for %b = %c0 to %bn1 step %c1 {
      %x = memref.load %bf[%a, %b] : memref<?x?xf32>
      %y = arith.mulf %x, %fifth : f32
      memref.store %y, %bf[%a, %b] : memref<?x?xf32>
    }
  }
  func.call @fill(%s, %tenth, %zero, %ps) : (memref<?x?x?xf32>, f32, f32, f32) -> ()
  return %q, %k, %v, %g, %beta, %s
      : memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>,
        memref<?x?x?xf32>, memref<?x?x?xf32>
}

func.func @flat3(%m: memref<?x?x?xf32>) -> memref<?xf32> {
  %f = memref.collapse_shape %m [[0, 1, 2]] : memref<?x?x?xf32> into memref<?xf32>
  return %f : memref<?xf32>
}

func.func @flat4(%m: memref<?x?x?x?xf32>) -> memref<?xf32> {
  %f = memref.collapse_shape %m [[0, 1, 2, 3]] : memref<?x?x?x?xf32> into memref<?xf32>
  return %f : memref<?xf32>
}

// One case: the reference, then the kernel on copies of the same inputs,
// then the three reports. The kernel's shapes are static but for T.
func.func @k3(%t: index, %sat: i1) {
  %lb5 = arith.constant -5.0 : f32
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %scale = arith.constant 0.0883883476 : f32
  %q, %k, %v, %g, %beta, %s = func.call @inputs(%t, %c2, %c2, %c128, %c128, %sat, %lb5)
      : (index, index, index, index, index, i1, f32)
      -> (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>,
          memref<?x?x?xf32>, memref<?x?x?xf32>)
  %slots = arith.ceildivui %t, %c16 : index
  %ks = memref.alloc() : memref<2x128x128xf32>
  %ksd = memref.cast %ks : memref<2x128x128xf32> to memref<?x?x?xf32>
  memref.copy %s, %ksd : memref<?x?x?xf32> to memref<?x?x?xf32>
  %o = memref.alloc(%t, %c2, %c128) : memref<?x?x?xf32>
  %b = memref.alloc(%slots, %c2, %c128, %c128) : memref<?x?x?x?xf32>
  func.call @reference(%q, %k, %v, %g, %beta, %scale, %c16, %s, %o, %b)
      : (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>,
         memref<?x?x?xf32>, f32, index, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?x?xf32>) -> ()
  %qs = memref.cast %q : memref<?x?x?xf32> to memref<?x2x128xf32>
  %kk = memref.cast %k : memref<?x?x?xf32> to memref<?x2x128xf32>
  %vs = memref.cast %v : memref<?x?x?xf32> to memref<?x2x128xf32>
  %gs = memref.cast %g : memref<?x?x?xf32> to memref<?x2x128xf32>
  %bc = memref.collapse_shape %beta [[0], [1, 2]] : memref<?x?x?xf32> into memref<?x?xf32>
  %bs = memref.cast %bc : memref<?x?xf32> to memref<?x2xf32>
  %ko = memref.alloc(%t) : memref<?x2x128xf32>
  %kb = memref.alloc(%slots) : memref<?x2x128x128xf32>
  %c16w = arith.constant 16 : index
  %chunks = arith.ceildivui %t, %c16w : index
  %ws = memref.alloc(%chunks) : memref<?x2x6400xf32>
  k3.kda_chunks %qs, %kk, %vs, %gs, %bs outs(%ko, %ks, %ws, %kb) scale = 0.0883883476 every = 16
      : (memref<?x2x128xf32>, memref<?x2x128xf32>, memref<?x2x128xf32>, memref<?x2x128xf32>,
         memref<?x2xf32>, memref<?x2x128xf32>, memref<2x128x128xf32>, memref<?x2x6400xf32>, memref<?x2x128x128xf32>) -> ()
  %kod = memref.cast %ko : memref<?x2x128xf32> to memref<?x?x?xf32>
  %kbd = memref.cast %kb : memref<?x2x128x128xf32> to memref<?x?x?x?xf32>
  func.call @results(%kod, %o, %ksd, %s, %kbd, %b)
      : (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>,
         memref<?x?x?x?xf32>, memref<?x?x?x?xf32>) -> ()
  return
}

func.func @results(%ko: memref<?x?x?xf32>, %o: memref<?x?x?xf32>, %ks: memref<?x?x?xf32>,
                   %s: memref<?x?x?xf32>, %kb: memref<?x?x?x?xf32>, %b: memref<?x?x?x?xf32>) {
  %a0 = func.call @flat3(%ko) : (memref<?x?x?xf32>) -> memref<?xf32>
  %a1 = func.call @flat3(%o) : (memref<?x?x?xf32>) -> memref<?xf32>
  vector.print str "out\n"
  func.call @compare(%a0, %a1) : (memref<?xf32>, memref<?xf32>) -> ()
  %b0 = func.call @flat3(%ks) : (memref<?x?x?xf32>) -> memref<?xf32>
  %b1 = func.call @flat3(%s) : (memref<?x?x?xf32>) -> memref<?xf32>
  vector.print str "state\n"
  func.call @compare(%b0, %b1) : (memref<?xf32>, memref<?xf32>) -> ()
  %d0 = func.call @flat4(%kb) : (memref<?x?x?x?xf32>) -> memref<?xf32>
  %d1 = func.call @flat4(%b) : (memref<?x?x?x?xf32>) -> memref<?xf32>
  vector.print str "boundaries\n"
  func.call @compare(%d0, %d1) : (memref<?xf32>, memref<?xf32>) -> ()
  return
}

func.func @saturated(%t: index, %lb: f32) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %true = arith.constant true
  %scale = arith.constant 0.125 : f32
  %q, %k, %v, %g, %beta, %s = func.call @inputs(%t, %c1, %c1, %c64, %c32, %true, %lb)
      : (index, index, index, index, index, i1, f32)
      -> (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>,
          memref<?x?x?xf32>, memref<?x?x?xf32>)
  %slots = arith.ceildivui %t, %c32 : index
  %ks = memref.alloc() : memref<1x64x32xf32>
  %ksd = memref.cast %ks : memref<1x64x32xf32> to memref<?x?x?xf32>
  memref.copy %s, %ksd : memref<?x?x?xf32> to memref<?x?x?xf32>
  %o = memref.alloc(%t, %c1, %c32) : memref<?x?x?xf32>
  %b = memref.alloc(%slots, %c1, %c64, %c32) : memref<?x?x?x?xf32>
  func.call @reference(%q, %k, %v, %g, %beta, %scale, %c32, %s, %o, %b)
      : (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>,
         memref<?x?x?xf32>, f32, index, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?x?xf32>) -> ()
  %qs = memref.cast %q : memref<?x?x?xf32> to memref<?x1x64xf32>
  %kk = memref.cast %k : memref<?x?x?xf32> to memref<?x1x64xf32>
  %vs = memref.cast %v : memref<?x?x?xf32> to memref<?x1x32xf32>
  %gs = memref.cast %g : memref<?x?x?xf32> to memref<?x1x64xf32>
  %bc = memref.collapse_shape %beta [[0], [1, 2]] : memref<?x?x?xf32> into memref<?x?xf32>
  %bs = memref.cast %bc : memref<?x?xf32> to memref<?x1xf32>
  %ko = memref.alloc(%t) : memref<?x1x32xf32>
  %kb = memref.alloc(%slots) : memref<?x1x64x32xf32>
  %c16w = arith.constant 16 : index
  %chunks = arith.ceildivui %t, %c16w : index
  %ws = memref.alloc(%chunks) : memref<?x1x2752xf32>
  k3.kda_chunks %qs, %kk, %vs, %gs, %bs outs(%ko, %ks, %ws, %kb) scale = 0.125 every = 32
      : (memref<?x1x64xf32>, memref<?x1x64xf32>, memref<?x1x32xf32>, memref<?x1x64xf32>,
         memref<?x1xf32>, memref<?x1x32xf32>, memref<1x64x32xf32>, memref<?x1x2752xf32>, memref<?x1x64x32xf32>) -> ()
  %kod = memref.cast %ko : memref<?x1x32xf32> to memref<?x?x?xf32>
  %kbd = memref.cast %kb : memref<?x1x64x32xf32> to memref<?x?x?x?xf32>
  func.call @results(%kod, %o, %ksd, %s, %kbd, %b)
      : (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>,
         memref<?x?x?x?xf32>, memref<?x?x?x?xf32>) -> ()
  return
}

func.func @odd(%t: index) {
  %lb5 = arith.constant -5.0 : f32
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c24 = arith.constant 24 : index
  %c40 = arith.constant 40 : index
  %false = arith.constant false
  %scale = arith.constant 0.158113883 : f32
  %q, %k, %v, %g, %beta, %s = func.call @inputs(%t, %c2, %c4, %c40, %c24, %false, %lb5)
      : (index, index, index, index, index, i1, f32)
      -> (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>,
          memref<?x?x?xf32>, memref<?x?x?xf32>)
  %slots = arith.ceildivui %t, %c16 : index
  %ks = memref.alloc() : memref<4x40x24xf32>
  %ksd = memref.cast %ks : memref<4x40x24xf32> to memref<?x?x?xf32>
  memref.copy %s, %ksd : memref<?x?x?xf32> to memref<?x?x?xf32>
  %o = memref.alloc(%t, %c4, %c24) : memref<?x?x?xf32>
  %b = memref.alloc(%slots, %c4, %c40, %c24) : memref<?x?x?x?xf32>
  func.call @reference(%q, %k, %v, %g, %beta, %scale, %c16, %s, %o, %b)
      : (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>,
         memref<?x?x?xf32>, f32, index, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?x?xf32>) -> ()
  %qs = memref.cast %q : memref<?x?x?xf32> to memref<?x2x40xf32>
  %kk = memref.cast %k : memref<?x?x?xf32> to memref<?x2x40xf32>
  %vs = memref.cast %v : memref<?x?x?xf32> to memref<?x4x24xf32>
  %gs = memref.cast %g : memref<?x?x?xf32> to memref<?x4x40xf32>
  %bc = memref.collapse_shape %beta [[0], [1, 2]] : memref<?x?x?xf32> into memref<?x?xf32>
  %bs = memref.cast %bc : memref<?x?xf32> to memref<?x4xf32>
  %ko = memref.alloc(%t) : memref<?x4x24xf32>
  %kb = memref.alloc(%slots) : memref<?x4x40x24xf32>
  %c16w = arith.constant 16 : index
  %chunks = arith.ceildivui %t, %c16w : index
  %ws = memref.alloc(%chunks) : memref<?x4x2096xf32>
  k3.kda_chunks %qs, %kk, %vs, %gs, %bs outs(%ko, %ks, %ws, %kb) scale = 0.158113883 every = 16
      : (memref<?x2x40xf32>, memref<?x2x40xf32>, memref<?x4x24xf32>, memref<?x4x40xf32>,
         memref<?x4xf32>, memref<?x4x24xf32>, memref<4x40x24xf32>, memref<?x4x2096xf32>, memref<?x4x40x24xf32>) -> ()
  %kod = memref.cast %ko : memref<?x4x24xf32> to memref<?x?x?xf32>
  %kbd = memref.cast %kb : memref<?x4x40x24xf32> to memref<?x?x?x?xf32>
  func.call @results(%kod, %o, %ksd, %s, %kbd, %b)
      : (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>,
         memref<?x?x?x?xf32>, memref<?x?x?x?xf32>) -> ()
  return
}

func.func @chunked(%q: tensor<?x2x32xf32>, %k: tensor<?x2x32xf32>, %v: tensor<?x2x32xf32>,
                    %g: tensor<?x2x32xf32>, %beta: tensor<?x2xf32>, %s0: tensor<2x32x32xf32>)
    -> (tensor<?x2x32xf32>, tensor<2x32x32xf32>, tensor<?x2x32x32xf32>) {
  %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.176776695 chunk = 32 sub_chunk = 16 factored
      : (tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x2xf32>, tensor<2x32x32xf32>)
      -> (tensor<?x2x32xf32>, tensor<2x32x32xf32>, tensor<?x2x32x32xf32>)
  return %o, %s1, %b : tensor<?x2x32xf32>, tensor<2x32x32xf32>, tensor<?x2x32x32xf32>
}

func.func @scanned(%q: tensor<?x2x32xf32>, %k: tensor<?x2x32xf32>, %v: tensor<?x2x32xf32>,
                   %g: tensor<?x2x32xf32>, %beta: tensor<?x2xf32>, %s0: tensor<2x32x32xf32>)
    -> (tensor<?x2x32xf32>, tensor<2x32x32xf32>, tensor<?x2x32x32xf32>) {
  %o, %s1, %b = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = 0.176776695 snapshots every 32
      : (tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x2xf32>, tensor<2x32x32xf32>)
      -> (tensor<?x2x32xf32>, tensor<2x32x32xf32>, tensor<?x2x32x32xf32>)
  return %o, %s1, %b : tensor<?x2x32xf32>, tensor<2x32x32xf32>, tensor<?x2x32x32xf32>
}

// T = 70: boundary states after 32 and 64 tokens and at the end (the
// scan's snapshots hold the first two; its final state is the third).
// With `%safe`, the unbounded gate's inputs through @chunkedSafe.
func.func @converted(%safe: i1) {
  %lb5 = arith.constant -5.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %c70 = arith.constant 70 : index
  %false = arith.constant false
  %q, %k, %v, %g, %beta, %s = func.call @inputs(%c70, %c2, %c2, %c32, %c32, %false, %lb5)
      : (index, index, index, index, index, i1, f32)
      -> (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>,
          memref<?x?x?xf32>, memref<?x?x?xf32>)
  scf.if %safe {
    %three = arith.constant 3.0 : f32
    %zero = arith.constant 0.0 : f32
    %pg = arith.constant 0.6 : f32
    func.call @fill(%g, %three, %zero, %pg) : (memref<?x?x?xf32>, f32, f32, f32) -> ()
    func.call @softplusGate(%g) : (memref<?x?x?xf32>) -> ()
  }
  %bc = memref.collapse_shape %beta [[0], [1, 2]] : memref<?x?x?xf32> into memref<?x?xf32>
  %tq = bufferization.to_tensor %q restrict : memref<?x?x?xf32> to tensor<?x?x?xf32>
  %tk = bufferization.to_tensor %k restrict : memref<?x?x?xf32> to tensor<?x?x?xf32>
  %tv = bufferization.to_tensor %v restrict : memref<?x?x?xf32> to tensor<?x?x?xf32>
  %tg = bufferization.to_tensor %g restrict : memref<?x?x?xf32> to tensor<?x?x?xf32>
  %tb = bufferization.to_tensor %bc restrict : memref<?x?xf32> to tensor<?x?xf32>
  %ts = bufferization.to_tensor %s restrict : memref<?x?x?xf32> to tensor<?x?x?xf32>
  %cq = tensor.cast %tq : tensor<?x?x?xf32> to tensor<?x2x32xf32>
  %ck = tensor.cast %tk : tensor<?x?x?xf32> to tensor<?x2x32xf32>
  %cv = tensor.cast %tv : tensor<?x?x?xf32> to tensor<?x2x32xf32>
  %cg = tensor.cast %tg : tensor<?x?x?xf32> to tensor<?x2x32xf32>
  %cb = tensor.cast %tb : tensor<?x?xf32> to tensor<?x2xf32>
  %cs = tensor.cast %ts : tensor<?x?x?xf32> to tensor<2x32x32xf32>
  %o1, %s1, %b1 = scf.if %safe -> (tensor<?x2x32xf32>, tensor<2x32x32xf32>, tensor<?x2x32x32xf32>) {
    %r:3 = func.call @chunkedSafe(%cq, %ck, %cv, %cg, %cb, %cs)
        : (tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x2xf32>, tensor<2x32x32xf32>)
        -> (tensor<?x2x32xf32>, tensor<2x32x32xf32>, tensor<?x2x32x32xf32>)
    scf.yield %r#0, %r#1, %r#2 : tensor<?x2x32xf32>, tensor<2x32x32xf32>, tensor<?x2x32x32xf32>
  } else {
    %r:3 = func.call @chunked(%cq, %ck, %cv, %cg, %cb, %cs)
        : (tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x2xf32>, tensor<2x32x32xf32>)
        -> (tensor<?x2x32xf32>, tensor<2x32x32xf32>, tensor<?x2x32x32xf32>)
    scf.yield %r#0, %r#1, %r#2 : tensor<?x2x32xf32>, tensor<2x32x32xf32>, tensor<?x2x32x32xf32>
  }
  %o2, %s2, %b2 = func.call @scanned(%cq, %ck, %cv, %cg, %cb, %cs)
      : (tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x2xf32>, tensor<2x32x32xf32>)
      -> (tensor<?x2x32xf32>, tensor<2x32x32xf32>, tensor<?x2x32x32xf32>)
  %mo1 = bufferization.to_buffer %o1 : tensor<?x2x32xf32> to memref<?x2x32xf32>
  %mo2 = bufferization.to_buffer %o2 : tensor<?x2x32xf32> to memref<?x2x32xf32>
  %ms1 = bufferization.to_buffer %s1 : tensor<2x32x32xf32> to memref<2x32x32xf32>
  %ms2 = bufferization.to_buffer %s2 : tensor<2x32x32xf32> to memref<2x32x32xf32>
  %mb1 = bufferization.to_buffer %b1 : tensor<?x2x32x32xf32> to memref<?x2x32x32xf32>
  %mb2 = bufferization.to_buffer %b2 : tensor<?x2x32x32xf32> to memref<?x2x32x32xf32>
  // The scan's two snapshots and its final state as three boundaries.
  %c3 = arith.constant 3 : index
  %want = memref.alloc(%c3) : memref<?x2x32x32xf32>
  %snaps = memref.subview %want[0, 0, 0, 0] [2, 2, 32, 32] [1, 1, 1, 1]
      : memref<?x2x32x32xf32> to memref<2x2x32x32xf32, strided<[2048, 1024, 32, 1]>>
  %got = memref.subview %mb2[0, 0, 0, 0] [2, 2, 32, 32] [1, 1, 1, 1]
      : memref<?x2x32x32xf32> to memref<2x2x32x32xf32, strided<[2048, 1024, 32, 1]>>
  memref.copy %got, %snaps : memref<2x2x32x32xf32, strided<[2048, 1024, 32, 1]>> to memref<2x2x32x32xf32, strided<[2048, 1024, 32, 1]>>
  %fin = memref.subview %want[2, 0, 0, 0] [1, 2, 32, 32] [1, 1, 1, 1]
      : memref<?x2x32x32xf32> to memref<2x32x32xf32, strided<[1024, 32, 1], offset: 4096>>
  memref.copy %ms2, %fin : memref<2x32x32xf32> to memref<2x32x32xf32, strided<[1024, 32, 1], offset: 4096>>
  %do1 = memref.cast %mo1 : memref<?x2x32xf32> to memref<?x?x?xf32>
  %do2 = memref.cast %mo2 : memref<?x2x32xf32> to memref<?x?x?xf32>
  %ds1 = memref.cast %ms1 : memref<2x32x32xf32> to memref<?x?x?xf32>
  %ds2 = memref.cast %ms2 : memref<2x32x32xf32> to memref<?x?x?xf32>
  %db1 = memref.cast %mb1 : memref<?x2x32x32xf32> to memref<?x?x?x?xf32>
  %db2 = memref.cast %want : memref<?x2x32x32xf32> to memref<?x?x?x?xf32>
  func.call @results(%do1, %do2, %ds1, %ds2, %db1, %db2)
      : (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>,
         memref<?x?x?x?xf32>, memref<?x?x?x?xf32>) -> ()
  return
}

// g = -softplus(x) (the unbounded gate with A = 0, dt = 0) over a filled
// tensor, but -50 on every fourth key channel.
func.func @softplusGate(%m: memref<?x?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  %floor = arith.constant -50.0 : f32
  %n0 = memref.dim %m, %c0 : memref<?x?x?xf32>
  %n1 = memref.dim %m, %c1 : memref<?x?x?xf32>
  %n2 = memref.dim %m, %c2 : memref<?x?x?xf32>
  scf.for %a = %c0 to %n0 step %c1 {
    scf.for %b = %c0 to %n1 step %c1 {
      scf.for %c = %c0 to %n2 step %c1 {
        %x = memref.load %m[%a, %b, %c] : memref<?x?x?xf32>
        %e = math.exp %x : f32
        %l = math.log1p %e : f32
        %sp = arith.negf %l : f32
        %r = arith.remui %c, %c4 : index
        %steep = arith.cmpi eq, %r, %c0 : index
        %g = arith.select %steep, %floor, %sp : f32
        memref.store %g, %m[%a, %b, %c] : memref<?x?x?xf32>
      }
    }
  }
  return
}

// Softplus-gated inputs: @inputs' q, k, v, beta and state, g replaced.
func.func @unboundedInputs(%t: index, %h: index, %hv: index, %dk: index, %dv: index)
    -> (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>,
        memref<?x?x?xf32>, memref<?x?x?xf32>) {
  %false = arith.constant false
  %lb5 = arith.constant -5.0 : f32
  %three = arith.constant 3.0 : f32
  %zero = arith.constant 0.0 : f32
  %pg = arith.constant 0.6 : f32
  %q, %k, %v, %g, %beta, %s = func.call @inputs(%t, %h, %hv, %dk, %dv, %false, %lb5)
      : (index, index, index, index, index, i1, f32)
      -> (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>,
          memref<?x?x?xf32>, memref<?x?x?xf32>)
  func.call @fill(%g, %three, %zero, %pg) : (memref<?x?x?xf32>, f32, f32, f32) -> ()
  func.call @softplusGate(%g) : (memref<?x?x?xf32>) -> ()
  return %q, %k, %v, %g, %beta, %s
      : memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>,
        memref<?x?x?xf32>, memref<?x?x?xf32>
}

// One unbounded case, K = 64, V = 32, H = 1, HV = 2, through the pairwise
// kernels or (`%pairwise` false) the factored ones.
func.func @unbounded(%t: index, %pairwise: i1) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %scale = arith.constant 0.125 : f32
  %q, %k, %v, %g, %beta, %s = func.call @unboundedInputs(%t, %c1, %c2, %c64, %c32)
      : (index, index, index, index, index)
      -> (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>,
          memref<?x?x?xf32>, memref<?x?x?xf32>)
  %slots = arith.ceildivui %t, %c16 : index
  %ks = memref.alloc() : memref<2x64x32xf32>
  %ksd = memref.cast %ks : memref<2x64x32xf32> to memref<?x?x?xf32>
  memref.copy %s, %ksd : memref<?x?x?xf32> to memref<?x?x?xf32>
  %o = memref.alloc(%t, %c2, %c32) : memref<?x?x?xf32>
  %b = memref.alloc(%slots, %c2, %c64, %c32) : memref<?x?x?x?xf32>
  func.call @reference(%q, %k, %v, %g, %beta, %scale, %c16, %s, %o, %b)
      : (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>,
         memref<?x?x?xf32>, f32, index, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?x?xf32>) -> ()
  %qs = memref.cast %q : memref<?x?x?xf32> to memref<?x1x64xf32>
  %kk = memref.cast %k : memref<?x?x?xf32> to memref<?x1x64xf32>
  %vs = memref.cast %v : memref<?x?x?xf32> to memref<?x2x32xf32>
  %gs = memref.cast %g : memref<?x?x?xf32> to memref<?x2x64xf32>
  %bc = memref.collapse_shape %beta [[0], [1, 2]] : memref<?x?x?xf32> into memref<?x?xf32>
  %bs = memref.cast %bc : memref<?x?xf32> to memref<?x2xf32>
  %ko = memref.alloc(%t) : memref<?x2x32xf32>
  %kb = memref.alloc(%slots) : memref<?x2x64x32xf32>
  %ws = memref.alloc(%slots) : memref<?x2x2752xf32>
  scf.if %pairwise {
    k3.kda_chunks %qs, %kk, %vs, %gs, %bs outs(%ko, %ks, %ws, %kb) scale = 0.125 every = 16 pairwise
        : (memref<?x1x64xf32>, memref<?x1x64xf32>, memref<?x2x32xf32>, memref<?x2x64xf32>,
           memref<?x2xf32>, memref<?x2x32xf32>, memref<2x64x32xf32>, memref<?x2x2752xf32>, memref<?x2x64x32xf32>) -> ()
  } else {
    k3.kda_chunks %qs, %kk, %vs, %gs, %bs outs(%ko, %ks, %ws, %kb) scale = 0.125 every = 16
        : (memref<?x1x64xf32>, memref<?x1x64xf32>, memref<?x2x32xf32>, memref<?x2x64xf32>,
           memref<?x2xf32>, memref<?x2x32xf32>, memref<2x64x32xf32>, memref<?x2x2752xf32>, memref<?x2x64x32xf32>) -> ()
  }
  %kod = memref.cast %ko : memref<?x2x32xf32> to memref<?x?x?xf32>
  %kbd = memref.cast %kb : memref<?x2x64x32xf32> to memref<?x?x?x?xf32>
  func.call @results(%kod, %o, %ksd, %s, %kbd, %b)
      : (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>,
         memref<?x?x?x?xf32>, memref<?x?x?x?xf32>) -> ()
  return
}

func.func @chunkedSafe(%q: tensor<?x2x32xf32>, %k: tensor<?x2x32xf32>, %v: tensor<?x2x32xf32>,
                       %g: tensor<?x2x32xf32>, %beta: tensor<?x2xf32>, %s0: tensor<2x32x32xf32>)
    -> (tensor<?x2x32xf32>, tensor<2x32x32xf32>, tensor<?x2x32x32xf32>) {
  %o, %s1, %b = k3.kda_chunked %q, %k, %v, %g, %beta, state(%s0) scale = 0.176776695 chunk = 32 sub_chunk = 2 safe
      : (tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x2xf32>, tensor<2x32x32xf32>)
      -> (tensor<?x2x32xf32>, tensor<2x32x32xf32>, tensor<?x2x32x32xf32>)
  return %o, %s1, %b : tensor<?x2x32xf32>, tensor<2x32x32xf32>, tensor<?x2x32x32xf32>
}

func.func @main() {
  %c1 = arith.constant 1 : index
  %c17 = arith.constant 17 : index
  %c40 = arith.constant 40 : index
  %c63 = arith.constant 63 : index
  %false = arith.constant false
  vector.print str "k3 "
  func.call @k3(%c40, %false) : (index, i1) -> ()
  %m5 = arith.constant -5.0 : f32
  %m10 = arith.constant -10.0 : f32
  vector.print str "saturated "
  func.call @saturated(%c63, %m5) : (index, f32) -> ()
  vector.print str "saturated10 "
  func.call @saturated(%c63, %m10) : (index, f32) -> ()
  vector.print str "odd17 "
  func.call @odd(%c17) : (index) -> ()
  vector.print str "odd1 "
  func.call @odd(%c1) : (index) -> ()
  vector.print str "converted "
  func.call @converted(%false) : (i1) -> ()
  %true = arith.constant true
  %c15 = arith.constant 15 : index
  %c70 = arith.constant 70 : index
  vector.print str "unbounded1 "
  func.call @unbounded(%c1, %true) : (index, i1) -> ()
  vector.print str "unbounded15 "
  func.call @unbounded(%c15, %true) : (index, i1) -> ()
  vector.print str "unbounded63 "
  func.call @unbounded(%c63, %true) : (index, i1) -> ()
  vector.print str "unbounded70 "
  func.call @unbounded(%c70, %true) : (index, i1) -> ()
  vector.print str "factored63 "
  func.call @unbounded(%c63, %false) : (index, i1) -> ()
  vector.print str "convertedSafe "
  func.call @converted(%true) : (i1) -> ()
  return
}
