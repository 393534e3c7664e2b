//===- ReferenceTest.cpp - The reference forward against the specs --------===//
//
// Part of k3. Spec test vectors for the reference's op-level functions and
// the storage formats, then whole-model properties: causality, prefill vs
// decode, chunked prefill, sharding and prefix invariance, fp32 vs fp64.
//
//===----------------------------------------------------------------------===//

#include "test/Reference/Reference.h"
#include "test/Unit/TestUtil.h"

#include "lib/Model/Numerics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>

using namespace k3;
using namespace k3::ref;

namespace {

//===----------------------------------------------------------------------===//
// Storage formats (MOE_MXFP4.md §1-2)
//===----------------------------------------------------------------------===//

/// All 16 E2M1 codes against the OCP table, and encode(decode(c)) == c.
TEST(Mxfp4, E2m1CodebookIsTheOcpTable) {
  const float table[16] = {0,  0.5f,  1,  1.5f,  2,  3,  4,  6,
                           -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  for (uint8_t c = 0; c < 16; ++c) {
    float v = model::e2m1ToFloat(c);
    EXPECT_EQ(v, table[c]) << "code " << int(c);
    EXPECT_EQ(std::signbit(v), c >= 8) << "code " << int(c);
    EXPECT_EQ(model::floatToE2m1(v), c) << "code " << int(c);
  }
}

/// Round to nearest, ties to even, saturating at ±6 (the spec's table).
TEST(Mxfp4, E2m1RoundingTiesToEvenAndSaturates) {
  const std::pair<float, float> cases[] = {
      {0.25f, 0}, {0.75f, 1}, {1.25f, 1},  {1.75f, 2},  {2.5f, 2},
      {3.5f, 4},  {5.0f, 4},  {5.9f, 6},   {6.0f, 6},   {100.0f, 6},
      {-0.25f, -0.0f}, {-2.5f, -2}, {-7.0f, -6}};
  for (auto [in, want] : cases)
    EXPECT_EQ(model::e2m1ToFloat(model::floatToE2m1(in)), want) << in;
}

/// E8M0: 2^(byte − 127); 0xFF is NaN; 0x00 is 2^-127 (kept, not flushed).
TEST(Mxfp4, E8m0Scales) {
  EXPECT_EQ(model::e8m0ToFloat(127), 1.0f);
  EXPECT_EQ(model::e8m0ToFloat(130), 8.0f);
  EXPECT_EQ(model::e8m0ToFloat(0xFE), std::ldexp(1.0f, 127));
  EXPECT_EQ(model::e8m0ToFloat(0), std::ldexp(1.0f, -127));
  EXPECT_TRUE(std::isnan(model::e8m0ToFloat(0xFF)));
}

/// OCP floor rule: amax 7 → scale 2^(2−2) = 1 and 7 stored as 6 (clipped);
/// amax 3.0001 → 3.0; the ceil rule never clips.
TEST(Mxfp4, BlockScaleRules) {
  float block[32] = {};
  block[0] = 7.0f;
  block[1] = -0.75f;
  uint8_t scale, codes[32];
  model::encodeMxfp4Block(block, scale, codes);
  EXPECT_EQ(scale, 127);
  EXPECT_EQ(model::e2m1ToFloat(codes[0]), 6.0f);
  EXPECT_EQ(model::e2m1ToFloat(codes[1]), -1.0f);
  model::encodeMxfp4Block(block, scale, codes, model::ScaleRule::Ceil);
  EXPECT_EQ(model::e2m1ToFloat(codes[0]) * model::e8m0ToFloat(scale), 8.0f);
  block[0] = 3.0001f;
  model::encodeMxfp4Block(block, scale, codes);
  EXPECT_EQ(model::e2m1ToFloat(codes[0]) * model::e8m0ToFloat(scale), 3.0f);
}

/// Low nibble first: element 2i in bits 3:0 (MOE_MXFP4.md §3), checked with
/// an asymmetric pattern; unpack inverts pack.
TEST(Mxfp4, PackIsLowNibbleFirst) {
  std::vector<float> row(32, 0.0f);
  row[0] = 6.0f;  // code 7
  row[1] = -0.5f; // code 9
  std::vector<uint8_t> packed, scales;
  model::packMxfp4(row.data(), 1, 32, packed, scales);
  ASSERT_EQ(packed.size(), 16u);
  ASSERT_EQ(scales.size(), 1u);
  EXPECT_EQ(scales[0], 127); // amax 6: 2^(2 − 2)
  EXPECT_EQ(packed[0], 0x97);
  std::vector<float> back = model::unpackMxfp4(packed.data(), scales.data(), 1, 32);
  EXPECT_EQ(back[0], 6.0f);
  EXPECT_EQ(back[1], -0.5f);
}

/// Quantize → dequantize bounds on seeded Gaussian blocks: with the floor
/// rule every element within X (half the widest E2M1 step, [4, 6]) unless
/// its block's top clips (then within 2X, amax < 8X); with the ceil rule
/// nothing clips and every element is within X. Relative RMSE is the usual
/// ~10% of 4-bit formats.
TEST(Mxfp4, QuantizeDequantizeErrorBounds) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t rows = 64, cols = 256;
  std::vector<float> w(rows * cols);
  for (float &v : w)
    v = normal(rng) * std::ldexp(1.0f, int(rng() % 9) - 4);
  for (model::ScaleRule rule : {model::ScaleRule::Floor, model::ScaleRule::Ceil}) {
    std::vector<uint8_t> packed, scales;
    model::packMxfp4(w.data(), rows, cols, packed, scales, rule);
    std::vector<float> q = model::unpackMxfp4(packed.data(), scales.data(), rows, cols);
    double err2 = 0, ref2 = 0;
    for (int64_t i = 0; i < rows * cols; ++i) {
      float x = model::e8m0ToFloat(scales[i / 32]);
      bool clipped = std::fabs(w[i]) > 6.0f * x;
      EXPECT_TRUE(rule == model::ScaleRule::Floor || !clipped) << i;
      EXPECT_LE(std::fabs(w[i] - q[i]), (clipped ? 2.0f : 1.0f) * x) << i;
      // Rounding never moves a value past zero or grows its magnitude past 6X.
      EXPECT_LE(std::fabs(q[i]), 6.0f * x);
      EXPECT_TRUE(q[i] == 0 || std::signbit(q[i]) == std::signbit(w[i]));
      err2 += double(w[i] - q[i]) * (w[i] - q[i]);
      ref2 += double(w[i]) * w[i];
    }
    EXPECT_LT(std::sqrt(err2 / ref2), 0.15);
  }
}

/// E4M3 (MXFP8): the table's extremes, ties to even, saturation at 448.
TEST(Mxfp8, E4m3EncodeDecode) {
  EXPECT_EQ(model::e4m3ToFloat(0x7E), 448.0f);
  EXPECT_EQ(model::e4m3ToFloat(0x08), std::ldexp(1.0f, -6)); // min normal
  EXPECT_EQ(model::e4m3ToFloat(0x01), std::ldexp(1.0f, -9)); // min subnormal
  EXPECT_TRUE(std::isnan(model::e4m3ToFloat(0x7F)));
  EXPECT_EQ(model::e4m3ToFloat(0xB8), -1.0f);
  for (int c = 0; c < 0x7F; ++c) // every finite code round-trips
    EXPECT_EQ(model::floatToE4m3(model::e4m3ToFloat(uint8_t(c))), c) << c;
  // 1 + 1/16 is halfway between 1 and 1.125: even mantissa (1).
  EXPECT_EQ(model::e4m3ToFloat(model::floatToE4m3(1.0625f)), 1.0f);
  EXPECT_EQ(model::e4m3ToFloat(model::floatToE4m3(1.1875f)), 1.25f);
  EXPECT_EQ(model::e4m3ToFloat(model::floatToE4m3(500.0f)), 448.0f);
  EXPECT_EQ(model::e4m3ToFloat(model::floatToE4m3(-1e9f)), -448.0f);
  EXPECT_EQ(model::e4m3ToFloat(model::floatToE4m3(std::ldexp(1.0f, -10))), 0.0f); // tie to 0
  // A block: amax 3 → X = 2^(1 − 8); 3 and 1/3 round to E4M3 steps of X.
  float in[32] = {3.0f, 1.0f / 3.0f}, out[32];
  model::roundMxfp8Block(in, out);
  EXPECT_EQ(out[0], 3.0f);
  EXPECT_EQ(out[1], 0.34375f); // 1/3 = 1.333 · 2^-2 → 1.375 · 2^-2
  EXPECT_EQ(out[2], 0.0f);
  // Out of range or non-finite blocks pass through unrounded (as compiled).
  for (float special : {INFINITY, NAN, std::ldexp(1.0f, 122), std::ldexp(1.0f, -101)}) {
    float blk[32] = {special, 1.0f / 3.0f}, got[32];
    if (std::ldexp(1.0f, -101) == special)
      blk[1] = std::ldexp(1.0f, -102) / 3;
    model::roundMxfp8Block(blk, got);
    EXPECT_EQ(std::memcmp(blk, got, sizeof blk), 0) << special;
  }
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(model::floatToBf16(1.0f), 0x3F80);
  // 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7: ties to even (1).
  EXPECT_EQ(model::floatToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(model::floatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(model::bf16ToFloat(0xC040), -3.0f);
  EXPECT_EQ(model::f16ToFloat(0x3C00), 1.0f);
  EXPECT_EQ(model::f16ToFloat(0x0001), std::ldexp(1.0f, -24));
}

//===----------------------------------------------------------------------===//
// Op-level spec vectors
//===----------------------------------------------------------------------===//

/// MOE_MXFP4.md §8: fp32 within 1e-6 relative of the fp64 values.
TEST(Reference, SituGluTable) {
  const double rows[][3] = {
      {0, 1, 0},           {0.5, 1, 0.309454},  {1, 1, 0.715818},
      {-1, 2, -0.525829},  {4, 4, 11.865258},   {10, 10, 37.484606},
      {-10, 3, -0.000535}, {30, 100, 99.932869}, {1e4, 1e4, 100.0}};
  for (auto &r : rows) {
    double d = situGlu<double>(r[0], r[1], 4.0, 25.0);
    float f = situGlu<float>(float(r[0]), float(r[1]), 4.0, 25.0);
    // The table is printed to 6 decimals.
    EXPECT_NEAR(d, r[2], 5e-7) << "g=" << r[0] << " u=" << r[1];
    if (d == 0)
      EXPECT_EQ(f, 0.0f);
    else
      EXPECT_LE(std::fabs(f - d) / std::fabs(d), 1e-6) << "g=" << r[0];
  }
  // No beta2: the up branch stays linear.
  EXPECT_NEAR(situGlu<double>(1, 2, 4.0, std::nullopt),
              2 * 4 * std::tanh(0.25) / (1 + std::exp(-1.0)), 1e-15);
}

/// MOE_MXFP4.md §9 test vector.
TEST(Reference, AttnResVector) {
  const double r[] = {1, -2, 0.5, 3}, b0[] = {0.1, 0.2, 0.3, 0.4},
               b1[] = {2, 0, -1, 1};
  const double norm[] = {1, 1, 1, 1}, proj[] = {0.5, -0.25, 0, 1};
  double out[4];
  attnResRead<double>({b0, b1, r}, 4, norm, proj, 1e-5, out);
  const double want[] = {1.069956, -0.889366, 0.018912, 1.792294};
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(out[i], want[i], 1e-6) << i;
  // Zero query: a uniform mix (1/3 each).
  const double zero[] = {0, 0, 0, 0};
  attnResRead<double>({b0, b1, r}, 4, norm, zero, 1e-5, out);
  EXPECT_NEAR(out[0], (0.1 + 2 + 1) / 3, 1e-15);
}

/// MOE_MXFP4.md §5 toy vector; weights come from the unbiased scores.
TEST(Reference, RouterToy) {
  const double logits[] = {2, 0.5, -1, 1}, bias[] = {-0.5, 0.4, 0, 0};
  std::vector<int64_t> idx;
  std::vector<double> w;
  route<double>(logits, bias, 4, 2, true, 1.0, idx, w);
  ASSERT_EQ(idx.size(), 2u);
  // Biased: [0.380797, 1.022459, 0.268941, 0.731059] → experts 1 then 3.
  EXPECT_EQ(idx[0], 1);
  EXPECT_EQ(idx[1], 3);
  EXPECT_NEAR(w[0], 0.459883, 1e-6);
  EXPECT_NEAR(w[1], 0.540117, 1e-6);
}

/// Exact ties go to the lower expert id; top-k = E selects everything.
TEST(Reference, RouterTiesAndFullTopK) {
  const double logits[] = {0, 0, 0, 0};
  std::vector<int64_t> idx;
  std::vector<double> w;
  route<double>(logits, nullptr, 4, 2, true, 2.0, idx, w);
  EXPECT_EQ(idx, (std::vector<int64_t>{0, 1}));
  EXPECT_DOUBLE_EQ(w[0], 1.0); // 0.5 / (1.0 + 1e-20) * 2
  route<double>(logits, nullptr, 4, 4, false, 1.0, idx, w);
  EXPECT_EQ(idx, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_DOUBLE_EQ(w[3], 0.5);
}

/// DeltaNet exact overwrite: with no decay, beta = 1 and a unit key, the
/// update replaces what the state returns for that key by v, whatever the
/// state held (KDA.md §2 rule).
TEST(Reference, DeltaRuleExactOverwrite) {
  const int64_t dk = 8, dv = 5;
  std::mt19937 rng(3);
  std::normal_distribution<double> nd;
  std::vector<double> s(dk * dv), k(dk), v(dv), g(dk, 0.0), out(dv);
  for (double &x : s)
    x = nd(rng);
  double norm = 0;
  for (double &x : k) {
    x = nd(rng);
    norm += x * x;
  }
  for (double &x : k)
    x /= std::sqrt(norm);
  for (double &x : v)
    x = nd(rng);
  kdaStep<double>(s, dk, dv, k.data(), k.data(), v.data(), g.data(), 1.0, 1.0,
                  out.data());
  for (int64_t j = 0; j < dv; ++j)
    EXPECT_NEAR(out[j], v[j], 1e-12) << j;
}

/// Gates saturated at the -5 bound for 200 steps (cumulative decay e^-1000):
/// everything stays finite, and with q = k (unit) and beta = 1 each read
/// returns exactly the value just written.
TEST(Reference, SaturatedDecayStaysFinite) {
  const int64_t dk = 4, dv = 3;
  std::vector<float> s(dk * dv, 1.0f), q(dk, 0.5f), k(dk, 0.5f),
      v(dv, 2.0f), g(dk, -5.0f), out(dv);
  for (int step = 0; step < 200; ++step)
    kdaStep<float>(s, dk, dv, q.data(), k.data(), v.data(), g.data(), 1.0f,
                   1.0f, out.data());
  for (float o : out) {
    EXPECT_TRUE(std::isfinite(o));
    // Each step: S ≈ k βvᵀ after full decay; o = Sᵀq = (k·q) v = v.
    EXPECT_NEAR(o, 2.0f, 1e-4f);
  }
}

/// Golden logits from an independent float64 implementation of
/// K3_CHECKPOINT.md §6 (pure Python, its own safetensors and MXFP4 decoding,
/// written separately from this reference during review): the first six
/// logits of every position. Catches an error that self-consistency checks
/// cannot, one that is wrong the same way everywhere.
TEST(Golden, IndependentImplementationAgrees) {
  struct Case {
    std::string config;
    uint64_t seed;
    std::vector<int32_t> ids;
    std::vector<std::vector<double>> logits;
  };
  const Case cases[] = {
      {test::sourceConfigDir("k3-tiny"), 0, {1, 7, 100, 3}, {
      {1.040571633495e+00, -1.110872921460e+00, 7.015723827828e-01, -1.463427830574e+00, -8.920376642706e-01, 1.208583912532e+00},
      {-3.287902206905e-01, 1.344993121993e+00, -3.546305852465e-01, 1.092388705765e-01, -3.403345450927e-01, -3.761139314818e-01},
      {-1.467303544177e+00, 1.003992005217e+00, -6.540095772088e-01, 1.279209218997e+00, 1.317678835652e+00, -2.189272518971e+00},
      {-1.987131867226e+00, -3.918334186098e-01, -1.640221299294e+00, -2.062996012033e+00, -2.002653901451e-01, 4.935761685108e-01}}},
      {std::string(K3_SOURCE_DIR) + "/test/Import/Inputs/kimi-linear-like", 3,
       {5, 17, 250, 0, 299}, {
      {4.767031029913e+00, 3.856182033646e+00, -1.193265914959e+01, -1.122834332959e+00, -4.019948298997e-01, 2.365830959337e+01},
      {-6.518637744998e+00, -7.296264418329e+00, -7.463834014108e+00, -1.028219984132e+01, -1.443484841191e+01, -6.656270678923e+00},
      {3.863643300230e+00, 1.624830435405e+01, -1.367278112605e+01, -3.269649335462e+00, -7.125030552114e+00, 3.117715600075e+00},
      {2.441410085672e+01, -1.361287830621e+00, -1.214515711074e+01, -1.386865303887e+01, 1.056002834214e+00, 3.225477886257e+00},
      {-1.787085649078e+00, 8.860283055024e+00, -5.835922984497e+00, 2.641864831677e+00, -7.076121723583e+00, 1.255217866993e+00}}}};
  for (const Case &c : cases) {
    test::TempDir dir;
    std::string error;
    ASSERT_TRUE(test::writeSynthetic(c.config, dir.path(), c.seed, 1, false,
                                     error))
        << error;
    auto ck = model::Checkpoint::open(dir.path(), error);
    ASSERT_NE(ck, nullptr) << error;
    Model<double> m(*ck);
    auto st = m.initialState();
    std::vector<double> logits = m.forward(c.ids, st);
    const int64_t vocab = ck->config().vocabSize;
    for (size_t t = 0; t < c.ids.size(); ++t)
      for (int i = 0; i < 6; ++i) {
        double want = c.logits[t][i];
        // The golden values are printed with 13 significant digits.
        EXPECT_NEAR(logits[t * vocab + i], want, 1e-10 * std::max(1.0, std::fabs(want)))
            << c.config << " position " << t << " logit " << i;
      }
  }
}

//===----------------------------------------------------------------------===//
// Whole model on synthetic checkpoints
//===----------------------------------------------------------------------===//

/// A synthetic checkpoint of one config, loaded once per config: k3-tiny
/// (lower-bounded gate, q-LoRA, output gates, AttnRes, LatentMoE, MXFP4) and
/// a Kimi-Linear-like config (softplus gate, low-rank output gate, direct
/// q_proj, plain residual, no latent, f32 experts, tied embeddings).
struct Loaded {
  test::TempDir dir;
  std::unique_ptr<model::Checkpoint> ck;
  std::unique_ptr<Model<double>> f64;
  std::unique_ptr<Model<float>> f32;
};

class ModelTest : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    static std::map<std::string, std::unique_ptr<Loaded>> cache;
    auto &slot = cache[GetParam()];
    if (!slot) {
      auto l = std::make_unique<Loaded>();
      std::string error;
      ASSERT_TRUE(test::writeSynthetic(configDir(GetParam()), l->dir.path(),
                                       /*seed=*/7, /*shards=*/1,
                                       /*flat=*/false, error))
          << error;
      l->ck = model::Checkpoint::open(l->dir.path(), error);
      ASSERT_NE(l->ck, nullptr) << error;
      l->f64 = std::make_unique<Model<double>>(*l->ck);
      l->f32 = std::make_unique<Model<float>>(*l->ck);
      slot = std::move(l);
    }
    loaded = slot.get();
    f64 = loaded->f64.get();
    f32 = loaded->f32.get();
    vocab = loaded->ck->config().vocabSize;
  }

  static std::string configDir(const std::string &name) {
    return name == "k3-tiny"
               ? test::sourceConfigDir(name)
               : std::string(K3_SOURCE_DIR) + "/test/Import/Inputs/" + name;
  }

  std::vector<int32_t> prompt(int n) const {
    std::vector<int32_t> ids(n);
    for (int i = 0; i < n; ++i)
      ids[i] = (i * 37 + 11) % vocab;
    return ids;
  }

  Loaded *loaded = nullptr;
  Model<double> *f64 = nullptr;
  Model<float> *f32 = nullptr;
  int64_t vocab = 0;
};

INSTANTIATE_TEST_SUITE_P(Configs, ModelTest,
                         ::testing::Values("k3-tiny", "kimi-linear-like"),
                         [](const auto &info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

/// The synthetic scales keep activations O(1): logits finite and spread.
TEST_P(ModelTest, LogitsAreFiniteAndOrderOne) {
  auto st = f64->initialState();
  std::vector<double> logits = f64->forward(prompt(15), st);
  double ss = 0;
  for (double l : logits) {
    ASSERT_TRUE(std::isfinite(l));
    ss += l * l;
  }
  double rms = std::sqrt(ss / logits.size());
  EXPECT_GT(rms, 0.05);
  EXPECT_LT(rms, 50.0);
}

/// Position t never sees later tokens: changing tokens after t leaves the
/// logits of positions ≤ t bit-identical.
TEST_P(ModelTest, Causality) {
  std::vector<int32_t> a = prompt(15), b = a;
  for (int i = 8; i < 15; ++i)
    b[i] = (b[i] + 5) % vocab;
  auto sa = f64->initialState(), sb = f64->initialState();
  std::vector<double> la = f64->forward(a, sa), lb = f64->forward(b, sb);
  for (int64_t i = 0; i < 8 * vocab; ++i)
    ASSERT_EQ(la[i], lb[i]) << "position " << i / vocab;
  EXPECT_NE(la[8 * vocab], lb[8 * vocab]);
}

/// prefill(T) equals prefill(T−1) followed by one decode step, for the
/// spec's hard lengths.
TEST_P(ModelTest, PrefillEqualsPrefillPlusDecode) {
  for (int n : {1, 2, 15, 63}) {
    std::vector<int32_t> ids = prompt(n);
    auto full = f64->initialState();
    std::vector<double> all = f64->forward(ids, full);
    auto split = f64->initialState();
    if (n > 1)
      f64->forward(std::vector<int32_t>(ids.begin(), ids.end() - 1), split);
    std::vector<double> last = f64->forward({ids.back()}, split);
    std::vector<double> want(all.end() - vocab, all.end());
    EXPECT_LT(relativeRmse(want, last), 1e-12) << "T=" << n;
    for (size_t l = 0; l < full.layers.size(); ++l) {
      EXPECT_LT(relativeRmse(full.layers[l].kda, split.layers[l].kda), 1e-12);
      EXPECT_LT(relativeRmse(full.layers[l].cache, split.layers[l].cache), 1e-12);
      for (int c = 0; c < 3; ++c) // conv windows update bit-exactly
        EXPECT_EQ(full.layers[l].conv[c], split.layers[l].conv[c]);
    }
  }
}

/// Chunked prefill through the cache (8 then 13 tokens) equals one shot.
TEST_P(ModelTest, ChunkedPrefillEqualsOneShot) {
  std::vector<int32_t> ids = prompt(21);
  auto one = f64->initialState();
  std::vector<double> whole = f64->forward(ids, one);
  auto two = f64->initialState();
  std::vector<double> chunked =
      f64->forward(std::vector<int32_t>(ids.begin(), ids.begin() + 8), two);
  std::vector<double> rest =
      f64->forward(std::vector<int32_t>(ids.begin() + 8, ids.end()), two);
  chunked.insert(chunked.end(), rest.begin(), rest.end());
  EXPECT_LT(relativeRmse(whole, chunked), 1e-12);
  EXPECT_EQ(two.tokens, 21);
}

/// The fp32 reference tracks the fp64 one end to end (< 1e-4).
TEST_P(ModelTest, Float32MatchesFloat64) {
  std::vector<int32_t> ids = prompt(63);
  auto s64 = f64->initialState();
  auto s32 = f32->initialState();
  EXPECT_LT(relativeRmse(f64->forward(ids, s64), f32->forward(ids, s32)), 1e-4);
}

/// The same synthetic checkpoint in 1 and 3 shards, and under the flat
/// `model.` prefix, gives bit-identical logits.
TEST_P(ModelTest, ShardsAndPrefixDoNotChangeLogits) {
  std::vector<int32_t> ids = prompt(15);
  auto st = f64->initialState();
  std::vector<double> want = f64->forward(ids, st);
  for (auto [shards, flat] : {std::pair{3, false}, std::pair{1, true}}) {
    test::TempDir other;
    std::string error;
    ASSERT_TRUE(test::writeSynthetic(configDir(GetParam()), other.path(), 7,
                                     shards, flat, error))
        << error;
    auto ck2 = model::Checkpoint::open(other.path(), error);
    ASSERT_NE(ck2, nullptr) << error;
    Model<double> m(*ck2);
    auto s2 = m.initialState();
    EXPECT_EQ(m.forward(ids, s2), want) << shards << " shards, flat=" << flat;
  }
}

} // namespace
