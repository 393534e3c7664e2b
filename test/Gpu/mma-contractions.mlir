// RUN: k3-opt %s --k3-gpu-mma-contractions | FileCheck %s
// RUN: k3-opt %s --k3-gpu-mma-contractions=wgmma=1 | FileCheck %s --check-prefix=WG

#xk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>

// A projection y += x · Wᵀ (f32 activations, bf16 weights): blocks of 128
// threads (4 warps, 16 x 128 of y each) over ⌈N/128⌉ x ⌈T/16⌉; the k loop
// steps by 16 and issues 4 mma.sync m16n8k16 per warp on bf16 operands
// packed two to a register, f32 accumulators carried through the loop.
// CHECK-LABEL: func.func @linear
// CHECK: %[[T:.*]] = memref.dim %arg0
// CHECK: %[[GX:.*]] = arith.ceildivui %c96, %c128
// CHECK: %[[GY:.*]] = arith.ceildivui %[[T]], %c16
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[GX]], {{.*}} = %[[GY]], {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c128{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}})
// CHECK: scf.for %{{.*}} = %{{.*}} to %c64{{.*}} step %c16{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK-COUNT-4: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: scf.yield
// CHECK-COUNT-16: memref.store
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
// sm_90a (wgmma=1): one warpgroup per 64 x 128 tile (⌈T/64⌉ row tiles), a
// 128-byte-aligned shared buffer holding the A (64 x 64) and B (128 x 64)
// stage tiles; per stage of 64 k: barrier, the 128 threads copy both tiles
// as bf16, fence the async proxy, barrier, then four wgmma m64n128k16 on
// descriptors (LBO 128 B, SBO 256 B: 8 << 16 | 16 << 32 = 68720001024),
// each k16 step 2048 B further into A and 4096 B into B; the 64
// accumulators per thread are added into y where in bounds.
// WG-LABEL: func.func @linear
// WG: %[[GY:.*]] = arith.ceildivui %{{.*}}, %c64
// WG: gpu.launch blocks({{.*}}) in ({{.*}}, {{.*}} = %[[GY]], {{.*}}) threads({{.*}}) in ({{.*}} = %c128{{.*}}, {{.*}}) workgroup(%[[SMEM:.*]] : memref<12352xbf16, #gpu.address_space<workgroup>>)
// WG: memref.extract_aligned_pointer_as_index %[[SMEM]]
// WG: arith.andi %{{.*}}, %c-128_i64
// WG: scf.for %{{.*}} = %{{.*}} to %c64 step %c64{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (!llvm.struct<(f32, f32,
// WG-NEXT: gpu.barrier
// Element (r, k) of a tile of R rows goes to (k / 16) * 16R + ((r / 8) * 2
// + (k % 16) / 8) * 64 + (r % 8) * 8 + k % 8 (in bf16 elements: 8 x 8 core
// matrices of 128 bytes, the two k halves 128 B apart, 8-row groups 256 B).
// WG: scf.for %{{.*}} = %{{.*}} to %c4096{{.*}} step %c128
// WG: arith.truncf %{{.*}} : f32 to bf16
// WG: %[[KS:.*]] = arith.divui %[[K:.*]], %c16{{(_[0-9]+)?}}
// WG: arith.muli %[[KS]], %c1024{{(_[0-9]+)?}}
// WG: %[[KH:.*]] = arith.divui %{{.*}}, %c8{{(_[0-9]+)?}}
// WG: %[[RG:.*]] = arith.divui %[[R:.*]], %c8{{(_[0-9]+)?}}
// WG: %[[RG2:.*]] = arith.muli %[[RG]], %c2{{(_[0-9]+)?}}
// WG: %[[CM:.*]] = arith.addi %[[RG2]], %[[KH]]
// WG: arith.muli %[[CM]], %c64{{(_[0-9]+)?}}
// WG: %[[KL:.*]] = arith.remui %[[K]], %c8{{(_[0-9]+)?}}
// WG: %[[RL:.*]] = arith.remui %[[R]], %c8{{(_[0-9]+)?}}
// WG: %[[RL8:.*]] = arith.muli %[[RL]], %c8{{(_[0-9]+)?}}
// WG: arith.addi %[[RL8]], %[[KL]]
// WG: memref.store %{{.*}}, %[[SMEM]]
// WG: scf.for %{{.*}} = %{{.*}} to %c8192{{.*}} step %c128
// WG: arith.muli %{{.*}}, %c2048
// WG: memref.store %{{.*}}, %[[SMEM]]
// WG: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// WG-NEXT: gpu.barrier
// WG-NEXT: nvvm.wgmma.fence.aligned
// WG: arith.constant 68720001024 : i64
// WG-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// WG-NEXT: nvvm.wgmma.commit.group.sync.aligned
// WG-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// WG-COUNT-64: llvm.extractvalue
// WG: gpu.terminator
// WG-NOT: linalg.generic
func.func @linear(%x: memref<?x64xf32>, %w: memref<96x64xbf16>, %y: memref<?x96xf32>) {
  linalg.generic {indexing_maps = [#xk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x64xf32>, memref<96x64xbf16>) outs(%y : memref<?x96xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bf : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// Batch dimensions and a second m dimension (heads) are enumerated by
// blockIdx.x after the column tiles (x allows 2^31 - 1 blocks), then
// delinearised; the tile takes the dynamic m dimension. Operands in either
// order of the multiplication.
// CHECK-LABEL: func.func @batched
// WG-LABEL: func.func @batched
// WG: arith.ceildivui %{{.*}}, %c64
// WG-COUNT-4: nvvm.wgmma.mma_async
// CHECK: %[[NT:.*]] = arith.ceildivui %c40, %c128
// CHECK: %[[MT:.*]] = arith.ceildivui %{{.*}}, %c16
// CHECK: %[[X1:.*]] = arith.muli %[[NT]], %c3
// CHECK: %[[X:.*]] = arith.muli %[[X1]], %c2
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[X]], {{.*}} = %[[MT]], {{.*}} = %c1{{.*}})
// CHECK: arith.remui %{{.*}}, %c2{{.*}} : index
// CHECK-COUNT-4: nvvm.mma.sync
func.func @batched(%q: memref<3x?x2x32xf32>, %k: memref<3x40x32xf32>, %s: memref<3x?x2x40xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, t, h, j, d) -> (b, t, h, d)>,
                                   affine_map<(b, t, h, j, d) -> (b, j, d)>,
                                   affine_map<(b, t, h, j, d) -> (b, t, h, j)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<3x?x2x32xf32>, memref<3x40x32xf32>) outs(%s : memref<3x?x2x40xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %b, %a : f32
    %r = arith.addf %p, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// Not contractions the tensor cores take: another body (a max), f64, f16
// (bf16 would lose its mantissa bits), two reduction loops, the reduction
// loop in C's map (C[m, n, k] is not a sum over k), a parallel loop only in
// C. They stay linalg.generic.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: gpu.launch
// CHECK-COUNT-6: linalg.generic
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @left_alone(%x: memref<8x16xf32>, %w: memref<4x16xf32>, %y: memref<8x4xf32>,
                      %xd: memref<8x16xf64>, %wd: memref<4x16xf64>, %yd: memref<8x4xf64>,
                      %x3: memref<8x4x16xf32>, %w3: memref<2x4x16xf32>, %y3: memref<8x2xf32>,
                      %xh: memref<8x16xf16>, %wh: memref<4x16xf16>,
                      %ck: memref<8x4x16xf32>, %cx: memref<8x4x3xf32>) {
  linalg.generic {indexing_maps = [#xk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<8x16xf32>, memref<4x16xf32>) outs(%y : memref<8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.maximumf %acc, %p : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#xk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%xd, %wd : memref<8x16xf64>, memref<4x16xf64>) outs(%yd : memref<8x4xf64>) {
  ^bb0(%a: f64, %b: f64, %acc: f64):
    %p = arith.mulf %a, %b : f64
    %r = arith.addf %acc, %p : f64
    linalg.yield %r : f64
  }
  linalg.generic {indexing_maps = [affine_map<(m, n, c, k) -> (m, c, k)>,
                                   affine_map<(m, n, c, k) -> (n, c, k)>,
                                   affine_map<(m, n, c, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x3, %w3 : memref<8x4x16xf32>, memref<2x4x16xf32>) outs(%y3 : memref<8x2xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#xk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%xh, %wh : memref<8x16xf16>, memref<4x16xf16>) outs(%y : memref<8x4xf32>) {
  ^bb0(%a: f16, %b: f16, %acc: f32):
    %ae = arith.extf %a : f16 to f32
    %be = arith.extf %b : f16 to f32
    %p = arith.mulf %ae, %be : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#xk, #nk, affine_map<(m, n, k) -> (m, n, k)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<8x16xf32>, memref<4x16xf32>) outs(%ck : memref<8x4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(m, n, x, k) -> (m, k)>,
                                   affine_map<(m, n, x, k) -> (n, k)>,
                                   affine_map<(m, n, x, k) -> (m, n, x)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<8x16xf32>, memref<4x16xf32>) outs(%cx : memref<8x4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// A decode step's projection (one token, m static): with wgmma=1 it stays on
// mma.sync's 16-row tiles, no shared memory.
// CHECK-LABEL: func.func @one_token
// CHECK: nvvm.mma.sync
// WG-LABEL: func.func @one_token
// WG: %[[GY:.*]] = arith.ceildivui %c1, %c16
// WG: gpu.launch blocks({{.*}}) in ({{.*}}, {{.*}} = %[[GY]], {{.*}}) threads({{.*}}) in ({{.*}}) {
// WG-NOT: nvvm.wgmma
// WG-COUNT-4: nvvm.mma.sync
// WG-NOT: nvvm.wgmma
// WG: return
func.func @one_token(%x: memref<1x64xf32>, %w: memref<96x64xbf16>, %y: memref<1x96xf32>) {
  linalg.generic {indexing_maps = [#xk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<1x64xf32>, memref<96x64xbf16>) outs(%y : memref<1x96xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bf : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// C zero-filled just before (a fresh accumulator after bufferization): the
// fill goes, the accumulators start at zero (no load of C) and are stored
// as they are (wgmma: no load and add of C). A fill of another value, or of
// another buffer, stays and C is read.
// CHECK-LABEL: func.func @zero_filled
//   CHECK-NOT: linalg.fill
//       CHECK: gpu.launch
//   CHECK-NOT: memref.load %arg2[
//       CHECK: scf.for {{.+}} iter_args({{.+}}) -> (f32, f32,
//       CHECK: gpu.terminator
//  WG-LABEL: func.func @zero_filled
//    WG-NOT: linalg.fill
//        WG: nvvm.wgmma.wait.group.sync.aligned 0
//    WG-NOT: memref.load %arg2[
//    WG-NOT: arith.addf
//        WG: memref.store %{{.+}}, %arg2[
//        WG: gpu.terminator
func.func @zero_filled(%x: memref<?x64xf32>, %w: memref<96x64xbf16>, %y: memref<?x96xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x96xf32>)
  linalg.generic {indexing_maps = [#xk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x64xf32>, memref<96x64xbf16>) outs(%y : memref<?x96xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bf : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
// CHECK-LABEL: func.func @other_filled
//       CHECK: linalg.fill
//       CHECK: gpu.launch
//       CHECK: memref.load %arg2[
// CHECK-LABEL: func.func @reads_c
//       CHECK: linalg.fill
//       CHECK: gpu.launch
//  WG-LABEL: func.func @other_filled
//        WG: linalg.fill
//        WG: nvvm.wgmma.wait.group.sync.aligned 0
//        WG: memref.load %arg2[
//  WG-LABEL: func.func @reads_c
//        WG: linalg.fill
//        WG: gpu.launch
func.func @other_filled(%x: memref<?x64xf32>, %w: memref<96x64xbf16>, %y: memref<?x96xf32>,
                        %z: memref<?x96xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%z : memref<?x96xf32>)
  linalg.generic {indexing_maps = [#xk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x64xf32>, memref<96x64xbf16>) outs(%y : memref<?x96xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bf : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
// A reads part of C (columns 32-63 of the buffer): it must see the fill.
func.func @reads_c(%buf: memref<64x96xf32>, %w: memref<32x64xbf16>) {
  %zero = arith.constant 0.0 : f32
  %x = memref.subview %buf[0, 0] [64, 64] [1, 1] : memref<64x96xf32> to memref<64x64xf32, strided<[96, 1]>>
  %y = memref.subview %buf[0, 32] [64, 32] [1, 1] : memref<64x96xf32> to memref<64x32xf32, strided<[96, 1], offset: 32>>
  linalg.fill ins(%zero : f32) outs(%y : memref<64x32xf32, strided<[96, 1], offset: 32>>)
  linalg.generic {indexing_maps = [#xk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<64x64xf32, strided<[96, 1]>>, memref<32x64xbf16>)
      outs(%y : memref<64x32xf32, strided<[96, 1], offset: 32>>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bf : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
// CHECK-LABEL: func.func @one_filled
//       CHECK: linalg.fill
//       CHECK: gpu.launch
//       CHECK: memref.load %arg2[
//  WG-LABEL: func.func @one_filled
//        WG: linalg.fill
//        WG: nvvm.wgmma.wait.group.sync.aligned 0
//        WG: memref.load %arg2[
//        WG: arith.addf
func.func @one_filled(%x: memref<?x64xf32>, %w: memref<96x64xbf16>, %y: memref<?x96xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%y : memref<?x96xf32>)
  linalg.generic {indexing_maps = [#xk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x64xf32>, memref<96x64xbf16>) outs(%y : memref<?x96xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bf : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// An epilogue: C a fresh buffer that only the next elementwise op reads
// (a residual add with a per-column scale, C's map transposed in it). The
// kernel runs that op's body on each result in registers and stores into
// its output; C is never stored, the elementwise op is gone, and the
// launch sits after the output's allocation.
// CHECK-LABEL: func.func @epilogue
//       CHECK:   %[[O:.+]] = memref.alloc(%{{.+}}) : memref<96x?xf32>
//       CHECK:   gpu.launch
//       CHECK:     scf.for
//       CHECK:     scf.if
//       CHECK:       %[[S:.+]] = memref.load %arg3[%{{.+}}] : memref<96xf32>
//       CHECK:       %[[R:.+]] = memref.load %arg4[%{{.+}}, %{{.+}}] : memref<96x?xf32>
//       CHECK:       %[[M:.+]] = arith.mulf %{{.+}}, %[[S]] : f32
//       CHECK:       %[[SUM:.+]] = arith.addf %[[M]], %[[R]] : f32
//       CHECK:       memref.store %[[SUM]], %[[O]][%{{.+}}, %{{.+}}] : memref<96x?xf32>
//   CHECK-NOT:   memref.store {{.+}} : memref<?x96xf32>
//       CHECK:   gpu.terminator
//   CHECK-NOT:   linalg.generic
//       CHECK:   return %[[O]]
//  WG-LABEL: func.func @epilogue
//        WG:   memref.alloc(%{{.+}}) : memref<96x?xf32>
//        WG:   gpu.launch
//        WG:     nvvm.wgmma.wait.group.sync.aligned 0
//        WG:     arith.mulf
//        WG:     arith.addf
//        WG:     memref.store %{{.+}} : memref<96x?xf32>
//    WG-NOT:   linalg.generic
func.func @epilogue(%x: memref<?x64xf32>, %w: memref<96x64xbf16>, %t: index, %s: memref<96xf32>,
                    %r: memref<96x?xf32>) -> memref<96x?xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc(%t) : memref<?x96xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<?x96xf32>)
  linalg.generic {indexing_maps = [#xk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x64xf32>, memref<96x64xbf16>) outs(%c : memref<?x96xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bf : f32
    %v = arith.addf %acc, %p : f32
    linalg.yield %v : f32
  }
  %o = memref.alloc(%t) : memref<96x?xf32>
  linalg.generic {indexing_maps = [affine_map<(n, m) -> (m, n)>, affine_map<(n, m) -> (n)>,
                                   affine_map<(n, m) -> (n, m)>, affine_map<(n, m) -> (n, m)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c, %s, %r : memref<?x96xf32>, memref<96xf32>, memref<96x?xf32>) outs(%o : memref<96x?xf32>) {
  ^bb0(%v: f32, %sc: f32, %res: f32, %out: f32):
    %m = arith.mulf %v, %sc : f32
    %y = arith.addf %m, %res : f32
    linalg.yield %y : f32
  }
  memref.dealloc %c : memref<?x96xf32>
  return %o : memref<96x?xf32>
}

// Two epilogues (the router's sigmoid and its biased scores), one with a
// scalar input: both bodies run on each result, into their own outputs.
// CHECK-LABEL: func.func @two_epilogues
//       CHECK:   gpu.launch
//       CHECK:     math.exp
//       CHECK:     memref.store {{.+}} : memref<4x96xf32>
//       CHECK:     arith.mulf %{{.+}}, %arg3 : f32
//       CHECK:     memref.store {{.+}} : memref<4x96xf32>
//       CHECK:   gpu.terminator
//   CHECK-NOT:   linalg.generic
//       CHECK:   return
func.func @two_epilogues(%x: memref<4x64xf32>, %w: memref<96x64xbf16>, %bias: memref<96xf32>, %k: f32)
    -> (memref<4x96xf32>, memref<4x96xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x96xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x96xf32>)
  linalg.generic {indexing_maps = [#xk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x64xf32>, memref<96x64xbf16>) outs(%c : memref<4x96xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bf : f32
    %v = arith.addf %acc, %p : f32
    linalg.yield %v : f32
  }
  %s = memref.alloc() : memref<4x96xf32>
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<4x96xf32>) outs(%s : memref<4x96xf32>) {
  ^bb0(%v: f32, %out: f32):
    %e = math.exp %v : f32
    linalg.yield %e : f32
  }
  %t = memref.alloc() : memref<4x96xf32>
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (n)>,
                                   affine_map<(m, n) -> ()>, affine_map<(m, n) -> (m, n)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias, %k : memref<4x96xf32>, memref<96xf32>, f32) outs(%t : memref<4x96xf32>) {
  ^bb0(%v: f32, %bi: f32, %kk: f32, %out: f32):
    %y = arith.addf %v, %bi : f32
    %z = arith.mulf %y, %kk : f32
    linalg.yield %z : f32
  }
  memref.dealloc %c : memref<4x96xf32>
  return %s, %t : memref<4x96xf32>, memref<4x96xf32>
}

// No epilogue: C read again after the elementwise op (@c_read_later), C an
// argument rather than a fresh buffer (@c_argument), the elementwise op's
// output also read by it at another position (@in_place), a store between
// the two (@store_between), an output that is not a fresh allocation (an
// argument may be A's buffer at run time: @output_argument), an output
// written at one element for many (@reduced_output). C is stored and the
// op stays.
// CHECK-LABEL: func.func @c_read_later
//       CHECK:   gpu.launch
//       CHECK:   linalg.generic
//  WG-LABEL: func.func @c_read_later
//        WG:   gpu.launch
//        WG:   linalg.generic
// CHECK-LABEL: func.func @c_argument
//       CHECK:   gpu.launch
//       CHECK:   linalg.generic
// CHECK-LABEL: func.func @in_place
//       CHECK:   gpu.launch
//       CHECK:   linalg.generic
// CHECK-LABEL: func.func @store_between
//       CHECK:   gpu.launch
//       CHECK:   memref.store
//       CHECK:   linalg.generic
// CHECK-LABEL: func.func @output_argument
//       CHECK:   gpu.launch
//       CHECK:   linalg.generic
// CHECK-LABEL: func.func @reduced_output
//       CHECK:   gpu.launch
//       CHECK:   linalg.generic
#id = affine_map<(m, n) -> (m, n)>
func.func @c_read_later(%x: memref<4x64xf32>, %w: memref<96x64xbf16>, %o: memref<4x96xf32>) -> f32 {
  %i = arith.constant 0 : index
  %c = memref.alloc() : memref<4x96xf32>
  linalg.generic {indexing_maps = [#xk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x64xf32>, memref<96x64xbf16>) outs(%c : memref<4x96xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bf : f32
    %v = arith.addf %acc, %p : f32
    linalg.yield %v : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<4x96xf32>) outs(%o : memref<4x96xf32>) {
  ^bb0(%v: f32, %out: f32):
    %e = math.exp %v : f32
    linalg.yield %e : f32
  }
  %l = memref.load %c[%i, %i] : memref<4x96xf32>
  memref.dealloc %c : memref<4x96xf32>
  return %l : f32
}
func.func @c_argument(%x: memref<4x64xf32>, %w: memref<96x64xbf16>, %c: memref<4x96xf32>, %o: memref<4x96xf32>) {
  linalg.generic {indexing_maps = [#xk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x64xf32>, memref<96x64xbf16>) outs(%c : memref<4x96xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bf : f32
    %v = arith.addf %acc, %p : f32
    linalg.yield %v : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<4x96xf32>) outs(%o : memref<4x96xf32>) {
  ^bb0(%v: f32, %out: f32):
    %e = math.exp %v : f32
    linalg.yield %e : f32
  }
  return
}
func.func @in_place(%x: memref<4x64xf32>, %w: memref<96x64xbf16>, %o: memref<4x96xf32>) {
  %c = memref.alloc() : memref<4x96xf32>
  linalg.generic {indexing_maps = [#xk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x64xf32>, memref<96x64xbf16>) outs(%c : memref<4x96xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bf : f32
    %v = arith.addf %acc, %p : f32
    linalg.yield %v : f32
  }
  %row = memref.subview %o[0, 0] [1, 96] [1, 1] : memref<4x96xf32> to memref<96xf32, strided<[1]>>
  linalg.generic {indexing_maps = [#id, affine_map<(m, n) -> (n)>, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %row : memref<4x96xf32>, memref<96xf32, strided<[1]>>) outs(%o : memref<4x96xf32>) {
  ^bb0(%v: f32, %first: f32, %out: f32):
    %y = arith.addf %v, %first : f32
    linalg.yield %y : f32
  }
  memref.dealloc %c : memref<4x96xf32>
  return
}
func.func @store_between(%x: memref<4x64xf32>, %w: memref<96x64xbf16>, %o: memref<4x96xf32>, %f: f32) {
  %i = arith.constant 0 : index
  %c = memref.alloc() : memref<4x96xf32>
  linalg.generic {indexing_maps = [#xk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x64xf32>, memref<96x64xbf16>) outs(%c : memref<4x96xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bf : f32
    %v = arith.addf %acc, %p : f32
    linalg.yield %v : f32
  }
  memref.store %f, %o[%i, %i] : memref<4x96xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<4x96xf32>) outs(%o : memref<4x96xf32>) {
  ^bb0(%v: f32, %out: f32):
    %e = math.exp %v : f32
    linalg.yield %e : f32
  }
  memref.dealloc %c : memref<4x96xf32>
  return
}
func.func @output_argument(%x: memref<4x64xf32>, %w: memref<96x64xbf16>, %o: memref<4x96xf32>) {
  %c = memref.alloc() : memref<4x96xf32>
  linalg.generic {indexing_maps = [#xk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x64xf32>, memref<96x64xbf16>) outs(%c : memref<4x96xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bf : f32
    %v = arith.addf %acc, %p : f32
    linalg.yield %v : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<4x96xf32>) outs(%o : memref<4x96xf32>) {
  ^bb0(%v: f32, %out: f32):
    %e = math.exp %v : f32
    linalg.yield %e : f32
  }
  memref.dealloc %c : memref<4x96xf32>
  return
}
func.func @reduced_output(%x: memref<4x64xf32>, %w: memref<96x64xbf16>) -> memref<4xf32> {
  %c = memref.alloc() : memref<4x96xf32>
  linalg.generic {indexing_maps = [#xk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x64xf32>, memref<96x64xbf16>) outs(%c : memref<4x96xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bf : f32
    %v = arith.addf %acc, %p : f32
    linalg.yield %v : f32
  }
  %o = memref.alloc() : memref<4xf32>
  linalg.generic {indexing_maps = [#id, affine_map<(m, n) -> (m)>], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<4x96xf32>) outs(%o : memref<4xf32>) {
  ^bb0(%v: f32, %out: f32):
    linalg.yield %v : f32
  }
  memref.dealloc %c : memref<4x96xf32>
  return %o : memref<4xf32>
}
