//===- GemmBench.cpp - k3-bench gemm: dense projections against the peak --===//
//
// Part of k3. `k3-bench gemm` writes one op-level module per projection
// shape, y[M, N] = x[M, K] · W[N, K]ᵀ (`k3.linear`, f32 activations, bf16
// weights as the checkpoints store them; M = 1 with a static row, as a
// decode step, other M dynamic, as a prompt), compiles each with the
// k3-compile beside this program for the CPU in each --linear form (panels,
// the model's GEMM on weights packed at compile time; blocked, the same GEMM
// packing its panels per call; dot, the dot products it replaced), and times it at
// M = 1, 16 and 512 on each --threads count, checks rows 0, 1 and M-1
// against an f64 product (relative RMSE < 1e-5), and prints GFLOP/s
// (2·M·N·K over the best call) next to the machine's peak: cores × FMA
// lanes × 2 FMA units × 2 flops × clock (measured: dependent adds, one a
// cycle), each factor printed with where it comes from, and the first
// form's speed-up over the next. The default
// shapes: Kimi Linear 48B's MLP (2304 → 9216 → 2304) and k3-small's
// (1024 → 2816).
//
//===----------------------------------------------------------------------===//

#include "tools/k3-bench/BenchUtil.h"

#include "lib/Model/Numerics.h"
#include "runtime/include/k3rt/k3rt.h"
#include "runtime/src/CpuLevel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

using namespace k3bench;

namespace {

struct Shape {
  int64_t n, k;
  const char *what;
};

/// `@gemm` with a dynamic row count (a prompt's projections) and `@gemv`
/// with one static row (a decode step's), as the model's entry points have.
/// With `panel` > 0 the weight comes as k3-pack-weight-panels stores it,
/// [N/panel, K, panel] behind a linalg.unpack, as a model's weights do.
std::string moduleText(int64_t n, int64_t k, int64_t panel) {
  std::string w = "tensor<" + std::to_string(n) + "x" + std::to_string(k) + "xbf16>", text;
  std::string arg = panel ? "tensor<" + std::to_string(n / panel) + "x" + std::to_string(k) +
                                "x" + std::to_string(panel) + "xbf16>"
                          : w;
  for (const char *rows : {"?", "1"}) {
    std::string x = std::string("tensor<") + rows + "x" + std::to_string(k) + "xf32>",
                y = std::string("tensor<") + rows + "x" + std::to_string(n) + "xf32>";
    text += std::string("func.func @") + (*rows == '?' ? "gemm" : "gemv") + "(%x: " + x +
            ", %" + (panel ? "p" : "w") + ": " + arg + ") -> " + y + " {\n";
    if (panel)
      text += "  %e = tensor.empty() : " + w + "\n  %w = linalg.unpack %p inner_dims_pos = [0] "
              "inner_tiles = [" + std::to_string(panel) + "] into %e : " + arg + " -> " + w + "\n";
    text += "  %y = k3.linear %x, %w : (" + x + ", " + w + ") -> " + y + "\n  return %y : " + y +
            "\n}\n";
  }
  return text;
}

/// `w` [n, k] as its panels [n/p, k, p] (the bundle writer's layout).
k3rt::HostTensor panelsOf(const k3rt::HostTensor &w, int64_t n, int64_t k, int64_t p) {
  k3rt::HostTensor out;
  out.dtype = w.dtype;
  out.shape = {n / p, k, p};
  out.bytes = k3::model::packPanels(w.data(), n, k, size_t(w.byteSize() / (n * k)), p);
  return out;
}

/// The clock a busy core runs at, in GHz, measured: a chain of dependent
/// register-to-register adds retires one add a cycle on x86-64 cores (an
/// add of an immediate may be folded at rename on recent Intel cores, so
/// the chain adds a register). Adds per second is then the clock, boost
/// included. (/proc/cpuinfo's `cpu MHz` is the base or last-sampled clock:
/// on this project's VM 2.69 GHz, while the blocked GEMM sustained 114 % of
/// a peak computed from it.) Best of a few 20-million-add runs; 0 where it
/// cannot measure (not x86-64) or where the result exceeds the cpufreq
/// maximum the kernel lists (a core that ran the chain faster than one add
/// a cycle).
double measuredClockGHz() {
#if defined(__x86_64__)
  constexpr int64_t kIterations = 2500000, kAddsPerIteration = 8;
  const uint64_t one = 1;
  double best = 0;
  for (int run = 0; run < 5; ++run) {
    uint64_t x = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < kIterations; ++i)
      asm volatile("add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
                   "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0"
                   : "+r"(x)
                   : "r"(one)
                   : "cc");
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0)
      best = std::max(best, double(kIterations * kAddsPerIteration) / s / 1e9);
  }
  std::ifstream maxFreq("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  double khz = 0;
  if (maxFreq >> khz && khz > 0 && best > khz / 1e6 * 1.05)
    return 0;
  return best;
#else
  return 0;
#endif
}

