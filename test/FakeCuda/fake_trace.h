/*===- fake_trace.h - The stand-ins' shared trace file --------------------===*
 *
 * Part of k3 (tests only). K3_FAKE_CUDA_TRACE=FILE, opened once for
 * appending by the stand-in driver (fake_cuda.c) and the stand-in NCCL
 * (test/FakeNccl), each process with its own FILE*; "%r" in FILE is the
 * process's rank under mpirun (OMPI_COMM_WORLD_RANK), one trace per rank.
 * Every writer flushes each line, so the lines of both stay in order.
 *
 *===---------------------------------------------------------------------===*/

#ifndef TEST_FAKECUDA_FAKE_TRACE_H
#define TEST_FAKECUDA_FAKE_TRACE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The trace file, or NULL when K3_FAKE_CUDA_TRACE is unset. */
static FILE *fakeTrace(void) {
  static FILE *f;
  const char *path = getenv("K3_FAKE_CUDA_TRACE");
  if (!f && path) {
    char buf[4096];
    const char *r = strstr(path, "%r"), *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (r && (size_t)(r - path) < 2048) {
      snprintf(buf, sizeof buf, "%.*s%s%s", (int)(r - path), path, rank ? rank : "0", r + 2);
      path = buf;
    }
    f = fopen(path, "a");
  }
  return f;
}

#endif /* TEST_FAKECUDA_FAKE_TRACE_H */
