//===- TtftBench.cpp - k3-bench ttft: time to first token with a prefix hit ===//
//
// Part of k3. `k3-bench ttft BINARY.k3b` measures the time to first token
// of a `--prompt`-token request (default 4096) through the request engine
// (runtime/src/Engine.h) twice, side by side: with the prefix cache holding
// its first `--cached` tokens (default 4032: a previous request of exactly
// those tokens ran first, leaving its blocks and the KDA snapshot at its
// end), and with the prefix cache off (a full prefill). The hit is a whole
// number of `--block-tokens` blocks (default 64, so that 4032 tokens are
// reusable; with K3's 512 the hit is 3584). Runs alternate; it prints the
// best of `--repeat` for each and their ratio.
//
//===----------------------------------------------------------------------===//

#include "tools/k3-bench/BenchUtil.h"

#include "runtime/src/Engine.h"

#include <chrono>
#include <cstdio>

using namespace k3bench;

int runTtftBench(int argc, char **argv) {
  if (argc < 3)
    return fail("usage: k3-bench ttft BINARY.k3b [--prompt=4096 --cached=4032 "
                "--block-tokens=64 --repeat=3]");
  std::string path = argv[2];
  int64_t prompt = 4096, cached = 4032, block = 64, repeat = 3, chunk = 2048;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (positiveFlag(a, "--prompt=", prompt) || positiveFlag(a, "--cached=", cached) ||
        positiveFlag(a, "--block-tokens=", block) || positiveFlag(a, "--repeat=", repeat) ||
        positiveFlag(a, "--prefill-chunk=", chunk))
      continue;
    return fail("unknown flag '" + a +
                "' (ttft takes --prompt= --cached= --block-tokens= --prefill-chunk= --repeat=)");
  }
  if (cached >= prompt)
    return fail("--cached=" + std::to_string(cached) + " must be below --prompt=" +
                std::to_string(prompt));
  Loaded model;
  std::string error;
  if (!load(path, "prefill", model, error))
    return fail(error);
  const int64_t vocab = model.bundle->root->config()->vocab_size();
  std::vector<int32_t> ids(static_cast<size_t>(prompt));
  for (int64_t i = 0; i < prompt; ++i)
    ids[size_t(i)] = int32_t((i * 7919 + 11) % vocab);

  k3rt::EngineOptions withCache;
  withCache.blockTokens = block;
  withCache.prefillChunk = (chunk + block - 1) / block * block;
  withCache.maxBatch = 1;
  withCache.poolBytes = int64_t(1) << 30;
  k3rt::EngineOptions noCache = withCache;
  noCache.prefixCache = false;
  std::unique_ptr<k3rt::Engine> engines[2];
  for (int f = 0; f < 2; ++f)
    if (k3rt_status_t s = k3rt::Engine::create(*model.exe, f ? withCache : noCache, engines[f]))
      return fail(k3rt_status_message(s));

  // The earlier request: exactly the cached tokens, nothing generated.
  k3rt::RequestSpec earlier{"earlier", std::vector<int32_t>(ids.begin(), ids.begin() + cached), 0};
  k3rt::RequestSpec request{"request", ids, 1};
  std::vector<k3rt::RequestResult> results;
  double best[2] = {1e30, 1e30};
  int64_t hit = 0;
  std::vector<int32_t> first[2];
  for (int64_t r = 0; r < repeat; ++r)
    for (int f = 0; f < 2; ++f) {
      if (f) {
        // The cache holds exactly the earlier request's blocks, not those
        // of a previous repeat.
        engines[f]->clearCache();
        if (k3rt_status_t s = engines[f]->run({earlier}, results))
          return fail(k3rt_status_message(s));
      }
      auto t0 = std::chrono::steady_clock::now();
      if (k3rt_status_t s = engines[f]->run({request}, results))
        return fail(k3rt_status_message(s));
      double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (!results[0].error.empty())
        return fail(results[0].error);
      best[f] = std::min(best[f], dt);
      first[f] = results[0].tokens;
      if (f)
        hit = results[0].prefixHitTokens;
    }
  std::printf("ttft: prompt=%lld cached=%lld block_tokens=%lld prefill_chunk=%lld, best of %lld\n",
              (long long)prompt, (long long)cached, (long long)block,
              (long long)withCache.prefillChunk, (long long)repeat);
  std::printf("prefix_hit_tokens: %lld (recomputed %lld)\n", (long long)hit,
              (long long)(prompt - hit));
  std::printf("no_cache_ttft_ms: %.3f\n", best[0] * 1e3);
  std::printf("cached_ttft_ms: %.3f\n", best[1] * 1e3);
  std::printf("same_first_token: %s\n", first[0] == first[1] ? "yes" : "no");
  std::printf("ttft_speedup: %.2f\n", best[0] / best[1]);
  return first[0] == first[1] ? 0 : 1;
}
