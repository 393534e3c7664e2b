//===- Engine.cpp - Many requests over one model and one cache pool -------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Engine.h"
#include "runtime/src/Sampling.h"
#include "runtime/src/Status.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <optional>
#include <cstdint>
#include <set>
#include <unistd.h>

using namespace k3::bundle;

namespace k3rt {

struct Engine::Request {
  RequestSpec spec;
  RequestResult result;
  std::vector<int32_t> context; ///< the tokens in the cache, in order
  int64_t len = 0;              ///< context.size()
  int32_t pending = -1;         ///< chosen, not yet fed
  bool done = false;
  std::vector<int32_t> kdaPages;            ///< the private KDA working state
  std::vector<std::vector<int32_t>> table;  ///< per MLA layer: a page per pageTokens rows
  std::vector<Block *> chain;               ///< pinned registered blocks of `context`
  int64_t charge = 0;                       ///< reserved pages
  bool waited = false;                      ///< admission had to wait
  bool poisoned = false;                    ///< produced a non-finite value
  std::optional<Sampler> sampler;           ///< when the request samples
  /// With decode_batch, while the request decodes: its row of the engine's
  /// state slots, which then hold its KDA state (not its pages).
  int64_t slot = -1;
  size_t reported = 0;                      ///< tokens already in events
};

namespace {

int64_t dtypeBytes(DType d) {
  switch (d) {
  case DType_F32:
  case DType_I32:
    return 4;
  case DType_BF16:
  case DType_F16:
    return 2;
  case DType_I64:
    return 8;
  default:
    return 1;
  }
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The least power of two ≥ n (n ≥ 1).
int64_t powerOfTwoAtLeast(int64_t n) {
  int64_t p = 1;
  while (p < n)
    p *= 2;
  return p;
}

/// Whether every f32 / bf16 value of the `bytes` at `p` is finite.
bool finite(DType dtype, const uint8_t *p, int64_t bytes) {
  // A value is not finite when its exponent bits are all set, the largest
  // masked value: a max reduction, which vectorises (no early exit).
  if (dtype == DType_F32) {
    uint32_t worst = 0;
    for (int64_t i = 0; i + 4 <= bytes; i += 4) {
      uint32_t bits;
      std::memcpy(&bits, p + i, 4);
      worst = std::max(worst, bits & 0x7F800000u);
    }
    return worst != 0x7F800000u;
  }
  if (dtype == DType_BF16) {
    uint16_t worst = 0;
    for (int64_t i = 0; i + 2 <= bytes; i += 2) {
      uint16_t bits;
      std::memcpy(&bits, p + i, 2);
      worst = std::max<uint16_t>(worst, bits & 0x7F80u);
    }
    return worst != 0x7F80u;
  }
  return true;
}

} // namespace

k3rt_status_t Engine::create(CpuExecutable &exe, const EngineOptions &options,
                             std::unique_ptr<Engine> &out) {
  const EntryPoint *prefill = exe.entry("prefill");
  if (!prefill || !exe.entry("decode") || !prefill->inputs() || !prefill->outputs() ||
      prefill->inputs()->size() < 1 || prefill->outputs()->size() < prefill->inputs()->size())
    return makeStatus(K3RT_INVALID_ARGUMENT,
                      "the binary is not a model: it needs prefill and decode entry points");
  if (options.blockTokens <= 0 || options.pageBlocks <= 0 || options.maxBatch <= 0 ||
      options.prefillChunk <= 0 || options.prefillChunk % options.blockTokens != 0 ||
      options.speculate < 0)
    return makeStatus(K3RT_INVALID_ARGUMENT,
                      "engine options: block tokens, page blocks, max batch and prefill chunk "
                      "must be positive, the chunk a multiple of the block (" +
                          std::to_string(options.prefillChunk) + " vs " +
                          std::to_string(options.blockTokens) + ")");
  std::unique_ptr<Engine> e(new Engine(exe, options));
  e->pageTokens = options.blockTokens * options.pageBlocks;
  for (size_t i = 1; i < prefill->inputs()->size(); ++i) {
    const TensorInfo *info = prefill->inputs()->Get(i);
    StateInput in;
    in.dtype = info->dtype();
    in.shape.assign(info->shape()->begin(), info->shape()->end());
    std::string name = info->name()->str();
    int64_t elements = 1;
    for (size_t d = 1; d < in.shape.size(); ++d)
      elements *= in.shape[d];
    if (name.size() > 10 && name.compare(name.size() - 10, 10, ".mla_cache") == 0) {
      if (in.shape.size() != 2 || in.shape[0] >= 0)
        return makeStatus(K3RT_INVALID_ARGUMENT, "state '" + name + "' is not an [S, W] cache");
      in.mla = true;
      in.appendsRows = info->appends_rows();
      const EntryPoint *decode = exe.entry("decode");
      if (!decode->inputs() || decode->inputs()->size() != prefill->inputs()->size() ||
          decode->inputs()->Get(i)->appends_rows() != in.appendsRows)
        return makeStatus(K3RT_INVALID_ARGUMENT, "the prefill and decode entries disagree on "
                                                 "whether '" + name + "' has room for the call's rows");
      in.mlaLayer = e->numMla++;
      in.rowBytes = elements * dtypeBytes(in.dtype);
      if (e->rowBytes && e->rowBytes != in.rowBytes)
        return makeStatus(K3RT_INVALID_ARGUMENT, "MLA layers with different row sizes");
      e->rowBytes = in.rowBytes;
    } else {
      for (int64_t d : in.shape)
        if (d < 0)
          return makeStatus(K3RT_INVALID_ARGUMENT, "state '" + name + "' has a dynamic shape");
      in.offset = e->kdaBytes;
      in.bytes = elements * in.shape[0] * dtypeBytes(in.dtype);
      e->kdaBytes += in.bytes;
    }
    e->inputs.push_back(in);
  }
  if (k3rt_status_t st = checkPrefillLast(exe))
    return st;
  const auto *logits = prefill->outputs()->Get(0)->shape();
  e->vocab = logits->size() == 2 ? logits->Get(1) : 0;
  if (k3rt_status_t st = e->checkDecodeBatch())
    return st;
  // A page is pageTokens rows of one MLA layer (at least 4 KiB without MLA).
  // decode_batch reads the pool as [pages, pageTokens, W]: exactly a page.
  int64_t pageBytes = std::max<int64_t>(e->pageTokens * e->rowBytes, 4096);
  if (e->batched && e->numMla)
    pageBytes = e->pageTokens * e->rowBytes;
  int64_t pages = options.poolBytes / pageBytes;
  // Page ids are i32 (the tables, decode_batch's block tables).
  if (pages > INT32_MAX)
    return makeStatus(K3RT_INVALID_ARGUMENT,
                      "the pool (" + std::to_string(options.poolBytes) + " bytes) holds " +
                          std::to_string(pages) + " pages of " + std::to_string(pageBytes) +
                          " bytes, more than 2^31 - 1: use larger blocks or a smaller pool");
  if (pages < 1)
    return makeStatus(K3RT_INVALID_ARGUMENT,
                      "the pool (" + std::to_string(options.poolBytes) +
                          " bytes) holds no page of " + std::to_string(pageBytes) + " bytes");
  if (e->batched && e->numMla) {
    // The pool is the kernels' kept buffer, bound in place as mla_pages.
    const StateInput &mla = *std::find_if(e->inputs.begin(), e->inputs.end(),
                                          [](const StateInput &in) { return in.mla; });
    e->poolTensor = exe.allocateKept(
        mla.dtype, {pages, e->pageTokens, e->rowBytes / dtypeBytes(mla.dtype)});
    if (!e->poolTensor.kept)
      return makeStatus(K3RT_RESOURCE_EXHAUSTED,
                        "no memory for a pool of " + std::to_string(pages * pageBytes) + " bytes");
    e->pool = std::make_unique<PagePool>(pageBytes, pages, e->poolTensor.kept);
  } else {
    e->pool = std::make_unique<PagePool>(pageBytes, pages);
  }
  // decode_batch's KDA inputs: one kept [slots, ...] buffer each, reused by
  // every call (no allocation, bound in place). As many rows as requests
  // can run at once: --max-batch, or fewer when the pool cannot hold that
  // many (each charges its KDA pages and a page per MLA layer), so that a
  // large --max-batch does not reserve memory no request can use.
  const int64_t perRequest =
      std::max<int64_t>(1, ceilDiv(e->kdaBytes, pageBytes) + e->numMla);
  const int64_t rows = std::max<int64_t>(1, std::min(options.maxBatch, pages / perRequest));
  e->slots.resize(e->inputs.size());
  e->slotOwner.assign(size_t(rows), nullptr);
  for (size_t k = 0; e->batched && k < e->inputs.size(); ++k) {
    const StateInput &in = e->inputs[k];
    if (in.mla)
      continue;
    std::vector<int64_t> shape{rows};
    shape.insert(shape.end(), in.shape.begin(), in.shape.end());
    // Zeroed: a bucket's padding rows run on unoccupied slots.
    e->slots[k] = exe.keptZeros(in.dtype, shape);
    if (!e->slots[k].kept)
      return makeStatus(K3RT_RESOURCE_EXHAUSTED,
                        "no memory for the decode state of " + std::to_string(rows) +
                            " requests (" + std::to_string(rows * e->kdaBytes) + " bytes)");
  }
  e->cache = std::make_unique<PrefixCache>(*e->pool, options.blockTokens, e->kdaBytes);
  out = std::move(e);
  return nullptr;
}

k3rt_status_t Engine::checkDecodeBatch() {
  const EntryPoint *ep = exe.entry("decode_batch");
  if (!ep)
    return nullptr; // an older binary, a GPU's or a grid's: a call per request
  auto bad = [](const std::string &why) {
    return makeStatus(K3RT_INVALID_ARGUMENT, "decode_batch: " + why);
  };
  if (!ep->inputs() || !ep->outputs() || ep->outputs()->size() != 1 + inputs.size())
    return bad("its outputs are not the logits and one per state input");
  // Its inputs: ids, [lengths,] one per state input of prefill (an MLA
  // layer's block table in place of its cache), [mla_pages].
  const size_t expected = 1 + inputs.size() + (numMla ? 2 : 0);
  if (ep->inputs()->size() != expected)
    return bad("takes " + std::to_string(ep->inputs()->size()) + " inputs, expected " +
               std::to_string(expected));
  const EntryPoint *prefill = exe.entry("prefill");
  const size_t first = numMla ? 2 : 1;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = prefill->inputs()->Get(1 + i)->name()->str();
    const TensorInfo *in = ep->inputs()->Get(first + i);
    if (inputs[i].mla) {
      name.replace(name.size() - 9, 9, "block_table");
      if (in->dtype() != DType_I32 || in->shape()->size() != 2)
        return bad("'" + name + "' is not an i32 [B, pages] table");
    } else {
      bool same = in->dtype() == inputs[i].dtype &&
                  in->shape()->size() == inputs[i].shape.size() + 1;
      for (size_t d = 0; same && d < inputs[i].shape.size(); ++d)
        same = in->shape()->Get(d + 1) == inputs[i].shape[d];
      if (!same)
        return bad("'" + name + "' is not prefill's state with a request dimension");
    }
    if (in->name()->str() != name)
      return bad("input " + std::to_string(first + i) + " is '" + in->name()->str() +
                 "', expected '" + name + "'");
  }
  if (ep->inputs()->Get(0)->dtype() != DType_I32 || ep->outputs()->Get(0)->dtype() != DType_F32)
    return bad("expected i32 ids and f32 logits");
  if (numMla) {
    const TensorInfo *pages = ep->inputs()->Get(expected - 1);
    const StateInput &mla = *std::find_if(inputs.begin(), inputs.end(),
                                          [](const StateInput &in) { return in.mla; });
    if (ep->inputs()->Get(1)->name()->str() != "lengths" ||
        ep->inputs()->Get(1)->dtype() != DType_I32 || pages->name()->str() != "mla_pages" ||
        pages->shape()->size() != 3 || pages->dtype() != mla.dtype ||
        pages->shape()->Get(2) * dtypeBytes(pages->dtype()) != rowBytes)
      return bad("expected 'lengths' and 'mla_pages' [N, PT, W] of " + std::to_string(rowBytes) +
                 "-byte rows of the caches' type");
  }
  batched = true;
  // Decode groups by default only where the extra weight reads cost
  // nothing: weights within a core's L2 (glibc's figure, else 1 MiB).
  // Decided once: the binary and the machine do not change.
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  weightsInCache = exe.weightBytes() <= (l2 > 0 ? int64_t(l2) : int64_t(1) << 20);
  return nullptr;
}

void Engine::toSlot(Request &r) {
  r.slot = occupied++;
  slotOwner[size_t(r.slot)] = &r;
  for (size_t k = 0; k < inputs.size(); ++k)
    if (!inputs[k].mla)
      pool->read(r.kdaPages, slots[k].kept.get() + r.slot * inputs[k].bytes, inputs[k].bytes,
                 inputs[k].offset);
  counters.stateCopyBytes += kdaBytes;
}

void Engine::fromSlot(Request &r, bool keep) {
  const int64_t last = --occupied;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].mla)
      continue;
    uint8_t *base = slots[k].kept.get();
    const int64_t bytes = inputs[k].bytes;
    if (keep)
      pool->write(r.kdaPages, base + r.slot * bytes, bytes, inputs[k].offset);
    // The slots stay packed: the last one moves into the freed row.
    if (r.slot != last)
      std::memcpy(base + r.slot * bytes, base + last * bytes, size_t(bytes));
  }
  counters.stateCopyBytes += (keep ? kdaBytes : 0) + (r.slot != last ? kdaBytes : 0);
  if (r.slot != last) {
    slotOwner[size_t(last)]->slot = r.slot;
    slotOwner[size_t(r.slot)] = slotOwner[size_t(last)];
  }
  slotOwner[size_t(last)] = nullptr;
  r.slot = -1;
}

