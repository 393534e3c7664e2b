//===- KdaBench.cpp - k3-bench kda: chunked vs recurrent KDA on CPU --------===//
//
// Part of k3. `k3-bench kda` writes an op-level KDA layer core (the K3
// lower-bounded gate, β, the recurrence; q and k arrive L2-normalised, so the
// per-token norms, identical in both forms, stay out of the comparison; the
// gate stays in: it is what proves the decay bounded) for the requested shape,
// compiles it twice with the k3-compile next to this program (--kda-form=
// recurrent and chunked), runs both through the runtime on the same seeded
// inputs, alternating, and prints the best time of each, their ratio and
// the relative RMSE between the two outputs. `--binaries=R.k3b,C.k3b` runs
// prebuilt binaries instead (a machine without the compiler).
// `--gate=softplus` measures Kimi Linear's unbounded gate instead, and the
// bounded gate's pair in the same run, so that the two speedups compare
// under the same load: the chunked form must not lose its speed to the
// unbounded gate.
//
//===----------------------------------------------------------------------===//

#include "tools/k3-bench/BenchUtil.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace k3bench;

namespace {

/// The module: f(q̂, k̂, v, graw, a_log, dt_bias, braw, s0) → (o, s1).
std::string moduleText(int64_t h, int64_t dk, int64_t dv, bool softplus) {
  auto t = [](std::initializer_list<int64_t> dims, bool dynamic) {
    std::string s = "tensor<";
    if (dynamic)
      s += "?x";
    for (int64_t d : dims)
      s += std::to_string(d) + "x";
    return s + "f32>";
  };
  std::string qk = t({h, dk}, true), v = t({h, dv}, true), g = t({h, dk}, true),
              a = t({h}, false), dt = t({h, dk}, false), b = t({h}, true),
              s = t({h, dk, dv}, false);
  char scale[32];
  std::snprintf(scale, sizeof scale, "%.9g", 1.0 / std::sqrt(double(dk)));
  return "func.func @kda(%q: " + qk + ", %k: " + qk + ", %v: " + v + ", %graw: " + g +
         ", %alog: " + a + ", %dt: " + dt + ", %braw: " + b + ", %s0: " + s + ") -> (" + v +
         ", " + s + ") {\n" + "  %g = k3.kda_gate " + (softplus ? "softplus" : "lower_bound lb = -5.0") +
         " %graw, %alog, %dt : (" + g + ", " + a + ", " +
         dt + ") -> " + g + "\n" + "  %beta = k3.sigmoid %braw : " + b + "\n" +
         "  %o, %s1 = k3.kda %q, %k, %v, %g, %beta, state(%s0) scale = " + scale + " : (" +
         qk + ", " + qk + ", " + v + ", " + g + ", " + b + ", " + s + ") -> (" + v + ", " + s +
         ")\n" + "  return %o, %s1 : " + v + ", " + s + "\n}\n";
}

} // namespace

