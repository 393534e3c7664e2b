//===- k3-comm-check.cpp - The collectives under mpirun -------------------===//
//
// Part of k3. Run as `mpirun -np N k3-comm-check --grid=AxB [...]`: builds
// the grid over MPI, then on every axis group checks each collective's
// values against what the group's ranks must produce (f32, bf16 and i64
// reductions, gathers, scatters, ragged all-to-alls with empty peers,
// broadcasts). Rank 0 prints one summary line; a failure is one line from
// the rank that saw it, and exit 1.
//   --timeout=S          the collective timeout (default 30)
//   --absent-rank=R      rank R skips the first collective (it waits in a
//                        receive nobody sends): the others must time out
//   --nccl=LIB           the NCCL backend, LIB loaded for libnccl.so.2 (the
//                        stand-in over MPI, test/FakeNccl: host buffers),
//                        bootstrapped over the MPI grid
//
//===----------------------------------------------------------------------===//

#include "lib/Model/Numerics.h"
#include "runtime/src/Status.h"
#include "runtime/src/comm/Mpi.h"
#include "runtime/src/comm/Nccl.h"

#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace k3rt::comm;

namespace {

int worldRank = 0;

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "k3-comm-check: error: rank %d: %s\n", worldRank, message.c_str());
  std::fflush(stderr);
  // No MPI_Finalize: a peer may be stuck in a collective; mpirun ends the
  // job when a rank exits non-zero.
  std::_Exit(1);
}

void check(k3rt_status_t s) {
  if (s)
    fail(k3rt::takeMessage(s));
}

void expect(bool ok, const std::string &what) {
  if (!ok)
    fail(what);
}

/// Each collective on `c`, with values that identify their source rank.
void checkGroup(Communicator &c) {
  const int r = c.rank(), n = c.size();
  const std::string on = " over " + c.name();
  // all_reduce: sum and max of (rank + 1) * (i + 1).
  std::vector<float> f(7);
  for (size_t i = 0; i < f.size(); ++i)
    f[i] = float((r + 1) * (i + 1));
  check(c.allReduce(f.data(), f.size(), DType::F32, Reduce::Sum));
  for (size_t i = 0; i < f.size(); ++i)
    expect(f[i] == float(n * (n + 1) / 2 * (i + 1)), "all_reduce f32 sum" + on);
  std::vector<int64_t> m = {int64_t(r) * 1000000000000ll, -r};
  check(c.allReduce(m.data(), m.size(), DType::I64, Reduce::Max));
  expect(m[0] == int64_t(n - 1) * 1000000000000ll && m[1] == 0, "all_reduce i64 max" + on);
  std::vector<uint16_t> b(5);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = k3::model::floatToBf16(0.5f * float(r + 1));
  check(c.allReduce(b.data(), b.size(), DType::BF16, Reduce::Sum));
  for (uint16_t v : b)
    expect(k3::model::bf16ToFloat(v) == 0.25f * float(n * (n + 1)), "all_reduce bf16 sum" + on);
  // all_gather: three values per rank, in rank order.
  std::vector<int32_t> mine = {r, 10 * r, 100 * r}, all(size_t(3 * n));
  check(c.allGather(mine.data(), all.data(), 3, DType::I32));
  for (int p = 0; p < n; ++p)
    expect(all[size_t(3 * p)] == p && all[size_t(3 * p + 2)] == 100 * p, "all_gather" + on);
  // reduce_scatter: block p of every rank's send holds p + rank.
  std::vector<float> send(size_t(2 * n)), part(2);
  for (int p = 0; p < n; ++p)
    send[size_t(2 * p)] = send[size_t(2 * p + 1)] = float(p + r);
  check(c.reduceScatter(send.data(), part.data(), 2, DType::F32, Reduce::Sum));
  expect(part[0] == float(n * r + n * (n - 1) / 2) && part[1] == part[0], "reduce_scatter" + on);
  // Ragged all_to_all: rank r sends (r + 2p) % 3 values (some none) to p,
  // each r * 100 + p; counts exchanged first.
  const size_t peers = static_cast<size_t>(n);
  std::vector<size_t> sendCounts(peers), recvCounts(peers);
  std::vector<int32_t> out;
  for (int p = 0; p < n; ++p) {
    sendCounts[size_t(p)] = size_t((r + 2 * p) % 3);
    out.insert(out.end(), sendCounts[size_t(p)], r * 100 + p);
  }
  check(c.counts(sendCounts.data(), recvCounts.data()));
  size_t total = 0;
  for (int p = 0; p < n; ++p) {
    expect(recvCounts[size_t(p)] == size_t((p + 2 * r) % 3), "counts" + on);
    total += recvCounts[size_t(p)];
  }
  std::vector<int32_t> in(total + 1, -1); // one more: a valid pointer when empty
  check(c.allToAll(out.data(), sendCounts.data(), in.data(), recvCounts.data(), DType::I32));
  size_t at = 0;
  for (int p = 0; p < n; ++p)
    for (size_t k = 0; k < recvCounts[size_t(p)]; ++k)
      expect(in[at++] == p * 100 + r, "all_to_all" + on);
  // broadcast from the last rank.
  std::vector<uint8_t> bytes(9, uint8_t(r));
  check(c.broadcast(bytes.data(), bytes.size(), DType::U8, n - 1));
  for (uint8_t v : bytes)
    expect(v == uint8_t(n - 1), "broadcast" + on);
}

