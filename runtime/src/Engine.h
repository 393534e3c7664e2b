//===- Engine.h - Many requests over one model and one cache pool -*- C++ -*-===//
//
// Part of k3. Runs a list of requests through a compiled model with the
// hybrid cache of PrefixCache.h: admission in order under a page budget, at
// most `maxBatch` in flight, every step advancing each running request by
// one prefill chunk or one decode (or speculative verify) step, so prefills
// and decodes interleave (continuous batching). With the binary's
// `decode_batch` entry (a binary of one rank, CPU or GPU), the plain decode
// steps of all running requests run as one call; prefill chunks and
// speculative verifies run one request per call.
//
// Per request: a private KDA working state (conv windows and recurrent
// state of every KDA layer, one run of pages) and per MLA layer a table of
// pages of `pageTokens` latent rows. decode_batch reads the MLA rows where
// they lie (the pool is its `mla_pages`, the tables its block tables) and
// returns each request's new row; a decoding request's KDA state lives in a
// row of the engine's [maxBatch, ...] slots, which the call updates in
// place (copied from its pages when it starts decoding, back when it
// leaves for a speculative verify). The prefill entries take contiguous state tensors, so those
// calls gather the MLA rows from the pages and scatter the new ones back.
//
// Speculative decoding (`speculate` = k > 0): an n-gram drafter proposes up
// to k tokens from the request's own context; one prefill call verifies
// them with the pending token; the longest prefix that greedy decoding
// agrees with is accepted plus the model's next token. Rollback: the
// committed state in the pool is the checkpoint (verify outputs live in
// per-call scratch); when a draft is rejected the accepted tokens are
// replayed from it (KDA and MLA both; MLA rows past them are never
// written). Memory: no extra pool pages, one transient copy of the state
// per call; compute: a+1 extra tokens when a < k drafts are accepted.
// Unverified tokens are never registered.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_SRC_ENGINE_H
#define RUNTIME_SRC_ENGINE_H

