//===- Config.cpp - Kimi K3 text configuration ----------------------------===//
//
// Part of k3. Built without exceptions: nlohmann-json is only used through
// its non-throwing calls (parse with allow_exceptions = false, type checks
// before every get).
//
//===----------------------------------------------------------------------===//

#include "lib/Model/Config.h"
#include "lib/Model/TensorTable.h"
#include "lib/Model/Text.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <algorithm>
#include <set>
#include <sstream>

using json = nlohmann::json;

namespace k3::model {
namespace {

/// Describes a JSON value's type for error messages.
const char *typeName(const json &v) {
  if (v.is_null())
    return "null";
  if (v.is_boolean())
    return "a boolean";
  if (v.is_number_integer() || v.is_number_unsigned())
    return "an integer";
  if (v.is_number_float())
    return "a number";
  if (v.is_string())
    return "a string";
  if (v.is_array())
    return "an array";
  return "an object";
}

/// Typed, path-aware access to one JSON object. The first problem is kept in
/// `error` (one line naming the key); later reads return defaults.
class Reader {
public:
  Reader(const json &obj, std::string path, std::string &error)
      : obj(obj), path(std::move(path)), error(error) {}

  bool ok() const { return error.empty(); }

  /// The value at `key`, or nullptr when absent or null.
  const json *get(const char *key) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null())
      return nullptr;
    return &*it;
  }

  int64_t integer(const char *key) {
    const json *v = get(key);
    if (!v)
      return fail(key, "missing key"), 0;
    return asInteger(key, *v).value_or(0);
  }
  std::optional<int64_t> optInteger(const char *key) {
    const json *v = get(key);
    return v ? asInteger(key, *v) : std::nullopt;
  }
  int64_t integer(const char *key, int64_t dflt) {
    return optInteger(key).value_or(dflt);
  }

  double number(const char *key) {
    const json *v = get(key);
    if (!v)
      return fail(key, "missing key"), 0.0;
    return asNumber(key, *v).value_or(0.0);
  }
  std::optional<double> optNumber(const char *key) {
    const json *v = get(key);
    return v ? asNumber(key, *v) : std::nullopt;
  }
  double number(const char *key, double dflt) {
    return optNumber(key).value_or(dflt);
  }

  bool boolean(const char *key, bool dflt) {
    const json *v = get(key);
    if (!v)
      return dflt;
    if (!v->is_boolean())
      return typeError(key, "a boolean", *v), dflt;
    return v->get<bool>();
  }

  std::string string(const char *key, const std::string &dflt) {
    const json *v = get(key);
    if (!v)
      return dflt;
    if (!v->is_string())
      return typeError(key, "a string", *v), dflt;
    return v->get<std::string>();
  }

  std::vector<int64_t> integers(const char *key) {
    std::vector<int64_t> out;
    const json *v = get(key);
    if (!v)
      return out;
    if (!v->is_array())
      return typeError(key, "an array of integers", *v), out;
    for (const json &e : *v) {
      if (!e.is_number_integer() ||
          (e.is_number_unsigned() && e.get<uint64_t>() > (uint64_t(1) << 53)))
        return typeError(key, "an array of integers", e), out;
      out.push_back(e.get<int64_t>());
    }
    return out;
  }

  /// Fails with "<path><key>: <message>" unless an error is already set.
  void fail(const std::string &key, const std::string &message) {
    if (error.empty())
      error = "config.json: " + path + key + ": " + message;
  }

private:
  std::optional<int64_t> asInteger(const char *key, const json &v) {
    // Sizes beyond 2^53 are never meaningful; rejecting them here also keeps
    // the double → int64 conversion below defined.
    constexpr double kLimit = 9007199254740992.0; // 2^53
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(kLimit)) {
      fail(key, "is out of range, got " + std::to_string(v.get<uint64_t>()));
      return std::nullopt;
    }
    if (v.is_number_integer())
      return v.get<int64_t>();
    // 4.0 is accepted as 4; 4.5 is not an integer.
    if (v.is_number_float()) {
      double d = v.get<double>();
      if (std::fabs(d) <= kLimit && d == std::floor(d))
        return static_cast<int64_t>(d);
    }
    typeError(key, "an integer", v);
    return std::nullopt;
  }
  std::optional<double> asNumber(const char *key, const json &v) {
    if (v.is_number())
      return v.get<double>();
    typeError(key, "a number", v);
    return std::nullopt;
  }
  void typeError(const char *key, const char *want, const json &got) {
    fail(key, std::string("must be ") + want + ", got " + typeName(got));
  }

  const json &obj;
  std::string path;
  std::string &error;
};