void Engine::readState(const Request &r, uint8_t *blob) const {
  if (r.slot < 0) {
    pool->read(r.kdaPages, blob, kdaBytes);
    return;
  }
  for (size_t k = 0; k < inputs.size(); ++k)
    if (!inputs[k].mla)
      std::memcpy(blob + inputs[k].offset, slots[k].kept.get() + r.slot * inputs[k].bytes,
                  size_t(inputs[k].bytes));
}

int Engine::decodeGroups(int64_t rows) const {
  if (!exe.runsParts() || opt.decodeGroups == 1)
    return 1;
  int64_t groups = opt.decodeGroups;
  if (groups == 0) {
    if (!weightsInCache)
      return 1;
    groups = std::min<int64_t>(std::max(1, k3rt_threads()), rows / kMinGroupRows);
  }
  return int(std::max<int64_t>(1, std::min(groups, rows)));
}

k3rt_status_t Engine::decodeBatch(const std::vector<Request *> &batch) {
  // Every request of the batch in a slot (the caller moved out the others),
  // and the call's rows in slot order. Admission keeps the running requests
  // within the slots' rows (each reserves at least perRequest pages).
  if (batch.size() > slotOwner.size())
    return makeStatus(K3RT_INTERNAL, std::to_string(batch.size()) +
                                         " requests decode, the engine has slots for " +
                                         std::to_string(slotOwner.size()));
  for (Request *r : batch)
    if (r->slot < 0)
      toSlot(*r);
  const std::vector<Request *> rs(slotOwner.begin(), slotOwner.begin() + occupied);
  const int64_t n = int64_t(rs.size());
  // The call's rows: the n requests, then (in buckets) padding up to a
  // power of two within the slots. A padding row is token 0 at length 0 in
  // an unoccupied slot, whose state the call updates and no request reads;
  // rows are independent through every layer, so it changes no request's
  // outputs.
  const bool buckets = opt.batchBuckets == EngineOptions::Buckets::Always ||
                       (opt.batchBuckets == EngineOptions::Buckets::Auto &&
                        exe.capturesGraphs("decode_batch"));
  const int64_t rows =
      buckets ? std::min<int64_t>(powerOfTwoAtLeast(n), int64_t(slotOwner.size()))
              : n;
  counters.paddedRows += rows - n;
  // On the CPU, the rows as `groups` calls at once, one thread each
  // (EngineOptions::decodeGroups, CpuExecutable::runParts); rows are independent through
  // every layer, so the grouping changes no request's outputs.
  const int groups = decodeGroups(rows);
  // In buckets the block tables' width only grows (a power of two of the
  // widest table yet): the requests that come and go do not flip the step
  // between widths, each width a graph of its own.
  if (buckets)
    for (const StateInput &in : inputs)
      if (in.mla)
        for (const Request *r : rs)
          tableWidth = std::max(tableWidth, powerOfTwoAtLeast(std::max<int64_t>(
                                                1, int64_t(r->table[size_t(in.mlaLayer)].size()))));
  struct Call {
    int64_t first = 0, rows = 0;
    std::vector<HostTensor> owned; // every input but the pool and the slots
    std::vector<HostTensor> slotViews; ///< per input: its rows of the slots (KDA)
    std::vector<HostTensor *> args;
    std::vector<HostTensor> out;
    k3rt_status_t status = nullptr;
  };
  std::vector<Call> calls(static_cast<size_t>(groups));
  for (int g = 0; g < groups; ++g) {
    Call &c = calls[size_t(g)];
    c.first = rows * g / groups;
    c.rows = rows * (g + 1) / groups - c.first;
    // Requests of the call: [c.first, end) (padding rows past n).
    const int64_t end = std::min(n, c.first + c.rows);
    c.owned.reserve(inputs.size() + 2); // never reallocated: `args` points into it
    c.slotViews.resize(inputs.size());
    HostTensor &ids = c.owned.emplace_back(HostTensor::zeros(DType_I32, {c.rows}));
    c.args.push_back(&ids);
    for (int64_t i = c.first; i < end; ++i)
      reinterpret_cast<int32_t *>(ids.bytes.data())[i - c.first] = rs[size_t(i)]->pending;
    if (numMla) {
      HostTensor &lengths = c.owned.emplace_back(HostTensor::zeros(DType_I32, {c.rows}));
      for (int64_t i = c.first; i < end; ++i)
        reinterpret_cast<int32_t *>(lengths.bytes.data())[i - c.first] =
            int32_t(rs[size_t(i)]->len);
      c.args.push_back(&lengths);
    }
    for (size_t k = 0; k < inputs.size(); ++k) {
      const StateInput &in = inputs[k];
      if (in.mla) {
        // The layer's block table, [rows, most pages]; unused entries say
        // page 0 (never read: a request reads its `lengths` rows only).
        size_t most = 1;
        for (int64_t i = c.first; i < end; ++i)
          most = std::max(most, rs[size_t(i)]->table[size_t(in.mlaLayer)].size());
        if (buckets)
          most = size_t(tableWidth);
        HostTensor &t =
            c.owned.emplace_back(HostTensor::zeros(DType_I32, {c.rows, int64_t(most)}));
        auto *table = reinterpret_cast<int32_t *>(t.bytes.data());
        for (int64_t i = c.first; i < end; ++i) {
          const std::vector<int32_t> &pages = rs[size_t(i)]->table[size_t(in.mlaLayer)];
          std::copy(pages.begin(), pages.end(), table + (i - c.first) * int64_t(most));
        }
        c.args.push_back(&t);
        continue;
      }
      // The KDA tensor's slots: bound in place, updated in place (a group:
      // a view of its rows, sharing the slots' buffer).
      HostTensor &view = c.slotViews[k];
      view.dtype = slots[k].dtype;
      view.shape = slots[k].shape;
      view.shape[0] = c.rows;
      view.kept = std::shared_ptr<uint8_t>(slots[k].kept, slots[k].kept.get() + c.first * in.bytes);
      view.keptBytes = slots[k].keptBytes - c.first * in.bytes;
      c.args.push_back(&view);
    }
    if (numMla)
      c.args.push_back(&poolTensor);
  }
  ++counters.calls;
  counters.decodeGroupCalls += groups > 1 ? groups : 0;
  // Kept: the state comes back as views of the slots, the rest uncopied.
  const std::vector<bool> keep(1 + inputs.size(), true);
  // A group's kernels run their parallel loops on one thread (nested in
  // runParts' region they would anyway: libomp's default is one active
  // level): the groups are the step's parallelism.
  auto call = [&](int g) {
    Call &c = calls[size_t(g)];
    c.status = exe.run("decode_batch", c.args, c.out, keep, groups > 1 ? 1 : 0);
  };
  if (groups > 1)
    exe.runParts(groups, call);
  else
    call(0);
  k3rt_status_t failed = nullptr;
  for (Call &c : calls) {
    if (!failed)
      std::swap(failed, c.status);
    if (c.status)
      k3rt_status_free(c.status);
  }
  if (failed)
    return failed;
  // Every output as large as the call's (checked before any request is
  // committed).
  for (const Call &c : calls)
    for (size_t j = 0; j < inputs.size(); ++j) {
      const int64_t bytes = inputs[j].mla ? rowBytes : inputs[j].bytes;
      if (c.out[1 + j].byteSize() != c.rows * bytes)
        return makeStatus(K3RT_INTERNAL, "decode_batch output " + std::to_string(1 + j) +
                                             " has " + std::to_string(c.out[1 + j].byteSize()) +
                                             " bytes, expected " +
                                             std::to_string(c.rows * bytes));
    }
  // The entry updates the slots in place and returns them; a binary that
  // returns a new buffer has it copied into the slots.
  for (const Call &c : calls)
    for (size_t j = 0; j < inputs.size(); ++j) {
      uint8_t *rowsAt = c.slotViews[j].kept.get();
      if (inputs[j].mla || c.out[1 + j].data() == rowsAt)
        continue;
      std::memmove(rowsAt, c.out[1 + j].data(), size_t(c.rows * inputs[j].bytes));
      counters.stateCopyBytes += c.rows * inputs[j].bytes;
    }
  // Request by request, as its own call's outputs would be committed.
  std::vector<StateView> views;
  views.reserve(inputs.size());
  for (int64_t i = 0, g = 0; i < n; ++i) {
    Request &r = *rs[size_t(i)];
    while (i >= calls[size_t(g)].first + calls[size_t(g)].rows)
      ++g;
    const std::vector<HostTensor> &out = calls[size_t(g)].out;
    const int64_t row = i - calls[size_t(g)].first;
    views.clear();
    for (size_t j = 0; j < inputs.size(); ++j) {
      const int64_t bytes = inputs[j].mla ? rowBytes : inputs[j].bytes;
      // A KDA state stays in its slot (updated in place, or copied there
      // above), not written to the pages.
      views.push_back({inputs[j].mla ? out[1 + j].data() + row * bytes : nullptr, bytes});
    }
    const int32_t token = r.pending;
    if (k3rt_status_t s = commit(r, &token, 1, views)) {
      r.result.error = k3rt_status_message(s);
      k3rt_status_free(s);
      r.done = true;
      continue;
    }
    const float *l = out[0].f32() + row * vocab;
    emit(r, choose(r, l), l);
  }
  return nullptr;
}

