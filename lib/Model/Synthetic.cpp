//===- Synthetic.cpp - Deterministic synthetic checkpoints ----------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "lib/Model/Synthetic.h"
#include "lib/Model/Numerics.h"
#include "lib/Model/Safetensors.h"
#include "lib/Model/TensorTable.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace k3::model {
namespace {

bool contains(const std::string &s, const char *part) {
  return s.find(part) != std::string::npos;
}

/// splitmix64: a small, well-mixed, reproducible generator.
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [-1, 1).
  float uniform() { return float(next() >> 40) / float(1 << 23) - 1.0f; }
};

uint64_t hashName(const std::string &name, uint64_t seed) {
  uint64_t h = 0xCBF29CE484222325ull ^ seed; // FNV-1a
  for (unsigned char c : name)
    h = (h ^ c) * 0x100000001B3ull;
  return h;
}

/// Values of one tensor, as f32, by its role. Uniform values in [-a, a] have
/// standard deviation a/sqrt(3); linear weights get 1/sqrt(fan_in) so every
/// projection keeps O(1) activations.
std::vector<float> values(const SyntheticSizes &c, const std::string &name,
                          const std::vector<int64_t> &shape, uint64_t seed) {
  Rng rng{hashName(name, seed)};
  int64_t n = numElements(shape);
  std::vector<float> v(n);
  const float sqrt3 = std::sqrt(3.0f);
  auto fill = [&](float mean, float stddev) {
    for (float &x : v)
      x = mean + stddev * sqrt3 * rng.uniform();
  };
  if (endsWith(name, "A_log")) {
    // Per head log U(1, 16) (FLA's init); the release's padding is zero.
    for (int64_t i = 0; i < n; ++i)
      v[i] = i < c.kdaHeads ? std::log(8.5f + 7.5f * rng.uniform()) : 0.0f;
  } else if (endsWith(name, "dt_bias")) {
    fill(0.0f, 0.5f);
  } else if (endsWith(name, "e_score_correction_bias")) {
    fill(0.0f, 0.05f);
  } else if (contains(name, "_conv1d.")) {
    fill(0.0f, 0.3f);
  } else if (endsWith(name, "embed_tokens.weight")) {
    fill(0.0f, 1.0f);
  } else if (endsWith(name, "_res_proj.weight")) {
    fill(0.0f, 1.0f / std::sqrt(float(c.hiddenSize)));
  } else if (contains(name, "norm.weight")) {
    fill(1.0f, 0.1f); // every RMSNorm weight, incl. o_norm and the AttnRes norms
  } else {
    fill(0.0f, 1.0f / std::sqrt(float(shape.back()))); // [out, in] linear
  }
  return v;
}

std::vector<uint8_t> encode(const std::vector<float> &v, DType dtype) {
  std::vector<uint8_t> out(v.size() * dtypeBytes(dtype));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::F32) {
      std::memcpy(&out[4 * i], &v[i], 4);
    } else {
      uint16_t b = floatToBf16(v[i]);
      std::memcpy(&out[2 * i], &b, 2);
    }
  }
  return out;
}

} // namespace

