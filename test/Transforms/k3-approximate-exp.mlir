// RUN: k3-opt %s --k3-approximate-exp | FileCheck %s
// RUN: k3-opt %s --k3-approximate-exp --k3-cpu-to-llvm | FileCheck %s --check-prefix=LLVM

// f32 exp (scalar and vector) becomes arithmetic; other math ops stay.
// CHECK-LABEL: func.func @exp
//   CHECK-NOT:   math.exp
//       CHECK:   math.fma
//       CHECK:   math.erf
// LLVM-LABEL: llvm.func @exp
//   LLVM-NOT:   llvm.call @expf
//   LLVM-NOT:   llvm.intr.exp
func.func @exp(%x: f32, %v: vector<8xf32>) -> (f32, vector<8xf32>, f32) {
  %0 = math.exp %x : f32
  %1 = math.exp %v : vector<8xf32>
  %2 = math.erf %x : f32
  return %0, %1, %2 : f32, vector<8xf32>, f32
}

// log1p (the softplus gate's) becomes arithmetic too, with Kahan's guard
// for a 1 + x that rounds to 1, over the polynomial log.
// CHECK-LABEL: func.func @log1p
//   CHECK-NOT:   math.log
//       CHECK:   arith.cmpf oeq
// LLVM-LABEL: llvm.func @log1p
//   LLVM-NOT:   llvm.call @log1pf
func.func @log1p(%x: f32) -> f32 {
  %0 = math.log1p %x : f32
  return %0 : f32
}

// tanh (SiTU's β·tanh(z/β), the K3 activations) becomes arithmetic: left
// to the backend, each element was a scalar libm call (tanhf, then expm1f),
// 8 % of k3-small's prefill on two threads.
// CHECK-LABEL: func.func @tanh
//   CHECK-NOT:   math.tanh
//       CHECK:   arith.divf
// LLVM-LABEL: llvm.func @tanh
//   LLVM-NOT:   llvm.intr.tanh
//   LLVM-NOT:   llvm.call @tanhf
func.func @tanh(%x: f32, %v: vector<16xf32>) -> (f32, vector<16xf32>) {
  %0 = math.tanh %x : f32
  %1 = math.tanh %v : vector<16xf32>
  return %0, %1 : f32, vector<16xf32>
}
