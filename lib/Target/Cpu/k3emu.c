/*===- k3emu.c - Tensor-core instructions of GPU kernels run on a CPU -----===*
 *
 * Part of k3. What k3-gpu-launches-to-openmp calls in place of the tensor
 * cores' instructions, for running GPU kernels on a CPU (the lit tests load
 * it into mlir-runner; `k3-compile --emulate` compiles it into the binary's
 * support code, lib/Target/Cpu/CpuTarget.cpp). C only, no includes beyond
 * the C library: it is compiled by the host C compiler at k3-compile time.
 *
 * mma.sync: two functions in place of nvvm.mma.sync m16n8k16 (bf16 inputs,
 * f32 accumulators, A row-major, B column-major): between them
 * the OpenMP team (the block) meets at a barrier, so every lane of a warp
 * has deposited its fragments before any lane reads. Fragment layout (PTX
 * ISA, "Matrix Fragments for mma.m16n8k16"), g = lane / 4, t = lane % 4,
 * the lower index of a pair in a register's low 16 bits:
 *   A: a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..)
 *   B: b0 (k 2t..2t+1, n g), b1 (k 2t+8..2t+9, n g)
 *   C/D: c0, c1 (g, 2t..2t+1), c2, c3 (g+8, 2t..2t+1)
 *
 *===----------------------------------------------------------------------===*/

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

enum { kMaxThreads = 1024 };

/* Each thread's deposited registers: a0..a3, b0, b1. */
static uint32_t exchange[kMaxThreads][6];

