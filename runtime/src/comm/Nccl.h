//===- Nccl.h - The grid over NCCL (GPU ranks) ------------------*- C++ -*-===//
//
// Part of k3. NCCL is loaded at run time (`dlopen("libnccl.so.2")`, as the
// CUDA driver is): Debian has no NCCL package, GPU machines have it. Its
// communicators are bootstrapped over an MPI grid of the same shape (the
// unique id of each axis group travels by MPI broadcast).
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_SRC_COMM_NCCL_H
#define RUNTIME_SRC_COMM_NCCL_H

#include "runtime/src/comm/Collectives.h"

namespace k3rt::comm {

/// Whether work queued on a stream has finished: 0 yes, 1 not yet, -1 an
/// error (the CUDA device's cuStreamQuery).
using StreamQuery = int (*)(void *stream);

/// A grid over NCCL whose collectives run on `stream` (a CUstream; buffers
/// are device pointers) and wait for it, polling `query` and NCCL's async
/// error against the timeout. `bootstrap` is an MPI grid of the same shape,
/// kept by the caller for the grid's life. `library` overrides the
/// `libnccl.so.2` to load (tests: the stand-in).
k3rt_status_t createNcclGrid(Grid &bootstrap, void *stream, StreamQuery query,
                             double timeoutSeconds, std::unique_ptr<Grid> &out,
                             const char *library = nullptr);

} // namespace k3rt::comm

#endif // RUNTIME_SRC_COMM_NCCL_H
