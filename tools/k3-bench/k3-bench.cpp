//===- k3-bench.cpp - Side-by-side benchmarks -----------------------------===//
//
// Part of k3. A program, not a test: it measures in one run and prints
// ratios (DESIGN.md §7).
//
//   k3-bench cpu CHECKPOINT_DIR BINARY.k3b [--prompt=N] [--decode=N] [--threads=1,2]
//                [--repeat=3] [--no-reference]
//   k3-bench kda [--tokens=4096 --heads=4 --dk=128 --dv=128 ...] (KdaBench.cpp)
//   k3-bench mla [--context=4096 --heads=16 ...] (MlaBench.cpp)
//   k3-bench moe [--tokens=512 --experts=64 --top-k=8 ...] (MoeBench.cpp)
//   k3-bench ttft BINARY.k3b [--prompt=4096 --cached=4032 ...] (TtftBench.cpp)
//   k3-bench device BINARY.k3b --function=NAME [--compare=CPU.k3b ...]
//     (DeviceBench.cpp: one function on the binary's device, timed, and its
//     outputs against another binary's)
//   k3-bench compile MODEL_DIR [--layers=4 --targets=cpu,sm_90a] (CompileBench.cpp:
//     compile time, kernels and code bytes at two depths, depth_cost_ratio)
//   k3-bench gemm [--shape=NxK --m=1,16,512 --threads=1,2] (GemmBench.cpp: dense
//     projections' GFLOP/s against the machine's peak)
//
// `cpu`: prefill and decode tokens/s of the compiled CPU binary (through the
// runtime) at each --threads count (default: the cores the process may use)
// with each count's speed-up over the first (medians of --repeat rounds,
// the thread counts alternating within each round); decode's bytes read per token
// and its GB/s next to a STREAM-style triad on as many threads, measured in
// the same run (Bandwidth.cpp); then the last count against the plain C++
// reference forward (fp32) on the same checkpoint, tokens and machine.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/CpuExecutable.h"
#include "tools/k3-bench/Bandwidth.h"
#include "tools/k3-bench/BenchUtil.h"
#include "runtime/src/Sampling.h"
#include "runtime/src/Session.h"
#include "test/Reference/Reference.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int fail(const std::string &m) {
  std::fprintf(stderr, "k3-bench: error: %s\n", m.c_str());
  return 1;
}

} // namespace

int runKdaBench(int argc, char **argv);
int runMlaBench(int argc, char **argv);
int runMoeBench(int argc, char **argv);
int runTtftBench(int argc, char **argv);
int runDecodeBench(int argc, char **argv);
int runDeviceBench(int argc, char **argv);
int runCompileBench(int argc, char **argv);
int runGemmBench(int argc, char **argv);
int runRanksBench(int argc, char **argv);

const char kUsage[] =
    "usage: k3-bench SUBCOMMAND [flags]   (each measures two things side by side in one run)\n"
    "\n"
    "Models:\n"
    "  cpu CHECKPOINT_DIR BINARY.k3b [--prompt=32] [--decode=8] [--threads=N[,N...]]\n"
    "      [--repeat=3] [--no-reference]\n"
    "      prefill and decode tokens/s per thread count (medians of the rounds, thread\n"
    "      counts alternating), decode bytes/token and GB/s vs a triad, compiled vs\n"
    "      reference (unless --no-reference)\n"
    "  ttft BINARY.k3b [--prompt= --cached= --block-tokens= --prefill-chunk= --repeat=]\n"
    "      time to first token with a cached prefix vs a full prefill\n"
    "  decode BINARY.k3b [--batch=1,4,16 --prompt=64 --decode=32 --threads=N --repeat=3]\n"
    "      the request engine's decode tokens/s with B requests at once, per batch size,\n"
    "      with its calls and copied bytes per step\n"
    "  compile MODEL_DIR [--layers=4 --targets=cpu,sm_90a --ptxas=PATH|none]\n"
    "      compile time, kernels and code bytes at --layers and at full depth\n"
    "  ranks MODEL_DIR [--tp=2 --tokens=512 --threads=1 --repeat=3]\n"
    "      prefill tokens/s on one process and on --tp ranks under mpirun, and the ratio\n"
    "Ops (each compiled both ways):\n"
    "  gemm [--shape=NxK --m=1,16,512 --threads=1,2 --linear=blocked,dot --repeat=N]\n"
    "  kda  [--tokens= --heads= --dk= --dv= --chunk= --sub-chunk= --gate=bounded|softplus]\n"
    "  mla  [--context= --heads= --nope= --rope= --latent= --vdim= --splits=]\n"
    "  moe  [--tokens= --experts= --top-k= --latent= --inter=]\n"
    "GPU:\n"
    "  device BINARY.k3b --function=NAME --dim=N [--compare=op.k3b] [--bytes=B --flops=F]\n"
    "Figures and what they mean: tools/k3-bench/README.md\n";

