/*===- k3emu.c - The warp exchange of emulated mma.sync -------------------===*
 *
 * Part of k3. The two functions k3-gpu-launches-to-openmp calls in place of
 * nvvm.mma.sync m16n8k16 (bf16 inputs, f32 accumulators, A row-major, B
 * column-major), for running GPU kernels on a CPU in tests: between them
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
 * it), and the exchange holds at most kMaxThreads. */
void k3emu_team(int64_t threads, int32_t team) {
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
