//===- DecodeBench.cpp - k3-bench decode: the engine's decode per batch ---===//
//
// Part of k3. `k3-bench decode BINARY.k3b --batch=1,4,16` runs B requests at
// once through the request engine (runtime/src/Engine.h, --max-batch B),
// each a distinct `--prompt`-token prompt (default 64) then `--decode`
// greedy tokens (default 32), and prints per batch size the decode tokens/s
// of all B requests together (the steps after every request's prefill),
// the kernel calls per step and the bytes the engine copies per step: MLA
// pages gathered into a contiguous cache per call, and recurrent state moved
// between the pool and the call (EngineStats). Batch sizes alternate within
// each of `--repeat` rounds; the best round counts. Request 0 has the same
// prompt at every batch size: its tokens must not depend on the batch, in
// any round (`same_tokens`, exit status 1 if not).
//
// `--device=cuda` runs a GPU binary's kernels on GPU 0 (the pool of pages
// and the recurrent-state slots in its managed memory, read in place).
//
// A binary with a decode_batch entry (binaries of one rank, CPU or GPU,
// unless compiled with --no-batched-decode) runs all B requests' step as one call
// over the paged cache (0 bytes gathered); one without it advances each
// request with its own call, gathering its MLA pages: the baseline the
// batched form is measured against (README, "Batched decode").
//
//===----------------------------------------------------------------------===//

#include "tools/k3-bench/BenchUtil.h"

#include "runtime/src/Engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace k3bench;

namespace {

struct BatchRun {
  double tokensPerS = 0, stepsPerS = 0;
  int64_t steps = 0, tokens = 0;
  double callsPerStep = 0, gatherPerStep = 0, statePerStep = 0, groupsPerStep = 0;
  /// On a device: kernels launched one by one, and graph launches.
  double launchesPerStep = 0, graphLaunchesPerStep = 0;
  std::vector<int32_t> first; ///< request 0's tokens
};

/// One round at batch size `b`: prefill every request (the first step),
/// then time the decode steps until all are done.
bool runBatch(k3rt::CpuExecutable &exe, k3rt::CudaDevice *device, int64_t b, int64_t prompt,
              int64_t decode, int64_t vocab, int64_t groups, BatchRun &out, std::string &error) {
  k3rt::EngineOptions options;
  options.maxBatch = b;
  options.decodeGroups = groups;
  options.prefixCache = false; // distinct prompts; nothing to reuse
  options.poolBytes = int64_t(2) << 30;
  // One block and one chunk of the prompt's length: every prompt is one
  // prefill call (a prefill stops at the prompt's last block boundary).
  options.blockTokens = options.prefillChunk = prompt;
  std::unique_ptr<k3rt::Engine> engine;
  if (k3rt_status_t s = k3rt::Engine::create(exe, options, engine)) {
    error = k3rt_status_message(s);
    k3rt_status_free(s);
    return false;
  }
  std::vector<k3rt::RequestHandle> handles(static_cast<size_t>(b), 0);
  for (int64_t r = 0; r < b; ++r) {
    k3rt::RequestSpec spec;
    spec.id = std::to_string(r);
    for (int64_t i = 0; i < prompt; ++i)
      spec.prompt.push_back(int32_t((i * 7919 + r * 104729 + 11) % vocab));
    spec.maxNewTokens = decode + 1; // the prefill's token, then `decode` steps
    if (k3rt_status_t s = engine->submit(spec, handles[size_t(r)])) {
      error = k3rt_status_message(s);
      k3rt_status_free(s);
      return false;
    }
  }
  std::vector<k3rt::RequestEvent> events;
  auto collect = [&](int64_t &tokens) {
    for (k3rt::RequestEvent &e : events) {
      if (e.done && !e.result.error.empty()) {
        error = "request " + e.result.id + ": " + e.result.error;
        return false;
      }
      tokens += int64_t(e.tokens.size());
      if (e.handle == handles[0])
        out.first.insert(out.first.end(), e.tokens.begin(), e.tokens.end());
    }
    return true;
  };
  // The first step admits all B and prefills each (one chunk: the prompt).
  int64_t prefilled = 0;
  engine->step(events);
  if (!collect(prefilled))
    return false;
  if (prefilled != b) {
    error = "the first step gave " + std::to_string(prefilled) + " first tokens for " +
            std::to_string(b) + " requests (the pool or the chunk is too small)";
    return false;
  }
  const k3rt::EngineStats before = engine->stats();
  const k3rt::CudaDevice::Counters devBefore =
      device ? device->counters : k3rt::CudaDevice::Counters();
  auto t0 = std::chrono::steady_clock::now();
  while (!engine->idle()) {
    engine->step(events);
    ++out.steps;
    if (!collect(out.tokens))
      return false;
  }
  double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const k3rt::EngineStats after = engine->stats();
  out.tokensPerS = double(out.tokens) / dt;
  out.stepsPerS = double(out.steps) / dt;
  double steps = double(std::max<int64_t>(out.steps, 1));
  out.callsPerStep = double(after.calls - before.calls) / steps;
  out.groupsPerStep = double(after.decodeGroupCalls - before.decodeGroupCalls) / steps;
  out.gatherPerStep = double(after.mlaGatherBytes - before.mlaGatherBytes) / steps;
  out.statePerStep = double(after.stateCopyBytes - before.stateCopyBytes) / steps;
  if (device) {
    out.launchesPerStep = double(device->counters.launches - devBefore.launches) / steps;
    out.graphLaunchesPerStep =
        double(device->counters.graphLaunches - devBefore.graphLaunches) / steps;
  }
  return true;
}

} // namespace