#include "runtime/src/CpuExecutable.h"
#include "runtime/src/PrefixCache.h"
#include "runtime/src/Sampling.h"
#include "runtime/src/Session.h"

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace k3rt {

struct EngineOptions {
  int64_t poolBytes = int64_t(256) << 20;
  int64_t blockTokens = 512; ///< hash block and prefix-hit granularity
  int64_t pageBlocks = 1;    ///< blocks per MLA page (> 1: hits inside a page copy it)
  int64_t prefillChunk = 2048;
  int64_t maxBatch = 4;
  bool prefixCache = true;
  int64_t speculate = 0; ///< draft tokens per step (0: plain decode)
  bool keepLogits = false;
  /// decode_batch's shapes in buckets: the batch padded to a power of two
  /// (1, 2, 4, … capped at the slots, --max-batch) with rows that touch no
  /// request, and each block table's width to a power of two, so that a few
  /// CUDA graphs serve every step (runtime/README.md, "CUDA graphs"). Auto:
  /// when the call is captured as a graph; Always: also on the CPU (a test
  /// of the padded rows); Never.
  enum class Buckets { Auto, Always, Never } batchBuckets = Buckets::Auto;
  /// decode_batch's rows as this many calls at once, each on one thread
  /// (CpuExecutable::runParts; CPU binaries of one rank). Each
  /// group reads all the weights, so this pays where they stay in cache:
  /// 0 (auto) groups only a model whose weights fit in one core's L2 cache
  /// (a small model's step is hundreds of loops too short to share among
  /// threads), one group per thread, each of at least kMinGroupRows
  /// requests; 1: one call a step; N: N groups.
  int64_t decodeGroups = 0;
};

/// Fewest requests per decode group under EngineOptions::decodeGroups = 0.
constexpr int64_t kMinGroupRows = 2;

/// The prefill chunk must be whole blocks (snapshots land on boundaries):
/// the default is rounded up to a multiple of `blockTokens`; a chunk the
/// user chose that is not one is an error (its message), else "".
std::string alignPrefillChunk(EngineOptions &options);

struct RequestSpec {
  std::string id;
  std::vector<int32_t> prompt;
  int64_t maxNewTokens = 16;
  uint64_t salt = 0;
  std::vector<int32_t> stop; ///< generation ends after any of these
  /// A guess of the continuation (the text being edited, say): with
  /// speculation, drafts come from it first, then from the n-gram drafter.
  std::vector<int32_t> draft;
  /// Temperature 0 (the default) is greedy; a sampled request is never
  /// speculated (drafts are verified against the greedy choice).
  SamplingOptions sampling;
};

struct RequestResult {
  std::string id;
  std::vector<int32_t> tokens;
  int64_t prefixHitTokens = 0;
  std::string error;
  /// With keepLogits: the logits each generated token was chosen from.
  std::vector<float> logits;
  int64_t drafted = 0, accepted = 0;
};

using RequestHandle = uint64_t;

/// What one step did to one request.
struct RequestEvent {
  RequestHandle handle = 0;
  std::vector<int32_t> tokens; ///< generated in this step
  int64_t prefixHitTokens = 0; ///< prompt tokens restored from the cache
  bool done = false;
  /// When done: everything (all tokens, the error if it failed).
  RequestResult result;
};

struct EngineStats {
  int64_t pages = 0, pageBytes = 0, freePages = 0, blocks = 0, snapshots = 0,
          evictions = 0, drafted = 0, accepted = 0, copiedPages = 0;
  int64_t waits = 0; ///< requests whose admission waited for memory
  /// Kernel calls (one decode_batch call per step for the decoding
  /// requests, or one per request per step without it; one per prefill
  /// chunk; two for a rejected speculative draft: the verify and the
  /// replay), and the bytes the engine copies around them: each prefill or
  /// per-request call's MLA pages gathered into one contiguous cache
  /// (`mlaGatherBytes`, O(context) per call; none for decode_batch), and the
  /// recurrent state moved between the pool, the slots and the call's
  /// tensors (`stateCopyBytes`: KDA states and conv windows in and out, the
  /// call's new MLA rows into their pages). The prefix cache's snapshots and
  /// restores are not counted here.
  int64_t calls = 0, mlaGatherBytes = 0, stateCopyBytes = 0;
  /// decode_batch rows that carried no request (batchBuckets' padding).
  int64_t paddedRows = 0;
  /// The calls of decode steps that ran in groups (decodeGroups), which
  /// `calls` counts as one each.
  int64_t decodeGroupCalls = 0;
};

class Engine {
public:
  static k3rt_status_t create(CpuExecutable &exe, const EngineOptions &options,
                              std::unique_ptr<Engine> &out);
  ~Engine();

  /// Runs every request to completion; `results` in the order of `specs`.
  /// A request that can never fit fails alone (its `error`), the others run.
  k3rt_status_t run(const std::vector<RequestSpec> &specs, std::vector<RequestResult> &results);

  /// The online form (a server): queue a request, then call step() until
  /// its event says done. A request that can never run (ids outside the
  /// vocabulary, an empty prompt, more pages than the pool has) is refused
  /// here with K3RT_INVALID_ARGUMENT / K3RT_RESOURCE_EXHAUSTED.
  k3rt_status_t submit(const RequestSpec &spec, RequestHandle &handle);
  /// Ends a queued or running request now: its pages go back to the pool
  /// and no event names it again. Unknown handles are ignored.
  void cancel(RequestHandle handle);
  /// One scheduler step: admission, then one prefill chunk or decode step
  /// for each running request. Events for requests that generated tokens
  /// or finished, in admission order.
  void step(std::vector<RequestEvent> &events);
  bool idle() const { return queue.empty() && running.empty(); }
  int64_t runningCount() const { return int64_t(running.size()); }
  int64_t waitingCount() const { return int64_t(queue.size()); }
  int64_t vocabSize() const { return vocab; }

  EngineStats stats() const;
  /// Drops every cached block and snapshot (nothing is running between runs).
  void clearCache();
  /// Pages a request needs at most (its admission charge).
  int64_t pagesFor(const RequestSpec &spec) const;

  struct Request;

private:
  Engine(CpuExecutable &exe, const EngineOptions &options);
  /// Restores `hit` (pinned) into `r`'s private state and page tables.
  k3rt_status_t admit(Request &r, const std::vector<Block *> &hit);
  /// Whether the hit's page at `start` (layer m) is shared as it is.
  bool sharedRange(const std::vector<Block *> &hit, int64_t start, int64_t m) const;
  /// Pages `hit` pins that the request's table will not hold.
  int64_t pinnedOnly(const std::vector<Block *> &hit) const;
  k3rt_status_t advance(Request &r);
  /// Runs `n` tokens of `r`; `allRows`: every position's logits (a
  /// speculative verify), else the last position's.
  k3rt_status_t call(Request &r, const int32_t *ids, int64_t n, std::vector<HostTensor> &out,
                     bool allRows = false);
  k3rt_status_t commit(Request &r, const int32_t *ids, int64_t n, std::vector<HostTensor> &out);
  /// A call's new state for `r`, one view per state input: a KDA tensor's
  /// bytes, or an MLA layer's n new rows.
  struct StateView {
    const uint8_t *data;
    int64_t bytes;
  };
  k3rt_status_t commit(Request &r, const int32_t *ids, int64_t n,
                       const std::vector<StateView> &state);
  /// Checks the binary's decode_batch against prefill's state (sets
  /// `batched`; none is fine).
  k3rt_status_t checkDecodeBatch();
  /// One decode step of every request of `rs` in one decode_batch call,
  /// committed and emitted request by request (a request whose commit
  /// fails is done with its error).
  k3rt_status_t decodeBatch(const std::vector<Request *> &rs);
  /// A decoding request's KDA state moves into the next free slot (from its
  /// pages) and stays there while it decodes; `fromSlot` ends that (back to
  /// its pages when `keep`), the last slot moving into the freed one so
  /// that slots [0, occupied) are the batch.
  void toSlot(Request &r);
  void fromSlot(Request &r, bool keep);
  /// `r`'s KDA state as one blob (a snapshot), from its slot or its pages.
  void readState(const Request &r, uint8_t *blob) const;
  void emit(Request &r, int32_t token, const float *logits);
  void finish(Request &r);
  std::vector<int32_t> draft(const Request &r, int64_t k) const;
  /// The request's next token from `logits`: greedy, or its sampler.
  int32_t choose(Request &r, const float *logits) const;
  /// Why `spec` can never run, or empty.
  std::string refusal(const RequestSpec &spec) const;

  CpuExecutable &exe;
  EngineOptions opt;
  /// The state inputs of the entry points, in order: a KDA part (bytes at
  /// `offset` of a request's KDA blob) or an MLA layer's cache.
  struct StateInput {
    bool mla = false;
    bool appendsRows = false; ///< passed with room for the call's rows
    int64_t mlaLayer = 0, offset = 0, bytes = 0, rowBytes = 0;
    k3::bundle::DType dtype = k3::bundle::DType_F32;
    std::vector<int64_t> shape;
  };
  std::vector<StateInput> inputs;
  int64_t kdaBytes = 0, numMla = 0, rowBytes = 0, pageTokens = 0, vocab = 0;
  std::unique_ptr<PagePool> pool;
  bool batched = false;
  /// The binary's weights fit in one core's L2 (decode groups' default).
  bool weightsInCache = false;
  /// With decode_batch and MLA layers: the pool's arena as [pages,
  /// pageTokens, W], kept in the executable's memory so calls bind it.
  HostTensor poolTensor;
  /// With decode_batch, per KDA state input, a kept [rows, ...] tensor the
  /// calls bind (empty for MLA inputs); rows: the requests that can run at
  /// once (maxBatch, or fewer when the pool holds fewer). Outside the
  /// pool's budget, touched only as slots are used.
  std::vector<HostTensor> slots;
  std::vector<Request *> slotOwner; ///< per slot row, its request
  /// decode_batch's block-table width in buckets (EngineOptions::batchBuckets).
  int64_t tableWidth = 1;
  /// The decode groups of a step of `rows` rows (EngineOptions::decodeGroups).
  int decodeGroups(int64_t rows) const;
  int64_t occupied = 0;
  std::unique_ptr<PrefixCache> cache;
  uint64_t clock = 0; ///< scheduler steps so far (the cache's LRU time)
  RequestHandle nextHandle = 1;
  std::map<RequestHandle, std::unique_ptr<Request>> requests;
  std::deque<RequestHandle> queue;    ///< waiting, in submission order
  std::vector<RequestHandle> running; ///< admitted, in admission order
  int64_t reserved = 0;
  EngineStats counters;
};

} // namespace k3rt

#endif // RUNTIME_SRC_ENGINE_H
