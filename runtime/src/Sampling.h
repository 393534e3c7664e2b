//===- Sampling.h - Next-token selection ------------------------*- C++ -*-===//
//
// Part of k3. Greedy and seeded temperature / top-k / top-p sampling over
// f32 logits. Deterministic: the same seed and logits give the same token
// on every machine (a portable generator, no std::*_distribution).
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_SRC_SAMPLING_H
#define RUNTIME_SRC_SAMPLING_H

#include <cstddef>
#include <cstdint>

namespace k3rt {

struct SamplingOptions {
  /// 0 means greedy (argmax, ties to the lower token id).
  float temperature = 0.0f;
  /// Keep the k most likely tokens; 0 keeps all.
  int32_t topK = 0;
  /// Keep the smallest prefix of tokens by probability whose mass reaches
  /// top_p; 1 keeps all.
  float topP = 1.0f;
  uint64_t seed = 0;
};

/// A small portable generator (splitmix64), one per request.
class Sampler {
public:
  explicit Sampler(const SamplingOptions &options)
      : opts(options), state(options.seed) {}

  /// The next token from `vocab` logits. NaN logits never win; if every
  /// logit is NaN the result is -1.
  int32_t next(const float *logits, size_t vocab);

  /// Uniform in [0, 1) with 53 random bits.
  double uniform();

private:
  SamplingOptions opts;
  uint64_t state;
};

/// Argmax over `n` logits, ties to the lower index, NaN skipped; -1 if none.
int32_t argmax(const float *logits, size_t n);

} // namespace k3rt

#endif // RUNTIME_SRC_SAMPLING_H
