//===- PrefixCache.cpp - One page pool, prefix blocks, snapshots ----------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/PrefixCache.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace k3rt {

PagePool::PagePool(int64_t pageBytes, int64_t pages, std::shared_ptr<uint8_t> arena)
    : bytesPerPage(pageBytes),
      arena(arena ? std::move(arena)
                  : std::shared_ptr<uint8_t>(new uint8_t[size_t(pageBytes * pages)],
                                             std::default_delete<uint8_t[]>())),
      refcount(size_t(pages), 0) {
  // Low page numbers first.
  for (int64_t p = pages - 1; p >= 0; --p)
    freeList.push_back(int32_t(p));
}

int32_t PagePool::allocate() {
  if (freeList.empty())
    return -1;
  int32_t p = freeList.back();
  freeList.pop_back();
  refcount[p] = 1;
  return p;
}

void PagePool::retain(int32_t page) {
  assert(refcount[page] > 0 && "retaining a free page");
  ++refcount[page];
}

void PagePool::release(int32_t page) {
  assert(refcount[page] > 0 && "releasing a free page");
  if (--refcount[page] == 0)
    freeList.push_back(page);
}

void PagePool::write(const std::vector<int32_t> &pages, const uint8_t *src, int64_t bytes,
                     int64_t offset) {
  for (size_t i = size_t(offset / bytesPerPage); bytes > 0; ++i) {
    int64_t at = offset % bytesPerPage, n = std::min(bytes, bytesPerPage - at);
    std::memcpy(data(pages[i]) + at, src, size_t(n));
    src += n;
    bytes -= n;
    offset += n;
  }
}

void PagePool::read(const std::vector<int32_t> &pages, uint8_t *dst, int64_t bytes,
                    int64_t offset) const {
  for (size_t i = size_t(offset / bytesPerPage); bytes > 0; ++i) {
    int64_t at = offset % bytesPerPage, n = std::min(bytes, bytesPerPage - at);
    std::memcpy(dst, data(pages[i]) + at, size_t(n));
    dst += n;
    bytes -= n;
    offset += n;
  }
}

PrefixCache::PrefixCache(PagePool &pool, int64_t blockTokens, int64_t snapshotBytes)
    : pool(pool), blockSize(blockTokens), snapshotSize(snapshotBytes) {}

PrefixCache::~PrefixCache() {
  // Release every page the index holds (the pool may outlive it).
  for (auto &[hash, b] : all) {
    for (int32_t p : b->pages)
      pool.release(p);
    if (b->snapshot)
      for (int32_t p : b->snapshot->pages)
        pool.release(p);
  }
}

int64_t PrefixCache::snapshotPages() const {
  return (snapshotSize + pool.pageBytes() - 1) / pool.pageBytes();
}

uint64_t PrefixCache::chainHash(uint64_t parentHash, const int32_t *tokens) const {
  // FNV-1a over the parent hash and the block's token ids; every match
  // also compares the tokens, so a collision costs a miss, never a wrong hit.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xFF;
      h *= 1099511628211ull;
    }
  };
  mix(parentHash);
  for (int64_t i = 0; i < blockSize; ++i)
    mix(uint64_t(uint32_t(tokens[i])));
  return h;
}

Block *PrefixCache::find(Block *parent, uint64_t salt, const int32_t *tokens) {
  uint64_t h = chainHash(parent ? parent->hash : salt, tokens);
  auto [lo, hi] = all.equal_range(h);
  for (auto it = lo; it != hi; ++it) {
    Block *b = it->second.get();
    if (b->parent == parent && (parent || b->salt == salt) &&
        std::equal(b->tokens.begin(), b->tokens.end(), tokens))
      return b;
  }
  return nullptr;
}

