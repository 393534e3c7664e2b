// RUN: k3-opt %s --split-input-file --convert-k3-to-linalg="attn-res=kernel" | FileCheck %s --check-prefix=MIX
// RUN: k3-opt %s --split-input-file --k3-gpu-attn-res | FileCheck %s

// A decode step's read: a stack of N sealed blocks and the running sum, rows
// of 64 (k3-tiny's width): one k3.attn_res_mix into a fresh [T, 64].
// MIX-LABEL: func.func @decode
//       MIX:   %[[O:.+]] = tensor.empty(%{{.+}}) : tensor<?x64xf32>
//       MIX:   k3.attn_res_mix [%arg0, %arg1] norm(%arg2) query(%arg3) outs(%[[O]]) {eps = 9.99999974E-6 : f32}
//   MIX-NOT:   linalg.generic
func.func @decode(%s: tensor<?x?x64xf32>, %r: tensor<?x64xf32>, %n: tensor<64xbf16>, %q: tensor<64xbf16>) -> tensor<?x64xf32> {
  %y = k3.attn_res [%s, %r] norm(%n) query(%q) {eps = 1.0e-05 : f32}
      : (tensor<?x?x64xf32>, tensor<?x64xf32>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Rows no team covers stay loop nests: 48 values (a power-of-two team
// dividing 48 has at most 16 threads) and 2880 (64 threads, 45 channels
// each: over the 32 a thread keeps in registers).
// MIX-LABEL: func.func @narrow
//   MIX-NOT:   k3.attn_res_mix
//       MIX:   linalg.generic
// MIX-LABEL: func.func @wide
//   MIX-NOT:   k3.attn_res_mix
//       MIX:   linalg.generic
func.func @narrow(%a: tensor<?x48xf32>, %b: tensor<?x48xf32>, %n: tensor<48xf32>, %q: tensor<48xf32>) -> tensor<?x48xf32> {
  %y = k3.attn_res [%a, %b] norm(%n) query(%q) {eps = 1.0e-05 : f32}
      : (tensor<?x48xf32>, tensor<?x48xf32>, tensor<48xf32>, tensor<48xf32>) -> tensor<?x48xf32>
  return %y : tensor<?x48xf32>
}
func.func @wide(%a: tensor<?x2880xf32>, %b: tensor<?x2880xf32>, %n: tensor<2880xf32>, %q: tensor<2880xf32>) -> tensor<?x2880xf32> {
  %y = k3.attn_res [%a, %b] norm(%n) query(%q) {eps = 1.0e-05 : f32}
      : (tensor<?x2880xf32>, tensor<?x2880xf32>, tensor<2880xf32>, tensor<2880xf32>) -> tensor<?x2880xf32>
  return %y : tensor<?x2880xf32>
}

// -----

// The kernel for rows of 1024 (K3-small's width): no launch for no tokens;
// a block per token of 256 threads (four channels each: 256, 512, 768 past
// the thread's), two reduction trees of 256 words (2048 bytes); the stack's
// blocks in a loop carrying the running maximum, the denominator and the
// four sums, each block's two sums reduced in 8 barriered steps plus the
// barrier before the trees' next use; then the running sum; the row stored.
// CHECK-LABEL: func.func @kernel
//       CHECK:   %[[T:.+]] = memref.dim %arg4, %c0
//       CHECK:   %[[ANY:.+]] = arith.cmpi ult, %c0{{.*}}, %[[T]]
//       CHECK:   scf.if %[[ANY]]
//       CHECK:     gpu.launch blocks({{.+}}) in ({{.+}} = %[[T]], {{.+}} = %c1{{.*}}, {{.+}} = %c1{{.*}}) threads(%[[TID:[^,]+]], {{.+}}) in ({{.+}} = %c256{{.*}}, {{.+}}) dynamic_shared_memory_size %c2048_i32
//   CHECK-COUNT-2:   memref.view {{.+}} to memref<256xf32, #gpu.address_space<workgroup>>
//       CHECK:       arith.addi %[[TID]], %c768
//       CHECK:       %[[N:.+]] = memref.dim %arg0, %c0
//       CHECK:       scf.for %{{.+}} = %c0{{.*}} to %[[N]] step %c1{{.*}} iter_args({{.+}}) -> (f32, f32, f32, f32, f32, f32)
//  CHECK-COUNT-10:     gpu.barrier
//       CHECK:         math.exp
//       CHECK:         math.exp
//       CHECK:       }
//  CHECK-COUNT-10:   gpu.barrier
//  CHECK-COUNT-4:    memref.store {{.+}} : memref<?x1024xf32>
//       CHECK:       gpu.terminator
//   CHECK-NOT:   k3.attn_res_mix
func.func @kernel(%s: memref<?x?x1024xf32>, %r: memref<?x1024xf32>, %n: memref<1024xbf16>, %q: memref<1024xbf16>, %o: memref<?x1024xf32>) {
  k3.attn_res_mix [%s, %r] norm(%n) query(%q) outs(%o) {eps = 1.0e-05 : f32}
      : (memref<?x?x1024xf32>, memref<?x1024xf32>, memref<1024xbf16>, memref<1024xbf16>, memref<?x1024xf32>) -> ()
  return
}

// -----

// With then_norm (an input norm folded in by k3-gpu-fuse-row-norms): after
// the candidates, the mix's sum of squares through the first tree (6 more
// barriered steps for 64 threads), rsqrt(mean + then_eps), and each channel
// times the norm's weight before it is stored.
// CHECK-LABEL: func.func @then_norm
//       CHECK:     gpu.launch
//       CHECK:       math.exp
//       CHECK:       %[[M:.+]] = arith.divf
//   CHECK-COUNT-7:   gpu.barrier
//       CHECK:       %[[INV:.+]] = math.rsqrt
//       CHECK:       %[[X:.+]] = arith.mulf %[[M]], %[[INV]]
//       CHECK:       %[[W:.+]] = memref.load %arg3[%{{.+}}] : memref<64xbf16>
//       CHECK:       %[[WF:.+]] = arith.extf %[[W]]
//       CHECK:       %[[Y:.+]] = arith.mulf %[[X]], %[[WF]]
//       CHECK:       memref.store %[[Y]], %arg4[{{.+}}] : memref<?x64xf32>
//       CHECK:       gpu.terminator
func.func @then_norm(%r: memref<?x64xf32>, %n: memref<64xbf16>, %q: memref<64xbf16>, %w: memref<64xbf16>, %o: memref<?x64xf32>) {
  k3.attn_res_mix [%r] norm(%n) query(%q) then_norm(%w) outs(%o) {eps = 1.0e-05 : f32, then_eps = 1.0e-05 : f32}
      : (memref<?x64xf32>, memref<64xbf16>, memref<64xbf16>, memref<64xbf16>, memref<?x64xf32>) -> ()
  return
}
