//===- ModelTest.cpp - Config, tensor table, safetensors, checkpoints -----===//
//
// Part of k3. The released K3 configuration's sizes and tensor counts, and
// one test per kind of bad input: each must give one line naming the key,
// tensor, shape or file.
//
//===----------------------------------------------------------------------===//

#include "lib/Model/Checkpoint.h"
#include "lib/Model/Config.h"
#include "lib/Model/Safetensors.h"
#include "lib/Model/TensorTable.h"
#include "lib/Model/Text.h"
#include "test/Unit/TestUtil.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

using namespace k3;
using namespace k3::model;
using json = nlohmann::json;

namespace {

json releaseConfig() {
  std::string text;
  EXPECT_TRUE(test::readText(std::string(K3_SOURCE_DIR) +
                                 "/models/k3/config.json",
                             text));
  return json::parse(text);
}

std::string parseError(const json &config) {
  std::string error;
  auto c = parseConfig(config.dump(), error);
  EXPECT_FALSE(c.has_value());
  return error;
}

//===----------------------------------------------------------------------===//
// The released configuration
//===----------------------------------------------------------------------===//

/// K3_CHECKPOINT.md §2 and the issue's figures for models/k3.
TEST(Config, ReleasedK3Schedule) {
  std::string error;
  auto c = parseConfig(releaseConfig().dump(), error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->numKda(), 69);
  EXPECT_EQ(c->numMla(), 24);
  EXPECT_EQ(c->mixer(0), Mixer::KDA);
  EXPECT_EQ(c->mixer(3), Mixer::MLA);
  EXPECT_EQ(c->mixer(91), Mixer::MLA);
  EXPECT_EQ(c->mixer(92), Mixer::MLA); // the double-MLA tail
  EXPECT_EQ(c->ffn(0), FFN::Dense);
  EXPECT_EQ(c->ffn(1), FFN::MoE);
  EXPECT_TRUE(c->seals(84));
  EXPECT_FALSE(c->seals(85));
  EXPECT_EQ(c->declaredExpertFormat, ExpertFormat::MXFP4);
  EXPECT_EQ(*c->gateLowerBound, -5.0);
  Stats s = computeStats(*c);
  EXPECT_EQ(s.parameters, 2779484478208); // 2.78e12, from §3's tables
  EXPECT_EQ(s.kdaRecurrentStateBytes, 434110464);
  EXPECT_EQ(s.mlaCacheBytesPerToken, 27648);
}

/// K3_CHECKPOINT.md §3: 497,052 text tensors with packed experts, 249,756
/// unpacked; A_log stored as [128].
TEST(TensorTable, ReleasedK3Counts) {
  std::string error;
  auto c = parseConfig(releaseConfig().dump(), error);
  ASSERT_TRUE(c) << error;
  auto packed = expectedTensors(*c, ExpertFormat::MXFP4);
  auto plain = expectedTensors(*c, ExpertFormat::BF16);
  EXPECT_EQ(packed.size(), 497052u);
  EXPECT_EQ(plain.size(), 249756u);
  int u8 = 0, f32 = 0;
  for (const TensorSpec &t : packed) {
    u8 += t.dtype == DType::U8;
    f32 += t.dtype == DType::F32;
    if (t.name == "layers.0.self_attn.A_log") {
      EXPECT_EQ(t.shape, (std::vector<int64_t>{128}));
    }
    if (t.name == "layers.1.block_sparse_moe.experts.7.w2.weight_packed") {
      EXPECT_EQ(t.shape, (std::vector<int64_t>{3584, 1536}));
    }
  }
  EXPECT_EQ(u8, 494592);
  EXPECT_EQ(f32, 506);
}

/// KIMI_LINEAR.md: the 48B-A3B release has 20,493 tensors, in its own layout
/// (A_log [1, 1, 32, 1]; F32 only for A_log and dt_bias), SwiGLU and one
/// shared expert though its config has no num_shared_experts.
TEST(TensorTable, ReleasedKimiLinear) {
  std::string text, error;
  ASSERT_TRUE(test::readText(std::string(K3_SOURCE_DIR) + "/models/kimi-linear-48b/config.json",
                             text));
  auto c = parseConfig(text, error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->layout, Layout::KimiLinear);
  EXPECT_EQ(c->hiddenAct, Activation::SiLU);
  EXPECT_EQ(c->numSharedExperts, 1);
  EXPECT_FALSE(c->gateLowerBound);
  EXPECT_FALSE(c->routedExpertHiddenSize);
  EXPECT_FALSE(c->attnResBlockSize);
  EXPECT_FALSE(c->mlaOutputGate);
  auto table = expectedTensors(*c, c->declaredExpertFormat);
  EXPECT_EQ(table.size(), 20493u);
  int f32 = 0;
  for (const TensorSpec &t : table) {
    f32 += t.dtype == DType::F32;
    if (t.name == "layers.0.self_attn.A_log") {
      EXPECT_EQ(t.shape, (std::vector<int64_t>{1, 1, 32, 1}));
    }
  }
  EXPECT_EQ(f32, 2 * 20); // A_log and dt_bias of each KDA layer
  EXPECT_EQ(computeStats(*c).parameters, 49122681728);
  // The same config nested like K3's is read in K3's layout.
  json nested = {{"text_config", json::parse(text)}};
  nested["architectures"] = nested["text_config"]["architectures"];
  auto k3Like = parseConfig(nested.dump(), error);
  ASSERT_TRUE(k3Like) << error;
  EXPECT_EQ(k3Like->layout, Layout::K3);
}

/// A flat text config (no text_config wrapper) parses to the same model.
TEST(Config, FlatTextConfig) {
  std::string error;
  auto nested = parseConfig(releaseConfig().dump(), error);
  auto flat = parseConfig(releaseConfig()["text_config"].dump(), error);
  ASSERT_TRUE(nested && flat) << error;
  EXPECT_EQ(computeStats(*flat).parameters, computeStats(*nested).parameters);
}

//===----------------------------------------------------------------------===//
// Bad configs: one line naming the key
//===----------------------------------------------------------------------===//

TEST(ConfigErrors, MissingKeyIsNamed) {
  json c = releaseConfig();
  c["text_config"].erase("hidden_size");
  EXPECT_EQ(parseError(c), "config.json: text_config.hidden_size: missing key");
  c = releaseConfig();
  c["text_config"]["linear_attn_config"].erase("head_dim");
  EXPECT_EQ(parseError(c),
            "config.json: text_config.linear_attn_config.head_dim: missing key");
}

TEST(ConfigErrors, IllTypedKeyIsNamed) {
  json c = releaseConfig();
  c["text_config"]["num_experts"] = "896";
  EXPECT_EQ(parseError(c), "config.json: text_config.num_experts: must be an "
                           "integer, got a string");
  c = releaseConfig();
  c["text_config"]["rms_norm_eps"] = true;
  EXPECT_EQ(parseError(c), "config.json: text_config.rms_norm_eps: must be a "
                           "number, got a boolean");
  c = releaseConfig();
  c["text_config"]["linear_attn_config"]["kda_layers"] = {1, "two"};
  EXPECT_EQ(parseError(c), "config.json: text_config.linear_attn_config."
                           "kda_layers: must be an array of integers, got a "
                           "string");
}

TEST(ConfigErrors, InconsistentConfigs) {
  json c = releaseConfig();
  c["text_config"]["num_experts_per_token"] = 900;
  EXPECT_EQ(parseError(c), "config.json: text_config.num_experts_per_token: "
                           "900 must be in 1..num_experts (896)");
  c = releaseConfig();
  c["text_config"]["linear_attn_config"]["kda_layers"][0] = 0;
  EXPECT_EQ(parseError(c), "config.json: text_config.linear_attn_config."
                           "kda_layers: entry 0 is outside 1..93 (the list is "
                           "1-indexed)");
  c = releaseConfig();
  c["text_config"]["linear_attn_config"]["full_attn_layers"].push_back(1);
  EXPECT_EQ(parseError(c), "config.json: text_config.linear_attn_config."
                           "full_attn_layers: layer 1 is in both kda_layers "
                           "and full_attn_layers");
  c = releaseConfig();
  c["text_config"]["linear_attn_config"]["gate_lower_bound"] = 0.5;
  EXPECT_NE(parseError(c).find("gate_lower_bound: must be negative"),
            std::string::npos);
  c = releaseConfig();
  c["text_config"]["hidden_act"] = "gelu";
  EXPECT_EQ(parseError(c), "config.json: text_config.hidden_act: 'gelu' is not "
                           "supported (k3 implements 'situ', K3's SiTU-GLU, and "
                           "'silu', Kimi Linear's SwiGLU)");
  c = releaseConfig(); // K3 with SwiGLU but SiTU's betas left in
  c["text_config"]["hidden_act"] = "silu";
  EXPECT_EQ(parseError(c), "config.json: text_config.activation_situ_beta: is set but "
                           "hidden_act is 'silu' (SwiGLU takes no beta; the betas "
                           "belong to 'situ')");
  c = releaseConfig();
  c["text_config"]["routed_expert_hidden_size"] = 3000;
  EXPECT_EQ(parseError(c), "config.json: text_config.quantization_config: "
                           "MXFP4 experts need widths that are multiples of "
                           "32, got 3000 and 3072");
  EXPECT_EQ(parseError(json::array()),
            "config.json: the top level must be an object");
  std::string error;
  EXPECT_FALSE(parseConfig("{\"text_config\": ", error));
  EXPECT_EQ(error, "config.json: not valid JSON");
}

//===----------------------------------------------------------------------===//
// Safetensors: truncated and malformed files
//===----------------------------------------------------------------------===//

/// A one-tensor safetensors image with the given header text.
std::vector<uint8_t> image(const std::string &header, size_t dataBytes) {
  std::vector<uint8_t> out(8);
  for (int i = 0; i < 8; ++i)
    out[i] = uint8_t(uint64_t(header.size()) >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.resize(out.size() + dataBytes, 0);
  return out;
}

std::string safetensorsError(const std::vector<uint8_t> &bytes) {
  std::string error;
  auto views = parseSafetensors(bytes.data(), bytes.size(), "f.safetensors", error);
  EXPECT_FALSE(views.has_value());
  return error;
}

TEST(Safetensors, GoodImageParses) {
  auto bytes = image(R"({"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},"__metadata__":{"x":"y"}})", 12);
  std::string error;
  auto views = parseSafetensors(bytes.data(), bytes.size(), "f", error);
  ASSERT_TRUE(views) << error;
  ASSERT_EQ(views->size(), 1u);
  EXPECT_EQ((*views)[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ((*views)[0].bytes, 12u);
}

TEST(Safetensors, TruncatedAndMalformed) {
  EXPECT_EQ(safetensorsError({1, 2, 3}),
            "f.safetensors: truncated: 3 bytes, a safetensors file needs at "
            "least the 8-byte header length");
  auto bytes = image(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 16);
  bytes.resize(bytes.size() - 20); // cut into the header
  EXPECT_NE(safetensorsError(bytes).find("truncated: header length"),
            std::string::npos);
  bytes = image(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8);
  EXPECT_EQ(safetensorsError(bytes),
            "f.safetensors: tensor 'a' data_offsets [0, 16] exceed the 8 data "
            "bytes (truncated file?)");
  EXPECT_EQ(safetensorsError(image("{not json", 0)),
            "f.safetensors: malformed header: not a JSON object");
  EXPECT_EQ(safetensorsError(image(R"({"a":{"dtype":"F32","shape":[4]}})", 16)),
            "f.safetensors: malformed header entry for tensor 'a': needs dtype "
            "(string), shape (array) and data_offsets ([begin, end])");
  EXPECT_EQ(safetensorsError(image(R"({"a":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})", 16)),
            "f.safetensors: tensor 'a' has unsupported dtype 'I64' (k3 reads "
            "F32, BF16, F16, U8)");
  EXPECT_EQ(safetensorsError(image(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", 16)),
            "f.safetensors: tensor 'a' holds 16 bytes, but F32 [3] needs 12");
  // Products that overflow 64 bits, or hide behind a zero dimension.
  EXPECT_EQ(safetensorsError(image(R"({"a":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})", 0)),
            "f.safetensors: tensor 'a' has an impossibly large shape");
  EXPECT_EQ(safetensorsError(image(R"({"a":{"dtype":"F32","shape":[0,18446744073709551615],"data_offsets":[0,0]}})", 0)),
            "f.safetensors: tensor 'a' has an impossibly large shape");
  EXPECT_EQ(safetensorsError(image(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,16]}})", 16)),
            "f.safetensors: malformed shape of tensor 'a': dimensions must be "
            "non-negative integers");
  // Two names over one byte (a zero-size tensor shares an offset freely).
  EXPECT_EQ(safetensorsError(image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                   R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
                                   R"("c":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
                                   8)),
            "f.safetensors: tensors 'a' and 'b' overlap at data offset 4");
  // A name holding a newline is shown escaped: one line (fuzz-safetensors'
  // finding).
  EXPECT_EQ(safetensorsError(image(R"({"a\nb":{"dtype":"X","shape":[],"data_offsets":[0,0]}})", 0)),
            "f.safetensors: tensor 'a\\nb' has unsupported dtype 'X' (k3 reads F32, BF16, F16, U8)");
}

//===----------------------------------------------------------------------===//
// Checkpoints: missing tensors, wrong shapes and dtypes, NaN scales
//===----------------------------------------------------------------------===//

/// Rewrites one tensor of a single-file synthetic checkpoint.
class BadCheckpoint : public ::testing::Test {
protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(test::writeSynthetic(test::sourceConfigDir("k3-tiny"),
                                     dir.path(), 1, 1, false, error, experts))
        << error;
  }

