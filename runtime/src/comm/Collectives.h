//===- Collectives.h - Communicators for sharded binaries -------*- C++ -*-===//
//
// Part of k3. What a binary split across ranks (`--tp`, `--ep`; issue 28,
// ../../../../shared/spec/DISTRIBUTED.md) calls between its kernels: the
// collectives of one grid axis group, on host buffers (MPI, Mpi.cpp) or
// device buffers (NCCL, Nccl.cpp). One interface, so that the compiler's
// runtime calls name an operation and an axis group, never a library.
//
// Every operation returns after its peers arrived or after the grid's
// timeout: a rank that died or never calls does not hang the others, who
// return K3RT_DEADLINE_EXCEEDED naming the operation and the group. A
// communicator that timed out refuses every later call (a late peer's
// message could otherwise complete the wrong one), and the process is
// expected to exit (MPI: _Exit or MPI_Abort, never MPI_Finalize, which
// waits for the missing rank). Send and receive buffers never overlap
// (no in-place gather or scatter; allReduce and broadcast are in place).
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_SRC_COMM_COLLECTIVES_H
#define RUNTIME_SRC_COMM_COLLECTIVES_H

#include "runtime/include/k3rt/k3rt.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace k3rt::comm {

enum class DType { F32, BF16, I32, I64, U8 };

/// Grids have at most this many axes (a fixed-size shape exchange).
constexpr size_t kMaxGridRank = 8;
enum class Reduce { Sum, Max };

size_t dtypeBytes(DType dtype);
const char *dtypeName(DType dtype);

/// The ranks of one axis group of the grid: every operation is collective
/// over them, in group-rank order.
class Communicator {
public:
  virtual ~Communicator() = default;
  int rank() const { return groupRank; }
  int size() const { return groupSize; }
  /// "axes (1) of grid 2x2, group ranks [1, 3]": for messages.
  const std::string &name() const { return description; }

  /// `count` elements of `buf`, reduced over the group, in place.
  virtual k3rt_status_t allReduce(void *buf, size_t count, DType dtype, Reduce op) = 0;
  /// Each rank's `count` elements, concatenated in rank order into `recv`
  /// (size() * count elements).
  virtual k3rt_status_t allGather(const void *send, void *recv, size_t count, DType dtype) = 0;
  /// `send` (size() * count elements) reduced over the group; rank r keeps
  /// block r, `count` elements, in `recv`.
  virtual k3rt_status_t reduceScatter(const void *send, void *recv, size_t count, DType dtype,
                                      Reduce op) = 0;
  /// Ragged all-to-all: `send` holds sendCounts[p] elements for each peer p
  /// in peer order; `recv` receives recvCounts[p] from each, in peer order.
  /// The counts must agree pairwise (what p sends to q is what q expects
  /// from p): the caller exchanges them first when they vary (`counts`).
  virtual k3rt_status_t allToAll(const void *send, const size_t *sendCounts, void *recv,
                                 const size_t *recvCounts, DType dtype) = 0;
  /// `count` elements of root's `buf` into every rank's `buf`.
  virtual k3rt_status_t broadcast(void *buf, size_t count, DType dtype, int root) = 0;

  /// The per-peer counts of a ragged exchange: `sendCounts[p]` to each
  /// peer, `recvCounts[p]` from each (one all-to-all of one count per peer,
  /// the "counts first" exchange of DISTRIBUTED.md).
  /// Host arrays, whatever the backend's buffers are.
  virtual k3rt_status_t counts(const size_t *sendCounts, size_t *recvCounts);

protected:
  /// After a timeout: the refusal every later call returns (one line).
  k3rt_status_t refuseIfBroken() const;
  int groupRank = 0, groupSize = 1;
  std::string description;
  std::string broken; ///< what timed out, once one did
};

/// A grid of ranks (row-major over `shape`, like upstream `shard.grid`) and
/// its communicators, one per set of axes, created on first use and kept.
class Grid {
public:
  virtual ~Grid() = default;
  int rank() const { return worldRank; }
  int size() const { return worldSize; }
  const std::vector<int64_t> &shape() const { return gridShape; }
  /// This rank's coordinate on each axis.
  std::vector<int64_t> coordinates() const;
  /// The communicator over `axes` (ascending, each < shape().size()): the
  /// ranks that share every other coordinate with this one. Collective:
  /// every rank of the grid asks for the same axes in the same order.
  k3rt_status_t axes(const std::vector<int> &axes, Communicator *&out);

protected:
  /// The backend's communicator over `ranks` (world ranks in group order,
  /// this one among them), collectively with the other groups of `axes`.
  virtual k3rt_status_t split(const std::vector<int> &axes, int color,
                              const std::vector<int> &ranks,
                              std::unique_ptr<Communicator> &out) = 0;
  k3rt_status_t checkShape(const std::vector<int64_t> &shape);

  int worldRank = 0, worldSize = 1;
  std::vector<int64_t> gridShape;
  std::map<std::vector<int>, std::unique_ptr<Communicator>> communicators;
};

/// Between two polls of a pending collective that started at `since`:
/// yield for its first 50 ms (ranks may share cores), then sleep 0.2 ms,
/// 2 ms once the wait passes half a second.
void pausePolling(std::chrono::steady_clock::time_point since);

/// The refusal of a collective that outlived the timeout.
k3rt_status_t timedOut(const std::string &what, double timeoutSeconds);

/// "2x2".
std::string formatGrid(const std::vector<int64_t> &shape);

/// Rank `rank`'s coordinate on each axis of a row-major grid of `shape`.
std::vector<int64_t> gridCoordinates(const std::vector<int64_t> &shape, int64_t rank);

/// The file of rank `rank` of a grid-compiled binary named `path`:
/// `X.k3b` → `X.rank<R>.k3b` (k3-compile writes them, k3-run opens them).
std::string rankFilePath(const std::string &path, int64_t rank);

} // namespace k3rt::comm

#endif // RUNTIME_SRC_COMM_COLLECTIVES_H
