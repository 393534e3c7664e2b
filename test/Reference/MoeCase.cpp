//===- MoeCase.cpp - Op-level LatentMoE cases with fp64 answers -----------===//
//
// Part of k3 (test-only). Writes the inputs of test/Execution/Inputs/
// moe_layer.mlir for one routing case and the fp64 answers, computed with
// the experts' decoded MXFP4 values (the float functions get exactly those
// values, so both forms share the answer).
//
//===----------------------------------------------------------------------===//

#include "lib/Model/Numerics.h"
#include "runtime/src/Npy.h"
#include "test/Reference/Reference.h"

#include <cmath>
#include <cstdio>
#include <random>

namespace k3::ref {

namespace {

constexpr int64_t kD = 64, kE = 8, kDl = 64, kIe = 96, kIs = 32;

/// `y[r, n] = Σ_k x[r, k] · w[n, k]` in double.
std::vector<double> matmulT(const std::vector<double> &x, const std::vector<float> &w,
                            int64_t rows, int64_t n, int64_t k) {
  std::vector<double> y(rows * n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t i = 0; i < k; ++i)
        s += x[r * k + i] * double(w[j * k + i]);
      y[r * n + j] = s;
    }
  return y;
}

/// Rows of `x` [rows, k] rounded through MXFP8 in blocks of 32 (from their
/// f32 values, as the kernel holds them).
void roundRows(std::vector<double> &x) {
  for (size_t b = 0; b + 32 <= x.size(); b += 32) {
    float in[32], out[32];
    for (int i = 0; i < 32; ++i)
      in[i] = float(x[b + i]);
    model::roundMxfp8Block(in, out);
    for (int i = 0; i < 32; ++i)
      x[b + i] = out[i];
  }
}

} // namespace