  /// Loads model.safetensors, lets `edit` change the tensor list, writes it.
  template <typename Edit> void rewrite(Edit edit) {
    std::string error;
    auto store = WeightStore::open(dir.path(), error);
    ASSERT_NE(store, nullptr) << error;
    std::vector<OwnedTensor> tensors;
    for (const auto &[name, v] : store->tensors())
      tensors.push_back({name, v.dtype, v.shape,
                         std::vector<uint8_t>(v.data, v.data + v.bytes)});
    store.reset();
    edit(tensors);
    std::vector<const OwnedTensor *> ptrs;
    for (const OwnedTensor &t : tensors)
      ptrs.push_back(&t);
    ASSERT_TRUE(writeSafetensors(dir.path() + "/model.safetensors", ptrs, error))
        << error;
  }

  std::string openError() {
    std::string error;
    EXPECT_EQ(Checkpoint::open(dir.path(), error), nullptr);
    return error;
  }

  static OwnedTensor &find(std::vector<OwnedTensor> &ts, const std::string &n) {
    for (OwnedTensor &t : ts)
      if (t.name == n)
        return t;
    ADD_FAILURE() << "no tensor " << n;
    return ts.front();
  }

  test::TempDir dir;
  const std::string p = "language_model.model.layers.";
  ExpertFormat experts = ExpertFormat::MXFP4;
};

