//===- Checkpoint.h - A K3 checkpoint directory -----------------*- C++ -*-===//
//
// Part of k3. `config.json` plus its safetensors shards, checked against the
// tensor table: every expected tensor present with its shape and a usable
// dtype. A directory with only `config.json` opens too (sizes, IR), and
// then reports `hasWeights() == false`.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_MODEL_CHECKPOINT_H
#define LIB_MODEL_CHECKPOINT_H

#include "lib/Model/Config.h"
#include "lib/Model/Safetensors.h"
#include "lib/Model/TensorTable.h"

#include <memory>
#include <string>
#include <vector>

namespace k3::model {

/// The values of a stored float tensor (F32/BF16/F16; U8 as integers) in f32.
std::vector<float> floatValues(const TensorView &view);

class Checkpoint {
public:
  /// Opens and validates `dir`. On failure returns nullptr and sets `error`
  /// to one line naming the key, tensor, shape or file at fault.
  static std::unique_ptr<Checkpoint> open(const std::string &dir,
                                          std::string &error);

  const Config &config() const { return cfg; }
  /// config.json as read, verbatim.
  const std::string &configText() const { return cfgText; }
  bool hasWeights() const { return !store->empty(); }
  /// The experts' storage: detected from the tensors, else as declared.
  ExpertFormat expertFormat() const { return experts; }
  /// MXFP4 blocks whose scale byte is 0x00 (2^-127, MOE_MXFP4.md §2):
  /// counted at load; the compiled kernels decode them to 0.
  int64_t zeroScaleBlocks() const { return zeroScales; }
  /// The expected tensors, in table order.
  const std::vector<TensorSpec> &specs() const { return table; }

  /// Full checkpoint name of `spec` (prefix + relative name).
  std::string fullName(const TensorSpec &spec) const;
  /// Full name of a name relative to the model prefix.
  std::string fullName(const std::string &relative) const {
    return modelPrefix + relative;
  }
  /// The stored tensor for `relative` (model prefix), or nullptr.
  const TensorView *find(const std::string &relative) const;
  const TensorView *find(const TensorSpec &spec) const;
  /// The stored tensor with this full checkpoint name, or nullptr.
  const TensorView *findFull(const std::string &name) const {
    return store->find(name);
  }

  /// Decodes a float tensor (F32/BF16/F16) to f32, or an MXFP4 pair
  /// (`base.weight_packed` + `base.weight_scale`) to its [rows, cols] values.
  std::vector<float> readFloat(const std::string &relative) const;
  std::vector<float> readLinear(const std::string &base) const;

private:
  Config cfg;
  std::string cfgText;
  std::unique_ptr<WeightStore> store;
  ExpertFormat experts = ExpertFormat::BF16;
  int64_t zeroScales = 0;
  std::vector<TensorSpec> table;
  std::string modelPrefix = "language_model.model.";
  std::string headPrefix = "language_model.";
};

} // namespace k3::model

#endif // LIB_MODEL_CHECKPOINT_H