int runKdaBench(int argc, char **argv) {
  int64_t tokens = 4096, heads = 4, dk = 128, dv = 128, chunk = 16, sub = 16, repeat = 5;
  std::string binaries, gate = "bounded", compiler = selfDir() + "/k3-compile";
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (positiveFlag(a, "--tokens=", tokens) || positiveFlag(a, "--heads=", heads) ||
        positiveFlag(a, "--dk=", dk) || positiveFlag(a, "--dv=", dv) ||
        positiveFlag(a, "--chunk=", chunk) || positiveFlag(a, "--sub-chunk=", sub) ||
        positiveFlag(a, "--repeat=", repeat))
      continue;
    if (a.rfind("--binaries=", 0) == 0)
      binaries = a.substr(11);
    else if (a.rfind("--gate=", 0) == 0)
      gate = a.substr(7);
    else if (a.rfind("--k3-compile=", 0) == 0)
      compiler = a.substr(13);
    else
      return fail("unknown flag '" + a +
                  "' (kda takes --tokens= --heads= --dk= --dv= --chunk= --sub-chunk= "
                  "--repeat= --gate=bounded|softplus --binaries=R.k3b,C.k3b --k3-compile=PATH)");
  }
  if (gate != "bounded" && gate != "softplus")
    return fail("--gate=" + gate + ": expected bounded or softplus");
  const bool softplus = gate == "softplus";
  if (softplus && !binaries.empty())
    return fail("--gate=softplus compiles both gates' pairs: it takes no --binaries");

  // Form 0 is the recurrent one, form 1 the chunked one.
  std::vector<std::string> flags[2] = {
      {"--kda-form=recurrent"},
      {"--kda-chunk=" + std::to_string(chunk), "--kda-sub-chunk=" + std::to_string(sub)}};
  SideBySide bench, bounded;
  std::string error;
  if (!bench.prepare(binaries, compiler, "kda", moduleText(heads, dk, dv, softplus), flags, error))
    return fail(error);
  if (softplus && !bounded.prepare("", compiler, "kda", moduleText(heads, dk, dv, false), flags, error))
    return fail(error);

  std::mt19937_64 rng(7);
  std::vector<k3rt::HostTensor> inputs;
  inputs.push_back(randomTensor({tokens, heads, dk}, rng, -1, 1));     // q
  inputs.push_back(randomTensor({tokens, heads, dk}, rng, -1, 1));     // k
  for (int i = 0; i < 2; ++i) { // unit rows, as k3.l2_norm leaves them
    float *p = reinterpret_cast<float *>(inputs[i].bytes.data());
    for (int64_t r = 0; r < tokens * heads; ++r, p += dk) {
      double ss = 0;
      for (int64_t d = 0; d < dk; ++d)
        ss += double(p[d]) * p[d];
      for (int64_t d = 0; d < dk; ++d)
        p[d] = float(p[d] / std::sqrt(ss + 1e-6));
    }
  }
  inputs.push_back(randomTensor({tokens, heads, dv}, rng, -1, 1));     // v
  // graw: bounded decays down to −5; softplus ones down to about
  // −e·(6 + 1) ≈ −19 per token (A_log up to 1, dt_bias up to 1).
  inputs.push_back(randomTensor({tokens, heads, dk}, rng, -2, 6));
  inputs.push_back(randomTensor({heads}, rng, -1, 1));                 // A_log
  inputs.push_back(randomTensor({heads, dk}, rng, -1, 1));             // dt_bias
  inputs.push_back(randomTensor({tokens, heads}, rng, -3, 3));         // β logits
  inputs.push_back(randomTensor({heads, dk, dv}, rng, -0.5, 0.5));     // initial state

  if (softplus && !bounded.run("kda", inputs, repeat, error))
    return fail(error);
  if (!bench.run("kda", inputs, repeat, error))
    return fail(error);
  std::printf("kda: T=%lld heads=%lld dk=%lld dv=%lld chunk=%lld sub_chunk=%lld gate=%s, best of %lld\n",
              (long long)tokens, (long long)heads, (long long)dk, (long long)dv,
              (long long)chunk, (long long)sub, gate.c_str(), (long long)repeat);
  std::printf("recurrent_ms: %.2f\n", bench.best[0] * 1e3);
  std::printf("chunked_ms: %.2f\n", bench.best[1] * 1e3);
  std::printf("chunked_vs_recurrent_relative_rmse: %.3g\n", relativeRmse(bench.outs[0][0], bench.outs[1][0]));
  std::printf("chunked_vs_recurrent_speedup: %.2f\n", bench.best[0] / bench.best[1]);
  if (softplus) {
    double b = bounded.best[0] / bounded.best[1], s = bench.best[0] / bench.best[1];
    std::printf("bounded_chunked_vs_recurrent_speedup: %.2f\n", b);
    std::printf("softplus_over_bounded_speedup: %.2f\n", s / b);
  }
  return 0;
}
