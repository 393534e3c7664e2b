//===- Nccl.cpp - The grid over NCCL (GPU ranks) --------------------------===//
//
// Part of k3. NCCL's collectives are asynchronous on a stream: each call is
// queued, then the stream is polled until done, NCCL reports an async error
// or the deadline passes (then the communicator is aborted, which NCCL
// documents as the way out of a hung collective). An all-to-all is NCCL's
// grouped point-to-point: ncclGroupStart, a send and a receive per peer,
// ncclGroupEnd.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/comm/Nccl.h"

#include "runtime/src/Status.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <sched.h>

namespace k3rt::comm {
namespace {

// NCCL's ABI (nccl.h, stable since 2.x): enums and the 128-byte unique id.
using ncclComm_t = void *;
struct ncclUniqueId {
  char internal[128];
};
using ncclResult_t = int;
constexpr ncclResult_t ncclSuccess = 0, ncclInProgress = 7;
enum ncclDataType_t { ncclUint8 = 1, ncclInt32 = 2, ncclInt64 = 4, ncclFloat32 = 7,
                      ncclBfloat16 = 9 };
enum ncclRedOp_t { ncclSum = 0, ncclMax = 2 };

/// The entry points k3 uses, resolved once.
struct Api {
  void *lib = nullptr;
  const char *(*getErrorString)(ncclResult_t);
  ncclResult_t (*getVersion)(int *);
  ncclResult_t (*getUniqueId)(ncclUniqueId *);
  ncclResult_t (*commInitRank)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*commDestroy)(ncclComm_t);
  ncclResult_t (*commAbort)(ncclComm_t);
  ncclResult_t (*commGetAsyncError)(ncclComm_t, ncclResult_t *);
  ncclResult_t (*allReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                            ncclComm_t, void *);
  ncclResult_t (*allGather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, void *);
  ncclResult_t (*reduceScatter)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                ncclComm_t, void *);
  ncclResult_t (*broadcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                            void *);
  ncclResult_t (*send)(const void *, size_t, ncclDataType_t, int, ncclComm_t, void *);
  ncclResult_t (*recv)(void *, size_t, ncclDataType_t, int, ncclComm_t, void *);
  ncclResult_t (*groupStart)();
  ncclResult_t (*groupEnd)();
};

k3rt_status_t loadApi(const char *path, Api &api) {
  api.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!api.lib)
    return makeStatus(K3RT_UNAVAILABLE, std::string("cannot load ") + path +
                                            " (NCCL; GPU machines have it): " + dlerror());
  bool ok = true;
  auto bind = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(api.lib, name));
    ok &= fn != nullptr;
  };
  bind(api.getErrorString, "ncclGetErrorString");
  bind(api.getVersion, "ncclGetVersion");
  bind(api.getUniqueId, "ncclGetUniqueId");
  bind(api.commInitRank, "ncclCommInitRank");
  bind(api.commDestroy, "ncclCommDestroy");
  bind(api.commAbort, "ncclCommAbort");
  bind(api.commGetAsyncError, "ncclCommGetAsyncError");
  bind(api.allReduce, "ncclAllReduce");
  bind(api.allGather, "ncclAllGather");
  bind(api.reduceScatter, "ncclReduceScatter");
  bind(api.broadcast, "ncclBroadcast");
  bind(api.send, "ncclSend");
  bind(api.recv, "ncclRecv");
  bind(api.groupStart, "ncclGroupStart");
  bind(api.groupEnd, "ncclGroupEnd");
  // bf16 reductions arrived in NCCL 2.10 (version code 21000 and up).
  int version = 0;
  if (!ok || api.getVersion(&version) != ncclSuccess || version < 21000)
    return makeStatus(K3RT_UNAVAILABLE, std::string(path) + " is not NCCL 2.10 or later" +
                                            (version ? " (version code " +
                                                           std::to_string(version) + ")"
                                                     : std::string()));
  return nullptr;
}

ncclDataType_t ncclType(DType dtype) {
  switch (dtype) {
  case DType::F32: return ncclFloat32;
  case DType::BF16: return ncclBfloat16;
  case DType::I32: return ncclInt32;
  case DType::I64: return ncclInt64;
  case DType::U8: return ncclUint8;
  }
  return ncclUint8;
}

