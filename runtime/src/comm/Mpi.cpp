//===- Mpi.cpp - The grid over MPI (CPU ranks) ----------------------------===//
//
// Part of k3. Every collective is MPI's nonblocking form, polled against a
// deadline: MPI has no timeout of its own, and a blocking call waits
// forever for a rank that died. bf16 has no MPI datatype: it travels as a
// 2-byte type, reduced by user operations through f32 (each partial sum
// rounded to bf16, as NCCL's bf16 reductions are).
//
//===----------------------------------------------------------------------===//

#include "runtime/src/comm/Mpi.h"

#include "lib/Model/Numerics.h"
#include "runtime/src/Status.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <ctime>
#include <sched.h>

namespace k3rt::comm {
namespace {

using Clock = std::chrono::steady_clock;

MPI_Datatype bf16Type = MPI_DATATYPE_NULL;
MPI_Op bf16Sum = MPI_OP_NULL, bf16Max = MPI_OP_NULL;

void reduceBf16(void *in, void *inout, int *len, MPI_Datatype *, bool max) {
  auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *len; ++i) {
    float x = k3::model::bf16ToFloat(a[i]), y = k3::model::bf16ToFloat(b[i]);
    b[i] = k3::model::floatToBf16(max ? std::max(x, y) : x + y);
  }
}
void sumBf16(void *in, void *inout, int *len, MPI_Datatype *t) { reduceBf16(in, inout, len, t, false); }
void maxBf16(void *in, void *inout, int *len, MPI_Datatype *t) { reduceBf16(in, inout, len, t, true); }

MPI_Datatype mpiType(DType dtype) {
  switch (dtype) {
  case DType::F32: return MPI_FLOAT;
  case DType::BF16: return bf16Type;
  case DType::I32: return MPI_INT32_T;
  case DType::I64: return MPI_INT64_T;
  case DType::U8: return MPI_UINT8_T;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpiOp(DType dtype, Reduce op) {
  if (dtype == DType::BF16)
    return op == Reduce::Sum ? bf16Sum : bf16Max;
  return op == Reduce::Sum ? MPI_SUM : MPI_MAX;
}

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(code, text, &n);
  std::string s(text, size_t(n));
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

/// Waits for `request` until the deadline, yielding between tests (ranks
/// may share cores). On expiry the request is left pending: the process is
/// expected to exit.
k3rt_status_t wait(MPI_Request &request, double timeoutSeconds, const std::string &what) {
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(timeoutSeconds);
  for (;;) {
    int done = 0;
    if (int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS)
      return makeStatus(K3RT_INTERNAL, what + " failed: " + mpiError(rc));
    if (done)
      return nullptr;
    if (Clock::now() > deadline)
      return timedOut(what, timeoutSeconds);
    pausePolling(start);
  }
}

class MpiCommunicator : public Communicator {
public:
  MpiCommunicator(MPI_Comm comm, double timeout, std::string name)
      : comm(comm), timeout(timeout) {
    MPI_Comm_rank(comm, &groupRank);
    MPI_Comm_size(comm, &groupSize);
    description = std::move(name);
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    // A communicator with a pending (timed-out) request is left alone.
    if (!finalized && broken.empty())
      MPI_Comm_free(&comm);
  }

  k3rt_status_t allReduce(void *buf, size_t count, DType dtype, Reduce op) override {
    if (k3rt_status_t s = refuseIfBroken())
      return s;
    int n;
    if (k3rt_status_t s = fitsInt(count, n, "all_reduce"))
      return s;
    MPI_Request r;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, buf, n, mpiType(dtype), mpiOp(dtype, op), comm, &r);
    return finish(rc, r, "all_reduce", count, dtype);
  }

  k3rt_status_t allGather(const void *send, void *recv, size_t count, DType dtype) override {
    if (k3rt_status_t s = refuseIfBroken())
      return s;
    int n;
    if (k3rt_status_t s = fitsInt(count * size_t(groupSize), n, "all_gather"))
      return s;
    MPI_Request r;
    int rc = MPI_Iallgather(send, int(count), mpiType(dtype), recv, int(count), mpiType(dtype),
                            comm, &r);
    return finish(rc, r, "all_gather", count, dtype);
  }

  k3rt_status_t reduceScatter(const void *send, void *recv, size_t count, DType dtype,
                              Reduce op) override {
    if (k3rt_status_t s = refuseIfBroken())
      return s;
    int n;
    if (k3rt_status_t s = fitsInt(count * size_t(groupSize), n, "reduce_scatter"))
      return s;
    MPI_Request r;
    int rc = MPI_Ireduce_scatter_block(send, recv, int(count), mpiType(dtype), mpiOp(dtype, op),
                                       comm, &r);
    return finish(rc, r, "reduce_scatter", count, dtype);
  }

  k3rt_status_t allToAll(const void *send, const size_t *sendCounts, void *recv,
                         const size_t *recvCounts, DType dtype) override {
    if (k3rt_status_t s = refuseIfBroken())
      return s;
    const size_t peers = size_t(groupSize);
    std::vector<int> sc(peers), sd(peers), rc(peers), rd(peers);
    size_t sendTotal = 0, recvTotal = 0;
    for (size_t p = 0; p < peers; ++p) {
      // Each count checked before it is added: no total wraps.
      if (sendCounts[p] > size_t(INT_MAX) - sendTotal ||
          recvCounts[p] > size_t(INT_MAX) - recvTotal)
        return makeStatus(K3RT_UNIMPLEMENTED,
                          "all_to_all of more than 2^31 - 1 elements: MPI counts stop there");
      sd[p] = int(sendTotal);
      rd[p] = int(recvTotal);
      sendTotal += sendCounts[p];
      recvTotal += recvCounts[p];
      sc[p] = int(sendCounts[p]);
      rc[p] = int(recvCounts[p]);
    }
    MPI_Request r;
    int code = MPI_Ialltoallv(send, sc.data(), sd.data(), mpiType(dtype), recv, rc.data(),
                              rd.data(), mpiType(dtype), comm, &r);
    return finish(code, r, "all_to_all", sendTotal, dtype);
  }

  k3rt_status_t broadcast(void *buf, size_t count, DType dtype, int root) override {
    if (k3rt_status_t s = refuseIfBroken())
      return s;
    int n;
    if (k3rt_status_t s = fitsInt(count, n, "broadcast"))
      return s;
    if (root < 0 || root >= groupSize)
      return makeStatus(K3RT_INVALID_ARGUMENT, "broadcast from rank " + std::to_string(root) +
                                                   " of a group of " +
                                                   std::to_string(groupSize));
    MPI_Request r;
    int rc = MPI_Ibcast(buf, n, mpiType(dtype), root, comm, &r);
    return finish(rc, r, "broadcast", count, dtype);
  }

  /// Every rank of the group has arrived (the grid's startup check).
  k3rt_status_t barrier(const std::string &what) {
    if (k3rt_status_t s = refuseIfBroken())
      return s;
    MPI_Request r;
    if (int rc = MPI_Ibarrier(comm, &r); rc != MPI_SUCCESS)
      return makeStatus(K3RT_INTERNAL, what + " failed: " + mpiError(rc));
    return settle(wait(r, timeout, what), what);
  }

  MPI_Comm handle() const { return comm; }

private:
  /// MPI counts are int: a larger call is refused rather than truncated.
  k3rt_status_t fitsInt(size_t count, int &out, const char *op) {
    if (count > size_t(INT_MAX))
      return makeStatus(K3RT_UNIMPLEMENTED, std::string(op) + " of " + std::to_string(count) +
                                                " elements: MPI counts stop at 2^31 - 1");
    out = int(count);
    return nullptr;
  }

  k3rt_status_t finish(int rc, MPI_Request &r, const char *op, size_t count, DType dtype) {
    std::string what = std::string(op) + " (" + std::to_string(count) + " " +
                       dtypeName(dtype) + ") over " + description;
    if (rc != MPI_SUCCESS)
      return makeStatus(K3RT_INTERNAL, what + " failed: " + mpiError(rc));
    return settle(wait(r, timeout, what), what);
  }

  /// A timeout leaves the request pending: nothing may use this
  /// communicator again.
  k3rt_status_t settle(k3rt_status_t s, const std::string &what) {
    if (s && k3rt_status_code(s) == K3RT_DEADLINE_EXCEEDED)
      broken = what;
    return s;
  }

  MPI_Comm comm;
  double timeout;
};

class MpiGrid : public Grid {
public:
  explicit MpiGrid(double timeout) : timeout(timeout) {}
  ~MpiGrid() override { communicators.clear(); } // before the world they split from

  k3rt_status_t init(const std::vector<int64_t> &shape) {
    MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
    MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
    if (k3rt_status_t s = checkShape(shape))
      return s;
    // Every rank arrives (timed, on the world itself), then the grid works on
    // its own duplicate: its messages never meet the host's, and its error
    // handler (errors returned, not fatal) is its own.
    const std::string start = "the grid's start (" + std::to_string(worldSize) + " ranks)";
    MPI_Request arrived;
    MPI_Ibarrier(MPI_COMM_WORLD, &arrived);
    if (k3rt_status_t s = wait(arrived, timeout, start))
      return s;
    MPI_Comm dup;
    if (int rc = MPI_Comm_dup(MPI_COMM_WORLD, &dup); rc != MPI_SUCCESS)
      return makeStatus(K3RT_INTERNAL, start + " failed: " + mpiError(rc));
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    world = std::make_unique<MpiCommunicator>(dup, timeout,
                                             "the world of grid " + formatGrid(shape));
    // Every rank must describe the same grid: rank 0's shape, in a buffer of
    // one size on every rank (a broadcast's counts must agree).
    std::vector<int64_t> first(kMaxGridRank + 1, 0);
    first[0] = int64_t(shape.size());
    std::copy(shape.begin(), shape.end(), first.begin() + 1);
    if (k3rt_status_t s = world->broadcast(first.data(), first.size(), DType::I64, 0))
      return s;
    if (first[0] != int64_t(shape.size()) ||
        !std::equal(shape.begin(), shape.end(), first.begin() + 1))
      return makeStatus(K3RT_INVALID_ARGUMENT,
                        "rank " + std::to_string(worldRank) + "'s grid " + formatGrid(shape) +
                            " differs from rank 0's");
    return nullptr;
  }

protected:
  k3rt_status_t split(const std::vector<int> &axes, int color, const std::vector<int> &ranks,
                      std::unique_ptr<Communicator> &out) override {
    std::string name = "axes (";
    for (size_t i = 0; i < axes.size(); ++i)
      name += (i ? ", " : "") + std::to_string(axes[i]);
    name += ") of grid " + formatGrid(gridShape) + " [ranks";
    for (size_t i = 0; i < ranks.size(); ++i)
      name += (i ? ", " : " ") + std::to_string(ranks[i]);
    name += "]";
    // MPI_Comm_split blocks with no timeout: a barrier with one first, so
    // that a missing rank is a message, not a hang.
    if (k3rt_status_t s = world->barrier("creating the communicator of " + name))
      return s;
    int key = int(std::find(ranks.begin(), ranks.end(), worldRank) - ranks.begin());
    MPI_Comm comm;
    if (int rc = MPI_Comm_split(world->handle(), color, key, &comm); rc != MPI_SUCCESS)
      return makeStatus(K3RT_INTERNAL, "creating the communicator of " + name + " failed: " +
                                           mpiError(rc));
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    out = std::make_unique<MpiCommunicator>(comm, timeout, name);
    return nullptr;
  }

private:
  double timeout;
  std::unique_ptr<MpiCommunicator> world;
};

} // namespace

k3rt_status_t agreeOverMpi(bool ready, double timeoutSeconds, int &firstFailed) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int mine = ready ? size : rank, lowest = size;
  MPI_Request request;
  if (int rc = MPI_Iallreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &request);
      rc != MPI_SUCCESS)
    return makeStatus(K3RT_INTERNAL, "starting the ranks failed: " + mpiError(rc));
  if (k3rt_status_t s = wait(request, timeoutSeconds,
                             "starting the " + std::to_string(size) + " ranks"))
    return s;
  firstFailed = lowest < size ? lowest : -1;
  return nullptr;
}

k3rt_status_t createMpiGrid(const std::vector<int64_t> &shape, double timeoutSeconds,
                            std::unique_ptr<Grid> &out) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return makeStatus(K3RT_INVALID_ARGUMENT, "a grid over MPI needs MPI_Init first");
  if (!(timeoutSeconds > 0))
    return makeStatus(K3RT_INVALID_ARGUMENT, "the collective timeout must be positive");
  if (bf16Type == MPI_DATATYPE_NULL) {
    MPI_Type_contiguous(2, MPI_BYTE, &bf16Type);
    MPI_Type_commit(&bf16Type);
    MPI_Op_create(sumBf16, /*commute=*/1, &bf16Sum);
    MPI_Op_create(maxBf16, /*commute=*/1, &bf16Max);
  }
  auto grid = std::make_unique<MpiGrid>(timeoutSeconds);
  if (k3rt_status_t s = grid->init(shape))
    return s;
  out = std::move(grid);
  return nullptr;
}

} // namespace k3rt::comm
