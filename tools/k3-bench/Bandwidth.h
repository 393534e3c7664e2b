//===- Bandwidth.h - Decode's bytes per token and the machine's bandwidth --===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#ifndef TOOLS_K3_BENCH_BANDWIDTH_H
#define TOOLS_K3_BENCH_BANDWIDTH_H

#include "runtime/include/k3rt/k3rt.h"

#include <cstdint>

namespace k3bench {

/// What one decode step reads, in bytes: the weights (routed experts at
/// top_k / num_experts, one embedding row), the KDA states and conv windows
/// (read and written), and `context` rows of every MLA layer's cache.
struct DecodeBytes {
  double weights = 0, state = 0, cache = 0;
  double total() const { return weights + state + cache; }
};
DecodeBytes decodeBytes(const k3rt_bundle_t &bundle, int64_t context);

/// A STREAM-style triad (a = b + s·c over three 96 MiB float arrays) on
/// `threads` threads: the best of 5 passes, in GB/s (12 bytes an element).
double triadGBps(int threads);

} // namespace k3bench

#endif // TOOLS_K3_BENCH_BANDWIDTH_H
