//===- Checkpoint.cpp - A K3 checkpoint directory -------------------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "lib/Model/Checkpoint.h"
#include "lib/Model/Numerics.h"
#include "lib/Model/Text.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <map>
#include <set>

namespace k3::model {
namespace {

/// The one stored key ending in `suffix`, or "" with `count` set.
std::string uniqueKeyEndingIn(const WeightStore &store,
                              const std::string &suffix, int &count) {
  std::string found;
  count = 0;
  for (const auto &[name, view] : store.tensors())
    if (endsWith(name, suffix) && name.find("vision_tower") == std::string::npos &&
        name.find("mm_projector") == std::string::npos) {
      found = name;
      ++count;
    }
  return count == 1 ? found : "";
}

} // namespace

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string &dir,
                                             std::string &error) {
  std::unique_ptr<Checkpoint> ck(new Checkpoint());
  auto cfg = loadConfig(dir, error, &ck->cfgText);
  if (!cfg)
    return nullptr;
  ck->cfg = std::move(*cfg);
  ck->store = WeightStore::open(dir, error);
  if (!ck->store)
    return nullptr;
  ck->experts = ck->cfg.declaredExpertFormat;
  if (ck->cfg.layout == Layout::KimiLinear) { // the release's names, until weights say otherwise
    ck->modelPrefix = "model.";
    ck->headPrefix = "";
  }
  if (ck->store->empty()) {
    ck->table = expectedTensors(ck->cfg, ck->experts);
    return ck;
  }

  // Prefixes are not hard-coded: take the key ending in embed_tokens.weight
  // (K3_CHECKPOINT.md §3), and the head from the key ending in lm_head.weight.
  int count = 0;
  std::string embed = uniqueKeyEndingIn(*ck->store, "embed_tokens.weight", count);
  if (count != 1) {
    error = dir + ": expected exactly one tensor named '*embed_tokens.weight', "
                  "found " + std::to_string(count);
    return nullptr;
  }
  ck->modelPrefix = embed.substr(0, embed.size() - strlen("embed_tokens.weight"));
  if (!ck->cfg.tieWordEmbeddings) {
    std::string head = uniqueKeyEndingIn(*ck->store, "lm_head.weight", count);
    if (count != 1) {
      error = dir + ": expected exactly one tensor named '*lm_head.weight', "
                    "found " + std::to_string(count);
      return nullptr;
    }
    ck->headPrefix = head.substr(0, head.size() - strlen("lm_head.weight"));
  }

  // Expert storage is whatever the first routed expert holds.
  for (int64_t l = 0; l < ck->cfg.numLayers; ++l) {
    if (ck->cfg.ffn(l) != FFN::MoE)
      continue;
    std::string base = "layers." + std::to_string(l) +
                       ".block_sparse_moe.experts.0.w1.weight";
    if (ck->find(base + "_packed"))
      ck->experts = ExpertFormat::MXFP4;
    else if (const TensorView *v = ck->find(base))
      ck->experts = v->dtype == DType::F32 ? ExpertFormat::F32 : ExpertFormat::BF16;
    break;
  }
  ck->table = expectedTensors(ck->cfg, ck->experts);
  // Any linear layer may be stored MXFP4-packed instead of as `.weight`.
  for (size_t i = 0; i < ck->table.size(); ++i) {
    const TensorSpec &spec = ck->table[i];
    if (!isPackableLinear(spec) || ck->find(spec) || spec.shape[1] % 32)
      continue;
    std::vector<TensorSpec> pair = packedPair(spec);
    if (!ck->find(pair[0]) || !ck->find(pair[1]))
      continue;
    ck->table[i] = pair[0];
    ck->table.insert(ck->table.begin() + i + 1, pair[1]);
  }

  // Every stored text tensor must be one the model reads: an extra one
  // (a conv bias, say) would change the math if it were silently ignored.
  std::set<std::string> expected;
  for (const TensorSpec &spec : ck->table)
    expected.insert(ck->fullName(spec));
  for (const auto &[name, view] : ck->store->tensors())
    if (!expected.count(name) && name.find("vision_tower") == std::string::npos &&
        name.find("mm_projector") == std::string::npos) {
      error = ck->cfg.layout == Layout::KimiLinear
                  ? "tensor '" + printable(name) + "' is not part of the Kimi Linear model for this "
                                        "config (KIMI_LINEAR.md)"
                  : "tensor '" + printable(name) + "' is not part of the K3 text model for this "
                                        "config (K3_CHECKPOINT.md §3)";
      return nullptr;
    }

  // Routed experts are stacked into one tensor per matrix: one dtype each.
  std::map<std::string, DType> expertDtype;

  for (const TensorSpec &spec : ck->table) {
    std::string name = ck->fullName(spec);
    const TensorView *v = ck->find(spec);
    if (!v) {
      error = "missing tensor '" + name + "'";
      return nullptr;
    }
    if (spec.packed || spec.scale) {
      if (v->dtype != DType::U8) {
        error = "tensor '" + name + "' has dtype " + dtypeName(v->dtype) +
                ", expected U8 (MXFP4 " + (spec.packed ? "codes" : "scales") +
                ")";
        return nullptr;
      }
    } else if (v->dtype == DType::U8) {
      error = "tensor '" + name +
              "' has dtype U8, expected a float dtype (F32, BF16 or F16)";
      return nullptr;
    } else if (ck->cfg.layout == Layout::KimiLinear && v->dtype != DType::F32 &&
               (endsWith(spec.name, ".A_log") || endsWith(spec.name, ".dt_bias"))) {
      // The release keeps the decay gate's parameters (A_log, dt_bias) in
      // F32: a narrower copy has lost bits the gate's exp(A_log) magnifies.
      // Wider than released (F32 for BF16) loads: widening is exact.
      error = "tensor '" + name + "' has dtype " + dtypeName(v->dtype) +
              ", but Kimi Linear stores it as F32 (a narrowed copy changes the decay gate)";
      return nullptr;
    }
    if (endsWith(spec.name, ".A_log")) {
      // Any stored length >= H loads, unit dims flattened (K3 stores [128],
      // Kimi Linear [1, 1, H, 1]); only the first H values are read
      // (K3_CHECKPOINT.md §9.1).
      int nonUnit = 0;
      for (int64_t d : v->shape)
        nonUnit += d != 1;
      int64_t n = numElements(v->shape);
      if (ck->cfg.layout == Layout::KimiLinear && n != ck->cfg.kdaHeads) {
        // The release stores exactly one value per head, unpadded.
        error = "tensor '" + name + "' has shape " + formatShape(v->shape) + " (" +
                std::to_string(n) + " values), expected " + formatShape(spec.shape) +
                ": one value per KDA head (" + std::to_string(ck->cfg.kdaHeads) + ")";
        return nullptr;
      }
      if (nonUnit > 1 || v->shape.empty() || n < ck->cfg.kdaHeads ||
          n > (int64_t(1) << 20)) {
        error = "tensor '" + name + "' has shape " + formatShape(v->shape) +
                ", expected at least " + std::to_string(ck->cfg.kdaHeads) +
                " values (one per KDA head)";
        if (n > (int64_t(1) << 20))
          error = "tensor '" + name + "' has shape " + formatShape(v->shape) +
                  ", far more values than the " +
                  std::to_string(ck->cfg.kdaHeads) + " KDA heads";
        return nullptr;
      }
      continue;
    }
    if (v->shape != spec.shape) {
      error = "tensor '" + name + "' has shape " + formatShape(v->shape) +
              ", expected " + formatShape(spec.shape);
      return nullptr;
    }
    size_t at = spec.name.find(".experts.");
    if (at != std::string::npos) {
      // "layers.L.block_sparse_moe.experts.E.w1.weight" → key without E.
      size_t dot = spec.name.find('.', at + 9);
      std::string family = spec.name.substr(0, at) + spec.name.substr(dot);
      auto [it, first] = expertDtype.emplace(family, v->dtype);
      if (!first && it->second != v->dtype) {
        error = "tensor '" + name + "' has dtype " + dtypeName(v->dtype) +
                ", but expert 0 stores " + dtypeName(it->second) +
                " (routed experts are stacked into one tensor)";
        return nullptr;
      }
    }
    if (spec.scale) {
      // 0xFF is the E8M0 NaN: a whole block of NaN weights. Refuse it here
      // rather than produce NaN logits later (MOE_MXFP4.md §2).
      const uint8_t *nan =
          static_cast<const uint8_t *>(memchr(v->data, 0xFF, v->bytes));
      if (nan) {
        int64_t at = nan - v->data, cols = v->shape.back();
        error = "tensor '" + name + "' holds the NaN scale 0xFF at [" +
                std::to_string(at / cols) + ", " + std::to_string(at % cols) +
                "]";
        return nullptr;
      }
      ck->zeroScales += std::count(v->data, v->data + v->bytes, uint8_t(0));
    }
  }
  return ck;
}