std::string alignPrefillChunk(EngineOptions &e) {
  if (e.prefillChunk % e.blockTokens == 0)
    return {};
  if (e.prefillChunk == EngineOptions().prefillChunk) {
    e.prefillChunk = (e.prefillChunk / e.blockTokens + 1) * e.blockTokens;
    return {};
  }
  return "--prefill-chunk=" + std::to_string(e.prefillChunk) +
         " must be a multiple of --block-tokens=" + std::to_string(e.blockTokens);
}

Engine::Engine(CpuExecutable &exe, const EngineOptions &options) : exe(exe), opt(options) {}
Engine::~Engine() = default;

int64_t Engine::pagesFor(const RequestSpec &spec) const {
  // The working state, and per MLA layer a table page for every row the
  // request may hold (prompt, new tokens, drafts). Pages it pins without
  // holding them are charged when it pins them (hitPages, commit).
  // Saturated: a max_tokens near 2^63 must not wrap around to a small need.
  const int64_t cap = int64_t(1) << 50;
  int64_t rows = std::min(cap, int64_t(spec.prompt.size()) + std::min(cap, spec.maxNewTokens) +
                                   opt.speculate + 1);
  return ceilDiv(kdaBytes, pool->pageBytes()) + numMla * ceilDiv(rows, pageTokens);
}