/// True if `quantization_config` declares MXFP4-packed weights.
bool declaresMxfp4(const json &text) {
  auto q = text.find("quantization_config");
  if (q == text.end() || !q->is_object())
    return false;
  auto isMx = [](const json &o) {
    auto f = o.find("format");
    return f != o.end() && f->is_string() &&
           f->get<std::string>() == "mxfp4-pack-quantized";
  };
  if (isMx(*q))
    return true;
  auto groups = q->find("config_groups");
  if (groups != q->end() && groups->is_object())
    for (const json &g : *groups)
      if (g.is_object() && isMx(g))
        return true;
  return false;
}

/// Most layers a config may have.
constexpr int64_t kMaxLayers = 4096;

/// Bounds that keep every derived size, tensor count and byte count far
/// from int64 overflow and the tensor table enumerable; K3 is well inside
/// them (hidden 7168, vocab 163840, 93 layers, 896 experts, 497k tensors).
bool checkSizes(const Config &c, Reader &r) {
  constexpr int64_t kMaxDim = int64_t(1) << 24, kMaxExperts = 65536,
                    kMaxTensors = 10'000'000;
  const std::pair<const char *, int64_t> dims[] = {
      {"vocab_size", c.vocabSize},
      {"hidden_size", c.hiddenSize},
      {"intermediate_size", c.intermediateSize},
      {"moe_intermediate_size", c.moeIntermediateSize},
      {"routed_expert_hidden_size", c.routedExpertHiddenSize.value_or(0)},
      {"num_shared_experts", c.numSharedExperts},
      {"num_attention_heads", c.mlaHeads},
      {"q_lora_rank", c.qLoraRank.value_or(0)},
      {"kv_lora_rank", c.kvLoraRank},
      {"qk_nope_head_dim", c.qkNopeHeadDim},
      {"qk_rope_head_dim", c.qkRopeHeadDim},
      {"v_head_dim", c.vHeadDim},
      {"linear_attn_config.num_heads", c.kdaHeads},
      {"linear_attn_config.head_dim", c.kdaHeadDim},
      {"linear_attn_config.short_conv_kernel_size", c.convKernelSize},
      {"attn_res_block_size", c.attnResBlockSize.value_or(0)},
      {"first_k_dense_replace", c.firstKDenseReplace},
      {"moe_layer_freq", c.moeLayerFreq}};
  for (auto [key, value] : dims)
    if (value > kMaxDim) {
      r.fail(key, std::to_string(value) + " exceeds k3's limit of " +
                      std::to_string(kMaxDim));
      return false;
    }
  // Products of two dims stay below 2^48; of three (H·(dn+dv)·L, E·Ie·Dl
  // per layer) below 2^64 only with these caps on their other factors.
  if (c.numExperts > kMaxExperts || c.numExperts < 0) {
    r.fail("num_experts", std::to_string(c.numExperts) + " is outside 0.." +
                              std::to_string(kMaxExperts));
    return false;
  }
  if (c.numLayers * std::max<int64_t>(c.numExperts, 1) * 6 > kMaxTensors) {
    r.fail("num_experts", "with " + std::to_string(c.numLayers) +
                              " layers the checkpoint would hold over " +
                              std::to_string(kMaxTensors) + " tensors");
    return false;
  }
  int64_t total = 0;
  if (!expectedParameters(c, c.declaredExpertFormat, total)) {
    r.fail("", "the model would hold more than 2^63 parameters");
    return false;
  }
  return true;
}

} // namespace

FFN Config::ffn(int64_t layer) const {
  bool moe = numExperts > 0 && layer >= firstKDenseReplace &&
             layer % moeLayerFreq == 0;
  return moe ? FFN::MoE : FFN::Dense;
}

int64_t Config::numKda() const {
  int64_t n = 0;
  for (Mixer m : mixers)
    n += m == Mixer::KDA;
  return n;
}

int64_t Config::numMla() const { return numLayers - numKda(); }

