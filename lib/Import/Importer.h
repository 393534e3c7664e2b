//===- Importer.h - Checkpoint → K3 dialect ---------------------*- C++ -*-===//
//
// Part of k3. Builds the model-level module (phase `input`) of a checkpoint:
// `@prefill` over a dynamic number of tokens and `@decode` over one, both
// taking and returning every per-request state explicitly.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_IMPORT_IMPORTER_H
#define LIB_IMPORT_IMPORTER_H

#include "lib/Model/Checkpoint.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir::k3 {

/// Imports `checkpoint` (weights by name; shapes and dtypes from the stored
/// tensors when present, else from the tensor table).
///
/// Entry points, in order of arguments (and decode_batch, below):
///   prefill(ids: tensor<?xi32>, state...) -> (logits: tensor<?xVxf32>, state...)
///   decode(ids: tensor<1xi32>, state...)  -> (logits: tensor<1xVxf32>, state...)
/// State, per layer in order: KDA — conv windows q, k, v [W−1, H·K] f32 and
/// the recurrent state [H, K, K] f32 (K-major); MLA — the latent cache
/// [S, kv_lora_rank + qk_rope_head_dim] bf16. Each argument and result
/// carries `k3.name` (e.g. `layers.3.kda_state`).
struct ImportOptions {
  /// Element type of the MLA latent cache: bf16 (the default, MLA.md §8) or
  /// f32 (for tests held to the fp32 thresholds).
  bool f32MlaCache = false;
  /// > 0: prefill also returns, per KDA layer, the recurrent state after
  /// every this many tokens of the call (`layers.L.kda_snapshots`,
  /// [⌊T/N⌋, H, K, V]; CACHE.md's prefix snapshots).
  int64_t kdaSnapshotInterval = 0;
  /// A grid of ep x tp ranks (issue 28, lib/Model/Placement.h; tp the
  /// minor axis, so a tensor-parallel group is consecutive ranks): > 1
  /// builds the whole model annotated for the grid, the module holding
  /// `shard.grid @grid`: each weight, entry argument and result says with
  /// `shard.shard` where it lives (attention heads, the dense MLP and the
  /// lm_head's vocabulary split over axis 1, tp; the routed experts, the
  /// shared experts' channels and LatentMoE's up projection over the
  /// whole grid; the rest whole). The k3 stage's sharding-propagation and
  /// shard-partition make one rank's program of it, with its collectives
  /// (dialects/K3/K3Sharding.cpp). The caller checks that the model splits
  /// (computePlacement).
  int64_t tp = 1, ep = 1;
  /// Also builds `decode_batch`: one token for each of B requests in one
  /// call, their KDA state as [B, ...] slots and their MLA rows read where
  /// they lie in a pool of pages through per-layer block tables:
  ///   decode_batch(ids: [B] i32, lengths: [B] i32, state..., mla_pages:
  ///                [N, PT, L+R])
  ///     -> (logits: [B, V], state...)
  /// where an MLA layer's state input is its block table [B, MB] i32 and its
  /// result the B new rows [B, L+R] (`layers.L.mla_rows`), for the caller to
  /// store at row `lengths[b]`; `lengths` and `mla_pages` only with MLA
  /// layers. One rank only (no grid).
  bool batchedDecode = false;
};

OwningOpRef<ModuleOp> importCheckpoint(MLIRContext &context,
                                       const ::k3::model::Checkpoint &checkpoint,
                                       const ImportOptions &options = {});

} // namespace mlir::k3

#endif // LIB_IMPORT_IMPORTER_H
