//===- k3-reference.cpp - The reference forward as a command --------------===//
//
// Part of k3 (test-only). Runs the fp64 reference on a checkpoint with
// k3-run's interface, so the lit tests can compare the compiled binary with
// it: greedy ids on stdout, prompt and step logits as float32 .npy.
//
//   k3-reference DIR --tokens=1,2,3 [--generate=N] [--dump-logits=PATH.npy]
//   k3-reference --kda-case=GATE --tokens-count=T --seed=S --write-dir=DIR
//                [--boundary-chunk=C]
//   k3-reference --moe-case=KIND --tokens-count=T --seed=S --write-dir=DIR
//   k3-reference DIR ... --quantize-experts=mxfp4[-ceil]
//
// The second form writes one seeded op-level KDA case for
// test/Execution/Inputs/kda_layer.mlir: its eight inputs (q.npy, k.npy,
// v.npy, graw.npy, alog.npy, dt.npy, braw.npy, s0.npy; 2 q/k heads, 4 value
// heads, K = V = 16, a non-zero initial state) and the fp64 answers
// (want_o.npy, want_s.npy, and with C the state after every C tokens and at
// the end, want_b.npy [ceil(T/C), HV, K, V], and without the partial end,
// want_snap.npy [⌊T/C⌋, HV, K, V]). GATE: `lb` (lower bound −5, varied decays),
// `lb-saturated` (every channel at −5 for the whole sequence), `softplus`,
// `softplus-large` (A_log = 3: per-token decays down to about −100).
//
// The third writes one op-level LatentMoE case for
// test/Execution/Inputs/moe_layer.mlir (MoeCase.cpp): KIND `random`, `ties`
// (exact score ties), `one-expert` (every token to expert 3) or
// `all-experts` (top-k = E). The fourth gives float routed experts their
// MXFP4 values, as `k3-compile --quantize-experts=mxfp4` stores them.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Npy.h"
#include "runtime/src/Sampling.h"
#include "test/Reference/Reference.h"

#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