std::optional<Config> parseConfig(const std::string &jsonText,
                                  std::string &error) {
  error.clear();
  json root = json::parse(jsonText, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    error = "config.json: not valid JSON";
    return std::nullopt;
  }
  if (!root.is_object()) {
    error = "config.json: the top level must be an object";
    return std::nullopt;
  }
  // The K3 release nests the backbone in `text_config`; accept a flat text
  // config too.
  const json *text = &root;
  std::string path;
  auto tc = root.find("text_config");
  if (tc != root.end()) {
    if (!tc->is_object()) {
      error = std::string("config.json: text_config: must be an object, got ") +
              typeName(*tc);
      return std::nullopt;
    }
    text = &*tc;
    path = "text_config.";
  }

  Config c;
  Reader r(*text, path, error);
  c.vocabSize = r.integer("vocab_size");
  c.hiddenSize = r.integer("hidden_size");
  c.numLayers = r.integer("num_hidden_layers");
  c.rmsNormEps = r.number("rms_norm_eps", 1e-6);
  c.tieWordEmbeddings = r.boolean(
      "tie_word_embeddings", Reader(root, "", error).boolean(
                                 "tie_word_embeddings", false));
  bool namesKimiLinear = false;
  if (auto arch = root.find("architectures"); arch != root.end() && arch->is_array())
    for (const json &a : *arch)
      namesKimiLinear |= a.is_string() && a.get<std::string>() == "KimiLinearForCausalLM";
  c.situBeta1 = r.number("activation_situ_beta", 1.0);
  c.situBeta2 = r.optNumber("activation_situ_linear_beta");
  std::string act = r.string("hidden_act", "situ");
  if (r.ok() && act == "silu") {
    c.hiddenAct = Activation::SiLU;
    // K3's text model names KimiLinearForCausalLM too (in its text_config,
    // and so when flattened); SwiGLU is what only the Kimi Linear release has.
    if (tc == root.end() && namesKimiLinear)
      c.layout = Layout::KimiLinear;
    // SwiGLU has no parameters: SiTU's betas beside it mean a config that
    // mixes the two models.
    for (const char *key : {"activation_situ_beta", "activation_situ_linear_beta"})
      if (r.get(key))
        r.fail(key, "is set but hidden_act is 'silu' (SwiGLU takes no beta; "
                    "the betas belong to 'situ')");
  } else if (r.ok() && act != "situ") {
    r.fail("hidden_act", "'" + printable(act) +
                             "' is not supported (k3 implements 'situ', K3's "
                             "SiTU-GLU, and 'silu', Kimi Linear's SwiGLU)");
  }
  if (!r.ok())
    return std::nullopt;
  if (c.vocabSize <= 0 || c.hiddenSize <= 0 || c.numLayers <= 0) {
    r.fail("", "vocab_size, hidden_size and num_hidden_layers must be "
               "positive, got " +
                   std::to_string(c.vocabSize) + ", " +
                   std::to_string(c.hiddenSize) + ", " +
                   std::to_string(c.numLayers));
    return std::nullopt;
  }

  if (c.numLayers > kMaxLayers) { // before anything is sized by it
    r.fail("num_hidden_layers", std::to_string(c.numLayers) +
                                    " exceeds k3's limit of " +
                                    std::to_string(kMaxLayers));
    return std::nullopt;
  }

  // Layer schedule: `kda_layers` is 1-indexed (K3_CHECKPOINT.md §2).
  c.mixers.assign(c.numLayers, Mixer::MLA);
  const json *lac = r.get("linear_attn_config");
  if (lac && !lac->is_object()) {
    r.fail("linear_attn_config", std::string("must be an object, got ") +
                                     typeName(*lac));
    return std::nullopt;
  }
  if (lac) {
    Reader l(*lac, path + "linear_attn_config.", error);
    std::vector<int64_t> kda = l.integers("kda_layers");
    std::vector<int64_t> full = l.integers("full_attn_layers");
    if (!l.ok())
      return std::nullopt;
    if (!l.get("kda_layers"))
      l.fail("kda_layers", "missing key");
    std::set<int64_t> seen;
    for (int64_t one : kda) {
      if (one < 1 || one > c.numLayers)
        l.fail("kda_layers",
               "entry " + std::to_string(one) + " is outside 1.." +
                   std::to_string(c.numLayers) + " (the list is 1-indexed)");
      else if (!seen.insert(one).second)
        l.fail("kda_layers", "entry " + std::to_string(one) + " repeats");
      else
        c.mixers[one - 1] = Mixer::KDA;
    }
    if (l.get("full_attn_layers")) {
      std::set<int64_t> fullSet(full.begin(), full.end());
      for (int64_t one = 1; one <= c.numLayers && l.ok(); ++one) {
        bool isKda = seen.count(one), isFull = fullSet.count(one);
        if (isKda == isFull)
          l.fail("full_attn_layers",
                 "layer " + std::to_string(one) +
                     (isKda ? " is in both kda_layers and full_attn_layers"
                            : " is in neither kda_layers nor full_attn_layers"));
      }
    }
    if (!l.ok())
      return std::nullopt;
    if (!kda.empty()) {
      c.kdaHeads = l.integer("num_heads");
      c.kdaHeadDim = l.integer("head_dim");
      c.convKernelSize = l.integer("short_conv_kernel_size");
      c.gateLowerBound = l.optNumber("gate_lower_bound");
      c.fullRankOutputGate = l.boolean("use_full_rank_gate", false);
      if (!l.ok())
        return std::nullopt;
      if (c.kdaHeads <= 0 || c.kdaHeadDim <= 0 || c.convKernelSize <= 0)
        l.fail("", "num_heads, head_dim and short_conv_kernel_size must be "
                   "positive");
      else if (c.gateLowerBound && !(*c.gateLowerBound < 0.0))
        l.fail("gate_lower_bound",
               "must be negative, got " + std::to_string(*c.gateLowerBound));
      if (!l.ok())
        return std::nullopt;
    }
  }

  if (c.numMla() > 0) {
    c.mlaHeads = r.integer("num_attention_heads");
    c.qLoraRank = r.optInteger("q_lora_rank");
    c.kvLoraRank = r.integer("kv_lora_rank");
    c.qkNopeHeadDim = r.integer("qk_nope_head_dim");
    c.qkRopeHeadDim = r.integer("qk_rope_head_dim");
    c.vHeadDim = r.integer("v_head_dim");
    c.mlaOutputGate = r.boolean("mla_use_output_gate", false);
    bool nope = r.boolean("mla_use_nope", true);
    std::optional<int64_t> kvHeads = r.optInteger("num_key_value_heads");
    if (!r.ok())
      return std::nullopt;
    if (!nope)
      r.fail("mla_use_nope", "false (rotary MLA) is not supported: K3 is NoPE");
    else if (c.mlaHeads <= 0 || c.kvLoraRank <= 0 || c.qkNopeHeadDim <= 0 ||
             c.qkRopeHeadDim <= 0 || c.vHeadDim <= 0 ||
             (c.qLoraRank && *c.qLoraRank <= 0))
      r.fail("", "MLA sizes (num_attention_heads, kv_lora_rank, "
                 "qk_nope_head_dim, qk_rope_head_dim, v_head_dim, "
                 "q_lora_rank) must be positive");
    else if (kvHeads && *kvHeads != c.mlaHeads)
      r.fail("num_key_value_heads",
             std::to_string(*kvHeads) + " differs from num_attention_heads " +
                 std::to_string(c.mlaHeads) + "; MLA has no KV grouping");
    if (!r.ok())
      return std::nullopt;
  }

  c.firstKDenseReplace = r.integer("first_k_dense_replace", 0);
  c.moeLayerFreq = r.integer("moe_layer_freq", 1);
  c.numExperts = r.integer("num_experts", 0);
  if (!r.ok())
    return std::nullopt;
  if (c.moeLayerFreq <= 0) {
    r.fail("moe_layer_freq",
           "must be positive, got " + std::to_string(c.moeLayerFreq));
    return std::nullopt;
  }
  bool anyDense = false, anyMoe = false;
  for (int64_t l = 0; l < c.numLayers; ++l)
    (c.ffn(l) == FFN::MoE ? anyMoe : anyDense) = true;
  if (anyDense) {
    c.intermediateSize = r.integer("intermediate_size");
    if (r.ok() && c.intermediateSize <= 0)
      r.fail("intermediate_size", "must be positive");
  }
  if (anyMoe) {
    c.topK = r.integer("num_experts_per_token");
    // The Kimi Linear release omits the key; its configuration's default
    // is one shared expert (the released tensors and parameter count).
    c.numSharedExperts = r.integer(
        "num_shared_experts", c.layout == Layout::KimiLinear ? 1 : 0);
    c.moeIntermediateSize = r.integer("moe_intermediate_size");
    c.routedExpertHiddenSize = r.optInteger("routed_expert_hidden_size");
    c.latentMoeUseNorm = r.boolean("latent_moe_use_norm", false);
    c.moeRenormalize = r.boolean("moe_renormalize", true);
    c.routedScalingFactor = r.number("routed_scaling_factor", 1.0);
    std::string fn = r.string("moe_router_activation_func", "sigmoid");
    int64_t groups = r.integer("num_expert_group", 1);
    int64_t topkGroup = r.integer("topk_group", 1);
    if (!r.ok())
      return std::nullopt;
    if (fn != "sigmoid")
      r.fail("moe_router_activation_func",
             "'" + printable(fn) + "' is not supported (K3 routes with 'sigmoid')");
    else if (c.topK < 1 || c.topK > c.numExperts)
      r.fail("num_experts_per_token",
             std::to_string(c.topK) + " must be in 1..num_experts (" +
                 std::to_string(c.numExperts) + ")");
    else if (c.moeIntermediateSize <= 0 || c.numSharedExperts < 0 ||
             (c.routedExpertHiddenSize && *c.routedExpertHiddenSize <= 0))
      r.fail("", "moe_intermediate_size, num_shared_experts and "
                 "routed_expert_hidden_size must be positive");
    else if (groups > 1 && groups > topkGroup)
      r.fail("num_expert_group",
             "group-limited routing (" + std::to_string(groups) +
                 " groups, topk_group " + std::to_string(topkGroup) +
                 ") is not supported");
    else if (c.latentMoeUseNorm && !c.routedExpertHiddenSize)
      r.fail("latent_moe_use_norm",
             "is true but routed_expert_hidden_size is absent");
    if (!r.ok())
      return std::nullopt;
    if (declaresMxfp4(*text)) {
      c.declaredExpertFormat = ExpertFormat::MXFP4;
      // MXFP4 blocks are 32 wide along each expert matrix's input dim.
      if (c.expertWidth() % 32 || c.moeIntermediateSize % 32)
        r.fail("quantization_config",
               "MXFP4 experts need widths that are multiples of 32, got " +
                   std::to_string(c.expertWidth()) + " and " +
                   std::to_string(c.moeIntermediateSize));
    } else {
      std::string dtype = r.string("dtype", r.string("torch_dtype", "bfloat16"));
      c.declaredExpertFormat =
          dtype == "float32" ? ExpertFormat::F32 : ExpertFormat::BF16;
    }
  }
  c.attnResBlockSize = r.optInteger("attn_res_block_size");
  if (r.ok() && c.attnResBlockSize && *c.attnResBlockSize <= 0)
    r.fail("attn_res_block_size",
           "must be positive, got " + std::to_string(*c.attnResBlockSize));
  if (r.ok() && !(c.rmsNormEps > 0))
    r.fail("rms_norm_eps", "must be positive");
  if (r.ok() && (!(c.situBeta1 > 0) || (c.situBeta2 && !(*c.situBeta2 > 0))))
    r.fail("activation_situ_beta", "SiTU betas must be positive");
  if (!r.ok())
    return std::nullopt;
  if (!checkSizes(c, r))
    return std::nullopt;
  return c;
}

std::optional<Config> loadConfig(const std::string &dir, std::string &error,
                                 std::string *text) {
  std::string content;
  if (!readTextFile(dir + "/config.json", content, error))
    return std::nullopt;
  auto config = parseConfig(content, error);
  if (text)
    *text = std::move(content);
  return config;
}

Stats computeStats(const Config &c) {
  Stats s;
  expectedParameters(c, c.declaredExpertFormat, s.parameters);
  s.kdaLayers = c.numKda();
  s.mlaLayers = c.numMla();
  s.kdaRecurrentStateBytes =
      s.kdaLayers * c.kdaHeads * c.kdaHeadDim * c.kdaHeadDim * 4;
  s.mlaCacheBytesPerToken = s.mlaLayers * c.mlaCacheWidth() * 2;
  return s;
}

} // namespace k3::model
