/*===- k3rt_gpu.h - The GPU host programs' runtime table -----------*- C -*-===//
 *
 * Part of k3. A GPU binary's host program (a shared object from k3-compile)
 * calls MLIR's mgpu* runtime functions; each forwards through this table,
 * which the runtime's CUDA device fills and attaches with the object's
 * `k3_gpu_attach(const K3GpuOps *)`. One definition for both sides: the
 * runtime includes this header, and k3-compile embeds its text in every host
 * object's support source (lib/Target/CMakeLists.txt), so the layout cannot
 * drift between them. Plain C, no includes beyond the C library's.
 *
 *===----------------------------------------------------------------------===*/

#ifndef K3RT_K3RT_GPU_H
#define K3RT_K3RT_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct K3GpuOps {
  void *ctx;
  void *(*moduleLoad)(void *ctx, const void *data, size_t size);
  void (*moduleUnload)(void *ctx, void *module);
  void *(*moduleGetFunction)(void *ctx, void *module, const char *name);
  /* The runtime runs a program on one in-order stream: k3-gpu-async-launches
   * relies on it (every stream handle is that stream). */
  void *(*streamCreate)(void *ctx);
  void (*streamSynchronize)(void *ctx, void *stream);
  void (*streamDestroy)(void *ctx, void *stream);
  void (*launchKernel)(void *ctx, void *function, intptr_t gx, intptr_t gy, intptr_t gz,
                       intptr_t bx, intptr_t by, intptr_t bz, int32_t smem, void *stream,
                       void **params, void **extra, size_t paramsCount);
  void *(*memAlloc)(void *ctx, uint64_t bytes, void *stream, bool hostShared);
  void (*memFree)(void *ctx, void *ptr, void *stream);
  void (*memcpy)(void *ctx, void *dst, void *src, size_t bytes, void *stream);
  void (*memset32)(void *ctx, void *dst, unsigned value, size_t count, void *stream);
} K3GpuOps;

#endif /* K3RT_K3RT_GPU_H */
