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
#include <vector>

namespace k3::model {

struct SyntheticOptions {
  uint64_t seed = 0;
  ExpertFormat experts = ExpertFormat::MXFP4;
  int shards = 1;
  /// `model.` / `lm_head.weight` instead of the release's
  /// `language_model.model.` / `language_model.lm_head.weight`.
  bool flatPrefix = false;
};

/// The two sizes synthetic values depend on besides names and shapes.
struct SyntheticSizes {
  int64_t hiddenSize = 0; ///< scales the AttnRes projections
  int64_t kdaHeads = 0;   ///< A_log's heads (the rest is padding)
  /// syntheticBundleWeight: float experts quantized at compile time
  /// (`#mxfp4`) came from a bf16 checkpoint (rounded first), not f32.
  bool bf16Sources = false;
};

/// Writes `outDir/config.json` (a copy of `configText`) and the shards. The
/// directory must exist.
bool writeSyntheticCheckpoint(const Config &config,
                              const std::string &configText,
                              const std::string &outDir,
                              const SyntheticOptions &options,
                              std::string &error);

/// How a bundle stores a weight: floats, or MXFP4 codes (f4E2M1FN, two per
/// byte) or scales (f8E8M0FNU).
enum class SyntheticForm { F32, BF16, Mxfp4Codes, Mxfp4Scales };

/// The bytes of the bundle weight `name` of `shape` (the bundle's names:
/// checkpoint names, `{e}` stacking experts along the first dimension, `#`
/// marking a derived form) when compiled from the synthetic checkpoint of
/// `seed`: the runtime fills a bundle compiled without weights with them
/// (k3rt_bundle_open_synthetic). False, with `error`, for a weight no
/// synthetic checkpoint has.
/// `firstExpert`: a `{e}` stack starts at that expert (a rank's block of
/// split experts, issue 28).
bool syntheticBundleWeight(const std::string &name, SyntheticForm form,
                           const std::vector<int64_t> &shape,
                           const SyntheticSizes &sizes, uint64_t seed,
                           std::vector<uint8_t> &out, std::string &error,
                           int64_t firstExpert = 0);

} // namespace k3::model

#endif // LIB_MODEL_SYNTHETIC_H