/// The same with bf16 experts (`experts.{e}.w*.weight`).
class BadBf16Checkpoint : public BadCheckpoint {
protected:
  BadBf16Checkpoint() { experts = ExpertFormat::BF16; }
};

TEST_F(BadCheckpoint, SyntheticLoads) {
  std::string error;
  auto ck = Checkpoint::open(dir.path(), error);
  ASSERT_NE(ck, nullptr) << error;
  EXPECT_TRUE(ck->hasWeights());
  EXPECT_EQ(ck->expertFormat(), ExpertFormat::MXFP4);
}

TEST_F(BadCheckpoint, MissingTensorIsNamed) {
  rewrite([&](auto &ts) {
    ts.erase(std::remove_if(ts.begin(), ts.end(), [&](const OwnedTensor &t) {
      return t.name == p + "2.self_attn.b_proj.weight";
    }), ts.end());
  });
  EXPECT_EQ(openError(), "missing tensor '" + p + "2.self_attn.b_proj.weight'");
}

TEST_F(BadCheckpoint, WrongShapeNamesBoth) {
  rewrite([&](auto &ts) {
    OwnedTensor &t = find(ts, p + "0.self_attn.o_proj.weight");
    t.shape = {32, 128}; // same bytes, transposed-looking shape
  });
  EXPECT_EQ(openError(), "tensor '" + p +
                             "0.self_attn.o_proj.weight' has shape [32, 128], "
                             "expected [64, 64]");
}

