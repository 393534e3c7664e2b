/*===- fake_cuda.c - A stand-in libcuda.so.1 for runtime tests -----------===*
 *
 * Part of k3 (tests only). Implements the driver entry points the runtime's
 * CUDA device uses, on host memory, so that machines without a GPU test the
 * device plumbing: driver loading, module loading by kernel reference, the
 * cubin-or-PTX choice, JIT error logs, launches, the memory pool, CUDA
 * graphs (capture, instantiation, launch). Kernels
 * are recorded, never executed: outputs are not meaningful.
 *
 * Environment: K3_FAKE_CUDA_TRACE=FILE appends one line per module load and
 * launch ("%r" in FILE: the process's rank under mpirun; the stand-in NCCL
 * writes its calls there too); K3_FAKE_CUDA_CC=80 reports compute capability 8.0 (default 9.0);
 * K3_FAKE_CUDA_JIT_ERROR=1 fails every PTX load with an error log;
 * K3_FAKE_CUDA_DEVICES=0 reports no device; K3_FAKE_CUDA_NAN=NAME makes a
 * launch of a kernel whose name contains NAME write a NaN (0x7fc00000) at
 * the address its first parameter holds, when that is inside a live
 * allocation (the runtime's K3_CUDA_CHECK=nan finds it);
 * K3_FAKE_CUDA_CAPTURE_ERROR=1 fails every cuStreamEndCapture (a capture
 * the driver invalidated).
 *
 *===---------------------------------------------------------------------===*/

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_trace.h"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

typedef struct {
  char name[256];
} Function;

static FILE *trace(void) { return fakeTrace(); }

static int cc(void) {
  const char *v = getenv("K3_FAKE_CUDA_CC");
  return v ? atoi(v) : 90;
}

CUresult cuInit(unsigned flags) { return 0; }
CUresult cuDeviceGetCount(int *n) {
  const char *v = getenv("K3_FAKE_CUDA_DEVICES");
  *n = v ? atoi(v) : 1;
  return 0;
}
CUresult cuDeviceGet(int *d, int ordinal) {
  *d = ordinal;
  return 0;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
  *v = attr == 75 ? cc() / 10 : attr == 76 ? cc() % 10 : 0;
  return 0;
}
CUresult cuDeviceGetName(char *name, int len, int d) {
  snprintf(name, (size_t)len, "k3 fake CUDA device");
  return 0;
}
static int context;
CUresult cuDevicePrimaryCtxRetain(void **ctx, int d) {
  *ctx = &context;
  return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(int d) { return 0; }
CUresult cuCtxSetCurrent(void *ctx) { return 0; }

CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned n, int *options,
                            void **values) {
  const char *text = (const char *)image;
  int cubin = memcmp(image, "\x7f" "ELF", 4) == 0;
  const char *why = NULL;
  if (!cubin) {
    if (!strstr(text, ".entry"))
      why = "not PTX: no .entry";
    else if (getenv("K3_FAKE_CUDA_JIT_ERROR"))
      why = "ptxas application ptx input, line 1; fatal : fake JIT failure";
    else if (strstr(text, ".target sm_90a") && cc() != 90)
      why = "ptxas fatal : SM version specified by .target is higher than default";
  }
  if (why) {
    for (unsigned i = 0; i + 1 < n; ++i)
      if (options[i] == 5 && options[i + 1] == 6)
        snprintf((char *)values[i], (size_t)(uintptr_t)values[i + 1], "%s\n", why);
    return 218; /* CUDA_ERROR_INVALID_PTX */
  }
  if (trace())
    fprintf(trace(), "module %s\n", cubin ? "cubin" : "ptx"), fflush(trace());
  *module = malloc(1);
  return 0;
}
CUresult cuModuleUnload(void *m) {
  free(m);
  return 0;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  Function *fn = calloc(1, sizeof(Function));
  snprintf(fn->name, sizeof fn->name, "%s", name);
  *f = fn; /* leaked: a test process is short */
  return 0;
}
CUresult cuFuncSetAttribute(void *f, int attr, int value) { return 0; }
static void writeNaN(void *at);
/* CUDA graphs: while the stream is captured, launches are recorded (traced
 * as "capture ...") instead of run; a graph launch is one trace line with
 * the number of kernels it holds. A capture in the global mode fails the
 * way the driver fails an allocation inside it, so the runtime's choice of
 * the relaxed mode is checked. */