std::string Checkpoint::fullName(const TensorSpec &spec) const {
  return (spec.isHead ? headPrefix : modelPrefix) + spec.name;
}

const TensorView *Checkpoint::find(const std::string &relative) const {
  return store->find(modelPrefix + relative);
}

const TensorView *Checkpoint::find(const TensorSpec &spec) const {
  return store->find(fullName(spec));
}

std::vector<float> floatValues(const TensorView &v) {
  int64_t n = numElements(v.shape);
  std::vector<float> out(n);
  for (int64_t i = 0; i < n; ++i) {
    switch (v.dtype) {
    case DType::F32:
      std::memcpy(&out[i], v.data + 4 * i, 4);
      break;
    case DType::BF16:
    case DType::F16: {
      uint16_t bits;
      std::memcpy(&bits, v.data + 2 * i, 2);
      out[i] = v.dtype == DType::BF16 ? bf16ToFloat(bits) : f16ToFloat(bits);
      break;
    }
    case DType::U8:
      out[i] = v.data[i];
      break;
    }
  }
  return out;
}

std::vector<float> Checkpoint::readFloat(const std::string &relative) const {
  const TensorView *v = relative == "lm_head.weight"
                            ? store->find(headPrefix + relative)
                            : find(relative);
  return v ? floatValues(*v) : std::vector<float>();
}

std::vector<float> Checkpoint::readLinear(const std::string &base) const {
  const TensorView *packed = find(base + ".weight_packed");
  const TensorView *scales = find(base + ".weight_scale");
  if (!packed || !scales)
    return readFloat(base + ".weight");
  return unpackMxfp4(packed->data, scales->data, packed->shape[0], packed->shape[1] * 2);
}

} // namespace k3::model
