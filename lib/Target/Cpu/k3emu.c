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

/*===- A block's threads as fibers ------------------------------------------===*
 *
 * In an emulated binary (`k3-compile --emulate`) the blocks' OpenMP teams
 * do not run on libomp: these hidden definitions of the six entry points
 * the teams use bind the binary's own calls here (CpuTarget.cpp refuses a
 * module that calls any other). A team is one fiber per
 * GPU thread, all on the calling OS thread: each runs until it reaches a
 * barrier or its end, then the next; when every fiber has, the barrier
 * opens. On libomp a block of 128 threads was 128 OS threads meeting at
 * every barrier on the machine's cores (Kimi-Linear-small: 293 s a decode
 * step on two cores); here a barrier is two context switches a thread.
 * The blocks stay one after the other (the pass's loop), so the kernels
 * run on one core. A thread that has finished counts as arrived, as on the
 * GPU. The mlir-runner tests load this file as a library, where the JIT's
 * calls still go to libomp (hidden symbols are not exported), so the pass
 * is checked with real threads there.
 *
 *===----------------------------------------------------------------------===*/

#include <stdarg.h>
#include <sys/mman.h>
#if !(defined(__x86_64__) && defined(__LP64__) && defined(__ELF__))
#include <ucontext.h>
#endif

#define K3EMU_HIDDEN __attribute__((visibility("hidden")))

typedef void (*k3emu_microtask)(int32_t *, int32_t *, ...);

enum {
  kFiberStack = 512 << 10, /* the kernels' per-thread frames: a few KiB */
  /* Below each stack, unmapped: the kernels' code has no stack probes, so
   * a frame that overflows could step over a single page into the next
   * fiber's stack (the mappings lie side by side). */
  kGuard = 64 << 10,
  kMaxForkArgs = 4,
};

typedef struct {
  void *stack;  /* mmap'd, kFiberStack bytes, the lowest kGuard a guard */
  void *sp;     /* saved stack pointer while switched out (x86-64) */
  int done;
#if !(defined(__x86_64__) && defined(__LP64__) && defined(__ELF__))
  ucontext_t context;
#endif
} k3emu_fiber;

/* One team at a time per OS thread (the pass's blocks run in sequence). */
static _Thread_local struct {
  k3emu_fiber *fibers; /* grown to the largest block seen, stacks kept */
  int capacity;
  int size;       /* the running team's threads; 0 outside a team */
  int current;    /* the running fiber */
  int pending;    /* __kmpc_push_num_threads' count for the next fork */
  void *schedulerSp;
#if !(defined(__x86_64__) && defined(__LP64__) && defined(__ELF__))
  ucontext_t scheduler;
#endif
  k3emu_microtask fn;
  int argc;
  void *args[kMaxForkArgs];
} team;

#if defined(__x86_64__) && defined(__LP64__) && defined(__ELF__)
/* k3emu_switch(&from->sp, to->sp): saves the callee-saved registers, the
 * SSE control word and the x87 control word on the current stack, stores
 * the stack pointer, loads the other one and restores its registers. */
void k3emu_switch(void **from, void *to);
__asm__(".text\n"
        ".p2align 4\n"
        ".hidden k3emu_switch\n"
        ".type k3emu_switch,@function\n"
        "k3emu_switch:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  subq $8, %rsp\n"
        "  stmxcsr (%rsp)\n"
        "  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n"
        "  fldcw 4(%rsp)\n"
        "  addq $8, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size k3emu_switch, .-k3emu_switch\n");
#endif

static void fiberMain(void) {
  int32_t gtid = team.current, btid = 0;
  void **a = team.args;
  switch (team.argc) {
  case 0: team.fn(&gtid, &btid); break;
  case 1: team.fn(&gtid, &btid, a[0]); break;
  case 2: team.fn(&gtid, &btid, a[0], a[1]); break;
  case 3: team.fn(&gtid, &btid, a[0], a[1], a[2]); break;
  default: team.fn(&gtid, &btid, a[0], a[1], a[2], a[3]); break;
  }
  team.fibers[team.current].done = 1;
#if defined(__x86_64__) && defined(__LP64__) && defined(__ELF__)
  k3emu_switch(&team.fibers[team.current].sp, team.schedulerSp);
#endif
  /* ucontext: returning resumes uc_link, the scheduler. */
}