class NcclCommunicator : public Communicator {
public:
  NcclCommunicator(const Api &api, ncclComm_t comm, Communicator &bootstrap, std::string name,
                   void *stream, StreamQuery query, double timeout)
      : api(api), comm(comm), bootstrap(bootstrap), stream(stream), query(query),
        timeout(timeout) {
    int rank = bootstrap.rank(), size = bootstrap.size();
    groupRank = rank;
    groupSize = size;
    description = std::move(name);
  }
  ~NcclCommunicator() override {
    if (comm)
      api.commDestroy(comm);
  }

  /// Counts are host arrays: they travel over the MPI group of the same
  /// ranks, not through NCCL (which takes device buffers).
  k3rt_status_t counts(const size_t *sendCounts, size_t *recvCounts) override {
    if (k3rt_status_t s = refuseIfBroken())
      return s;
    return bootstrap.counts(sendCounts, recvCounts);
  }

  k3rt_status_t allReduce(void *buf, size_t count, DType dtype, Reduce op) override {
    if (k3rt_status_t s = refuseIfBroken())
      return s;
    return finish(api.allReduce(buf, buf, count, ncclType(dtype), ncclOp(op), comm, stream),
                  "all_reduce", count, dtype);
  }
  k3rt_status_t allGather(const void *send, void *recv, size_t count, DType dtype) override {
    if (k3rt_status_t s = refuseIfBroken())
      return s;
    return finish(api.allGather(send, recv, count, ncclType(dtype), comm, stream), "all_gather",
                  count, dtype);
  }
  k3rt_status_t reduceScatter(const void *send, void *recv, size_t count, DType dtype,
                              Reduce op) override {
    if (k3rt_status_t s = refuseIfBroken())
      return s;
    return finish(api.reduceScatter(send, recv, count, ncclType(dtype), ncclOp(op), comm,
                                    stream),
                  "reduce_scatter", count, dtype);
  }
  k3rt_status_t allToAll(const void *send, const size_t *sendCounts, void *recv,
                         const size_t *recvCounts, DType dtype) override {
    if (k3rt_status_t s = refuseIfBroken())
      return s;
    const size_t bytes = dtypeBytes(dtype);
    auto *out = static_cast<const uint8_t *>(send);
    auto *in = static_cast<uint8_t *>(recv);
    ncclResult_t rc = api.groupStart();
    size_t total = 0;
    for (int p = 0; p < groupSize && rc == ncclSuccess; ++p) {
      // Empty exchanges are skipped: NCCL pairs each send with a receive.
      if (sendCounts[p])
        rc = api.send(out, sendCounts[p], ncclType(dtype), p, comm, stream);
      if (rc == ncclSuccess && recvCounts[p])
        rc = api.recv(in, recvCounts[p], ncclType(dtype), p, comm, stream);
      out += sendCounts[p] * bytes;
      in += recvCounts[p] * bytes;
      total += sendCounts[p];
    }
    ncclResult_t end = api.groupEnd();
    return finish(rc != ncclSuccess ? rc : end, "all_to_all", total, dtype);
  }
  k3rt_status_t broadcast(void *buf, size_t count, DType dtype, int root) override {
    if (k3rt_status_t s = refuseIfBroken())
      return s;
    if (root < 0 || root >= groupSize)
      return makeStatus(K3RT_INVALID_ARGUMENT, "broadcast from rank " + std::to_string(root) +
                                                   " of a group of " +
                                                   std::to_string(groupSize));
    return finish(api.broadcast(buf, buf, count, ncclType(dtype), root, comm, stream),
                  "broadcast", count, dtype);
  }

private:
  static ncclRedOp_t ncclOp(Reduce op) { return op == Reduce::Sum ? ncclSum : ncclMax; }