bool writeSyntheticCheckpoint(const Config &c, const std::string &configText,
                              const std::string &outDir,
                              const SyntheticOptions &opt, std::string &error) {
  if (opt.shards < 1) {
    error = "shard count must be at least 1, got " + std::to_string(opt.shards);
    return false;
  }
  std::vector<TensorSpec> specs = expectedTensors(c, opt.experts);
  const SyntheticSizes sizes{c.hiddenSize, c.kdaHeads};
  // The Kimi Linear release is flat (`model.` and a bare `lm_head.weight`)
  // and sharded behind `model.safetensors.index.json`, as HF tools expect.
  const bool release = c.layout == Layout::KimiLinear;
  const bool flat = opt.flatPrefix || release;
  const std::string modelPrefix = flat ? "model." : "language_model.model.";
  const std::string headPrefix = flat ? "" : "language_model.";

  std::vector<OwnedTensor> tensors;
  tensors.reserve(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec &s = specs[i];
    OwnedTensor t;
    t.name = (s.isHead ? headPrefix : modelPrefix) + s.name;
    t.dtype = s.dtype;
    t.shape = s.shape;
    if (s.scale)
      continue; // written together with its weight_packed
    if (s.packed) {
      // Values are drawn for the logical [rows, cols] matrix, by its base name.
      std::string base = s.name.substr(0, s.name.size() - strlen(".weight_packed"));
      int64_t rows = s.shape[0], cols = s.shape[1] * 2;
      std::vector<float> w = values(sizes, base + ".weight", {rows, cols}, opt.seed);
      OwnedTensor scale;
      scale.name = modelPrefix + base + ".weight_scale";
      scale.dtype = DType::U8;
      scale.shape = {rows, cols / 32};
      packMxfp4(w.data(), rows, cols, t.bytes, scale.bytes);
      tensors.push_back(std::move(t));
      tensors.push_back(std::move(scale));
      continue;
    }
    t.bytes = encode(values(sizes, s.name, s.shape, opt.seed), s.dtype);
    tensors.push_back(std::move(t));
  }

  std::ofstream cfg(outDir + "/config.json", std::ios::binary | std::ios::trunc);
  if (!cfg || !(cfg << configText)) {
    error = outDir + "/config.json: cannot write";
    return false;
  }
  cfg.close();

  if (opt.shards == 1 && !release) {
    std::vector<const OwnedTensor *> all;
    for (const OwnedTensor &t : tensors)
      all.push_back(&t);
    return writeSafetensors(outDir + "/model.safetensors", all, error);
  }
  nlohmann::json index;
  uint64_t total = 0;
  for (int s = 0; s < opt.shards; ++s) {
    char file[64];
    std::snprintf(file, sizeof file, "model-%05d-of-%05d.safetensors", s + 1,
                  opt.shards);
    std::vector<const OwnedTensor *> part;
    for (size_t i = s; i < tensors.size(); i += opt.shards) {
      part.push_back(&tensors[i]);
      index["weight_map"][tensors[i].name] = file;
      total += tensors[i].bytes.size();
    }
    if (!writeSafetensors(outDir + "/" + file, part, error))
      return false;
  }
  index["metadata"]["total_size"] = total;
  std::ofstream idx(outDir + "/model.safetensors.index.json",
                    std::ios::binary | std::ios::trunc);
  if (!idx || !(idx << index.dump(1))) {
    error = outDir + "/model.safetensors.index.json: cannot write";
    return false;
  }
  return true;
}

namespace {

bool startsWith(const std::string &s, const char *prefix) {
  return s.rfind(prefix, 0) == 0;
}

/// `name` without its `suffix`, or "" if it does not end so.
std::string stripSuffix(const std::string &name, const char *suffix) {
  return endsWith(name, suffix) ? name.substr(0, name.size() - strlen(suffix)) : "";
}

} // namespace