static void toFiber(int i) {
  team.current = i;
#if defined(__x86_64__) && defined(__LP64__) && defined(__ELF__)
  k3emu_switch(&team.schedulerSp, team.fibers[i].sp);
#else
  swapcontext(&team.scheduler, &team.fibers[i].context);
#endif
}

static void toScheduler(void) {
#if defined(__x86_64__) && defined(__LP64__) && defined(__ELF__)
  k3emu_switch(&team.fibers[team.current].sp, team.schedulerSp);
#else
  swapcontext(&team.fibers[team.current].context, &team.scheduler);
#endif
}

static void die(const char *what) {
  fprintf(stderr, "k3emu: %s\n", what);
  abort();
}

/* Fiber i at the start of fiberMain on its own stack. */
static void startFiber(int i) {
  k3emu_fiber *f = &team.fibers[i];
  if (!f->stack) {
    void *s = mmap(NULL, kFiberStack, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s == MAP_FAILED)
      die("cannot map a fiber's stack");
    mprotect(s, kGuard, PROT_NONE); /* an overflow faults, never corrupts */
    f->stack = s;
  }
  f->done = 0;
#if defined(__x86_64__) && defined(__LP64__) && defined(__ELF__)
  /* The frame k3emu_switch pops: control words, r15..rbp, then fiberMain
   * as the return address, entered with the stack 8 mod 16 as after a
   * call. */
  uint64_t *top = (uint64_t *)((char *)f->stack + kFiberStack);
  uint32_t mxcsr;
  uint16_t fcw;
  __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
  __asm__ volatile("fnstcw %0" : "=m"(fcw));
  top[-1] = 0;
  top[-2] = (uint64_t)(uintptr_t)fiberMain;
  for (int r = 3; r <= 8; ++r)
    top[-r] = 0;
  top[-9] = (uint64_t)mxcsr | ((uint64_t)fcw << 32);
  f->sp = &top[-9];
#else
  getcontext(&f->context);
  f->context.uc_stack.ss_sp = f->stack;
  f->context.uc_stack.ss_size = kFiberStack;
  f->context.uc_link = &team.scheduler;
  makecontext(&f->context, fiberMain, 0);
#endif
}

K3EMU_HIDDEN int32_t __kmpc_global_thread_num(void *loc) {
  (void)loc;
  return team.size ? team.current : 0;
}

K3EMU_HIDDEN int omp_get_thread_num(void) { return team.size ? team.current : 0; }

K3EMU_HIDDEN int omp_get_num_threads(void) { return team.size ? team.size : 1; }

K3EMU_HIDDEN void __kmpc_push_num_threads(void *loc, int32_t gtid, int32_t n) {
  (void)loc;
  (void)gtid;
  team.pending = n;
}

K3EMU_HIDDEN void __kmpc_barrier(void *loc, int32_t gtid) {
  (void)loc;
  (void)gtid;
  if (team.size > 1)
    toScheduler();
}

K3EMU_HIDDEN void __kmpc_fork_call(void *loc, int32_t argc, k3emu_microtask fn, ...) {
  (void)loc;
  if (team.size)
    die("a parallel region inside a block");
  if (argc > kMaxForkArgs)
    die("a parallel region with more than four captured arguments");
  int n = team.pending > 0 ? team.pending : 1;
  team.pending = 0;
  if (n > kMaxThreads)
    die("a block of more than 1024 threads");
  va_list ap;
  va_start(ap, fn);
  for (int i = 0; i < argc; ++i)
    team.args[i] = va_arg(ap, void *);
  va_end(ap);
  team.fn = fn;
  team.argc = argc;
  if (n > team.capacity) {
    k3emu_fiber *grown = (k3emu_fiber *)realloc(team.fibers, (size_t)n * sizeof *grown);
    if (!grown)
      die("out of memory for a block's fibers");
    memset(grown + team.capacity, 0, (size_t)(n - team.capacity) * sizeof *grown);
    team.fibers = grown;
    team.capacity = n;
  }
  team.size = n;
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr(_mm_getcsr() & ~0x8040u); /* k3emu_team's, for the host too */
#endif
  for (int i = 0; i < n; ++i)
    startFiber(i);
  /* Rounds: each unfinished fiber runs to its next barrier or its end. */
  for (int finished = 0; finished < n;) {
    finished = 0;
    for (int i = 0; i < n; ++i) {
      if (!team.fibers[i].done)
        toFiber(i);
      finished += team.fibers[i].done;
    }
  }
  team.size = 0;
  team.current = 0;
}