int runDecodeBench(int argc, char **argv) {
  if (argc < 3)
    return fail("usage: k3-bench decode BINARY.k3b [--batch=1,4,16 --prompt=64 --decode=32 "
                "--threads=N --repeat=3 --decode-groups=N --device=cpu|cuda --no-cuda-graphs]");
  std::string path = argv[2];
  std::vector<int64_t> batches;
  int64_t prompt = 64, decode = 32, repeat = 3, threads = 0, groups = 0;
  std::string device = "cpu";
  bool cudaGraphs = true;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--batch=", 0) == 0) {
      batches.clear();
      if (!countList(a.substr(8), 1024, batches))
        return fail("--batch takes sizes from 1 to 1024 separated by commas, not '" +
                    a.substr(8) + "'");
      continue;
    }
    if (a == "--no-cuda-graphs") {
      cudaGraphs = false;
      continue;
    }
    if (a.rfind("--decode-groups=", 0) == 0) {
      // 0 (auto) or a count: EngineOptions::decodeGroups.
      const std::string v = a.substr(16);
      char *end = nullptr;
      groups = v.empty() ? -1 : std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end || groups < 0 || groups > 4096)
        return fail("--decode-groups takes 0 (auto) or a count up to 4096, not '" + v + "'");
      continue;
    }
    if (a.rfind("--device=", 0) == 0) {
      device = a.substr(9);
      if (device != "cpu" && device != "cuda")
        return fail("--device: '" + device + "' is not cpu or cuda");
      continue;
    }
    if (positiveFlag(a, "--prompt=", prompt) || positiveFlag(a, "--decode=", decode) ||
        positiveFlag(a, "--repeat=", repeat) || positiveFlag(a, "--threads=", threads))
      continue;
    return fail("unknown flag '" + a +
                "' (decode takes --batch= --prompt= --decode= --threads= --repeat= "
                "--decode-groups= --device= --no-cuda-graphs)");
  }
  if (batches.empty())
    batches = {1, 4, 16};
  // Bounds that keep the prompts' ids and the token counts small numbers.
  if (prompt > (int64_t(1) << 20) || decode > (int64_t(1) << 20))
    return fail("--prompt and --decode take at most 1048576 tokens");
  if (threads > 4096)
    return fail("--threads=" + std::to_string(threads) + ": at most 4096");
  if (threads > 0)
    k3rt_set_threads(int(threads));
  Loaded model;
  std::string error;
  if (!load(path, "prefill", model, error, device == "cuda"))
    return fail(error);
  const int64_t vocab = model.bundle->root->config()->vocab_size();
  model.exe->setCudaGraphs(cudaGraphs);

  std::vector<BatchRun> best(batches.size());
  std::vector<int32_t> reference; // request 0's tokens in the first run
  bool same = true;
  for (int64_t round = 0; round < repeat; ++round)
    for (size_t i = 0; i < batches.size(); ++i) {
      BatchRun run;
      if (!runBatch(*model.exe, model.device.get(), batches[i], prompt, decode, vocab, groups,
                    run, error))
        return fail("batch " + std::to_string(batches[i]) + ": " + error);
      if (round == 0 && i == 0)
        reference = run.first;
      same &= run.first == reference;
      if (run.tokensPerS > best[i].tokensPerS)
        best[i] = std::move(run);
    }
  std::printf("decode: prompt=%lld decode=%lld threads=%d device=%s, best of %lld rounds, batch "
              "sizes alternating; %s\n",
              (long long)prompt, (long long)decode, k3rt_threads(),
              model.device ? model.device->describe().c_str() : "cpu", (long long)repeat,
              !model.exe->entry("decode_batch") ? "one engine call per request per step"
              : !model.exe->runsParts() || groups == 1
                  ? "one decode_batch call per step"
              : groups == 0 ? "decode_batch each step, its requests in one call per thread at once "
                              "where the weights fit in L2 (--decode-groups=0; group_calls/step "
                              "says how many ran)"
                            : "decode_batch each step, its requests in --decode-groups calls "
                              "at once");
  for (size_t i = 0; i < batches.size(); ++i) {
    const BatchRun &r = best[i];
    std::printf("batch %lld: %.1f tokens/s, %.1f steps/s, %.1f calls/step, "
                "mla_gather_bytes/step %.0f, state_copy_bytes/step %.0f",
                (long long)batches[i], r.tokensPerS, r.stepsPerS, r.callsPerStep, r.gatherPerStep,
                r.statePerStep);
    if (model.exe->runsParts())
      std::printf(", group_calls/step %.1f", r.groupsPerStep);
    if (model.device)
      std::printf(", kernel_launches/step %.1f, graph_launches/step %.1f", r.launchesPerStep,
                  r.graphLaunchesPerStep);
    std::printf("\n");
  }
  if (batches.size() > 1)
    std::printf("batch%lld_over_batch%lld: %.2f (tokens/s)\n", (long long)batches.back(),
                (long long)batches.front(), best.back().tokensPerS / best.front().tokensPerS);
  std::printf("same_tokens: %s\n", same ? "yes" : "no");
  return same ? 0 : 1;
}