TEST_F(BadCheckpoint, PackedExpertsMustBeU8) {
  rewrite([&](auto &ts) {
    OwnedTensor &t = find(ts, p + "1.block_sparse_moe.experts.3.w2.weight_scale");
    t.dtype = DType::F16;
    t.shape = {32, 1};
    t.bytes.resize(64);
  });
  EXPECT_EQ(openError(), "tensor '" + p +
                             "1.block_sparse_moe.experts.3.w2.weight_scale' has "
                             "dtype F16, expected U8 (MXFP4 scales)");
}

TEST_F(BadCheckpoint, NanScaleIsRefused) {
  rewrite([&](auto &ts) {
    find(ts, p + "2.block_sparse_moe.experts.5.w1.weight_scale").bytes[3] = 0xFF;
  });
  EXPECT_EQ(openError(), "tensor '" + p +
                             "2.block_sparse_moe.experts.5.w1.weight_scale' "
                             "holds the NaN scale 0xFF at [3, 0]");
}

/// Scale byte 0x00 (2^-127) is legal: counted at load, not refused.
TEST_F(BadCheckpoint, ZeroScalesAreCounted) {
  rewrite([&](auto &ts) {
    auto &b = find(ts, p + "2.block_sparse_moe.experts.5.w1.weight_scale").bytes;
    b[3] = 0;
    b[4] = 0;
  });
  std::string error;
  auto ck = Checkpoint::open(dir.path(), error);
  ASSERT_NE(ck, nullptr) << error;
  EXPECT_EQ(ck->zeroScaleBlocks(), 2);
}

