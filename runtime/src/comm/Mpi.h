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

/// Whether every rank of MPI_COMM_WORLD is ready (`ready` on this one):
/// `firstFailed` is the lowest rank that is not, or -1. Bounded by the
/// timeout like every collective: a start that fails on one rank is one
/// line on every rank, before any of them waits in the grid.
k3rt_status_t agreeOverMpi(bool ready, double timeoutSeconds, int &firstFailed);

} // namespace k3rt::comm

/// The MPI backend as a plugin (libk3rt-mpi.so, MpiPlugin.cpp): k3-run
/// loads it only when mpirun started it, so that a binary that runs on one
/// process needs no MPI library on the machine (a GPU machine may have
/// none). One C entry point returns the table; statuses are k3rt's.
extern "C" {
struct K3MpiPlugin {
  /// MPI_Init; this process's rank and the world's size.
  k3rt_status_t (*init)(int *argc, char ***argv, int *rank, int *size);
  k3rt_status_t (*agree)(int ready, double timeoutSeconds, int *firstFailed);
  k3rt_status_t (*grid)(const int64_t *shape, size_t axes, double timeoutSeconds,
                        k3rt::comm::Grid **out);
  /// MPI_Finalize, after the grid is destroyed (never after a timeout).
  void (*finalize)(void);
};
const K3MpiPlugin *k3rt_mpi_plugin(void);
}

#endif // RUNTIME_SRC_COMM_MPI_H