EngineStats Engine::stats() const {
  EngineStats s = counters;
  s.pages = pool->pages();
  s.pageBytes = pool->pageBytes();
  s.freePages = pool->freePages();
  s.blocks = cache->blocks();
  s.snapshots = cache->snapshots();
  s.evictions = cache->evictions();
  return s;
}

void Engine::clearCache() { cache->clear(); }

bool Engine::sharedRange(const std::vector<Block *> &hit, int64_t start, int64_t m) const {
  const int64_t perPage = pageTokens / opt.blockTokens, first = start / opt.blockTokens,
                last = std::min(first + perPage, int64_t(hit.size()));
  int32_t page = hit[size_t(first)]->pages[size_t(m)];
  bool shared = last - first == perPage;
  for (int64_t i = first; i < last && shared; ++i)
    shared = hit[size_t(i)]->pages[size_t(m)] == page &&
             hit[size_t(i)]->row == (i - first) * opt.blockTokens;
  return shared;
}

int64_t Engine::pinnedOnly(const std::vector<Block *> &hit) const {
  // Pages of the hit blocks that are copied, not shared: the pins keep them
  // without the request's table holding them.
  const int64_t b = int64_t(hit.size()) * opt.blockTokens;
  int64_t n = 0;
  for (int64_t m = 0; m < numMla; ++m)
    for (int64_t start = 0; start < b; start += pageTokens)
      if (!sharedRange(hit, start, m)) {
        std::set<int32_t> pages;
        for (int64_t i = start / opt.blockTokens;
             i < std::min((start + pageTokens) / opt.blockTokens, int64_t(hit.size())); ++i)
          pages.insert(hit[size_t(i)]->pages[size_t(m)]);
        n += int64_t(pages.size());
      }
  return n;
}

