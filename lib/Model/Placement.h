//===- Placement.h - What each rank of a grid holds -------------*- C++ -*-===//
//
// Part of k3. The placement plan of `k3-compile --stats --tp=T --ep=E`
// (issue 28) and the layout `k3-compile --tp --ep` builds: a grid of E x T
// ranks (E groups of T consecutive ranks), laid out as DISTRIBUTED.md's
// production systems do:
//  - attention (KDA and MLA heads, their projections, conv windows and KDA
//    state), the dense MLP and the lm_head's vocabulary are split T ways
//    within each of the E groups, and replicated across the groups. In
//    production each group would serve its own requests (data-parallel
//    attention); k3's ranks all run the same requests so far, which the
//    whole-grid MoE all-reduces rely on, so the E groups repeat the
//    attention work (the memory figures below are what matters here);
//  - the routed experts are whole and split over all T x E ranks (the
//    expert-parallel degree is the world), and so are the shared experts'
//    channels and the inputs of LatentMoE's up projection: the MoE block's
//    partial sums then add up over the whole grid;
//  - the projections every head shares (MLA's q_a/kv_a, KDA's low-rank gate
//    inputs f_a and g_a, A_log), norms, routers, AttnRes weights and the
//    embedding table (a lookup, not a product: a vocabulary split would cost
//    an all-reduce of [T, D] for a table read once per token) are
//    replicated;
//  - MLA's latent cache row is shared by all heads: every rank of a group
//    holds the group's requests' whole rows.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_MODEL_PLACEMENT_H
#define LIB_MODEL_PLACEMENT_H

#include "lib/Model/Config.h"

#include <cstdint>
#include <string>

namespace k3::model {

/// Where one weight lives on a grid: whole on every rank, or split into
/// equal blocks along `dim` over the tensor-parallel axis (`tp` blocks,
/// block = the rank's tp coordinate) or over the whole grid (`ep x tp`
/// blocks, block = the world rank; the grid is row-major with tp the minor
/// axis, so a tensor-parallel group is consecutive ranks). Routed experts are stacked over a
/// leading expert dimension, which is their `dim` 0.
struct WeightSplit {
  enum Over { None, Tp, World } over = None;
  int dim = 0;
};

/// The split of `relative` (a name relative to the model prefix; the head
/// as `lm_head.weight`). A tied head is the embedding, replicated.
WeightSplit weightSplit(const std::string &relative);

struct Placement {
  int64_t tp = 1, ep = 1, ranks = 1;
  int64_t expertsPerRank = 0;
  /// Weight bytes on each rank (every rank holds the same amount), and
  /// their parts.
  int64_t weightBytes = 0, replicatedBytes = 0, splitBytes = 0, expertBytes = 0;
  /// Per request on each rank: KDA state (f32) and conv windows.
  int64_t kdaStateBytesPerRequest = 0;
  /// Per token of context on each rank: the MLA latent rows (bf16).
  int64_t mlaBytesPerToken = 0;
};

/// The plan for `tp` x `ep`; false with one line in `error` when the model
/// does not split so (heads, experts or widths not divisible).
bool computePlacement(const Config &config, int64_t tp, int64_t ep, Placement &out,
                      std::string &error);

/// Requests of `contextTokens` each that fit in `deviceBytes` per rank after
/// the weights and `reserveFraction` of the device (activations, scratch);
/// 0 when the weights alone do not fit.
int64_t requestsThatFit(const Placement &p, int64_t deviceBytes, double reserveFraction,
                        int64_t contextTokens);

} // namespace k3::model

#endif // LIB_MODEL_PLACEMENT_H