std::vector<Block *> PrefixCache::lookup(const std::vector<int32_t> &prompt, uint64_t salt,
                                         uint64_t step) {
  std::vector<Block *> chain;
  if (prompt.empty())
    return chain;
  // At least one token must be computed: the last block may not be whole.
  const int64_t cap = (int64_t(prompt.size()) - 1) / blockSize;
  Block *parent = nullptr;
  for (int64_t i = 0; i < cap; ++i) {
    Block *b = find(parent, salt, &prompt[size_t(i * blockSize)]);
    // Blocks registered in this step may not be written yet.
    if (!b || b->step == step)
      break;
    chain.push_back(b);
    parent = b;
  }
  // Restoring needs the KDA state at the hit: cut back to a snapshot.
  while (!chain.empty() && !chain.back()->snapshot)
    chain.pop_back();
  return chain;
}

Block *PrefixCache::insert(Block *parent, uint64_t salt, const int32_t *tokens, int64_t index,
                           const std::vector<int32_t> &pages, int64_t row, uint64_t step) {
  if (Block *b = find(parent, salt, tokens))
    return b;
  auto b = std::make_unique<Block>();
  b->hash = chainHash(parent ? parent->hash : salt, tokens);
  b->salt = salt;
  b->parent = parent;
  b->index = index;
  b->tokens.assign(tokens, tokens + blockSize);
  b->pages = pages;
  for (int32_t p : pages)
    pool.retain(p);
  b->row = row;
  b->step = step;
  b->lastUse = ++clock;
  Block *raw = b.get();
  if (parent)
    parent->children.insert(raw);
  all.emplace(raw->hash, std::move(b));
  return raw;
}

bool PrefixCache::addSnapshot(Block *block, const uint8_t *data) {
  if (block->snapshot)
    return true;
  // Pinned while its pages are found, so that eviction cannot take it.
  pin(block);
  auto s = std::make_unique<Snapshot>();
  for (int64_t i = 0; i < snapshotPages(); ++i) {
    int32_t p = allocatePage();
    if (p < 0) {
      for (int32_t q : s->pages)
        pool.release(q);
      unpin(block);
      return false;
    }
    s->pages.push_back(p);
  }
  pool.write(s->pages, data, snapshotSize);
  s->lastUse = ++clock;
  block->snapshot = std::move(s);
  unpin(block);
  return true;
}

void PrefixCache::touch(Block *b) {
  b->lastUse = ++clock;
  if (b->snapshot)
    b->snapshot->lastUse = b->lastUse;
}

int32_t PrefixCache::allocatePage() {
  int32_t p = pool.allocate();
  while (p < 0 && evictOne())
    p = pool.allocate();
  return p;
}

bool PrefixCache::evictOne() {
  // The oldest unpinned snapshot and the oldest unpinned leaf block; the
  // older of the two goes. At equal age a shallower snapshot goes first (a
  // hit needs only the deepest one on its path).
  Block *snap = nullptr, *leaf = nullptr;
  for (auto &[hash, up] : all) {
    Block *b = up.get();
    if (b->snapshot && !b->snapshot->pins &&
        (!snap || b->snapshot->lastUse < snap->snapshot->lastUse ||
         (b->snapshot->lastUse == snap->snapshot->lastUse && b->index < snap->index)))
      snap = b;
    if (!b->pins && b->children.empty() && (!leaf || b->lastUse < leaf->lastUse) &&
        !(b->snapshot && b->snapshot->pins))
      leaf = b;
  }
  if (!snap && !leaf)
    return false;
  ++evicted;
  if (snap && (!leaf || snap->snapshot->lastUse <= leaf->lastUse)) {
    for (int32_t p : snap->snapshot->pages)
      pool.release(p);
    snap->snapshot.reset();
    return true;
  }
  erase(leaf);
  return true;
}

void PrefixCache::erase(Block *b) {
  for (int32_t p : b->pages)
    pool.release(p);
  if (b->snapshot)
    for (int32_t p : b->snapshot->pages)
      pool.release(p);
  if (b->parent)
    b->parent->children.erase(b);
  auto [lo, hi] = all.equal_range(b->hash);
  for (auto it = lo; it != hi; ++it)
    if (it->second.get() == b) {
      all.erase(it);
      return;
    }
}

void PrefixCache::clear() {
  while (evictOne()) {
  }
}

int64_t PrefixCache::snapshots() const {
  int64_t n = 0;
  for (auto &[hash, b] : all)
    n += b->snapshot ? 1 : 0;
  return n;
}

} // namespace k3rt
