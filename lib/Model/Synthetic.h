//===- Synthetic.h - Deterministic synthetic checkpoints --------*- C++ -*-===//
//
// Part of k3. Writes a checkpoint for any config: the official tensor names,
// dtypes and shapes, seeded values at scales that keep activations O(1), and
// experts in f32, bf16 or MXFP4. A tensor's values depend only on the seed
// and its name, so the shard count never changes them.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_MODEL_SYNTHETIC_H
#define LIB_MODEL_SYNTHETIC_H

#include "lib/Model/Config.h"

#include <cstdint>
#include <string>

namespace k3::model {

struct SyntheticOptions {
  uint64_t seed = 0;
  ExpertFormat experts = ExpertFormat::MXFP4;
  int shards = 1;
  /// `model.` / `lm_head.weight` instead of the release's
  /// `language_model.model.` / `language_model.lm_head.weight`.
  bool flatPrefix = false;
};

/// Writes `outDir/config.json` (a copy of `configText`) and the shards. The
/// directory must exist.
bool writeSyntheticCheckpoint(const Config &config,
                              const std::string &configText,
                              const std::string &outDir,
                              const SyntheticOptions &options,
                              std::string &error);

} // namespace k3::model

#endif // LIB_MODEL_SYNTHETIC_H
