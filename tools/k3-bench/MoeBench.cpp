//===- MoeBench.cpp - k3-bench moe: grouped vs per-token routed experts ---===//
//
// Part of k3. `k3-bench moe` writes an op-level routed MoE layer (the
// sigmoid router, then k3.moe on its output: `--tokens` tokens of width
// `--latent`, `--experts` experts of intermediate `--inter`, top `--top-k`)
// twice, with MXFP4 experts (packed codes and E8M0 scales) and with f32
// experts, and compiles the module with the k3-compile beside this program
// in both dispatch forms: per-token (one matrix-vector product per token and
// selected expert) and grouped (the default: one GEMM per expert over its
// tokens). Both forms run on the same seeded inputs, alternating; it prints
// the best time of each, the grouped-vs-per-token speedups, the MXFP4-vs-f32
// time ratio of the grouped form, and the relative RMSE between the forms.
// `--binaries=PER_TOKEN.k3b,GROUPED.k3b` runs prebuilt binaries.
//
//===----------------------------------------------------------------------===//

#include "tools/k3-bench/BenchUtil.h"

#include <cstdio>

using namespace k3bench;

namespace {

std::string dims(std::initializer_list<int64_t> ds, const char *elt) {
  std::string s = "tensor<";
  for (int64_t d : ds)
    s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return s + elt + ">";
}

/// @moe_mx(x, router, codes w1/w3/w2, scales w1/w3/w2) and @moe_f32(x,
/// router, w1, w3, w2): the router, then the routed experts (no latent
/// projections, norm or shared experts: what the dispatch changes).
std::string moduleText(int64_t e, int64_t k, int64_t dl, int64_t ie) {
  std::string x = dims({-1, dl}, "f32"), wr = dims({e, dl}, "f32"),
              idx = dims({-1, k}, "i32"), wts = dims({-1, k}, "f32");
  std::string router = "  %i, %p = k3.router %x, %wr top_k = " + std::to_string(k) +
                       " renormalize scaling = 1.0 : (" + x + ", " + wr + ") -> (" + idx +
                       ", " + wts + ")\n";
  std::string c13 = dims({e, ie, dl / 2}, "i8"), c2 = dims({e, dl, ie / 2}, "i8"),
              q13 = dims({e, ie, dl}, "f4E2M1FN"), q2 = dims({e, dl, ie}, "f4E2M1FN"),
              s13 = dims({e, ie, dl / 32}, "f8E8M0FNU"), s2 = dims({e, dl, ie / 32}, "f8E8M0FNU"),
              f13 = dims({e, ie, dl}, "f32"), f2 = dims({e, dl, ie}, "f32");
  std::string attrs = " {beta1 = 4.0 : f32, beta2 = 25.0 : f32}";
  std::string mx =
      "func.func @moe_mx(%x: " + x + ", %wr: " + wr + ", %c1: " + c13 + ", %c3: " + c13 +
      ", %c2: " + c2 + ", %s1: " + s13 + ", %s3: " + s13 + ", %s2: " + s2 + ") -> " + x +
      " {\n" + router + "  %w1 = k3.unpack_e2m1 %c1 : " + c13 + " -> " + q13 +
      "\n  %w3 = k3.unpack_e2m1 %c3 : " + c13 + " -> " + q13 +
      "\n  %w2 = k3.unpack_e2m1 %c2 : " + c2 + " -> " + q2 +
      "\n  %y = k3.moe %x routed(%i, %p) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2)" + attrs +
      " : (" + x + ", " + idx + ", " + wts + ", " + q13 + ", " + q13 + ", " + q2 + ", " + s13 +
      ", " + s13 + ", " + s2 + ") -> " + x + "\n  return %y : " + x + "\n}\n";
  std::string f32 =
      "func.func @moe_f32(%x: " + x + ", %wr: " + wr + ", %w1: " + f13 + ", %w3: " + f13 +
      ", %w2: " + f2 + ") -> " + x + " {\n" + router +
      "  %y = k3.moe %x routed(%i, %p) experts(%w1, %w3, %w2)" + attrs + " : (" + x + ", " +
      idx + ", " + wts + ", " + f13 + ", " + f13 + ", " + f2 + ") -> " + x +
      "\n  return %y : " + x + "\n}\n";
  return mx + f32;
}

/// Bytes uniform in [lo, hi] as a tensor of `dtype` (packed codes: U8,
/// scales: F8E8M0FNU).
k3rt::HostTensor randomBytes(std::vector<int64_t> shape, std::mt19937_64 &rng, int lo, int hi,
                             k3::bundle::DType dtype) {
  k3rt::HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.bytes.resize(t.numElements());
  for (uint8_t &b : t.bytes)
    b = uint8_t(lo + int(rng() % uint64_t(hi - lo + 1)));
  return t;
}

} // namespace

