//===- Ranks.h - k3-run under mpirun --------------------------*- C++ -*-===//
//
// Part of k3. A binary compiled for a grid of ranks (`k3-compile --tp
// --ep`: one file per rank, X.rank<R>.k3b) runs as `mpirun -np N k3-run
// X.k3b ...`: each process opens its rank's file, the ranks agree that all
// of them started (one line on every rank when one did not), build the
// grid, and run the same steps; rank 0 prints, the others are silent.
// MPI comes from a plugin (libk3rt-mpi.so, runtime/src/comm/Mpi.h) loaded
// only under mpirun: k3-run links no MPI library.
//
//===----------------------------------------------------------------------===//

#ifndef TOOLS_K3_RUN_RANKS_H
#define TOOLS_K3_RUN_RANKS_H

#include "runtime/src/comm/Mpi.h"

#include <memory>
#include <string>
#include <vector>

namespace k3run {

struct Ranks {
  bool active = false; ///< started by mpirun
  int rank = 0, size = 1;
  /// Set by rankFile under mpirun when this rank has no file: the line
  /// its start fails with (missingRankFile).
  std::string missingFile;
  /// Among the ranks on this node (OpenMPI's OMPI_COMM_WORLD_LOCAL_RANK;
  /// 0 when the launcher does not say): the GPU a GPU rank uses.
  int localRank = 0;
  double timeoutSeconds = 60; ///< --collective-timeout
  const K3MpiPlugin *mpi = nullptr;
  std::unique_ptr<k3rt::comm::Grid> grid;
};

/// True when mpirun (OpenMPI) started this process and `path` names a
/// grid-compiled binary (X.k3b absent, X.rank0.k3b present): only then does
/// k3-run start MPI. A single-process binary under mpirun runs as it would
/// alone, in each process (and so does a k3-run that a script started by
/// mpirun launches: the environment says mpirun, the binary does not).
bool launchedAsRank(const std::string &path);

/// Loads the MPI plugin and initialises MPI, or false with one line.
bool startRanks(int &argc, char **&argv, Ranks &ranks, std::string &error);

/// The file this process opens for `path`: `path` when it exists, else
/// its rank's file (`X.k3b` → `X.rank<R>.k3b`; rank 0's when not under
/// mpirun, which then says how to start the ranks). Sets
/// `ranks.missingFile` when neither exists under mpirun.
std::string rankFile(const std::string &path, Ranks &ranks);

/// After every rank's own start (`localError` empty when this one is
/// ready): "" when all are, else this rank's line (its own error, or which
/// rank could not start). Bounded by ten times the collective timeout:
/// ranks open and check their weights at different speeds.
std::string agree(Ranks &ranks, const std::string &localError);

/// After a failed start, once this rank printed its line: waits (bounded)
/// until every rank has printed its own, so that mpirun, which ends the
/// job when the first rank exits, cuts no rank's line.
void waitForLines(Ranks &ranks);

/// The grid of `shape` over the world (collective, bounded by the timeout).
k3rt_status_t makeGrid(Ranks &ranks, const std::vector<int64_t> &shape);

/// Ends the process's part: MPI_Finalize after a clean run; after a failure
/// (a peer may be stuck in a collective, or gone) exits at once.
[[noreturn]] void endRanks(Ranks &ranks, int rc);

} // namespace k3run

#endif // TOOLS_K3_RUN_RANKS_H