std::vector<int64_t> parseGrid(const std::string &text) {
  std::vector<int64_t> shape;
  size_t at = 0;
  while (at <= text.size()) {
    size_t x = text.find('x', at);
    std::string part = text.substr(at, x == std::string::npos ? std::string::npos : x - at);
    char *end = nullptr;
    long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end)
      fail("--grid takes extents like 2x2, not '" + text + "'");
    shape.push_back(v);
    if (x == std::string::npos)
      break;
    at = x + 1;
  }
  return shape;
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  std::vector<int64_t> shape;
  double timeout = 30;
  int absent = -1;
  std::string nccl;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--grid=", 0) == 0)
      shape = parseGrid(a.substr(7));
    else if (a.rfind("--timeout=", 0) == 0)
      timeout = std::atof(a.c_str() + 10);
    else if (a.rfind("--nccl=", 0) == 0)
      nccl = a.substr(7);
    else if (a.rfind("--absent-rank=", 0) == 0)
      absent = std::atoi(a.c_str() + 14);
    else
      fail("unknown argument '" + a + "'");
  }
  if (shape.empty())
    fail("needs --grid=AxB...");
  std::unique_ptr<Grid> grid;
  check(createMpiGrid(shape, timeout, grid));
  std::unique_ptr<Grid> mpi;
  if (!nccl.empty()) {
    // The stand-in completes every call before returning: its stream is
    // always idle.
    mpi = std::move(grid);
    check(createNcclGrid(*mpi, nullptr, [](void *) { return 0; }, timeout, grid,
                         nccl.c_str()));
  }
  if (worldRank == absent) {
    // Never arrives: waits for a message nobody sends, until mpirun ends
    // the job because a peer exited.
    int never;
    MPI_Recv(&never, 1, MPI_INT, MPI_ANY_SOURCE, 4242, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  if (absent >= 0) {
    // The first collective times out; the communicator then refuses every
    // later call rather than risk matching the late peer's messages.
    Communicator *c = nullptr;
    k3rt_status_t first = grid->axes({0}, c);
    if (!first)
      fail("expected a timeout");
    std::string message = k3rt::takeMessage(first);
    k3rt_status_t again = grid->axes({0}, c);
    expect(again && k3rt::takeMessage(again).find("is unusable since") != std::string::npos,
           "a communicator that timed out refuses the next call");
    fail(message);
  }
  // Every subset of axes, in a fixed order on every rank.
  int groups = 0;
  for (unsigned mask = 1; mask < (1u << shape.size()); ++mask) {
    std::vector<int> axes;
    for (size_t a = 0; a < shape.size(); ++a)
      if (mask >> a & 1)
        axes.push_back(int(a));
    Communicator *c = nullptr;
    check(grid->axes(axes, c));
    checkGroup(*c);
    ++groups;
  }
  if (worldRank == 0)
    std::printf("k3-comm-check: %s grid %s, %d ranks: every collective agrees on %d axis sets\n",
                nccl.empty() ? "MPI" : "NCCL", formatGrid(shape).c_str(), grid->size(), groups);
  grid.reset();
  mpi.reset();
  MPI_Finalize();
  return 0;
}