int writeMoeCase(const std::string &kind, int64_t t, uint64_t seed, const std::string &dir) {
  if (kind != "random" && kind != "ties" && kind != "one-expert" && kind != "all-experts") {
    std::fprintf(stderr, "k3-reference: error: unknown --moe-case=%s (random, ties, "
                         "one-expert, all-experts)\n", kind.c_str());
    return 1;
  }
  const int64_t topK = kind == "all-experts" ? kE : 2;
  std::mt19937_64 rng(seed);
  auto fill = [&](int64_t n, double lo, double hi) {
    std::vector<float> x(n);
    for (float &e : x)
      e = float(lo + (hi - lo) * double(rng() >> 11) * 0x1.0p-53);
    return x;
  };
  std::vector<float> x = fill(t * kD, -1, 1), wr = fill(kE * kD, -0.5, 0.5),
                     bias = fill(kE, -0.1, 0.1), wd = fill(kDl * kD, -0.3, 0.3),
                     wu = fill(kD * kDl, -0.3, 0.3), norm = fill(kDl, 0.5, 1.5),
                     sg = fill(kIs * kD, -0.3, 0.3), su = fill(kIs * kD, -0.3, 0.3),
                     sd = fill(kD * kIs, -0.3, 0.3);
  if (kind == "ties") {
    // Every score is sigmoid(0) = 0.5 and no bias: exact ties, which go to
    // the lower ids, so experts 0 and 1 take every token and 2..7 none.
    std::fill(wr.begin(), wr.end(), 0.0f);
    std::fill(bias.begin(), bias.end(), 0.0f);
  } else if (kind == "one-expert") {
    // The selection-only bias sends every token to expert 3 (its weight
    // still comes from the unbiased score).
    std::fill(bias.begin(), bias.end(), 0.0f);
    bias[3] = 10.0f;
  }
  // Experts: f32 values through MXFP4, so float and packed functions agree.
  struct Expert {
    const char *name;
    int64_t rows, cols;
    std::vector<uint8_t> codes, scales;
    std::vector<float> values;
  } ex[3] = {{"1", kIe, kDl, {}, {}, {}}, {"3", kIe, kDl, {}, {}, {}}, {"2", kDl, kIe, {}, {}, {}}};
  for (Expert &m : ex) {
    for (int64_t e = 0; e < kE; ++e) {
      std::vector<float> w = fill(m.rows * m.cols, -0.5, 0.5);
      std::vector<uint8_t> c, s;
      model::packMxfp4(w.data(), m.rows, m.cols, c, s);
      std::vector<float> v = model::unpackMxfp4(c.data(), s.data(), m.rows, m.cols);
      m.codes.insert(m.codes.end(), c.begin(), c.end());
      m.scales.insert(m.scales.end(), s.begin(), s.end());
      m.values.insert(m.values.end(), v.begin(), v.end());
    }
  }

  // fp64 forward (MOE_MXFP4.md §5-6), with and without MXFP8 expert inputs.
  std::vector<double> xd(x.begin(), x.end());
  std::vector<double> logits = matmulT(xd, wr, t, kE, kD);
  std::vector<double> biasd(bias.begin(), bias.end());
  std::vector<double> z0 = matmulT(xd, wd, t, kDl, kD);
  std::vector<double> shared;
  {
    std::vector<double> g = matmulT(xd, sg, t, kIs, kD), u = matmulT(xd, su, t, kIs, kD);
    for (size_t i = 0; i < g.size(); ++i)
      g[i] = situGlu(g[i], u[i], 4.0, 25.0);
    shared = matmulT(g, sd, t, kD, kIs);
  }
  auto forward = [&](bool mxfp8) {
    std::vector<double> acc(t * kDl, 0.0);
    std::vector<int64_t> sel;
    std::vector<double> wts;
    for (int64_t tt = 0; tt < t; ++tt) {
      route(&logits[tt * kE], biasd.data(), kE, topK, true, 1.0, sel, wts);
      std::vector<double> z(z0.begin() + tt * kDl, z0.begin() + (tt + 1) * kDl);
      if (mxfp8)
        roundRows(z);
      for (int64_t j = 0; j < topK; ++j) {
        auto slice = [&](const Expert &m) {
          return std::vector<float>(m.values.begin() + sel[j] * m.rows * m.cols,
                                    m.values.begin() + (sel[j] + 1) * m.rows * m.cols);
        };
        std::vector<double> g = matmulT(z, slice(ex[0]), 1, kIe, kDl),
                            u = matmulT(z, slice(ex[1]), 1, kIe, kDl);
        for (int64_t i = 0; i < kIe; ++i)
          g[i] = situGlu(g[i], u[i], 4.0, 25.0);
        if (mxfp8)
          roundRows(g);
        std::vector<double> y = matmulT(g, slice(ex[2]), 1, kDl, kIe);
        for (int64_t i = 0; i < kDl; ++i)
          acc[tt * kDl + i] += wts[j] * y[i];
      }
      double ss = 0;
      for (int64_t i = 0; i < kDl; ++i)
        ss += acc[tt * kDl + i] * acc[tt * kDl + i];
      double inv = 1.0 / std::sqrt(ss / kDl + 1e-5);
      for (int64_t i = 0; i < kDl; ++i)
        acc[tt * kDl + i] *= inv * norm[i];
    }
    std::vector<double> y = matmulT(acc, wu, t, kD, kDl);
    std::vector<float> out(y.size());
    for (size_t i = 0; i < y.size(); ++i)
      out[i] = float(y[i] + shared[i]);
    return out;
  };
  std::vector<float> want = forward(false), want8 = forward(true);

  auto bytes = [](std::vector<int64_t> shape, const std::vector<uint8_t> &data) {
    k3rt::NpyArray a;
    a.dtype = "|u1";
    a.shape = std::move(shape);
    a.data = data;
    return a;
  };
  const std::pair<const char *, k3rt::NpyArray> files[] = {
      {"x", k3rt::makeF32({t, kD}, x.data())},
      {"wr", k3rt::makeF32({kE, kD}, wr.data())},
      {"bias", k3rt::makeF32({kE}, bias.data())},
      {"wd", k3rt::makeF32({kDl, kD}, wd.data())},
      {"wu", k3rt::makeF32({kD, kDl}, wu.data())},
      {"norm", k3rt::makeF32({kDl}, norm.data())},
      {"c1", bytes({kE, kIe, kDl / 2}, ex[0].codes)},
      {"c3", bytes({kE, kIe, kDl / 2}, ex[1].codes)},
      {"c2", bytes({kE, kDl, kIe / 2}, ex[2].codes)},
      {"s1", bytes({kE, kIe, kDl / 32}, ex[0].scales)},
      {"s3", bytes({kE, kIe, kDl / 32}, ex[1].scales)},
      {"s2", bytes({kE, kDl, kIe / 32}, ex[2].scales)},
      {"f1", k3rt::makeF32({kE, kIe, kDl}, ex[0].values.data())},
      {"f3", k3rt::makeF32({kE, kIe, kDl}, ex[1].values.data())},
      {"f2", k3rt::makeF32({kE, kDl, kIe}, ex[2].values.data())},
      {"sg", k3rt::makeF32({kIs, kD}, sg.data())},
      {"su", k3rt::makeF32({kIs, kD}, su.data())},
      {"sd", k3rt::makeF32({kD, kIs}, sd.data())},
      {"want_y", k3rt::makeF32({t, kD}, want.data())},
      {"want_y8", k3rt::makeF32({t, kD}, want8.data())}};
  std::string error;
  for (const auto &[name, array] : files)
    if (!k3rt::writeNpy(dir + "/" + name + ".npy", array, error)) {
      std::fprintf(stderr, "k3-reference: error: %s\n", error.c_str());
      return 1;
    }
  return 0;
}

} // namespace k3::ref