/// Writes one op-level KDA case (see the file comment); 0 on success.
int writeKdaCase(const std::string &gate, int64_t t, uint64_t seed, const std::string &dir,
                 int64_t boundaryChunk) {
  constexpr int64_t h = 2, hv = 4, dk = 16, dv = 16;
  const bool softplusGate = gate.rfind("softplus", 0) == 0;
  if (gate != "lb" && gate != "lb-saturated" && gate != "softplus" && gate != "softplus-large") {
    std::fprintf(stderr, "k3-reference: error: unknown --kda-case=%s\n", gate.c_str());
    return 1;
  }
  std::mt19937_64 rng(seed);
  auto uniform = [&](double lo, double hi) {
    return lo + (hi - lo) * double(rng() >> 11) * 0x1.0p-53;
  };
  auto fill = [&](int64_t n, double lo, double hi) {
    std::vector<float> x(n);
    for (float &e : x)
      e = float(uniform(lo, hi));
    return x;
  };
  std::vector<float> q = fill(t * h * dk, -1, 1), k = fill(t * h * dk, -1, 1),
                     v = fill(t * hv * dv, -1, 1), braw = fill(t * hv, -3, 3),
                     s0 = fill(hv * dk * dv, -0.5, 0.5), dt = fill(hv * dk, -1, 1),
                     alog = fill(hv, -1, 1), graw = fill(t * hv * dk, -4, 4);
  if (gate == "lb-saturated")
    for (float &e : graw) // exp(a)·(x + dt) ≥ 40·e^-1 − 1: sigmoid rounds to 1
      e = float(uniform(100, 120));
  if (gate == "softplus-large") {
    for (float &e : alog)
      e = 3.0f; // e^3 ≈ 20 times softplus(z) for z up to 5
    for (float &e : graw)
      e = float(uniform(0, 4));
  }
  // fp64 from the same f32 inputs: L2 norms, gate, β, recurrence.
  std::vector<double> qn(q.begin(), q.end()), kn(k.begin(), k.end());
  for (std::vector<double> *x : {&qn, &kn})
    for (int64_t r = 0; r < t * h; ++r) {
      double ss = 0;
      for (int64_t i = 0; i < dk; ++i)
        ss += (*x)[r * dk + i] * (*x)[r * dk + i];
      for (int64_t i = 0; i < dk; ++i)
        (*x)[r * dk + i] /= std::sqrt(ss + 1e-6);
    }
  const int64_t chunks = boundaryChunk > 0 ? (t + boundaryChunk - 1) / boundaryChunk : 0;
  std::vector<double> o(t * hv * dv), st(s0.begin(), s0.end()), bounds(chunks * hv * dk * dv);
  for (int64_t hh = 0; hh < hv; ++hh) {
    std::vector<double> s(st.begin() + hh * dk * dv, st.begin() + (hh + 1) * dk * dv);
    const int64_t qh = hh / (hv / h);
    for (int64_t tt = 0; tt < t; ++tt) {
      std::vector<double> g(dk);
      const double a = std::exp(double(alog[hh]));
      for (int64_t i = 0; i < dk; ++i) {
        double z = double(graw[(tt * hv + hh) * dk + i]) + dt[hh * dk + i];
        g[i] = softplusGate ? -a * (z > 20 ? z : std::log1p(std::exp(z)))
                            : -5.0 / (1.0 + std::exp(-a * z));
      }
      const double beta = 1.0 / (1.0 + std::exp(-double(braw[tt * hv + hh])));
      std::vector<double> vv(v.begin() + (tt * hv + hh) * dv, v.begin() + (tt * hv + hh + 1) * dv);
      k3::ref::kdaStep(s, dk, dv, &qn[(tt * h + qh) * dk], &kn[(tt * h + qh) * dk], vv.data(),
                       g.data(), beta, 0.25, &o[(tt * hv + hh) * dv]);
      if (chunks && ((tt + 1) % boundaryChunk == 0 || tt + 1 == t))
        std::copy(s.begin(), s.end(), bounds.begin() + (tt / boundaryChunk * hv + hh) * dk * dv);
    }
    std::copy(s.begin(), s.end(), st.begin() + hh * dk * dv);
  }
  std::string error;
  std::vector<float> of(o.begin(), o.end()), sf(st.begin(), st.end()),
      bf(bounds.begin(), bounds.end());
  // The full intervals only: what `snapshots every C` returns.
  const int64_t full = boundaryChunk > 0 ? t / boundaryChunk : 0;
  if (chunks && (!k3rt::writeNpy(dir + "/want_b.npy",
                                 k3rt::makeF32({chunks, hv, dk, dv}, bf.data()), error) ||
                 !k3rt::writeNpy(dir + "/want_snap.npy",
                                 k3rt::makeF32({full, hv, dk, dv}, bf.data()), error))) {
    std::fprintf(stderr, "k3-reference: error: %s\n", error.c_str());
    return 1;
  }
  const std::pair<const char *, k3rt::NpyArray> files[] = {
      {"q", k3rt::makeF32({t, h, dk}, q.data())},
      {"k", k3rt::makeF32({t, h, dk}, k.data())},
      {"v", k3rt::makeF32({t, hv, dv}, v.data())},
      {"graw", k3rt::makeF32({t, hv, dk}, graw.data())},
      {"alog", k3rt::makeF32({hv}, alog.data())},
      {"dt", k3rt::makeF32({hv, dk}, dt.data())},
      {"braw", k3rt::makeF32({t, hv}, braw.data())},
      {"s0", k3rt::makeF32({hv, dk, dv}, s0.data())},
      {"want_o", k3rt::makeF32({t, hv, dv}, of.data())},
      {"want_s", k3rt::makeF32({hv, dk, dv}, sf.data())}};
  for (const auto &[name, array] : files)
    if (!k3rt::writeNpy(dir + "/" + name + ".npy", array, error)) {
      std::fprintf(stderr, "k3-reference: error: %s\n", error.c_str());
      return 1;
    }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string kdaCase, moeCase, writeDir;
  int64_t count = 0, boundaryChunk = 0;
  uint64_t seed = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--kda-case=", 0) == 0)
      kdaCase = a.substr(11);
    else if (a.rfind("--moe-case=", 0) == 0)
      moeCase = a.substr(11);
    else if (a.rfind("--tokens-count=", 0) == 0)
      count = std::stoll(a.substr(15));
    else if (a.rfind("--seed=", 0) == 0)
      seed = std::stoull(a.substr(7));
    else if (a.rfind("--write-dir=", 0) == 0)
      writeDir = a.substr(12);
    else if (a.rfind("--boundary-chunk=", 0) == 0)
      boundaryChunk = std::stoll(a.substr(17));
  }
  if (!kdaCase.empty())
    return writeKdaCase(kdaCase, count, seed, writeDir, boundaryChunk);
  if (!moeCase.empty())
    return k3::ref::writeMoeCase(moeCase, count, seed, writeDir);
  std::string dir, dump;
  std::vector<int32_t> ids;
  long generate = 0;
  std::optional<k3::model::ScaleRule> quantize;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--tokens=", 0) == 0) {
      std::string list = a.substr(9);
      size_t pos = 0;
      while (pos <= list.size()) {
        size_t comma = list.find(',', pos);
        ids.push_back(std::stoi(list.substr(pos, comma - pos)));
        if (comma == std::string::npos)
          break;
        pos = comma + 1;
      }
    } else if (a.rfind("--generate=", 0) == 0) {
      generate = std::stol(a.substr(11));
    } else if (a.rfind("--kda-case=", 0) == 0 || a.rfind("--moe-case=", 0) == 0 ||
               a.rfind("--tokens-count=", 0) == 0 ||
               a.rfind("--seed=", 0) == 0 || a.rfind("--write-dir=", 0) == 0 ||
               a.rfind("--boundary-chunk=", 0) == 0) {
      continue;
    } else if (a.rfind("--dump-logits=", 0) == 0) {
      dump = a.substr(14);
    } else if (a == "--quantize-experts=mxfp4") {
      quantize = k3::model::ScaleRule::Floor;
    } else if (a == "--quantize-experts=mxfp4-ceil") {
      quantize = k3::model::ScaleRule::Ceil;
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "k3-reference: error: unknown flag '%s'\n", a.c_str());
      return 1;
    } else {
      dir = a;
    }
  }
  std::string error;
  auto ck = k3::model::Checkpoint::open(dir, error);
  if (!ck) {
    std::fprintf(stderr, "k3-reference: error: %s\n", error.c_str());
    return 1;
  }
  k3::ref::Model<double> model(*ck, quantize);
  auto state = model.initialState();
  const int64_t vocab = ck->config().vocabSize;
  std::vector<double> logits = model.forward(ids, state);
  std::vector<float> rows(logits.begin(), logits.end());
  std::vector<int32_t> out;
  std::vector<float> last(logits.end() - vocab, logits.end());
  for (long n = 0; n < generate; ++n) {
    int32_t next = k3rt::argmax(last.data(), last.size());
    out.push_back(next);
    if (n + 1 == generate)
      break;
    std::vector<double> step = model.forward({next}, state);
    last.assign(step.begin(), step.end());
    rows.insert(rows.end(), step.begin(), step.end());
  }
  for (size_t i = 0; i < out.size(); ++i)
    std::printf("%s%d", i ? "," : "", out[i]);
  std::printf("\n");
  if (!dump.empty() &&
      !k3rt::writeNpy(dump, k3rt::makeF32({int64_t(rows.size()) / vocab, vocab}, rows.data()),
                      error)) {
    std::fprintf(stderr, "k3-reference: error: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
