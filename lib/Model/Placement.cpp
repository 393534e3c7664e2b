//===- Placement.cpp - What each rank of a grid holds ---------------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "lib/Model/Placement.h"

#include "lib/Model/TensorTable.h"

namespace k3::model {
namespace {

enum class Rule { Replicated, SplitTp, Experts };

/// How a tensor (name relative to the model prefix) is placed.
Rule ruleOf(const TensorSpec &spec) {
  const std::string &n = spec.name;
  auto has = [&](const char *part) { return n.find(part) != std::string::npos; };
  if (has(".experts."))
    return Rule::Experts;
  if (spec.isHead || has("embed_tokens.") || has(".mlp.") || has(".shared_experts."))
    return Rule::SplitTp;
  if (has(".self_attn.")) {
    // Shared by every head: the low-rank inputs and their norms, and the
    // per-head-dimension output norm.
    for (const char *shared : {"q_a_proj", "q_a_layernorm", "kv_a_proj_with_mqa",
                               "kv_a_layernorm", "f_a_proj", "g_a_proj", "o_norm"})
      if (has(shared))
        return Rule::Replicated;
    return Rule::SplitTp;
  }
  return Rule::Replicated;
}

/// `n` `what` split `parts` ways, else "<flags>: <n> <what> do not split
/// <parts> ways".
bool divides(int64_t parts, int64_t n, const std::string &what, const std::string &flags,
             std::string &error) {
  if (n % parts == 0)
    return true;
  error = flags + ": " + std::to_string(n) + " " + what + " do not split " +
          std::to_string(parts) + " ways";
  return false;
}

} // namespace

bool computePlacement(const Config &c, int64_t tp, int64_t ep, Placement &p,
                      std::string &error) {
  if (tp < 1 || ep < 1 || tp > 4096 || ep > 4096) {
    error = "--tp and --ep take rank counts in [1, 4096]";
    return false;
  }
  p = Placement{};
  p.tp = tp;
  p.ep = ep;
  p.ranks = tp * ep;
  const std::string tpFlag = "--tp=" + std::to_string(tp);
  const std::string bothFlags = tpFlag + " --ep=" + std::to_string(ep);
  if ((c.numKda() && !divides(tp, c.kdaHeads, "KDA heads", tpFlag, error)) ||
      (c.numMla() && !divides(tp, c.mlaHeads, "MLA heads", tpFlag, error)) ||
      (c.intermediateSize &&
       !divides(tp, c.intermediateSize, "dense MLP channels", tpFlag, error)) ||
      (c.numExperts && c.numSharedExperts &&
       !divides(tp, c.moeIntermediateSize * c.numSharedExperts, "shared-expert channels",
                tpFlag, error)) ||
      (c.numExperts &&
       !divides(p.ranks, c.numExperts, "routed experts (over all ranks)", bothFlags, error)))
    return false;
  p.expertsPerRank = c.numExperts / p.ranks;
  for (const TensorSpec &t : expectedTensors(c, c.declaredExpertFormat)) {
    int64_t bytes = numElements(t.shape) * dtypeBytes(t.dtype);
    switch (ruleOf(t)) {
    case Rule::Replicated: p.replicatedBytes += bytes; break;
    // The vocabulary pads to a multiple of tp: the last rank's rows.
    case Rule::SplitTp: p.splitBytes += (bytes + tp - 1) / tp; break;
    case Rule::Experts: p.expertBytes += bytes; break;
    }
  }
  p.expertBytes /= p.ranks; // whole experts, the same count on every rank
  p.weightBytes = p.replicatedBytes + p.splitBytes + p.expertBytes;
  // KDA: f32 [H, K, K] state and three conv windows of W - 1 rows of H·K
  // channels (f32), a tp-th of the heads; MLA: the whole bf16 latent row.
  int64_t windows = c.convKernelSize > 0 ? 3 * (c.convKernelSize - 1) * c.kdaProjWidth() * 4 : 0;
  p.kdaStateBytesPerRequest =
      c.numKda() * (c.kdaHeads * c.kdaHeadDim * c.kdaHeadDim * 4 + windows) / tp;
  p.mlaBytesPerToken = c.numMla() * c.mlaCacheWidth() * 2;
  return true;
}

int64_t requestsThatFit(const Placement &p, int64_t deviceBytes, double reserveFraction,
                        int64_t contextTokens) {
  double free = double(deviceBytes) * (1 - reserveFraction) - double(p.weightBytes);
  double perRequest = double(p.kdaStateBytesPerRequest) +
                      double(p.mlaBytesPerToken) * double(contextTokens);
  if (free <= 0 || perRequest <= 0)
    return 0;
  // A group's requests are spread over its tp ranks' memory only as far as
  // the KDA state is; the MLA rows are on every rank: one rank's count is
  // the group's. The E groups serve E times as many.
  return int64_t(free / perRequest) * p.ep;
}

} // namespace k3::model
