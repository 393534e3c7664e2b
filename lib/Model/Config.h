//===- Config.h - Kimi K3 text configuration --------------------*- C++ -*-===//
//
// Part of k3. The model configuration read from a Hugging Face `config.json`
// (nested `text_config` as in the K3 release, or a flat text config), with
// the layer schedule and the derived sizes of K3_CHECKPOINT.md. No MLIR or
// LLVM dependency: the runtime and the reference forward use it too.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_MODEL_CONFIG_H
#define LIB_MODEL_CONFIG_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace k3::model {

enum class Mixer { KDA, MLA };
enum class FFN { Dense, MoE };

/// The gated MLP's activation (`hidden_act`).
enum class Activation {
  SiTU, ///< `situ`: SiTU-GLU with `activation_situ_beta` (Kimi K3).
  SiLU, ///< `silu`: SwiGLU, `silu(x W1ᵀ) ⊙ (x W3ᵀ)` (Kimi Linear).
};

/// Which release's tensor layout a checkpoint follows (KIMI_LINEAR.md).
enum class Layout {
  K3,         ///< K3_CHECKPOINT.md: `A_log` padded to 128, F32 conv/o_norm/bias.
  KimiLinear, ///< The Kimi Linear release: `A_log` [1, 1, H, 1], BF16 small tensors.
};

/// How routed expert weights are stored in a checkpoint.
enum class ExpertFormat {
  F32,   ///< `experts.{e}.w*.weight` in f32.
  BF16,  ///< `experts.{e}.w*.weight` in bf16.
  MXFP4, ///< `weight_packed` (E2M1, low nibble first) + `weight_scale` (E8M0).
};

struct Config {
  // Model level.
  int64_t vocabSize = 0;
  int64_t hiddenSize = 0;
  int64_t numLayers = 0;
  double rmsNormEps = 1e-5;
  bool tieWordEmbeddings = false;

  /// A flat config whose `architectures` names `KimiLinearForCausalLM` and
  /// whose `hidden_act` is `silu` is the Kimi Linear release's layout;
  /// anything else K3's (K3 nests its text model, which names the same
  /// architecture, under `text_config`, and its activation is `situ`).
  Layout layout = Layout::K3;

  Activation hiddenAct = Activation::SiTU;
  // SiTU-GLU: beta2 absent means a linear up branch.
  double situBeta1 = 1.0;
  std::optional<double> situBeta2;

  // Dense MLP and LatentMoE.
  int64_t intermediateSize = 0;
  int64_t firstKDenseReplace = 0;
  int64_t moeLayerFreq = 1;
  int64_t numExperts = 0;
  int64_t topK = 0;
  int64_t numSharedExperts = 0;
  int64_t moeIntermediateSize = 0;
  std::optional<int64_t> routedExpertHiddenSize; ///< LatentMoE when set.
  bool latentMoeUseNorm = false;
  bool moeRenormalize = true;
  double routedScalingFactor = 1.0;
  /// Expert storage declared by `quantization_config` (MXFP4 for K3).
  ExpertFormat declaredExpertFormat = ExpertFormat::BF16;

  // MLA.
  int64_t mlaHeads = 0;
  std::optional<int64_t> qLoraRank; ///< absent: direct `q_proj`.
  int64_t kvLoraRank = 0;
  int64_t qkNopeHeadDim = 0;
  int64_t qkRopeHeadDim = 0;
  int64_t vHeadDim = 0;
  bool mlaOutputGate = false;

  // KDA (`linear_attn_config`).
  int64_t kdaHeads = 0;
  int64_t kdaHeadDim = 0;
  int64_t convKernelSize = 0;
  std::optional<double> gateLowerBound; ///< absent: softplus gate.
  bool fullRankOutputGate = false;      ///< `g_proj` vs `g_a_proj/g_b_proj`.

  // AttnRes: absent means the usual pre-norm residual.
  std::optional<int64_t> attnResBlockSize;

  /// Mixer of each layer (0-based), from the 1-indexed `kda_layers`.
  std::vector<Mixer> mixers;

  FFN ffn(int64_t layer) const;
  Mixer mixer(int64_t layer) const { return mixers[layer]; }
  int64_t numKda() const;
  int64_t numMla() const;
  /// Width the routed experts read and write: the latent if set, else D.
  int64_t expertWidth() const {
    return routedExpertHiddenSize.value_or(hiddenSize);
  }
  /// KDA projection width P = H·K.
  int64_t kdaProjWidth() const { return kdaHeads * kdaHeadDim; }
  /// MLA cache row: latent + shared key.
  int64_t mlaCacheWidth() const { return kvLoraRank + qkRopeHeadDim; }
  /// AttnRes seals a snapshot before the attention of `layer`.
  bool seals(int64_t layer) const {
    return attnResBlockSize && layer % *attnResBlockSize == 0;
  }
};

/// Parses a `config.json` text. On failure returns nullopt and sets `error`
/// to one line naming the key (`text_config.hidden_size`) and the problem.
std::optional<Config> parseConfig(const std::string &jsonText,
                                  std::string &error);

/// Reads and parses `dir/config.json`; `text`, if given, receives the file.
std::optional<Config> loadConfig(const std::string &dir, std::string &error,
                                 std::string *text = nullptr);

/// Sizes reported by `k3-compile --stats`.
struct Stats {
  int64_t parameters = 0;             ///< logical weights of the text model
  int64_t kdaRecurrentStateBytes = 0; ///< f32 state of all KDA layers
  int64_t mlaCacheBytesPerToken = 0;  ///< bf16 latent + shared key
  int64_t kdaLayers = 0;
  int64_t mlaLayers = 0;
};
Stats computeStats(const Config &config);

} // namespace k3::model

#endif // LIB_MODEL_CONFIG_H