bool syntheticBundleWeight(const std::string &name, SyntheticForm form,
                           const std::vector<int64_t> &shape,
                           const SyntheticSizes &sizes, uint64_t seed,
                           std::vector<uint8_t> &out, std::string &error,
                           int64_t firstExpert) {
  auto fail = [&](const std::string &why) {
    error = "weight '" + name + "': " + why;
    return false;
  };
  // A derived form (BundleWriter: `#bf16`, `#mxfp4.<rule>.codes|scales`,
  // `#panels<P>`).
  std::string stored = name, suffix;
  if (size_t hash = name.find('#'); hash != std::string::npos) {
    stored = name.substr(0, hash);
    suffix = name.substr(hash);
  }
  // Values are keyed by the name relative to the model or head prefix.
  if (startsWith(stored, "language_model."))
    stored = stored.substr(strlen("language_model."));
  if (startsWith(stored, "model."))
    stored = stored.substr(strlen("model."));
  // `{e}` stacks the experts' tensors along a new leading dimension.
  size_t stack = stored.find("{e}");
  std::vector<int64_t> slice = shape;
  int64_t experts = 1;
  if (stack != std::string::npos) {
    if (shape.empty())
      return fail("stacks experts but has no leading dimension");
    experts = shape.front();
    slice.erase(slice.begin());
  }
  bool matrix = slice.size() == 2 && slice[0] > 0 && slice[1] > 0;
  ScaleRule rule = suffix.find(".ceil.") != std::string::npos ? ScaleRule::Ceil : ScaleRule::Floor;
  out.clear();
  for (int64_t e = firstExpert; e < firstExpert + experts; ++e) {
    std::string part = stored;
    if (stack != std::string::npos)
      part.replace(stack, 3, std::to_string(e));
    // MXFP4 forms: draw the logical [rows, cols] matrix (by the name
    // writeSyntheticCheckpoint draws it by) and quantize it.
    auto mxfp4 = [&](const std::string &valuesName, int64_t cols, std::vector<uint8_t> &codes,
                     std::vector<uint8_t> &scales, bool roundToBf16) {
      std::vector<float> v = values(sizes, valuesName, {slice[0], cols}, seed);
      if (roundToBf16) // what a bf16 checkpoint stores, then quantized
        for (float &x : v)
          x = bf16ToFloat(floatToBf16(x));
      packMxfp4(v.data(), slice[0], cols, codes, scales, rule);
    };
    std::vector<uint8_t> codes, scales, bytes;
    if (suffix.empty() && (form == SyntheticForm::F32 || form == SyntheticForm::BF16)) {
      bytes = encode(values(sizes, part, slice, seed), form == SyntheticForm::F32 ? DType::F32
                                                                                  : DType::BF16);
    } else if (suffix.empty() && form == SyntheticForm::Mxfp4Codes && matrix &&
               slice[1] % 32 == 0 && !stripSuffix(part, ".weight_packed").empty()) {
      mxfp4(stripSuffix(part, ".weight_packed") + ".weight", slice[1], bytes, scales, false);
    } else if (suffix.empty() && form == SyntheticForm::Mxfp4Scales && matrix &&
               !stripSuffix(part, ".weight_scale").empty()) {
      mxfp4(stripSuffix(part, ".weight_scale") + ".weight", slice[1] * 32, codes, bytes, false);
    } else if (suffix == "#bf16" && form == SyntheticForm::BF16 && matrix &&
               slice[1] % 32 == 0 && !stripSuffix(part, ".weight_packed").empty()) {
      mxfp4(stripSuffix(part, ".weight_packed") + ".weight", slice[1], codes, scales, false);
      bytes = encode(unpackMxfp4(codes.data(), scales.data(), slice[0], slice[1]), DType::BF16);
    } else if ((suffix == "#panels16" || suffix == "#panels32") &&
               (form == SyntheticForm::F32 || form == SyntheticForm::BF16) &&
               slice.size() == 3 && slice[2] == (suffix == "#panels16" ? 16 : 32)) {
      // W [N, K] laid out as its panels [N/P, K, P] (k3-pack-weight-panels).
      const int64_t n = slice[0] * slice[2], k = slice[1];
      const bool f32 = form == SyntheticForm::F32;
      std::vector<uint8_t> rowMajor =
          encode(values(sizes, part, {n, k}, seed), f32 ? DType::F32 : DType::BF16);
      bytes = packPanels(rowMajor.data(), n, k, f32 ? 4 : 2, slice[2]);
    } else if (endsWith(suffix, ".codes") && form == SyntheticForm::Mxfp4Codes && matrix &&
               slice[1] % 32 == 0) {
      mxfp4(part, slice[1], bytes, scales, sizes.bf16Sources);
    } else if (endsWith(suffix, ".scales") && form == SyntheticForm::Mxfp4Scales && matrix) {
      mxfp4(part, slice[1] * 32, codes, bytes, sizes.bf16Sources);
    } else {
      return fail("no synthetic values for this name, form and shape");
    }
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
  return true;
}

} // namespace k3::model
