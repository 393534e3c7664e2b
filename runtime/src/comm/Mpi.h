//===- Mpi.h - The grid over MPI (CPU ranks) --------------------*- C++ -*-===//
//
// Part of k3. Debian's OpenMPI. MPI_Init and MPI_Finalize are the host's
// (k3-run under mpirun); the grid is destroyed before MPI_Finalize.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_SRC_COMM_MPI_H
#define RUNTIME_SRC_COMM_MPI_H

#include "runtime/src/comm/Collectives.h"

namespace k3rt::comm {

/// A grid of `shape` over MPI_COMM_WORLD. Collective: every rank passes the
/// same shape, checked (a rank that does not arrive within the timeout, or
/// disagrees, is one line on every rank). `timeoutSeconds` bounds this and
/// every collective after it; a communicator that timed out refuses every
/// later call, and the process should exit with _Exit or MPI_Abort (not
/// MPI_Finalize, which would wait for the missing rank). The grid works on
/// its own duplicate of MPI_COMM_WORLD.
k3rt_status_t createMpiGrid(const std::vector<int64_t> &shape, double timeoutSeconds,
                            std::unique_ptr<Grid> &out);

} // namespace k3rt::comm

#endif // RUNTIME_SRC_COMM_MPI_H