k3rt_status_t Engine::admit(Request &r, const std::vector<Block *> &hit) {
  r.table.assign(size_t(numMla), {});
  Snapshot *snap = hit.empty() ? nullptr : hit.back()->snapshot.get();
  if (snap)
    ++snap->pins;
  auto fail = [&](const std::string &m) {
    if (snap)
      --snap->pins;
    for (Block *b : hit)
      cache->unpin(b);
    return makeStatus(K3RT_RESOURCE_EXHAUSTED, m);
  };
  for (int64_t i = 0; i < ceilDiv(kdaBytes, pool->pageBytes()); ++i) {
    int32_t p = cache->allocatePage();
    if (p < 0)
      return fail("no page for the KDA state");
    r.kdaPages.push_back(p);
  }
  if (snap) {
    // Restore: copy the snapshot into the private working state.
    for (size_t i = 0; i < r.kdaPages.size(); ++i)
      std::memcpy(pool->data(r.kdaPages[i]), pool->data(snap->pages[i]), size_t(pool->pageBytes()));
    --snap->pins;
    snap = nullptr;
  } else {
    std::vector<uint8_t> zero(static_cast<size_t>(kdaBytes), 0);
    pool->write(r.kdaPages, zero.data(), kdaBytes);
  }
  const int64_t b = int64_t(hit.size()) * opt.blockTokens;
  // A page whose blocks all sit in one page, in place, and which the hit
  // covers is shared read-only. Otherwise (the hit ends inside it: the
  // request writes after the hit; or its blocks were registered from
  // different requests' pages) its rows are copied into a private page:
  // copy on write.
  const int64_t perPage = pageTokens / opt.blockTokens;
  for (int64_t m = 0; m < numMla; ++m)
    for (int64_t start = 0; start < b; start += pageTokens) {
      const int64_t first = start / opt.blockTokens,
                    last = std::min(first + perPage, int64_t(hit.size()));
      int32_t page = hit[size_t(first)]->pages[size_t(m)];
      if (sharedRange(hit, start, m)) {
        pool->retain(page);
        r.table[size_t(m)].push_back(page);
        continue;
      }
      int32_t copy = cache->allocatePage();
      if (copy < 0)
        return fail("no page for a copy on write");
      for (int64_t i = first; i < last; ++i) {
        const Block *blk = hit[size_t(i)];
        std::memcpy(pool->data(copy) + (i - first) * opt.blockTokens * rowBytes,
                    pool->data(blk->pages[size_t(m)]) + blk->row * rowBytes,
                    size_t(opt.blockTokens * rowBytes));
      }
      ++counters.copiedPages;
      r.table[size_t(m)].push_back(copy);
    }
  r.chain = hit;
  for (Block *blk : hit)
    cache->touch(blk);
  r.context.assign(r.spec.prompt.begin(), r.spec.prompt.begin() + b);
  r.len = b;
  r.result.prefixHitTokens = b;
  return nullptr;
}