static float bf16(uint32_t word, int high) {
  uint32_t bits = (high ? word >> 16 : word & 0xFFFFu) << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* Every thread of the block must be in the team (the barriers count on
 * it), and the exchange holds at most kMaxThreads. Each thread also drops
 * x86's flush-to-zero and denormals-are-zero modes, which the runtime sets
 * around a CPU kernel call (CpuExecutable.cpp): a GPU keeps subnormals in
 * f32 (no .ftz) and bf16 arithmetic, and the MXFP4 expert kernels decode
 * E2M1 codes through bf16 subnormals. */
void k3emu_team(int64_t threads, int32_t team) {
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr(_mm_getcsr() & ~0x8040u);
#endif
  if (team != threads || threads > kMaxThreads) {
    fprintf(stderr, "k3emu: a block of %lld threads in an OpenMP team of %d (at most %d)\n",
            (long long)threads, (int)team, (int)kMaxThreads);
    abort();
  }
}

void k3emu_mma_put(int64_t tid, int32_t a0, int32_t a1, int32_t a2, int32_t a3, int32_t b0,
                   int32_t b1) {
  if (tid < 0 || tid >= kMaxThreads)
    return;
  uint32_t *e = exchange[tid];
  e[0] = (uint32_t)a0;
  e[1] = (uint32_t)a1;
  e[2] = (uint32_t)a2;
  e[3] = (uint32_t)a3;
  e[4] = (uint32_t)b0;
  e[5] = (uint32_t)b1;
}

/* A[row][k] and B[k][n] of the warp that thread `tid` belongs to. */
static float elementA(int64_t warp0, int row, int k) {
  int g = row % 8, t = (k % 8) / 2;
  int reg = (row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0);
  return bf16(exchange[warp0 + 4 * g + t][reg], k % 2);
}
static float elementB(int64_t warp0, int k, int n) {
  int t = (k % 8) / 2;
  return bf16(exchange[warp0 + 4 * n + t][4 + (k >= 8 ? 1 : 0)], k % 2);
}

void k3emu_mma_get(int64_t tid, float c0, float c1, float c2, float c3, int64_t out) {
  float *d = (float *)(intptr_t)out;
  if (tid < 0 || tid >= kMaxThreads)
    return;
  int64_t lane = tid % 32, warp0 = tid - lane;
  int g = (int)lane / 4, t = (int)lane % 4;
  float c[4] = {c0, c1, c2, c3};
  for (int e = 0; e < 4; ++e) {
    int row = g + (e >= 2 ? 8 : 0), col = 2 * t + e % 2;
    float sum = c[e];
    for (int k = 0; k < 16; ++k)
      sum += elementA(warp0, row, k) * elementB(warp0, k, col);
    d[e] = sum;
  }
}

/* wgmma.mma_async m64nNk16, bf16 A and B from shared memory, f32
 * accumulators: thread `tid`'s N / 2 accumulators at `acc` become
 * A·B + (scale_d ? acc : 0). Unlike mma.sync no exchange is needed: both
 * operands are in shared memory, which the emulation holds in one arena
 * aligned to 2^18 bytes (`arena`, `bytes`), so a descriptor's 14-bit start
 * address (bits 4..17 of the shared address) is an offset into it.
 *
 * Descriptor (PTX ISA "Matrix Descriptor Format"): bits 0-13 start address
 * >> 4, 16-29 leading byte offset >> 4 (LBO: between core matrices adjacent
 * in K), 32-45 stride byte offset >> 4 (SBO: between core matrices adjacent
 * in M or N), 62-63 swizzle mode; only mode 0 (none) is emulated. Both
 * operands K-major ("row" A, "col" B): a core matrix is 8 rows of 16 bytes,
 * element (r, k) at start + (r / 8) SBO + (k / 8) LBO + (r % 8) 16 + (k % 8) 2.
 * Accumulator i of a thread (PTX ISA "wgmma .m64nNk16 register fragment
 * layout for accumulator matrix D"), w the warp in the warpgroup, g = lane
 * / 4, t = lane % 4: row 16 w + g + 8 ((i % 4) / 2), column 8 (i / 4) + 2t
 * + i % 2. */
static const unsigned char *wgmmaOperand(int64_t desc, int64_t arena, int64_t bytes, int rows,
                                         int64_t *lbo, int64_t *sbo) {
  int64_t start = (desc & 0x3FFF) << 4;
  *lbo = ((desc >> 16) & 0x3FFF) << 4;
  *sbo = ((desc >> 32) & 0x3FFF) << 4;
  int swizzle = (int)((uint64_t)desc >> 62);
  if (swizzle != 0) {
    fprintf(stderr, "k3emu: wgmma descriptor with swizzle mode %d (only 0 is emulated)\n",
            swizzle);
    abort();
  }
  /* One past the last byte read: element (row 7, k 7) of core matrix
   * (rows / 8 - 1, 1), two bytes. */
  int64_t end = start + (rows / 8 - 1) * *sbo + *lbo + 7 * 16 + 7 * 2 + 2;
  if (end > bytes) {
    fprintf(stderr,
            "k3emu: wgmma operand of %d rows at shared offset %lld (LBO %lld, SBO %lld) "
            "reads past the %lld bytes of shared memory\n",
            rows, (long long)start, (long long)*lbo, (long long)*sbo, (long long)bytes);
    abort();
  }
  return (const unsigned char *)(intptr_t)arena + start;
}

static float bf16At(const unsigned char *base, int64_t lbo, int64_t sbo, int r, int k) {
  uint16_t h;
  memcpy(&h, base + (r / 8) * sbo + (k / 8) * lbo + (r % 8) * 16 + (k % 8) * 2, sizeof h);
  return bf16(h, 0);
}

void k3emu_wgmma(int64_t tid, int64_t descA, int64_t descB, int64_t arena, int64_t bytes,
                 int64_t n, int32_t scaleD, int64_t acc) {
  if (n < 8 || n > 256 || n % 8 != 0) {
    fprintf(stderr, "k3emu: wgmma with N = %lld (8 to 256, a multiple of 8)\n", (long long)n);
    abort();
  }
  int64_t lboA, sboA, lboB, sboB;
  const unsigned char *a = wgmmaOperand(descA, arena, bytes, 64, &lboA, &sboA);
  const unsigned char *b = wgmmaOperand(descB, arena, bytes, (int)n, &lboB, &sboB);
  float *d = (float *)(intptr_t)acc;
  int lane = (int)(tid % 32), warp = (int)((tid % 128) / 32);
  int g = lane / 4, t = lane % 4;
  for (int64_t i = 0; i < n / 2; ++i) {
    int row = 16 * warp + g + 8 * (int)((i % 4) / 2);
    int col = 8 * (int)(i / 4) + 2 * t + (int)(i % 2);
    float sum = scaleD ? d[i] : 0.0f;
    for (int k = 0; k < 16; ++k)
      sum += bf16At(a, lboA, sboA, row, k) * bf16At(b, lboB, sboB, col, k);
    d[i] = sum;
  }
}

/* LLVM's x86 and AArch64 back ends keep bf16 values (the kernels' bf16x2
 * arithmetic, bf16 vectors carried through loops) in f32 registers and
 * round back with compiler-rt's __truncsfbf2, which the host C compiler's
 * runtime (libgcc 12) lacks. Round to nearest even, NaNs kept quiet. The
 * result is a bf16 in the low 16 bits of the return register, which is
 * where both ABIs return a float's low bits: it is returned as a float
 * whose bit pattern is the bf16 zero-extended. Hidden: the binary's own
 * calls bind here, not to a libgcc that has one (GCC 13 on). */
__attribute__((visibility("hidden"))) float __truncsfbf2(float x) {
  uint32_t u, r;
  memcpy(&u, &x, sizeof u);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u)
    r = (u >> 16) | 0x40u;
  else
    r = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  float f;
  memcpy(&f, &r, sizeof f);
  return f;
}