  k3rt_status_t finish(ncclResult_t rc, const char *op, size_t count, DType dtype) {
    std::string what = std::string(op) + " (" + std::to_string(count) + " " +
                       dtypeName(dtype) + ") over " + description;
    if (rc != ncclSuccess && rc != ncclInProgress)
      return makeStatus(K3RT_INTERNAL, what + " failed: " + api.getErrorString(rc));
    // A blocking-mode communicator (ncclCommInitRank's) may block in the
    // call itself while it connects to a peer: the deadline starts after.
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + std::chrono::duration<double>(timeout);
    for (;;) {
      int state = query(stream);
      if (state == 0)
        return nullptr;
      ncclResult_t async = ncclSuccess;
      api.commGetAsyncError(comm, &async);
      if (state < 0 || (async != ncclSuccess && async != ncclInProgress)) {
        abort(what);
        return makeStatus(K3RT_INTERNAL,
                          what + " failed: " +
                              (async != ncclSuccess ? api.getErrorString(async)
                                                    : "the stream reported an error"));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        abort(what); // NCCL's way out of a hung collective
        return timedOut(what, timeout);
      }
      pausePolling(start);
    }
  }

  /// Aborts the communicator now (its kernels leave the stream) and
  /// refuses every later call.
  void abort(const std::string &what) {
    api.commAbort(comm);
    comm = nullptr;
    broken = what;
  }

  const Api &api;
  ncclComm_t comm;
  Communicator &bootstrap;
  void *stream;
  StreamQuery query;
  double timeout;
};

class NcclGrid : public Grid {
public:
  NcclGrid(Grid &bootstrap, void *stream, StreamQuery query, double timeout)
      : bootstrap(bootstrap), stream(stream), query(query), timeout(timeout) {
    worldRank = bootstrap.rank();
    worldSize = bootstrap.size();
    gridShape = bootstrap.shape();
  }
  ~NcclGrid() override {
    communicators.clear(); // before the library goes
    if (api.lib)
      dlclose(api.lib);
  }
  Api api;

protected:
  k3rt_status_t split(const std::vector<int> &axes, int color, const std::vector<int> &ranks,
                      std::unique_ptr<Communicator> &out) override {
    // The group's id: made by its first rank, sent to the others over the
    // bootstrap grid's communicator of the same axes.
    Communicator *boot = nullptr;
    if (k3rt_status_t s = bootstrap.axes(axes, boot))
      return s;
    ncclUniqueId id;
    std::memset(&id, 0, sizeof id);
    if (boot->rank() == 0)
      if (ncclResult_t rc = api.getUniqueId(&id); rc != ncclSuccess)
        return makeStatus(K3RT_INTERNAL, std::string("ncclGetUniqueId failed: ") +
                                             api.getErrorString(rc));
    if (k3rt_status_t s = boot->broadcast(&id, sizeof id, DType::U8, 0))
      return s;
    ncclComm_t comm = nullptr;
    if (ncclResult_t rc = api.commInitRank(&comm, boot->size(), id, boot->rank());
        rc != ncclSuccess)
      return makeStatus(K3RT_INTERNAL, "ncclCommInitRank for " + boot->name() +
                                           " failed: " + api.getErrorString(rc));
    (void)color;
    (void)ranks;
    out = std::make_unique<NcclCommunicator>(api, comm, *boot, boot->name() + " (NCCL)",
                                             stream, query, timeout);
    return nullptr;
  }

private:
  Grid &bootstrap;
  void *stream;
  StreamQuery query;
  double timeout;
};

} // namespace

k3rt_status_t createNcclGrid(Grid &bootstrap, void *stream, StreamQuery query,
                             double timeoutSeconds, std::unique_ptr<Grid> &out,
                             const char *library) {
  if (!query)
    return makeStatus(K3RT_INVALID_ARGUMENT, "a grid over NCCL needs a stream query");
  if (!(timeoutSeconds > 0))
    return makeStatus(K3RT_INVALID_ARGUMENT, "the collective timeout must be positive");
  auto grid = std::make_unique<NcclGrid>(bootstrap, stream, query, timeoutSeconds);
  if (k3rt_status_t s = loadApi(library ? library : "libnccl.so.2", grid->api))
    return s;
  out = std::move(grid);
  return nullptr;
}

} // namespace k3rt::comm
