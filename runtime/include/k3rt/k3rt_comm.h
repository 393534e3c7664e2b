/*===- k3rt_comm.h - A sharded binary's communication table --------*- C -*-===//
 *
 * Part of k3. A binary compiled for a grid of ranks (`k3-compile --tp --ep`,
 * issue 28) calls `k3_comm_collective` and `k3_comm_index` (from
 * k3-comm-to-calls and k3-lower-collectives); its host object forwards each
 * through this table, which the runtime fills from the process's grid and
 * attaches with the object's `k3_comm_attach(const K3CommOps *)`. One
 * definition for both sides, as k3rt_gpu.h: the runtime includes this
 * header and k3-compile embeds its text in every host object's support
 * source. Plain C, no includes beyond the C library's.
 *
 * A collective's failure (a peer that never arrived within the grid's
 * timeout) cannot stop the compiled code: the runtime records it, answers
 * every later call at once, and reports it when the entry point returns.
 *
 *===----------------------------------------------------------------------===*/

#ifndef K3RT_K3RT_COMM_H
#define K3RT_K3RT_COMM_H

#include <stdint.h>

/* Kinds: 0 all-reduce (sum, in place on `output`), 1 all-gather (`count`
 * elements of `input` from each group rank, stacked in group-rank order in
 * `output`). Dtypes: 0 f32, 1 bf16. `axes`: the group's grid axes as a bit
 * mask. */
typedef struct K3CommOps {
  void *ctx;
  void (*collective)(void *ctx, int32_t kind, void *input, void *output, int64_t count,
                     int32_t dtype, int64_t axes);
  /* This rank's coordinate on grid axis `axis`, or its linear index on the
   * grid for -1. */
  int64_t (*index)(void *ctx, int64_t axis);
} K3CommOps;

#endif /* K3RT_K3RT_COMM_H */
