//===- Reference.h - Plain C++ reference forward of a K3 model --*- C++ -*-===//
//
// Part of k3 (test-only). The oracle of every numeric test: the forward of
// K3_CHECKPOINT.md §6 written directly from the specs, in double or float,
// with explicit per-request state (KDA conv windows and recurrent state, MLA
// latent cache). It shares no code with the compiler; it reads weights
// through lib/Model and decodes them to T once.
//
//===----------------------------------------------------------------------===//

#ifndef TEST_REFERENCE_REFERENCE_H
#define TEST_REFERENCE_REFERENCE_H

#include "lib/Model/Checkpoint.h"
#include "lib/Model/Numerics.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace k3::ref {

//===----------------------------------------------------------------------===//
// Op-level functions (spec test vectors check these directly)
//===----------------------------------------------------------------------===//

/// `[β1·tanh(g/β1)·sigmoid(g)]·[β2·tanh(u/β2)]`; no β2: the up branch is u.
template <typename T>
T situGlu(T g, T u, double beta1, std::optional<double> beta2);

/// AttnRes read for one token over `sources[i][0..d)` (snapshots, then the
/// running sum): softmax of rmsnorm(v_i)·(norm ⊙ proj), mix of raw values.
template <typename T>
void attnResRead(const std::vector<const T *> &sources, int64_t d,
                 const T *normWeight, const T *projWeight, double eps, T *out);

/// Sigmoid router for one token: top-k of scores + bias (ties to the lower
/// expert id), weights from the unbiased scores, optionally renormalised
/// (+1e-20), then scaled.
template <typename T>
void route(const T *logits, const T *bias, int64_t experts, int64_t topK,
           bool renormalize, double scaling, std::vector<int64_t> &indices,
           std::vector<T> &weights);

/// One KDA token step for one value head, in place on `state` [K][V]
/// (K-major): decay, predict, update, read (KDA.md §2). `q` is already
/// L2-normalised; `scale` multiplies it.
template <typename T>
void kdaStep(std::vector<T> &state, int64_t dk, int64_t dv, const T *q,
             const T *k, const T *v, const T *g, T beta, T scale, T *out);

/// Writes the inputs and fp64 answers of one op-level LatentMoE case
/// (MoeCase.cpp) into `dir`; 0 on success.
int writeMoeCase(const std::string &kind, int64_t tokens, uint64_t seed, const std::string &dir);

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

template <typename T> class Model {
public:
  /// Per-request state. KDA layers: `conv[3]` windows [W−1][P] (q, k, v;
  /// oldest row first) and `kda` [H][K][K]; MLA layers: `cache` rows
  /// [S][kv_lora_rank + qk_rope_head_dim].
  struct LayerState {
    std::vector<T> conv[3];
    std::vector<T> kda;
    std::vector<T> cache;
  };
  struct State {
    std::vector<LayerState> layers;
    int64_t tokens = 0; ///< tokens seen so far
  };

  /// With `quantizeExperts`, float routed experts take the values of their
  /// MXFP4 quantization under that rule (what `k3-compile
  /// --quantize-experts=mxfp4` stores), as packed experts do.
  explicit Model(const model::Checkpoint &checkpoint,
                 std::optional<model::ScaleRule> quantizeExperts = std::nullopt);

  const model::Config &config() const { return cfg; }
  /// A fresh request: zero conv windows and KDA state, empty caches.
  State initialState() const;
  /// Runs `ids` after `state` and updates it; returns logits [T][V].
  std::vector<T> forward(const std::vector<int32_t> &ids, State &state) const;

private:
  using Rows = std::vector<T>; // [n][width], row-major

  const std::vector<T> &w(const std::string &name) const;
  Rows linear(const Rows &x, int64_t in, const std::string &weight) const;
  Rows rmsNorm(const Rows &x, int64_t d, const std::vector<T> &weight,
               double eps) const;
  Rows read(const std::vector<const Rows *> &sources, const std::string &norm,
            const std::string &proj) const;
  Rows kda(const Rows &x, int64_t layer, LayerState &s) const;
  Rows mla(const Rows &x, int64_t layer, LayerState &s) const;
  Rows mlp(const Rows &x, const std::string &prefix) const;
  Rows moe(const Rows &x, int64_t layer) const;
  Rows expert(const std::vector<T> &z, const std::string &prefix) const;

  model::Config cfg;
  std::map<std::string, std::vector<T>> weights;
};

/// Relative RMSE ‖ref − out‖₂ / ‖ref‖₂ (DESIGN.md §6).
template <typename A, typename B>
double relativeRmse(const std::vector<A> &ref, const std::vector<B> &out) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double d = double(ref[i]) - double(out[i]);
    num += d * d;
    den += double(ref[i]) * double(ref[i]);
  }
  return den == 0 ? (num == 0 ? 0 : 1e300) : std::sqrt(num / den);
}

} // namespace k3::ref

#endif // TEST_REFERENCE_REFERENCE_H
