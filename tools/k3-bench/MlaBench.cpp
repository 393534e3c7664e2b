//===- MlaBench.cpp - k3-bench mla: absorbed vs expanded MLA decode -------===//
//
// Part of k3. `k3-bench mla` writes an op-level MLA decode step (one new
// token over `--context` cached latent rows, K3's head dims, the output
// gate) and compiles it twice with the k3-compile beside this program: the
// absorbed form (the decode default) and the expanded form (every cached
// position's per-head keys and values re-expanded from the latent). Both run
// on the same seeded inputs, alternating; it prints the best time of each,
// their ratio, the relative RMSE between them, and the cache bytes per token.
// `--binaries=EXPANDED.k3b,ABSORBED.k3b` runs prebuilt binaries.
//
//===----------------------------------------------------------------------===//

#include "tools/k3-bench/BenchUtil.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace k3bench;

namespace {

std::string tensorType(std::initializer_list<int64_t> dims, const char *elt) {
  std::string s = "tensor<";
  for (int64_t d : dims)
    s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return s + elt + ">";
}

/// f(q, latent, k_rope, kv_b, cache, gate) → (out, new_cache); bf16 cache.
std::string moduleText(int64_t h, int64_t p, int64_t r, int64_t l, int64_t vd) {
  std::string q = tensorType({1, h, p + r}, "f32"), lat = tensorType({1, l}, "f32"),
              kr = tensorType({1, r}, "f32"), kvb = tensorType({h * (p + vd), l}, "f32"),
              cache = tensorType({-1, l + r}, "bf16"), gate = tensorType({1, h, vd}, "f32"),
              out = tensorType({1, h, vd}, "f32");
  char scale[32];
  std::snprintf(scale, sizeof scale, "%.9g", 1.0 / std::sqrt(double(p + r)));
  return "func.func @mla(%q: " + q + ", %c: " + lat + ", %kr: " + kr + ", %kvb: " + kvb +
         ", %c0: " + cache + ", %g: " + gate + ") -> (" + out + ", " + cache + ") {\n" +
         "  %o, %c1 = k3.mla %q, %c, %kr, kv_b(%kvb), cache(%c0) gate(%g) scale = " + scale +
         " causal : (" + q + ", " + lat + ", " + kr + ", " + kvb + ", " + cache + ", " + gate +
         ") -> (" + out + ", " + cache + ")\n  return %o, %c1 : " + out + ", " + cache + "\n}\n";
}

} // namespace

int runMlaBench(int argc, char **argv) {
  // K3's MLA head dims (MLA.md §1); 16 heads keep the expanded form's
  // re-expansion of every cached position within seconds on a CPU.
  int64_t context = 4096, heads = 16, nope = 128, rope = 64, latent = 512, vdim = 128,
          repeat = 3, splits = 1;
  std::string binaries, compiler = selfDir() + "/k3-compile";
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (positiveFlag(a, "--context=", context) || positiveFlag(a, "--heads=", heads) ||
        positiveFlag(a, "--nope=", nope) || positiveFlag(a, "--rope=", rope) ||
        positiveFlag(a, "--latent=", latent) || positiveFlag(a, "--vdim=", vdim) ||
        positiveFlag(a, "--repeat=", repeat) || positiveFlag(a, "--splits=", splits))
      continue;
    if (a.rfind("--binaries=", 0) == 0)
      binaries = a.substr(11);
    else if (a.rfind("--k3-compile=", 0) == 0)
      compiler = a.substr(13);
    else
      return fail("unknown flag '" + a +
                  "' (mla takes --context= --heads= --nope= --rope= --latent= --vdim= "
                  "--splits= --repeat= --binaries=EXPANDED.k3b,ABSORBED.k3b --k3-compile=PATH)");
  }
  // Form 0 is the expanded one, form 1 the absorbed one.
  std::vector<std::string> flags[2] = {{"--mla-decode-form=expanded"},
                                       {"--mla-decode-splits=" + std::to_string(splits)}};
  SideBySide bench;
  std::string error;
  if (!bench.prepare(binaries, compiler, "mla", moduleText(heads, nope, rope, latent, vdim),
                     flags, error))
    return fail(error);

  std::mt19937_64 rng(11);
  std::vector<k3rt::HostTensor> inputs;
  inputs.push_back(randomTensor({1, heads, nope + rope}, rng, -1, 1));        // q
  inputs.push_back(randomTensor({1, latent}, rng, -1, 1));                    // latent
  inputs.push_back(randomTensor({1, rope}, rng, -1, 1));                      // k_rope
  inputs.push_back(randomTensor({heads * (nope + vdim), latent}, rng, -0.05, 0.05)); // kv_b
  inputs.push_back(randomTensor({context, latent + rope}, rng, -1, 1,
                                k3::bundle::DType_BF16));                    // cache
  inputs.push_back(randomTensor({1, heads, vdim}, rng, -2, 2));               // gate
  if (!bench.run("mla", inputs, repeat, error))
    return fail(error);
  std::printf("mla decode: context=%lld heads=%lld nope=%lld rope=%lld latent=%lld vdim=%lld "
              "splits=%lld, best of %lld\n",
              (long long)context, (long long)heads, (long long)nope, (long long)rope,
              (long long)latent, (long long)vdim, (long long)splits, (long long)repeat);
  std::printf("expanded_ms: %.3f\n", bench.best[0] * 1e3);
  std::printf("absorbed_ms: %.3f\n", bench.best[1] * 1e3);
  std::printf("absorbed_vs_expanded_relative_rmse: %.3g\n", relativeRmse(bench.outs[0][0], bench.outs[1][0]));
  // Both forms read the same bf16 latent rows; a cache of expanded per-head
  // keys and values (what the expanded form would keep to avoid the
  // re-expansion) would hold H·(P+R+Vd) values per token.
  std::printf("cache_bytes_per_token: absorbed %lld (latent + k_rope, bf16), expanded %lld "
              "(per-head k and v, bf16; this expanded form re-expands the latent instead)\n",
              (long long)(2 * (latent + rope)), (long long)(2 * heads * (nope + rope + vdim)));
  std::printf("absorbed_vs_expanded_decode_speedup: %.2f\n", bench.best[0] / bench.best[1]);
  return 0;
}