int runMoeBench(int argc, char **argv) {
  int64_t tokens = 512, experts = 64, topK = 8, latent = 512, inter = 384, repeat = 3;
  std::string binaries, compiler = selfDir() + "/k3-compile";
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (positiveFlag(a, "--tokens=", tokens) || positiveFlag(a, "--experts=", experts) ||
        positiveFlag(a, "--top-k=", topK) || positiveFlag(a, "--latent=", latent) ||
        positiveFlag(a, "--inter=", inter) || positiveFlag(a, "--repeat=", repeat))
      continue;
    if (a.rfind("--binaries=", 0) == 0)
      binaries = a.substr(11);
    else if (a.rfind("--k3-compile=", 0) == 0)
      compiler = a.substr(13);
    else
      return fail("unknown flag '" + a +
                  "' (moe takes --tokens= --experts= --top-k= --latent= --inter= --repeat= "
                  "--binaries=PER_TOKEN.k3b,GROUPED.k3b --k3-compile=PATH)");
  }
  if (topK > experts)
    return fail("--top-k=" + std::to_string(topK) + " exceeds --experts=" +
                std::to_string(experts));
  if (latent % 32 || inter % 32)
    return fail("--latent and --inter must be multiples of the MXFP4 block size 32");
  // Form 0 is the per-token loop, form 1 the grouped GEMMs.
  std::vector<std::string> flags[2] = {{"--moe-dispatch=per-token"}, {"--moe-dispatch=grouped"}};
  SideBySide bench;
  std::string error;
  if (!bench.prepare(binaries, compiler, "moe", moduleText(experts, topK, latent, inter), flags,
                     error))
    return fail(error);

  std::mt19937_64 rng(13);
  k3rt::HostTensor x = randomTensor({tokens, latent}, rng, -1, 1),
                   wr = randomTensor({experts, latent}, rng, -0.1, 0.1);
  // MXFP4: any code; scales around 2^-4 so that outputs stay O(1).
  const auto u8 = k3::bundle::DType_U8, e8 = k3::bundle::DType_F8E8M0FNU;
  std::vector<k3rt::HostTensor> mx{
      x, wr, randomBytes({experts, inter, latent / 2}, rng, 0, 255, u8),
      randomBytes({experts, inter, latent / 2}, rng, 0, 255, u8),
      randomBytes({experts, latent, inter / 2}, rng, 0, 255, u8),
      randomBytes({experts, inter, latent / 32}, rng, 121, 124, e8),
      randomBytes({experts, inter, latent / 32}, rng, 121, 124, e8),
      randomBytes({experts, latent, inter / 32}, rng, 121, 124, e8)};
  std::vector<k3rt::HostTensor> f32{x, wr, randomTensor({experts, inter, latent}, rng, -0.1, 0.1),
                                    randomTensor({experts, inter, latent}, rng, -0.1, 0.1),
                                    randomTensor({experts, latent, inter}, rng, -0.1, 0.1)};
  if (!bench.run("moe_mx", mx, repeat, error))
    return fail(error);
  double mxTime[2] = {bench.best[0], bench.best[1]};
  double mxRmse = relativeRmse(bench.outs[0][0], bench.outs[1][0]);
  if (!bench.run("moe_f32", f32, repeat, error))
    return fail(error);
  double f32Time[2] = {bench.best[0], bench.best[1]};
  double f32Rmse = relativeRmse(bench.outs[0][0], bench.outs[1][0]);

  std::printf("moe: tokens=%lld experts=%lld top_k=%lld latent=%lld inter=%lld, best of %lld\n",
              (long long)tokens, (long long)experts, (long long)topK, (long long)latent,
              (long long)inter, (long long)repeat);
  std::printf("mxfp4 per_token_ms: %.3f grouped_ms: %.3f (relative_rmse %.3g)\n",
              mxTime[0] * 1e3, mxTime[1] * 1e3, mxRmse);
  std::printf("f32   per_token_ms: %.3f grouped_ms: %.3f (relative_rmse %.3g)\n",
              f32Time[0] * 1e3, f32Time[1] * 1e3, f32Rmse);
  const double expertBytes = double(experts) * 3 * inter * latent;
  std::printf("expert_bytes: mxfp4 %.0f (4.25 bits per weight), f32 %.0f\n",
              expertBytes * 4.25 / 8, expertBytes * 4);
  std::printf("grouped_vs_per_token_speedup_f32: %.2f\n", f32Time[0] / f32Time[1]);
  std::printf("mxfp4_vs_f32_time_ratio: %.2f (grouped; > 1: MXFP4 slower)\n",
              mxTime[1] / f32Time[1]);
  std::printf("grouped_vs_per_token_speedup: %.2f\n", mxTime[0] / mxTime[1]);
  return 0;
}