TEST_F(BadCheckpoint, ALogTooShortButPaddingAccepted) {
  rewrite([&](auto &ts) {
    OwnedTensor &t = find(ts, p + "1.self_attn.A_log");
    t.shape = {1, 1, 2, 1}; // Kimi Linear's layout, exactly H values
    t.bytes.resize(8);
  });
  std::string error;
  EXPECT_NE(Checkpoint::open(dir.path(), error), nullptr) << error;
  rewrite([&](auto &ts) {
    OwnedTensor &t = find(ts, p + "1.self_attn.A_log");
    t.shape = {1};
    t.bytes.resize(4);
  });
  EXPECT_EQ(openError(), "tensor '" + p +
                             "1.self_attn.A_log' has shape [1], expected at "
                             "least 2 values (one per KDA head)");
}

TEST_F(BadCheckpoint, FloatWeightAsU8IsRefused) {
  rewrite([&](auto &ts) {
    OwnedTensor &t = find(ts, "language_model.model.norm.weight");
    t.dtype = DType::U8;
    t.bytes.resize(64);
  });
  EXPECT_EQ(openError(), "tensor 'language_model.model.norm.weight' has dtype "
                         "U8, expected a float dtype (F32, BF16 or F16)");
}

TEST_F(BadCheckpoint, DuplicateTensorAcrossShards) {
  // A second shard repeating a tensor of the first.
  std::string error;
  OwnedTensor t{"language_model.model.norm.weight", DType::F32, {64},
                std::vector<uint8_t>(256, 0)};
  ASSERT_TRUE(writeSafetensors(dir.path() + "/zz-extra.safetensors", {&t}, error));
  EXPECT_NE(openError().find("tensor 'language_model.model.norm.weight' also "
                             "appears in"),
            std::string::npos);
}

TEST_F(BadCheckpoint, IndexNamingAMissingShard) {
  ASSERT_TRUE(test::writeText(dir.path() + "/model.safetensors.index.json",
                              R"({"weight_map": {"a": "model-00009.safetensors"}})"));
  EXPECT_NE(openError().find("model-00009.safetensors: cannot open"),
            std::string::npos);
}

