//===- Session.h - One request's state over a compiled model ----*- C++ -*-===//
//
// Part of k3. Holds a request's KDA conv windows and recurrent state and its
// MLA latent cache (the entry points' state tensors, threaded from one call
// to the next) and appends tokens: the first call runs `prefill_last` (the
// last position's logits) or, when every position's logits are asked for,
// `prefill`; later ones those for several tokens or `decode` for one.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_SRC_SESSION_H
#define RUNTIME_SRC_SESSION_H

#include "runtime/src/CpuExecutable.h"

#include <string>

namespace k3rt {

/// The entry point that runs `n` tokens after `seen` ones: `decode` for one
/// token after the first, else `prefill` when every position's logits are
/// needed or the binary has no `prefill_last` (older binaries), else
/// `prefill_last`.
const char *entryFor(const CpuExecutable &exe, int64_t n, int64_t seen, bool allRows);

/// Refuses a `prefill_last` that does not take and return what `prefill`
/// does (the same state, the logits of one row).
k3rt_status_t checkPrefillLast(const CpuExecutable &exe);

class Session {
public:
  /// A fresh request: zero conv windows and KDA state, empty MLA caches.
  static k3rt_status_t create(CpuExecutable &exe, std::unique_ptr<Session> &out);

  /// Runs `ids` after the tokens seen so far; `logits` receives the last
  /// position's row [vocab], or with `allRows` every position's [n, vocab].
  /// Ids must be in the vocabulary (checked).
  k3rt_status_t append(const int32_t *ids, size_t n, std::vector<float> &logits,
                       bool allRows = false);

  int64_t vocabSize() const { return vocab; }
  int64_t tokens() const { return seen; }

  /// The KDA snapshots of the last prefill call, when the binary was built
  /// with them (`k3-compile --kda-snapshot-interval=N`): one tensor per KDA
  /// layer, [⌊n/N⌋, H, K, K], the state after every N tokens of that call,
  /// in the order of `snapshotNames()`. Empty after a decode step.
  const std::vector<HostTensor> &lastSnapshots() const { return snapshots; }
  const std::vector<std::string> &snapshotNames() const { return snapshotNamesList; }

private:
  explicit Session(CpuExecutable &exe) : exe(exe) {}
  CpuExecutable &exe;
  std::vector<HostTensor> state;
  std::vector<HostTensor> snapshots;
  std::vector<std::string> snapshotNamesList;
  int64_t vocab = 0;
  int64_t seen = 0;
  bool broken = false; ///< a call failed: the state may be partly updated
};

} // namespace k3rt

#endif // RUNTIME_SRC_SESSION_H
