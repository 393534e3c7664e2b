//===- Collectives.cpp - The backend-neutral half of the grid -------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/comm/Collectives.h"

#include "runtime/src/Status.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <sched.h>

namespace k3rt::comm {

size_t dtypeBytes(DType dtype) {
  switch (dtype) {
  case DType::F32: case DType::I32: return 4;
  case DType::BF16: return 2;
  case DType::I64: return 8;
  case DType::U8: return 1;
  }
  return 0;
}

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32: return "f32";
  case DType::BF16: return "bf16";
  case DType::I32: return "i32";
  case DType::I64: return "i64";
  case DType::U8: return "u8";
  }
  return "?";
}

void pausePolling(std::chrono::steady_clock::time_point since) {
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
  if (waited < 0.05) {
    // A collective between ranks that run the same kernels waits for the
    // slowest rank: milliseconds in a prefill (k3-small, 512 tokens: 24
    // all-reduces of 2 MB, 3 ms each). OpenMPI's non-blocking collectives
    // advance only inside MPI_Test, so every sleep here is added to the
    // collective (sleeping after 64 yields, as before, cost TP 2 a fifth of
    // its prefill rate). A yield lets a rank that shares the core run.
    sched_yield();
  } else {
    // 0.2 ms for the first half second, then 2 ms: a wait that long is a
    // peer far behind (or a served grid's idle follower waiting for rank
    // 0's next step), where 2 ms more latency is nothing and polling every
    // 0.2 ms would keep a core 4% busy.
    timespec pause{0, waited < 0.5 ? 200000 : 2000000};
    nanosleep(&pause, nullptr);
  }
}

k3rt_status_t timedOut(const std::string &what, double timeoutSeconds) {
  return makeStatus(K3RT_DEADLINE_EXCEEDED,
                    what + " did not complete within " +
                        std::to_string(int(std::ceil(timeoutSeconds))) +
                        " s: a peer died or never called it (--collective-timeout)");
}

std::string formatGrid(const std::vector<int64_t> &shape) {
  std::string s;
  for (int64_t d : shape)
    s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

k3rt_status_t Communicator::refuseIfBroken() const {
  if (broken.empty())
    return nullptr;
  return makeStatus(K3RT_DEADLINE_EXCEEDED, description + " is unusable since " + broken +
                                                " timed out; the process should exit");
}

k3rt_status_t Communicator::counts(const size_t *sendCounts, size_t *recvCounts) {
  // One count to and from every peer.
  std::vector<size_t> ones(size_t(size()), 1);
  static_assert(sizeof(size_t) == 8, "counts travel as i64");
  return allToAll(sendCounts, ones.data(), recvCounts, ones.data(), DType::I64);
}

std::vector<int64_t> gridCoordinates(const std::vector<int64_t> &shape, int64_t rank) {
  std::vector<int64_t> c(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    c[i] = rank % shape[i];
    rank /= shape[i];
  }
  return c;
}

std::string rankFilePath(const std::string &path, int64_t rank) {
  std::string stem = path;
  if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".k3b") == 0)
    stem.resize(stem.size() - 4);
  return stem + ".rank" + std::to_string(rank) + ".k3b";
}

std::vector<int64_t> Grid::coordinates() const { return gridCoordinates(gridShape, worldRank); }

k3rt_status_t Grid::checkShape(const std::vector<int64_t> &shape) {
  int64_t product = 1;
  if (shape.size() > kMaxGridRank)
    return makeStatus(K3RT_INVALID_ARGUMENT, "grid " + formatGrid(shape) + ": at most " +
                                                 std::to_string(kMaxGridRank) + " axes");
  for (int64_t d : shape) {
    if (d < 1 || d > (1 << 20))
      return makeStatus(K3RT_INVALID_ARGUMENT,
                        "grid " + formatGrid(shape) + ": every extent must be in [1, 2^20]");
    product = std::min<int64_t>(product * d, int64_t(1) << 40); // no overflow past 8 axes
  }
  if (shape.empty() || product != worldSize)
    return makeStatus(K3RT_INVALID_ARGUMENT,
                      "grid " + formatGrid(shape) + " needs " + std::to_string(product) +
                          " ranks, but " + std::to_string(worldSize) +
                          " processes were started (mpirun -np " + std::to_string(product) + ")");
  gridShape = shape;
  return nullptr;
}

k3rt_status_t Grid::axes(const std::vector<int> &axes, Communicator *&out) {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] < 0 || size_t(axes[i]) >= gridShape.size() || (i && axes[i] <= axes[i - 1]))
      return makeStatus(K3RT_INVALID_ARGUMENT,
                        "grid " + formatGrid(gridShape) +
                            ": axes must be ascending and below its rank");
  if (auto it = communicators.find(axes); it != communicators.end()) {
    out = it->second.get();
    return nullptr;
  }
  // The group: ranks whose coordinates off `axes` equal this one's, in
  // row-major order over `axes`; its color, the linear index of those
  // other coordinates.
  std::vector<int64_t> mine = coordinates();
  std::vector<bool> inGroup(gridShape.size(), false);
  for (int a : axes)
    inGroup[size_t(a)] = true;
  int color = 0;
  for (size_t i = 0; i < gridShape.size(); ++i)
    if (!inGroup[i])
      color = color * int(gridShape[i]) + int(mine[i]);
  std::vector<int> ranks;
  for (int r = 0; r < worldSize; ++r) {
    int64_t left = r;
    bool same = true;
    for (size_t i = gridShape.size(); i-- > 0;) {
      if (!inGroup[i] && left % gridShape[i] != mine[i])
        same = false;
      left /= gridShape[i];
    }
    if (same)
      ranks.push_back(r);
  }
  std::unique_ptr<Communicator> comm;
  if (k3rt_status_t s = split(axes, color, ranks, comm))
    return s;
  out = comm.get();
  communicators[axes] = std::move(comm);
  return nullptr;
}

} // namespace k3rt::comm