TEST_F(BadCheckpoint, IndexEntriesStayInTheDirectory) {
  ASSERT_TRUE(test::writeText(dir.path() + "/model.safetensors.index.json",
                              R"({"weight_map": {"a": "../elsewhere.safetensors"}})"));
  EXPECT_EQ(openError(), dir.path() + "/model.safetensors.index.json: "
                         "weight_map entry 'a' must name a file in the "
                         "checkpoint directory");
  ASSERT_TRUE(test::writeText(dir.path() + "/model.safetensors.index.json",
                              R"({"weight_map": {}})"));
  EXPECT_EQ(openError(), dir.path() + "/model.safetensors.index.json: "
                         "weight_map lists no tensors");
}

/// Routed experts are stacked into one tensor per matrix, so they must share
/// a dtype: one F16 expert among BF16 ones is refused, not misread.
TEST_F(BadBf16Checkpoint, MixedExpertDtypesAreRefused) {
  const std::string name = p + "2.block_sparse_moe.experts.3.w1.weight";
  rewrite([&](auto &ts) { find(ts, name).dtype = DType::F16; });
  EXPECT_EQ(openError(), "tensor '" + name +
                             "' has dtype F16, but expert 0 stores BF16 "
                             "(routed experts are stacked into one tensor)");
}

TEST_F(BadCheckpoint, IndexMustMatchTheShards) {
  ASSERT_TRUE(test::writeText(
      dir.path() + "/model.safetensors.index.json",
      R"({"weight_map": {"language_model.model.norm.weight": "model.safetensors",
                         "language_model.model.nowhere": "model.safetensors"}})"));
  EXPECT_EQ(openError(), dir.path() + "/model.safetensors.index.json: lists "
                         "tensor 'language_model.model.nowhere' in "
                         "model.safetensors, which does not hold it");
}

/// F16 storage loads like any float: relabel a bf16 tensor's values as f16
/// (exact for these magnitudes) and read the same numbers back.
TEST_F(BadCheckpoint, F16TensorsLoad) {
  std::string error;
  std::vector<float> before;
  {
    auto ck = Checkpoint::open(dir.path(), error);
    ASSERT_NE(ck, nullptr) << error;
    before = ck->readFloat("norm.weight");
  }
  rewrite([&](auto &ts) {
    OwnedTensor &t = find(ts, "language_model.model.norm.weight");
    t.dtype = DType::F16;
    for (size_t i = 0; i < before.size(); ++i) {
      // before[i] is in [0.8, 1.2] with an 8-bit mantissa: exact in f16.
      int e;
      float m = std::frexp(before[i], &e); // m in [0.5, 1)
      uint16_t bits = uint16_t((e - 1 + 15) << 10 |
                               uint16_t(std::lround((m * 2 - 1) * 1024)));
      t.bytes[2 * i] = uint8_t(bits);
      t.bytes[2 * i + 1] = uint8_t(bits >> 8);
    }
  });
  auto ck = Checkpoint::open(dir.path(), error);
  ASSERT_NE(ck, nullptr) << error;
  EXPECT_EQ(ck->readFloat("norm.weight"), before);
}

} // namespace

//===----------------------------------------------------------------------===//
// printable: what a file or a client wrote, fit for a one-line message
//===----------------------------------------------------------------------===//

TEST(Text, PrintableIsOneLine) {
  using k3::model::printable;
  EXPECT_EQ(printable("a\nb\tc\rd\x01"), "a\\nb\\tc\\rd\\x01");
  EXPECT_EQ(printable("x\xC2\x85y\xE2\x80\xA8z\xE2\x80\xA9"), "x\\u0085y\\u2028z\\u2029");
  EXPECT_EQ(printable("caf\xC3\xA9 \xE4\xBD\xA0"), "caf\xC3\xA9 \xE4\xBD\xA0"); // kept
  EXPECT_EQ(printable("bad \xFF"), "bad \xEF\xBF\xBD");                       // U+FFFD
  EXPECT_EQ(printable(std::string(100, 'a'), 10), std::string(10, 'a') + "...");
}
