//===- MpiPlugin.cpp - The MPI backend as a loadable plugin ---------------===//
//
// Part of k3. libk3rt-mpi.so: k3-run dlopens it under mpirun (Mpi.h's
// K3MpiPlugin), so k3-run itself links no MPI library.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Status.h"
#include "runtime/src/comm/Mpi.h"

#include <cstdlib>
#include <mpi.h>

namespace {

k3rt_status_t init(int *argc, char ***argv, int *rank, int *size) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  // The all-reduces after a TP group's row-split projections are a
  // prompt's rows of hidden values (k3-small, 512 tokens: 2 MB each).
  // For them OpenMPI 4.1's non-blocking allreduce (libnbc, which the
  // runtime uses for its timeout) picks a binomial tree on fewer than four
  // ranks: one rank reduces everything and sends it back. The ring splits
  // the reduction between the ranks: k3-bench ranks, TP 2, 512 tokens, one
  // thread a rank: 600 → 655 tokens/s. Unless the user chose an algorithm
  // (OpenMPI reads its parameters from the environment at MPI_Init; other
  // MPIs ignore the variable).
  if (!initialized)
    setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", /*overwrite=*/0);
  if (!initialized && MPI_Init(argc, argv) != MPI_SUCCESS)
    return k3rt::makeStatus(K3RT_INTERNAL, "MPI_Init failed");
  // Errors are statuses (one line from the caller), never MPI's abort
  // banner: the start-up agreement runs on the world itself.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  return nullptr;
}

k3rt_status_t agree(int ready, double timeoutSeconds, int *firstFailed) {
  return k3rt::comm::agreeOverMpi(ready != 0, timeoutSeconds, *firstFailed);
}

k3rt_status_t grid(const int64_t *shape, size_t axes, double timeoutSeconds,
                   k3rt::comm::Grid **out) {
  std::unique_ptr<k3rt::comm::Grid> g;
  if (k3rt_status_t s = k3rt::comm::createMpiGrid(
          std::vector<int64_t>(shape, shape + axes), timeoutSeconds, g))
    return s;
  *out = g.release();
  return nullptr;
}

void finalize() { MPI_Finalize(); }

const K3MpiPlugin plugin{init, agree, grid, finalize};

} // namespace

extern "C" const K3MpiPlugin *k3rt_mpi_plugin(void) { return &plugin; }