k3rt_status_t Engine::call(Request &r, const int32_t *ids, int64_t n, std::vector<HostTensor> &out,
                           bool allRows) {
  HostTensor idT = HostTensor::zeros(DType_I32, {n});
  std::memcpy(idT.bytes.data(), ids, size_t(n) * 4);
  ++counters.calls;
  counters.stateCopyBytes += kdaBytes; // the pool's pages to the tensors
  std::vector<HostTensor> state;
  state.reserve(inputs.size());
  for (const StateInput &in : inputs) {
    HostTensor t;
    t.dtype = in.dtype;
    t.shape = in.shape;
    if (!in.mla) {
      t.bytes.resize(size_t(in.bytes));
      pool->read(r.kdaPages, t.bytes.data(), in.bytes, in.offset);
    } else {
      // With room for the call's rows (zeros, for the call to write).
      t.shape[0] = r.len + (in.appendsRows ? n : 0);
      t.bytes.resize(size_t(t.shape[0] * rowBytes));
      const std::vector<int32_t> &pages = r.table[size_t(in.mlaLayer)];
      for (int64_t row = 0; row < r.len; row += pageTokens) {
        int64_t rows = std::min(pageTokens, r.len - row);
        std::memcpy(&t.bytes[size_t(row * rowBytes)], pool->data(pages[size_t(row / pageTokens)]),
                    size_t(rows * rowBytes));
      }
      counters.mlaGatherBytes += r.len * rowBytes;
    }
    state.push_back(std::move(t));
  }
  std::vector<HostTensor *> args{&idT};
  for (HostTensor &t : state)
    args.push_back(&t);
  return exe.run(entryFor(exe, n, r.len, allRows), args, out);
}

k3rt_status_t Engine::commit(Request &r, const int32_t *ids, int64_t n, std::vector<HostTensor> &out) {
  // A call's outputs as this request's new state: each KDA tensor whole,
  // each MLA cache's last n rows (its S + n rows hold the S it was given).
  std::vector<StateView> views;
  views.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const HostTensor &t = out[1 + i];
    if (!inputs[i].mla) {
      views.push_back({t.data(), t.byteSize()});
      continue;
    }
    const int64_t at = r.len * rowBytes, bytes = n * rowBytes;
    if (t.byteSize() < at + bytes)
      return makeStatus(K3RT_INTERNAL, "cache output " + std::to_string(i) + " has " +
                                           std::to_string(t.byteSize()) + " bytes, fewer than " +
                                           std::to_string(r.len + n) + " rows");
    views.push_back({t.data() + at, bytes});
  }
  return commit(r, ids, n, views);
}

k3rt_status_t Engine::commit(Request &r, const int32_t *ids, int64_t n,
                             const std::vector<StateView> &state) {
  // The binary's state outputs are as large as its state inputs (checked
  // here, where they are copied into pages sized by the inputs).
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int64_t want = inputs[i].mla ? n * rowBytes : inputs[i].bytes;
    if (state[i].bytes != want)
      return makeStatus(K3RT_INTERNAL, "state output " + std::to_string(i) + " has " +
                                           std::to_string(state[i].bytes) + " bytes, expected " +
                                           std::to_string(want));
  }
  // The MLA rows first: a page allocation may fail, and the pool must then
  // still hold the KDA state before the call (for a request whose state is
  // in a slot, decode_batch has updated it already: the request then fails).
  for (size_t i = 0; i < inputs.size(); ++i) {
    const StateInput &in = inputs[i];
    if (!in.mla)
      continue;
    std::vector<int32_t> &pages = r.table[size_t(in.mlaLayer)];
    for (int64_t row = r.len; row < r.len + n; ++row) {
      if (row / pageTokens >= int64_t(pages.size())) {
        int32_t p = cache->allocatePage();
        if (p < 0)
          return makeStatus(K3RT_RESOURCE_EXHAUSTED, "no page for new MLA rows");
        pages.push_back(p);
      }
      std::memcpy(pool->data(pages[size_t(row / pageTokens)]) + (row % pageTokens) * rowBytes,
                  state[i].data + (row - r.len) * rowBytes, size_t(rowBytes));
    }
  }
  // Each KDA state and conv window straight into its place in the pages
  // (none for a request whose state lives in a slot).
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].mla && state[i].data)
      pool->write(r.kdaPages, state[i].data, inputs[i].bytes, inputs[i].offset);
  counters.stateCopyBytes += (r.slot < 0 ? kdaBytes : 0) + numMla * n * rowBytes;
  r.context.insert(r.context.end(), ids, ids + n);
  r.len += n;
  // A non-finite state or latent row must never reach the cache (one NaN
  // state would poison every later hit on its chain): this request
  // registers nothing more. The new latent rows are checked here; the KDA
  // state enters the cache only as a snapshot, and is checked there.
  for (size_t i = 0; i < inputs.size() && !r.poisoned; ++i)
    if (inputs[i].mla)
      r.poisoned = !finite(inputs[i].dtype, state[i].data, state[i].bytes);
  if (!opt.prefixCache || r.poisoned)
    return nullptr;
  // Register the blocks completed by this call (all of them verified: only
  // accepted tokens are committed), then a snapshot if the call ended on a
  // block boundary and its state is finite.
  for (int64_t b = int64_t(r.chain.size()); (b + 1) * opt.blockTokens <= r.len; ++b) {
    std::vector<int32_t> pages;
    for (const auto &t : r.table)
      pages.push_back(t[size_t(b * opt.blockTokens / pageTokens)]);
    Block *parent = r.chain.empty() ? nullptr : r.chain.back();
    const int32_t *tokens = &r.context[size_t(b * opt.blockTokens)];
    Block *blk = cache->find(parent, r.spec.salt, tokens);
    if (blk) {
      // Registered already (the same prompt ran, or runs, elsewhere): its
      // pages are not in this request's table, so pinning it is charged,
      // and when the budget has no room the request registers no more.
      if (reserved + numMla > pool->pages())
        return nullptr;
      reserved += numMla;
      r.charge += numMla;
    } else {
      blk = cache->insert(parent, r.spec.salt, tokens, b, pages,
                          (b * opt.blockTokens) % pageTokens, clock);
    }
    cache->pin(blk);
    r.chain.push_back(blk);
  }
  // Snapshots stay sparse: where a prefill chunk ends on a boundary (chunk
  // multiples and the prompt's last boundary), or a decode reaches a chunk
  // multiple. One that finds no pages is simply not taken.
  const bool prefill = r.len <= int64_t(r.spec.prompt.size());
  if (r.len % opt.blockTokens == 0 && int64_t(r.chain.size()) * opt.blockTokens == r.len &&
      (prefill || r.len % opt.prefillChunk == 0) && !r.chain.back()->snapshot) {
    std::vector<uint8_t> blob(static_cast<size_t>(kdaBytes));
    readState(r, blob.data());
    for (const StateInput &in : inputs)
      if (!in.mla && !finite(in.dtype, blob.data() + in.offset, in.bytes))
        r.poisoned = true;
    if (!r.poisoned)
      (void)cache->addSnapshot(r.chain.back(), blob.data());
  }
  return nullptr;
}