/// The highest `cpu MHz` of /proc/cpuinfo in GHz (0 if none).
double clockGHz() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  double best = 0;
  while (std::getline(in, line))
    if (line.rfind("cpu MHz", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos)
        best = std::max(best, std::atof(line.c_str() + colon + 1) / 1000.0);
    }
  return best;
}

} // namespace

int runGemmBench(int argc, char **argv) {
  int64_t repeat = 3;
  std::vector<int64_t> ms{1, 16, 512};
  std::vector<int> threadCounts;
  std::vector<Shape> shapes{{9216, 2304, "Kimi Linear 48B MLP up/gate (2304 -> 9216)"},
                            {2304, 9216, "Kimi Linear 48B MLP down (9216 -> 2304)"},
                            {2816, 1024, "k3-small MLP up/gate (1024 -> 2816)"}};
  std::string compiler = selfDir() + "/k3-compile";
  // The kernels' CPU level: this machine's best unless --cpu names one.
  std::string level = k3rt_cpu_level();
  // The CPU forms of k3.linear, side by side: the speed-ups are the point.
  // panels: the blocked GEMM on weights packed at compile time (a model's
  // form); blocked: the same GEMM packing panels per call from [N, K]; dot:
  // one dot product per output, the form the blocked GEMM replaced.
  std::vector<std::string> forms{"panels", "blocked", "dot"};
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (positiveFlag(a, "--repeat=", repeat))
      continue;
    if (a.rfind("--linear=", 0) == 0) {
      forms.clear();
      std::stringstream in(a.substr(9));
      for (std::string item; std::getline(in, item, ',');) {
        if (item != "panels" && item != "blocked" && item != "dot")
          return fail("--linear takes panels, blocked and/or dot separated by commas, not '" +
                      a.substr(9) + "'");
        forms.push_back(item);
      }
      if (forms.empty())
        return fail("--linear takes panels, blocked and/or dot separated by commas");
      continue;
    }
    if (a.rfind("--threads=", 0) == 0 || a.rfind("--m=", 0) == 0 || a.rfind("--shape=", 0) == 0) {
      // Lists: --threads=1,2  --m=1,16,512  --shape=NxK (one shape).
      std::string list = a.substr(a.find('=') + 1);
      if (a.rfind("--shape=", 0) == 0) {
        size_t x = list.find('x');
        char *e1 = nullptr, *e2 = nullptr;
        long long n = x == std::string::npos ? 0 : std::strtoll(list.c_str(), &e1, 10);
        long long k = x == std::string::npos ? 0 : std::strtoll(list.c_str() + x + 1, &e2, 10);
        if (n < 1 || k < 1 || e1 != list.c_str() + x || *e2)
          return fail("--shape takes NxK (output and input features), not '" + list + "'");
        shapes = {{n, k, "given"}};
        continue;
      }
      std::vector<int64_t> values;
      if (!countList(list, 1 << 20, values))
        return fail(a.substr(0, a.find('=')) + " takes positive counts separated by commas, not '" +
                    list + "'");
      if (a.rfind("--m=", 0) == 0)
        ms = values;
      else
        threadCounts.assign(values.begin(), values.end());
      continue;
    }
    if (a.rfind("--k3-compile=", 0) == 0) {
      compiler = a.substr(13);
      continue;
    }
    if (a.rfind("--cpu=", 0) == 0) {
      level = a.substr(6);
      if (level == "host")
        level = k3rt_cpu_level();
      else if (!k3rt::namedCpuLevel(level))
        return fail("--cpu takes host, x86-64, x86-64-v3 or x86-64-v4, not '" + level + "'");
      continue;
    }
    return fail("unknown flag '" + a +
                "' (gemm takes --shape=NxK --m=1,16,512 --threads=1,2 --linear=panels,blocked,dot --repeat=N "
                "--k3-compile=PATH --cpu=LEVEL)");
  }
  if (threadCounts.empty())
    threadCounts.push_back(k3rt_threads());

  // The peak of the code k3 emits for the level: f32 lanes of its widest
  // vectors (AVX-512 16, AVX2 8, SSE 4) times flops a lane and cycle: two
  // FMA units of 2 flops each (Intel since Haswell, AMD since Zen 2), or,
  // without FMA (baseline x86-64), a multiply and an add pipe. (Zen 4 splits
  // a 512-bit FMA in two, and some Intel parts have one 512-bit unit: there
  // AVX-512 code peaks at half the printed figure.)
  const double listed = clockGHz(), measured = measuredClockGHz();
  const double ghz = measured > 0 ? measured : listed;
  const bool fma = level == "x86-64-v4" || level == "x86-64-v3";
  const int lanes = level == "x86-64-v4" ? 16 : level == "x86-64-v3" ? 8 : 4;
  const int perLane = fma ? 4 : 2;
  std::printf("clock: %.2f GHz measured (dependent adds, one a cycle), %.2f GHz listed "
              "(highest 'cpu MHz' in /proc/cpuinfo)\n",
              measured, listed);
  std::printf("peak: cores x %d f32 lanes (%s, the kernels' --cpu=%s) x %s x %.2f GHz (%s "
              "clock) = %.1f GFLOP/s a core\n",
              lanes, lanes == 16 ? "AVX-512" : lanes == 8 ? "AVX2" : "SSE", level.c_str(),
              fma ? "2 FMA units x 2 flops" : "2 flops (a multiply and an add pipe, no FMA)", ghz,
              measured > 0 ? "the measured" : "the listed", lanes * perLane * ghz);

  std::string tmp;
  {
    char pattern[] = "/tmp/k3-bench-gemm-XXXXXX";
    if (!mkdtemp(pattern))
      return fail("cannot create a temporary directory");
    tmp = pattern;
  }
  // The temporary directory goes on every return.
  struct Remove {
    const std::string &dir;
    ~Remove() { spawn({"/bin/rm", "-rf", dir}); }
  } remove{tmp};
  std::mt19937_64 rng(5);
  int status = 0;
  for (const Shape &s : shapes) {
    k3rt::HostTensor w = randomTensor({s.n, s.k}, rng, -0.05, 0.05, k3::bundle::DType_BF16);
    std::vector<k3rt::HostTensor> xs;
    for (int64_t m : ms)
      xs.push_back(randomTensor({m, s.k}, rng, -1, 1));
    // Seconds by (form, m, threads), for the ratio of the first two forms.
    std::map<std::tuple<std::string, int64_t, int>, double> seconds;
    // The panel width k3-compile picks for the level: two vectors of f32.
    const int64_t width = 2 * std::max(lanes, 8);
    const int64_t panel = s.n % width == 0 ? width : s.n % 16 == 0 ? 16 : 0;
    for (const std::string &linear : forms) {
      if (linear == "panels" && panel == 0) {
        std::printf("N=%lld K=%lld: no panels form (N is not a multiple of 16)\n",
                    (long long)s.n, (long long)s.k);
        continue;
      }
      std::string source = tmp + "/gemm.mlir", binary = tmp + "/gemm-" + linear + ".k3b";
      std::ofstream(source) << moduleText(s.n, s.k, linear == "panels" ? panel : 0);
      if (!spawn({compiler, source, "--linear=" + (linear == "dot" ? linear : std::string("blocked")),
                  "--cpu=" + (level == "generic" ? std::string("host") : level), "-o", binary}))
        return fail("compiling " + source + " with " + compiler + " failed");
      Loaded form;
      std::string error;
      if (!load(binary, "gemm", form, error))
        return fail(error);
      const k3rt::HostTensor packed = linear == "panels" ? panelsOf(w, s.n, s.k, panel) : w;
      for (size_t mi = 0; mi < ms.size(); ++mi) {
        const int64_t m = ms[mi];
        std::vector<k3rt::HostTensor> inputs{xs[mi], linear == "panels" ? packed : w}, out;
        for (int threads : threadCounts) {
          k3rt_set_threads(threads);
          double best = INFINITY;
          // One untimed call first (page faults of the copies, the pool).
          for (int64_t r = 0; r <= repeat; ++r) {
            double dt = timedRun(form, m == 1 ? "gemv" : "gemm", inputs, out, error);
            if (dt < 0)
              return fail(error);
            if (r)
              best = std::min(best, dt);
          }
          seconds[{linear, m, threads}] = best;
          if (threads == threadCounts.front()) {
            // The first and last rows against an f64 product of the same
            // bf16 weights (the last: a blocked GEMM's remainder rows).
            const float *x = reinterpret_cast<const float *>(inputs[0].bytes.data());
            const uint16_t *wb = reinterpret_cast<const uint16_t *>(w.bytes.data());
            const float *y = out[0].f32();
            double num = 0, den = 0;
            std::set<int64_t> rows{0, std::min<int64_t>(m - 1, 1), m - 1};
            for (int64_t r : rows)
              for (int64_t c = 0; c < s.n; ++c) {
                double ref = 0;
                for (int64_t i = 0; i < s.k; ++i) {
                  uint32_t bits = uint32_t(wb[c * s.k + i]) << 16;
                  float wf;
                  std::memcpy(&wf, &bits, 4);
                  ref += double(x[r * s.k + i]) * double(wf);
                }
                num += (y[r * s.n + c] - ref) * (y[r * s.n + c] - ref);
                den += ref * ref;
              }
            double rmse = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
            std::printf("N=%lld K=%lld M=%lld linear=%s: relative_rmse %.3g against f64 "
                        "(rows 0, 1, M-1)\n",
                        (long long)s.n, (long long)s.k, (long long)m, linear.c_str(), rmse);
            if (!(rmse < 1e-5))
              status = fail("the GEMM's output is off the f64 product (relative RMSE " +
                            std::to_string(rmse) + ")");
          }
          double gflops = 2.0 * double(m) * double(s.n) * double(s.k) / best / 1e9;
          double peak = threads * lanes * perLane * ghz;
          std::printf("N=%lld K=%lld M=%lld linear=%s threads %d: %.3f ms, %.1f GFLOP/s, %.0f%% "
                      "of peak (%.1f) [%s]\n",
                      (long long)s.n, (long long)s.k, (long long)m, linear.c_str(), threads,
                      best * 1e3, gflops, peak > 0 ? 100 * gflops / peak : 0.0, peak, s.what);
          std::fflush(stdout);
        }
      }
    }
    // Each form against the next one measured (a form skipped for this
    // shape has no times).
    for (size_t f = 0; f + 1 < forms.size(); ++f)
      for (int64_t m : ms)
        for (int threads : threadCounts) {
          auto a = seconds.find({forms[f], m, threads}), b = seconds.find({forms[f + 1], m, threads});
          if (a != seconds.end() && b != seconds.end())
            std::printf("N=%lld K=%lld M=%lld threads %d: %s_over_%s %.2f (speed-up)\n",
                        (long long)s.n, (long long)s.k, (long long)m, threads, forms[f].c_str(),
                        forms[f + 1].c_str(), b->second / a->second);
        }
  }
  return status;
}
