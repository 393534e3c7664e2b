//===- Follow.h - k3-serve across the ranks of a grid -----------*- C++ -*-===//
//
// Part of k3. A binary compiled for a grid of ranks (`k3-compile --tp
// --ep`, issue 28) is served by `mpirun -np N k3-serve X.k3b`: rank 0 (the
// leader) runs the HTTP server and the scheduler (Scheduler.h); every other
// rank (a follower) holds its shard of the model and repeats the leader's
// engine calls, so that the collectives inside the kernels meet.
//
// Before each step the leader broadcasts what changed since the last one:
// the requests it admitted (their whole specs, the sampling seed included)
// and the ones it cancelled, and whether the engine steps. Nothing else is
// sent: the engine is deterministic given those calls (admission by pages
// and arrival order, the prefix cache's LRU by step count, sampling by each
// request's seed, and the logits are the same on every rank after the
// all-gather), so every rank schedules the same requests and calls the same
// kernels. Handles are the leader's, mapped to each follower's own; a
// follower whose engine disagrees (refuses an admitted request, is idle
// when the leader steps) stops with one line rather than deadlock.
//
// An idle leader sends an empty message every heartbeat: a follower that
// hears nothing for the collective timeout knows rank 0 is gone or stuck.
// After each step the ranks compare a digest of what it did (stepDigest):
// what the calls cannot pin (a per-rank judgement such as a request's KDA
// state shard turning non-finite, which poisons its prefix blocks on that
// rank only) ends the grid with one line rather than silently.
//
//===----------------------------------------------------------------------===//

#ifndef TOOLS_K3_SERVE_FOLLOW_H
#define TOOLS_K3_SERVE_FOLLOW_H

#include "runtime/src/Engine.h"
#include "runtime/src/comm/Collectives.h"

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace k3serve {

/// One step's worth of the leader's engine calls.
struct StepMessage {
  /// Admitted, in submission order: the leader's handle and the spec.
  std::vector<std::pair<k3rt::RequestHandle, k3rt::RequestSpec>> admitted;
  /// Cancelled, after the admissions (leader handles).
  std::vector<k3rt::RequestHandle> cancelled;
  bool step = false; ///< the engine steps after these calls
  bool stop = false; ///< the server is shutting down (nothing else is set)

  bool empty() const { return admitted.empty() && cancelled.empty() && !step && !stop; }
};

/// The message's bytes (JSON; empty for an empty message).
std::string encodeStep(const StepMessage &m);
/// Parses `bytes`; false with `error` on anything malformed.
bool decodeStep(const std::string &bytes, StepMessage &m, std::string &error);

/// Rank 0's `bytes` into every rank's (a length, then the bytes; a length
/// over 1 GiB is refused).
k3rt_status_t shareBytes(k3rt::comm::Communicator &world, std::string &bytes);
/// The leader: `m` to every rank of `world`.
k3rt_status_t sendStep(k3rt::comm::Communicator &world, const StepMessage &m);
/// A follower: the leader's next message (bounded by the grid's timeout).
k3rt_status_t receiveStep(k3rt::comm::Communicator &world, StepMessage &m);

/// What a step did, as a number every rank compares after it (each
/// event's tokens, end and failure, in order): a divergence the calls did
/// not prevent (a rank sampling or judging a state differently) stops the
/// grid with one line instead of mixing requests' collectives.
uint64_t stepDigest(const std::vector<k3rt::RequestEvent> &events);
/// Whether every rank's `digest` is the same (one small all-reduce).
k3rt_status_t sameDigest(k3rt::comm::Communicator &world, uint64_t digest, bool &same);
/// The line of a step whose digests differ.
std::string divergedLine();

/// After the stop message: every rank confirms it (one all-reduce, bounded
/// by the timeout), so that rank 0 never waits in MPI_Finalize for a
/// follower that is stuck.
k3rt_status_t confirmStop(k3rt::comm::Communicator &world);

/// A follower's loop: receives and repeats the leader's calls until the
/// leader says stop ("") or something fails (one line: a collective timed
/// out, the leader is gone, the engines disagree). `failure` reports the
/// executable's failed collective, if any, after each step.
std::string follow(k3rt::Engine &engine, k3rt::comm::Communicator &world,
                   const std::function<std::string()> &failure);

/// A follower's engine fed from the leader's messages.
class Follower {
public:
  explicit Follower(k3rt::Engine &engine) : engine(engine) {}
  /// Repeats `m`'s calls (the step included): "" or why not.
  std::string apply(const StepMessage &m);
  /// The events of the last step apply() ran.
  const std::vector<k3rt::RequestEvent> &lastEvents() const { return events; }

private:
  k3rt::Engine &engine;
  std::map<k3rt::RequestHandle, k3rt::RequestHandle> handles; ///< leader's → ours
  std::vector<k3rt::RequestEvent> events;
};

} // namespace k3serve

#endif // TOOLS_K3_SERVE_FOLLOW_H