void Engine::emit(Request &r, int32_t token, const float *logits) {
  r.result.tokens.push_back(token);
  if (opt.keepLogits)
    r.result.logits.insert(r.result.logits.end(), logits, logits + vocab);
  r.pending = token;
  if (int64_t(r.result.tokens.size()) >= r.spec.maxNewTokens ||
      std::find(r.spec.stop.begin(), r.spec.stop.end(), token) != r.spec.stop.end())
    r.done = true;
}

std::vector<int32_t> Engine::draft(const Request &r, int64_t k) const {
  // The request's own guess of the tokens after those generated so far.
  const size_t g = r.result.tokens.size();
  if (g < r.spec.draft.size())
    return std::vector<int32_t>(r.spec.draft.begin() + g,
                                r.spec.draft.begin() + std::min(r.spec.draft.size(), g + size_t(k)));
  // Prompt lookup: the tokens that followed the latest earlier occurrence
  // of the context's last n tokens (n = 3, 2, 1).
  std::vector<int32_t> c = r.context;
  c.push_back(r.pending);
  const int64_t len = int64_t(c.size());
  for (int64_t n = 3; n >= 1; --n) {
    if (len <= n)
      continue;
    for (int64_t j = len - n - 1; j >= 0; --j)
      if (std::equal(c.end() - n, c.end(), c.begin() + j)) {
        int64_t from = j + n, to = std::min(len, from + k);
        if (from < to)
          return std::vector<int32_t>(c.begin() + from, c.begin() + to);
      }
  }
  return {};
}

k3rt_status_t Engine::advance(Request &r) {
  const int64_t promptLen = int64_t(r.spec.prompt.size());
  std::vector<HostTensor> out;
  if (r.len < promptLen) {
    // A prefill chunk: up to the next multiple of the chunk, stopping at
    // the prompt's last block boundary so that a snapshot lands there.
    int64_t end = std::min(promptLen, (r.len / opt.prefillChunk + 1) * opt.prefillChunk);
    int64_t lastBoundary = promptLen / opt.blockTokens * opt.blockTokens;
    if (r.len < lastBoundary && lastBoundary < end)
      end = lastBoundary;
    const int32_t *ids = &r.spec.prompt[size_t(r.len)];
    if (k3rt_status_t s = call(r, ids, end - r.len, out))
      return s;
    if (k3rt_status_t s = commit(r, ids, end - r.len, out))
      return s;
    if (r.len == promptLen) {
      if (r.spec.maxNewTokens == 0) {
        r.done = true;
        return nullptr;
      }
      const float *last = out[0].f32() + (out[0].numElements() - vocab);
      emit(r, choose(r, last), last);
    }
    return nullptr;
  }
  // Decode: the pending token, with drafts when speculating.
  int64_t room = r.spec.maxNewTokens - int64_t(r.result.tokens.size()) - 1;
  std::vector<int32_t> feed{r.pending};
  if (opt.speculate > 0 && room > 0 && !r.sampler) {
    std::vector<int32_t> d = draft(r, std::min(opt.speculate, room));
    feed.insert(feed.end(), d.begin(), d.end());
  }
  // A verify needs every position's logits (one per draft).
  if (k3rt_status_t s = call(r, feed.data(), int64_t(feed.size()), out, feed.size() > 1))
    return s;
  const int64_t k = int64_t(feed.size()) - 1;
  int64_t a = 0;
  while (a < k && argmax(out[0].f32() + a * vocab, size_t(vocab)) == feed[size_t(a + 1)])
    ++a;
  r.result.drafted += k;
  r.result.accepted += a;
  std::vector<float> rows(out[0].f32(), out[0].f32() + (a + 1) * vocab);
  if (a < k) {
    // Roll back: the pool still holds the state before the verify; replay
    // the accepted tokens from it.
    out.clear();
    if (k3rt_status_t s = call(r, feed.data(), a + 1, out))
      return s;
  }
  if (k3rt_status_t s = commit(r, feed.data(), a + 1, out))
    return s;
  for (int64_t j = 0; j <= a && !r.done; ++j) {
    const float *l = &rows[size_t(j * vocab)];
    emit(r, j < a ? feed[size_t(j + 1)] : choose(r, l), l);
  }
  return nullptr;
}

void Engine::finish(Request &r) {
  if (r.slot >= 0)
    fromSlot(r, /*keep=*/false);
  // Tail first: the end of the context is the least reusable part, so its
  // blocks become the oldest in the LRU order and its pages go back first.
  for (auto it = r.chain.rbegin(); it != r.chain.rend(); ++it) {
    cache->touch(*it);
    cache->unpin(*it);
  }
  for (auto &t : r.table)
    for (auto it = t.rbegin(); it != t.rend(); ++it)
      pool->release(*it);
  for (int32_t p : r.kdaPages)
    pool->release(p);
  r.chain.clear();
  r.table.clear();
  r.kdaPages.clear();
  reserved -= r.charge;
  r.charge = 0;
  r.done = true;
}

int32_t Engine::choose(Request &r, const float *logits) const {
  return r.sampler ? r.sampler->next(logits, size_t(vocab)) : argmax(logits, size_t(vocab));
}

