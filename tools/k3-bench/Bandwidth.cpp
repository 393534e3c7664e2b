//===- Bandwidth.cpp - Decode's bytes per token and the machine's bandwidth ===//
//
// Part of k3. For `k3-bench cpu`: what a decode step must read (the
// binary's weights, the routed experts at top_k of num_experts, one
// embedding row, the KDA states read and written, the MLA cache rows) and a
// STREAM-style triad on the same threads, so that decode's achieved GB/s
// prints next to what the memory gives in the same run.
//
//===----------------------------------------------------------------------===//

#include "tools/k3-bench/Bandwidth.h"

#include "runtime/src/Bundle.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace k3bench {

DecodeBytes decodeBytes(const k3rt_bundle_t &bundle, int64_t context) {
  DecodeBytes d;
  const k3::bundle::Bundle &root = *bundle.root;
  const k3::bundle::ModelConfig *c = root.config();
  const double routed =
      c && c->num_experts() > 0 ? double(c->top_k()) / double(c->num_experts()) : 1.0;
  // A model without an lm_head of its own reads the embedding whole (tied).
  bool tied = true;
  if (!root.weights())
    return d;
  for (const k3::bundle::Weight *w : *root.weights())
    tied = tied && w->name()->str().find("lm_head") == std::string::npos;
  for (const k3::bundle::Weight *w : *root.weights()) {
    std::string name = w->name()->str();
    double bytes = double(w->length());
    // A stacked tensor of routed experts ([E, ...]): top_k of them a token.
    // The shared experts are read whole.
    if (name.find(".experts.") != std::string::npos &&
        name.find("shared_experts") == std::string::npos)
      bytes *= routed;
    // The embedding: one row.
    else if (name.find("embed_tokens") != std::string::npos && c && c->vocab_size() > 0 && !tied)
      bytes /= double(c->vocab_size());
    d.weights += bytes;
  }
  const k3::bundle::CacheGeometry *g = root.cache();
  // The KDA state is read and written back; the conv windows likewise.
  d.state = 2.0 * double(g->kda_layers()) *
            (double(g->kda_state_bytes()) + 3.0 * 4.0 * double(g->conv_window_rows()) *
                                                double(g->conv_channels()));
  d.cache = double(g->mla_bytes_per_token()) * double(context);
  return d;
}

double triadGBps(int threads) {
  // Three arrays well past any last-level cache: 3 x 96 MiB.
  const size_t n = size_t(24) << 20;
  std::unique_ptr<float[]> a(new float[n]), b(new float[n]), c(new float[n]);
  const int t = std::max(threads, 1);
  auto part = [&](int i, auto &&fn) {
    size_t lo = n * size_t(i) / size_t(t), hi = n * size_t(i + 1) / size_t(t);
    fn(lo, hi);
  };
  auto parallel = [&](auto &&fn) {
    std::vector<std::thread> pool;
    for (int i = 1; i < t; ++i)
      pool.emplace_back([&, i] { part(i, fn); });
    part(0, fn);
    for (std::thread &th : pool)
      th.join();
  };
  // First touch on the threads that use each part (their pages then lie
  // near them).
  parallel([&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) {
      a[i] = 0.f;
      b[i] = 1.f;
      c[i] = 2.f;
    }
  });
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    parallel([&](size_t lo, size_t hi) {
      float *ap = a.get();
      const float *bp = b.get(), *cp = c.get();
      for (size_t i = lo; i < hi; ++i)
        ap[i] = bp[i] + 3.f * cp[i];
    });
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // STREAM's count: two arrays read, one written.
    best = std::max(best, 3.0 * 4.0 * double(n) / s / 1e9);
  }
  // Keep the stores observable.
  volatile float sink = a[n / 2];
  (void)sink;
  return best;
}

} // namespace k3bench
