//===- Placement.cpp - What each rank of a grid holds ---------------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "lib/Model/Placement.h"

#include "lib/Model/TensorTable.h"

namespace k3::model {
namespace {

} // namespace

WeightSplit weightSplit(const std::string &n) {
  auto has = [&](const char *part) { return n.find(part) != std::string::npos; };
  // A linear's input dimension is 1 (o_proj, down_proj: row-parallel);
  // its output dimension 0 (column-parallel); MXFP4 codes and scales split
  // as their matrix does.
  int inputDim = has("o_proj.") || has("down_proj.") ? 1 : 0;
  if (has(".experts."))
    return {WeightSplit::World, 0};
  // LatentMoE's up projection, row-parallel over the grid: its partial
  // outputs join the shared experts' in one all-reduce
  // (k3-merge-all-reduces).
  if (has("routed_expert_up_proj."))
    return {WeightSplit::World, 1};
  if (has(".shared_experts."))
    return {WeightSplit::World, inputDim};
  if (n == "lm_head.weight")
    return {WeightSplit::Tp, 0};
  if (has(".mlp."))
    return {WeightSplit::Tp, inputDim};
  if (has(".self_attn.")) {
    // Shared by every head: the low-rank inputs and their norms, the
    // per-head-dimension output norm, and A_log (H values, maybe padded:
    // each rank slices its heads' from the whole).
    for (const char *shared : {"q_a_proj", "q_a_layernorm", "kv_a_proj_with_mqa",
                               "kv_a_layernorm", "f_a_proj", "g_a_proj", "o_norm", "A_log"})
      if (has(shared))
        return {};
    return {WeightSplit::Tp, inputDim};
  }
  return {};
}

namespace {

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
      (c.numExperts &&
       !divides(p.ranks, c.numExperts, "routed experts (over all ranks)", bothFlags, error)) ||
      (c.numExperts && c.numSharedExperts &&
       !divides(p.ranks, c.moeIntermediateSize * c.numSharedExperts,
                "shared-expert channels (over all ranks)", bothFlags, error)) ||
      (c.numExperts && c.routedExpertHiddenSize &&
       !divides(p.ranks, *c.routedExpertHiddenSize, "latent MoE channels (over all ranks)",
                bothFlags, error)) ||
      (!c.tieWordEmbeddings && !divides(tp, c.vocabSize, "vocabulary rows", tpFlag, error)))
    return false;
  p.expertsPerRank = c.numExperts / p.ranks;
  for (const TensorSpec &t : expectedTensors(c, c.declaredExpertFormat)) {
    int64_t bytes = numElements(t.shape) * dtypeBytes(t.dtype);
    std::string name = t.isHead ? "lm_head.weight" : t.name;
    switch (weightSplit(name).over) {
    case WeightSplit::None: p.replicatedBytes += bytes; break;
    case WeightSplit::Tp: p.splitBytes += bytes / tp; break;
    case WeightSplit::World:
      if (name.find(".experts.") != std::string::npos)
        p.expertBytes += bytes;
      else
        p.splitBytes += bytes / p.ranks;
      break;
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
