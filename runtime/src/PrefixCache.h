//===- PrefixCache.h - One page pool, 512-token prefix blocks, snapshots -*- C++ -*-===//
//
// Part of k3. The hybrid cache of CACHE.md: one pool of equal pages holds
// MLA latent rows (a page is `pageTokens` rows of one MLA layer) and KDA
// states (a request's working state, or a snapshot, is a run of pages).
// Full, verified blocks of `blockTokens` tokens are registered under a hash
// chain, `h_i = H(h_{i-1}, tokens of block i)` seeded by a salt, and share
// their MLA pages read-only; a block may also carry the KDA snapshot taken
// at its end (all KDA layers, all or nothing).
//
// Ownership: a page's reference count is the number of holders (a running
// request's block table or working state, an index block, a snapshot); it is
// free at zero. Blocks pinned by running requests are never evicted, nor
// are snapshots being restored; the others go least recently used first,
// MLA blocks leaf first (a block with registered children stays) and
// snapshots on their own (a running request has copied its snapshot
// already, so a pinned block's snapshot may go).
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_SRC_PREFIXCACHE_H
#define RUNTIME_SRC_PREFIXCACHE_H

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <vector>

namespace k3rt {

/// Equal-size pages in one arena, reference counted.
class PagePool {
public:
  /// `arena`, when given, is memory of at least pageBytes · pages bytes the
  /// pool uses instead of its own (a kept buffer the kernels bind in place).
  PagePool(int64_t pageBytes, int64_t pages, std::shared_ptr<uint8_t> arena = nullptr);
  int64_t pageBytes() const { return bytesPerPage; }
  int64_t pages() const { return int64_t(refcount.size()); }
  int64_t freePages() const { return int64_t(freeList.size()); }
  /// A free page holding one reference, or -1 when none is free.
  int32_t allocate();
  void retain(int32_t page);
  /// Drops one reference; at zero the page is free again.
  void release(int32_t page);
  int32_t refs(int32_t page) const { return refcount[page]; }
  uint8_t *data(int32_t page) { return arena.get() + size_t(page) * bytesPerPage; }
  const uint8_t *data(int32_t page) const { return arena.get() + size_t(page) * bytesPerPage; }
  /// `bytes` laid over the run `pages` in order (a state, a snapshot),
  /// from byte `offset` of the run (one tensor of a state).
  void write(const std::vector<int32_t> &pages, const uint8_t *src, int64_t bytes,
             int64_t offset = 0);
  void read(const std::vector<int32_t> &pages, uint8_t *dst, int64_t bytes,
            int64_t offset = 0) const;

private:
  int64_t bytesPerPage;
  /// Not zeroed: untouched pages cost no memory.
  std::shared_ptr<uint8_t> arena;
  std::vector<int32_t> refcount;
  std::vector<int32_t> freeList;
};

/// The KDA state of every KDA layer after some block, in its own pages.
struct Snapshot {
  std::vector<int32_t> pages;
  uint64_t lastUse = 0;
  int32_t pins = 0; ///< held while a restore copies it
};

/// One registered block: `tokens` after its parent's chain.
struct Block {
  uint64_t hash = 0;
  uint64_t salt = 0; ///< the chain's seed (checked at its first block)
  Block *parent = nullptr;
  int64_t index = 0; ///< block number: rows [index·B, (index+1)·B)
  std::vector<int32_t> tokens;
  /// Per MLA layer, the page holding this block's rows (from row `row`).
  std::vector<int32_t> pages;
  int64_t row = 0;
  std::unique_ptr<Snapshot> snapshot;
  std::set<Block *> children; ///< by identity: siblings may share a hash
  int32_t pins = 0;
  uint64_t lastUse = 0;
  uint64_t step = 0; ///< the scheduling step that registered it
};

class PrefixCache {
public:
  PrefixCache(PagePool &pool, int64_t blockTokens, int64_t snapshotBytes);
  ~PrefixCache();

  int64_t blockTokens() const { return blockSize; }
  int64_t snapshotPages() const;

  /// The longest usable hit for `prompt` under `salt` (CACHE.md §5): the
  /// blocks of the longest registered chain of full blocks, at most
  /// ⌊(len − 1)/B⌋ of them and none registered in `step`, cut back to the
  /// deepest one with a snapshot. Empty when nothing is usable.
  std::vector<Block *> lookup(const std::vector<int32_t> &prompt, uint64_t salt, uint64_t step);

  /// The block after `parent` (null: the chain's start under `salt`) with
  /// these tokens, if registered.
  Block *find(Block *parent, uint64_t salt, const int32_t *tokens);
  /// Registers a block holding `pages` (retained) from `row`; an existing
  /// block with the same content is returned instead (its pages are kept).
  Block *insert(Block *parent, uint64_t salt, const int32_t *tokens, int64_t index,
                const std::vector<int32_t> &pages, int64_t row, uint64_t step);
  /// Stores `data` (snapshotBytes) as `block`'s snapshot unless it has one;
  /// false when no pages can be found for it (nothing is stored).
  bool addSnapshot(Block *block, const uint8_t *data);

  void pin(Block *b) { ++b->pins; }
  void unpin(Block *b) { --b->pins; }
  /// Marks `b` used now (LRU).
  void touch(Block *b);

  /// A page, evicting unpinned blocks and snapshots (oldest first) when the
  /// pool has none free; -1 when nothing more can be evicted.
  int32_t allocatePage();
  /// Evicts the least recently used unpinned leaf block or snapshot; false
  /// when there is none.
  bool evictOne();
  /// Drops every unpinned block and snapshot.
  void clear();

  int64_t blocks() const { return int64_t(all.size()); }
  int64_t snapshots() const;
  int64_t evictions() const { return evicted; }

private:
  void erase(Block *b);
  uint64_t chainHash(uint64_t parentHash, const int32_t *tokens) const;

  PagePool &pool;
  int64_t blockSize;
  int64_t snapshotSize;
  uint64_t clock = 0;
  int64_t evicted = 0;
  /// Registered blocks by hash (content is checked on every match).
  std::multimap<uint64_t, std::unique_ptr<Block>> all;
};

} // namespace k3rt

#endif // RUNTIME_SRC_PREFIXCACHE_H