typedef struct {
  unsigned kernels;
} Graph;
static Graph *capturing;
static int captureMode;
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned smem, void *stream, void **params,
                        void **extra) {
  if (trace())
    fprintf(trace(), "%s %s grid %u %u %u block %u %u %u smem %u\n",
            capturing ? "capture" : "launch", ((Function *)f)->name, gx, gy, gz, bx, by, bz, smem),
        fflush(trace());
  if (capturing) {
    ++capturing->kernels;
    return 0;
  }
  const char *nan = getenv("K3_FAKE_CUDA_NAN");
  if (nan && *nan && params && strstr(((Function *)f)->name, nan)) {
    void *at;
    memcpy(&at, params[0], sizeof at);
    writeNaN(at);
  }
  return 0;
}
static int stream;
CUresult cuStreamCreate(void **s, unsigned flags) {
  *s = &stream;
  return 0;
}
CUresult cuStreamSynchronize(void *s) { return capturing ? 900 : 0; }
CUresult cuStreamQuery(void *s) { return 0; } /* launches complete at once */
CUresult cuStreamDestroy_v2(void *s) { return 0; }
/* Live allocations, so that a double or foreign free is an error (the real
 * driver returns CUDA_ERROR_INVALID_VALUE) instead of heap corruption. */
static void **live;
static size_t *liveBytes;
static size_t numLive, capLive;
static void writeNaN(void *at) {
  for (size_t i = 0; i < numLive; ++i)
    if ((char *)at >= (char *)live[i] && (char *)at + 4 <= (char *)live[i] + liveBytes[i]) {
      uint32_t nan = 0x7fc00000u;
      memcpy(at, &nan, 4);
      return;
    }
}
CUresult cuMemAllocManaged(CUdeviceptr *p, size_t bytes, unsigned flags) {
  void *m = NULL;
  if (capturing && captureMode != 2)
    return 900; /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
  if (posix_memalign(&m, 256, bytes ? bytes : 1))
    return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  memset(m, 0, bytes);
  if (numLive == capLive) {
    capLive = capLive ? 2 * capLive : 64;
    live = realloc(live, capLive * sizeof *live);
    liveBytes = realloc(liveBytes, capLive * sizeof *liveBytes);
  }
  liveBytes[numLive] = bytes;
  live[numLive++] = m;
  *p = (CUdeviceptr)(uintptr_t)m;
  return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  for (size_t i = 0; i < numLive; ++i)
    if (live[i] == (void *)(uintptr_t)p) {
      --numLive;
      live[i] = live[numLive];
      liveBytes[i] = liveBytes[numLive];
      free((void *)(uintptr_t)p);
      return 0;
    }
  if (trace())
    fprintf(trace(), "error: cuMemFree of %p, not a live allocation\n", (void *)(uintptr_t)p),
        fflush(trace());
  return 1; /* CUDA_ERROR_INVALID_VALUE */
}
CUresult cuStreamBeginCapture_v2(void *s, int mode) {
  if (capturing)
    return 900;
  capturing = calloc(1, sizeof(Graph));
  captureMode = mode;
  return 0;
}
CUresult cuStreamEndCapture(void *s, void **graph) {
  if (!capturing)
    return 901; /* CUDA_ERROR_STREAM_CAPTURE_INVALIDATED */
  *graph = capturing;
  capturing = NULL;
  if (getenv("K3_FAKE_CUDA_CAPTURE_ERROR")) {
    free(*graph);
    *graph = NULL;
    return 901;
  }
  return 0;
}
CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
  Graph *g = malloc(sizeof(Graph));
  *g = *(Graph *)graph;
  *exec = g;
  return 0;
}
CUresult cuGraphLaunch(void *exec, void *s) {
  if (trace())
    fprintf(trace(), "graph %u kernels\n", ((Graph *)exec)->kernels), fflush(trace());
  return 0;
}
CUresult cuGraphExecDestroy(void *exec) {
  free(exec);
  return 0;
}
CUresult cuGraphDestroy(void *graph) {
  free(graph);
  return 0;
}
CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) {
  memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
  return 0;
}
CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n) {
  unsigned *p = (unsigned *)(uintptr_t)d;
  for (size_t i = 0; i < n; ++i)
    p[i] = v;
  return 0;
}
CUresult cuGetErrorName(CUresult r, const char **name) {
  *name = r == 218 ? "CUDA_ERROR_INVALID_PTX"
          : r == 900 ? "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"
          : r == 901 ? "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"
          : r == 2 ? "CUDA_ERROR_OUT_OF_MEMORY"
          : r == 1 ? "CUDA_ERROR_INVALID_VALUE"
                   : "CUDA_ERROR_UNKNOWN";
  return 0;
}

/* Events: each elapsed time is 1 microsecond, so kernel-time sums are
 * predictable (launches x 0.001 ms). */
static int event;
CUresult cuEventCreate(void **e, unsigned flags) {
  *e = &event;
  return 0;
}
CUresult cuEventRecord(void *e, void *s) { return 0; }
CUresult cuEventSynchronize(void *e) { return 0; }
CUresult cuEventElapsedTime_v2(float *ms, void *start, void *end) {
  *ms = 0.001f;
  return 0;
}
CUresult cuEventDestroy_v2(void *e) { return 0; }
