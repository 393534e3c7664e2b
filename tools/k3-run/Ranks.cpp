//===- Ranks.cpp - k3-run under mpirun ------------------------------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "tools/k3-run/Ranks.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

namespace k3run {
namespace {

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

/// The directory of this executable.
std::string selfDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    return ".";
  std::string path(buf, size_t(n));
  return path.substr(0, path.rfind('/'));
}

/// Under mpirun, when this rank's file `mine` of `path` (which does not
/// exist) is missing too: one line with how many of the started processes'
/// rank files there are (`mpirun -np` past the grid, or a file not copied
/// to this node); else "" (another failure to open it is the bundle's own
/// line).
std::string missingRankFile(const std::string &path, const std::string &mine,
                            const Ranks &ranks) {
  if (!ranks.active)
    return "";
  struct stat st;
  if (::stat(mine.c_str(), &st) == 0 || errno != ENOENT)
    return "";
  int64_t present = 0;
  for (int64_t r = 0; r < ranks.size; ++r)
    present += exists(k3rt::comm::rankFilePath(path, r));
  return mine + ": no such file: mpirun started " + std::to_string(ranks.size) +
         " processes, and " + std::to_string(present) + " of their " +
         std::to_string(ranks.size) + " rank files of " + path + " exist here";
}

} // namespace

bool launchedAsRank(const std::string &path) {
  if (!std::getenv("OMPI_COMM_WORLD_SIZE") && !std::getenv("PMIX_RANK"))
    return false;
  return !exists(path) && exists(k3rt::comm::rankFilePath(path, 0));
}

bool startRanks(int &argc, char **&argv, Ranks &ranks, std::string &error) {
  // Beside the build's bin/ (build/lib) or an install's lib/, else the
  // loader's search path.
  std::string dir = selfDir();
  void *h = nullptr;
  std::string tried;
  for (std::string path :
       {dir + "/../lib/libk3rt-mpi.so", dir + "/libk3rt-mpi.so",
        std::string("libk3rt-mpi.so")}) {
    h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h)
      break;
    const char *e = dlerror();
    tried = e ? e : path;
  }
  if (!h) {
    error = "started by mpirun, but the MPI plugin does not load (" + tried +
            "); build k3 with OpenMPI (tools/scripts/setup.sh)";
    return false;
  }
  auto entry =
      reinterpret_cast<const K3MpiPlugin *(*)()>(dlsym(h, "k3rt_mpi_plugin"));
  if (!entry || !(ranks.mpi = entry())) {
    error = "libk3rt-mpi.so exports no k3rt_mpi_plugin";
    return false;
  }
  if (k3rt_status_t s =
          ranks.mpi->init(&argc, &argv, &ranks.rank, &ranks.size)) {
    error = k3rt_status_message(s);
    k3rt_status_free(s);
    return false;
  }
  if (const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK"))
    ranks.localRank = std::atoi(local);
  ranks.active = true;
  return true;
}

std::string rankFile(const std::string &path, Ranks &ranks) {
  if (exists(path))
    return path;
  std::string mine = k3rt::comm::rankFilePath(path, ranks.rank);
  ranks.missingFile = missingRankFile(path, mine, ranks);
  // Under mpirun a missing rank file is named as such; alone, rank 0's
  // file says how many ranks to start (CpuExecutable::load).
  return ranks.active || exists(mine) ? mine : path;
}

std::string agree(Ranks &ranks, const std::string &localError) {
  if (!ranks.active)
    return localError;
  int firstFailed = -1;
  if (k3rt_status_t s = ranks.mpi->agree(
          localError.empty(), 10 * ranks.timeoutSeconds, &firstFailed)) {
    std::string message = k3rt_status_message(s);
    k3rt_status_free(s);
    return localError.empty() ? message : localError;
  }
  if (!localError.empty())
    return localError;
  if (firstFailed >= 0)
    return "rank " + std::to_string(firstFailed) +
           " could not start (its line says why)";
  return "";
}

void waitForLines(Ranks &ranks) {
  if (!ranks.active)
    return;
  std::fflush(stderr);
  int firstFailed = -1;
  if (k3rt_status_t s = ranks.mpi->agree(1, ranks.timeoutSeconds, &firstFailed))
    k3rt_status_free(s);
}

k3rt_status_t makeGrid(Ranks &ranks, const std::vector<int64_t> &shape) {
  k3rt::comm::Grid *grid = nullptr;
  if (k3rt_status_t s = ranks.mpi->grid(shape.data(), shape.size(),
                                        ranks.timeoutSeconds, &grid))
    return s;
  ranks.grid.reset(grid);
  return nullptr;
}

void endRanks(Ranks &ranks, int rc) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (ranks.active && rc == 0) {
    ranks.grid.reset();
    ranks.mpi->finalize();
  }
  // No MPI_Finalize after a failure: it would wait for a rank that is
  // stuck or gone; mpirun ends the job.
  std::_Exit(rc);
}

} // namespace k3run