int main(int argc, char **argv) {
  if (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (argc >= 2 && std::string(argv[1]) == "kda")
    return runKdaBench(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "mla")
    return runMlaBench(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "moe")
    return runMoeBench(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "ttft")
    return runTtftBench(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "decode")
    return runDecodeBench(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "device")
    return runDeviceBench(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "compile")
    return runCompileBench(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "ranks")
    return runRanksBench(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "gemm")
    return runGemmBench(argc, argv);
  if (argc < 2)
    return fail("no subcommand: cpu, ttft, decode, compile, ranks, gemm, kda, mla, moe or device "
                "(see --help)");
  if (std::string(argv[1]) != "cpu")
    return fail("unknown subcommand '" + std::string(argv[1]) +
                "': cpu, ttft, decode, compile, ranks, gemm, kda, mla, moe or device (see --help)");
  if (argc < 4)
    return fail("usage: k3-bench cpu CHECKPOINT_DIR BINARY.k3b [--prompt=N] [--decode=N] "
                "[--threads=N[,N...]] [--repeat=N] [--no-reference] (see --help)");
  std::string dir = argv[2], path = argv[3];
  int prompt = 32, decode = 8;
  int64_t repeat = 3;
  bool reference = true;
  std::vector<int> threadCounts; // empty: the runtime's default
  auto count = [](const std::string &text, int &out) {
    char *end = nullptr;
    long n = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end || n < 0 || n > 1 << 20)
      return false;
    out = int(n);
    return true;
  };
  for (int i = 4; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--prompt=", 0) == 0) {
      if (!count(a.substr(9), prompt))
        return fail("--prompt takes a token count, not '" + a.substr(9) + "'");
    } else if (a.rfind("--decode=", 0) == 0) {
      if (!count(a.substr(9), decode))
        return fail("--decode takes a step count, not '" + a.substr(9) + "'");
    } else if (a == "--no-reference")
      reference = false;
    else if (k3bench::positiveFlag(a, "--repeat=", repeat))
      ;
    else if (a.rfind("--threads=", 0) == 0) {
      // One count, or several (1,2): each measured in turn, in this run.
      std::string list = a.substr(10);
      std::vector<int64_t> counts;
      if (!k3bench::countList(list, 4096, counts))
        return fail("--threads takes counts from 1 to 4096 separated by commas, not '" + list +
                    "'");
      threadCounts.insert(threadCounts.end(), counts.begin(), counts.end());
    } else
      return fail("unknown flag '" + a + "' (see --help)");
  }
  if (prompt < 1 || decode < 0)
    return fail("--prompt must be at least 1 and --decode at least 0");
  if (threadCounts.empty())
    threadCounts.push_back(k3rt_threads());
  std::string error;
  auto ck = k3::model::Checkpoint::open(dir, error);
  if (!ck)
    return fail(error);
  k3rt_bundle_t *bundle = nullptr;
  if (k3rt_status_t s = k3rt_bundle_open(path.c_str(), &bundle))
    return fail(k3rt_status_message(s));
  std::unique_ptr<k3rt::CpuExecutable> exe;
  if (k3rt_status_t s = k3rt::CpuExecutable::load(*bundle, exe))
    return fail(k3rt_status_message(s));
  const int64_t vocab = ck->config().vocabSize;
  std::vector<int32_t> ids(prompt);
  for (int i = 0; i < prompt; ++i)
    ids[i] = int32_t((i * 7919 + 11) % vocab);

  // Compiled: prefill, then greedy decode steps, through a runtime session,
  // once per thread count in each of --repeat rounds; each thread count's
  // times are the medians over the rounds. The thread counts alternate
  // within a round, so that a shared machine's drift (tens of percent
  // within minutes on the VMs this was tuned on) falls on all of them
  // alike; one round each was not enough to read a speed-up from.
  struct Timed {
    int threads;
    std::vector<double> prefills, decodes;
    int32_t next;
    double prefill = 0, decode = 0;
  };
  std::vector<Timed> timed;
  for (int threads : threadCounts)
    timed.push_back({threads, {}, {}, -1});
  // One untimed pass first: the mapped weights' page faults and the pool's
  // start-up would otherwise count against the first thread count only.
  bool warm = false;
  for (size_t c = 0; c <= threadCounts.size() * size_t(repeat); ++c) {
    size_t which = c == 0 ? 0 : (c - 1) % threadCounts.size();
    int threads = threadCounts[which];
    k3rt_set_threads(threads);
    std::unique_ptr<k3rt::Session> session;
    if (k3rt_status_t s = k3rt::Session::create(*exe, session))
      return fail(k3rt_status_message(s));
    std::vector<float> out;
    auto run = [&](const std::vector<int32_t> &tokens) {
      if (k3rt_status_t s = session->append(tokens.data(), tokens.size(), out)) {
        std::fprintf(stderr, "k3-bench: error: %s\n", k3rt_status_message(s));
        std::exit(1);
      }
      return k3rt::argmax(out.data() + out.size() - vocab, vocab);
    };
    auto t = Clock::now();
    int32_t next = run(ids);
    double prefill = since(t);
    t = Clock::now();
    for (int i = 0; i < decode; ++i)
      next = run({next});
    if (warm) {
      Timed &tt = timed[which];
      tt.prefills.push_back(prefill);
      tt.decodes.push_back(since(t));
      // A round whose tokens differ from an earlier one's shows as "no".
      tt.next = tt.next == -1 || tt.next == next ? next : -2;
    }
    warm = true;
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  for (Timed &t : timed) {
    t.prefill = median(t.prefills);
    t.decode = median(t.decodes);
  }
  double compiledPrefill = timed.back().prefill, compiledDecode = timed.back().decode;
  int32_t next = timed.back().next;

  // Reference (fp32) on the same tokens: slow (k3-small: a minute for a
  // 512-token prompt), so a run that only compares thread counts or
  // engines may leave it out.
  double refPrefill = 0, refDecode = 0;
  int32_t rnext = -1;
  if (reference) {
    k3::ref::Model<float> ref(*ck);
    auto rs = ref.initialState();
    auto t = Clock::now();
    std::vector<float> logits = ref.forward(ids, rs);
    refPrefill = since(t);
    rnext = k3rt::argmax(logits.data() + (prompt - 1) * vocab, vocab);
    t = Clock::now();
    for (int i = 0; i < decode; ++i) {
      logits = ref.forward({rnext}, rs);
      rnext = k3rt::argmax(logits.data(), vocab);
    }
    refDecode = since(t);
  }

  std::printf("model: %s, prompt %d tokens, %d decode steps, medians of %lld rounds\n",
              dir.c_str(), prompt, decode, static_cast<long long>(repeat));
  // Decode's reads per token, at the mean context of the decode steps.
  const k3bench::DecodeBytes bytes = k3bench::decodeBytes(*bundle, prompt + decode / 2);
  std::printf("decode_bytes_per_token: %.2f MB (weights %.2f, KDA state %.2f, MLA cache %.2f; "
              "routed experts at top_k/num_experts)\n",
              bytes.total() / 1e6, bytes.weights / 1e6, bytes.state / 1e6, bytes.cache / 1e6);
  // Each thread count against the first, measured in this run, and the
  // triad on as many threads.
  for (const Timed &t : timed) {
    double gbps = decode > 0 ? bytes.total() * decode / t.decode / 1e9 : 0;
    double triad = k3bench::triadGBps(t.threads);
    std::printf("threads %d: prefill_tokens_per_s %.1f decode_tokens_per_s %.2f "
                "prefill_speedup %.2f decode_speedup %.2f same_tokens %s "
                "decode_GB_per_s %.1f triad_GB_per_s %.1f fraction_of_triad %.2f\n",
                t.threads, prompt / t.prefill, decode / t.decode,
                timed.front().prefill / t.prefill, timed.front().decode / t.decode,
                t.next >= 0 && t.next == timed.front().next ? "yes" : "no", gbps, triad, gbps / triad);
  }
  if (!reference) {
    k3rt_bundle_release(bundle);
    return 0;
  }
  std::printf("prefill_tokens_per_s: compiled %.1f reference %.1f\n",
              prompt / compiledPrefill, prompt / refPrefill);
  std::printf("decode_tokens_per_s: compiled %.2f reference %.2f\n",
              decode / compiledDecode, decode / refDecode);
  std::printf("compiled_vs_reference_prefill_speedup: %.2f\n", refPrefill / compiledPrefill);
  std::printf("compiled_vs_reference_decode_speedup: %.2f\n", refDecode / compiledDecode);
  std::printf("same_greedy_token_after_decode: %s\n", next == rnext ? "yes" : "no");
  k3rt_bundle_release(bundle);
  return 0;
}