std::string Engine::refusal(const RequestSpec &spec) const {
  for (const std::vector<int32_t> *list : {&spec.prompt, &spec.draft})
    for (int32_t t : *list)
      if (t < 0 || t >= vocab)
        return "token id " + std::to_string(t) + " is outside the vocabulary (" +
               std::to_string(vocab) + " ids)";
  if (spec.prompt.empty())
    return "the prompt is empty";
  int64_t need = pagesFor(spec);
  if (need > pool->pages())
    return "needs " + std::to_string(need) + " pages of " + std::to_string(pool->pageBytes()) +
           " bytes, the pool has " + std::to_string(pool->pages());
  return {};
}

k3rt_status_t Engine::submit(const RequestSpec &spec, RequestHandle &handle) {
  if (std::string why = refusal(spec); !why.empty())
    return makeStatus(why.rfind("needs", 0) == 0 ? K3RT_RESOURCE_EXHAUSTED
                                                 : K3RT_INVALID_ARGUMENT,
                      why);
  auto r = std::make_unique<Request>();
  r->spec = spec;
  r->result.id = spec.id;
  if (spec.sampling.temperature > 0)
    r->sampler.emplace(spec.sampling);
  handle = nextHandle++;
  requests.emplace(handle, std::move(r));
  queue.push_back(handle);
  return nullptr;
}

void Engine::cancel(RequestHandle handle) {
  auto it = requests.find(handle);
  if (it == requests.end())
    return;
  auto q = std::find(queue.begin(), queue.end(), handle);
  if (q != queue.end()) {
    queue.erase(q);
  } else {
    running.erase(std::find(running.begin(), running.end(), handle));
    finish(*it->second);
  }
  requests.erase(it);
}

void Engine::step(std::vector<RequestEvent> &events) {
  events.clear();
  ++clock;
  // Admission in submission order under the page budget.
  while (!queue.empty() && int64_t(running.size()) < opt.maxBatch) {
    Request &r = *requests.at(queue.front());
    int64_t need = pagesFor(r.spec);
    std::vector<Block *> hit;
    if (opt.prefixCache)
      hit = cache->lookup(r.spec.prompt, r.spec.salt, clock);
    // Pin the hit before anything is allocated (allocation may evict);
    // pages it pins without sharing them count against the budget.
    for (Block *b : hit)
      cache->pin(b);
    need += pinnedOnly(hit);
    if (reserved + need > pool->pages()) {
      for (Block *b : hit)
        cache->unpin(b);
      if (!r.waited)
        ++counters.waits; // waits for running requests to finish
      r.waited = true;
      break;
    }
    reserved += need;
    r.charge = need;
    if (k3rt_status_t s = admit(r, hit)) {
      r.result.error = k3rt_status_message(s);
      k3rt_status_free(s);
      finish(r);
    }
    running.push_back(queue.front());
    queue.pop_front();
  }
  // One step for each running request: a prefill chunk or a decode. With
  // decode_batch, every plain decode step (no draft to verify) runs in one
  // call first, then each prefill chunk and speculative step on its own.
  std::set<Request *> batch;
  if (batched) {
    std::vector<Request *> decoding;
    for (RequestHandle h : running) {
      Request &r = *requests.at(h);
      const int64_t room = r.spec.maxNewTokens - int64_t(r.result.tokens.size()) - 1;
      if (!r.done && r.len >= int64_t(r.spec.prompt.size()) &&
          !(opt.speculate > 0 && room > 0 && !r.sampler))
        decoding.push_back(&r);
    }
    // A slot holder that does something else this step (a speculative
    // verify) takes its state back to its pages first.
    std::set<Request *> now(decoding.begin(), decoding.end());
    for (int64_t k = occupied - 1; k >= 0; --k)
      if (!now.count(slotOwner[size_t(k)]))
        fromSlot(*slotOwner[size_t(k)], /*keep=*/true);
    if (!decoding.empty())
      if (k3rt_status_t s = decodeBatch(decoding)) {
        for (Request *r : decoding) {
          r->result.error = k3rt_status_message(s);
          r->done = true;
        }
        k3rt_status_free(s);
      }
    batch.insert(decoding.begin(), decoding.end());
  }
  std::vector<RequestHandle> still;
  for (RequestHandle h : running) {
    Request &r = *requests.at(h);
    if (!r.done && !batch.count(&r)) {
      if (k3rt_status_t s = advance(r)) {
        r.result.error = k3rt_status_message(s);
        k3rt_status_free(s);
        r.done = true;
      }
    }
    RequestEvent e;
    e.handle = h;
    e.prefixHitTokens = r.result.prefixHitTokens;
    e.tokens.assign(r.result.tokens.begin() + long(r.reported), r.result.tokens.end());
    r.reported = r.result.tokens.size();
    if (r.done) {
      finish(r);
      counters.drafted += r.result.drafted;
      counters.accepted += r.result.accepted;
      e.done = true;
      e.result = std::move(r.result);
      requests.erase(h);
    } else {
      still.push_back(h);
    }
    if (e.done || !e.tokens.empty())
      events.push_back(std::move(e));
  }
  running = std::move(still);
}

k3rt_status_t Engine::run(const std::vector<RequestSpec> &specs,
                          std::vector<RequestResult> &results) {
  if (!idle())
    return makeStatus(K3RT_INVALID_ARGUMENT,
                      "Engine::run needs an idle engine (requests were submitted outside it)");
  results.assign(specs.size(), RequestResult());
  std::map<RequestHandle, size_t> index;
  for (size_t i = 0; i < specs.size(); ++i) {
    results[i].id = specs[i].id;
    RequestHandle h = 0;
    if (k3rt_status_t s = submit(specs[i], h)) {
      results[i].error = k3rt_status_message(s);
      k3rt_status_free(s);
      continue;
    }
    index[h] = i;
  }
  std::vector<RequestEvent> events;
  while (!idle()) {
    step(events);
    for (RequestEvent &e : events)
      if (e.done)
        results[index.at(e.handle)] = std::move(e.result);
  }
  return nullptr;
}

} // namespace k3rt
