//===- CacheTest.cpp - The page pool and the prefix cache -----------------===//
//
// Part of k3. Invariants of runtime/src/PrefixCache (CACHE.md §3-6) without
// a model: reference counts, the hash chain and its lookup cap, snapshots
// all or nothing, pinning, blocks of the current step, LRU leaf-first
// eviction that never takes what is pinned.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/PrefixCache.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

using namespace k3rt;

namespace {

constexpr int64_t kBlock = 4;

std::vector<int32_t> tokens(int64_t n, int32_t first = 0) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

/// Registers the blocks of `t` under `salt` (one fresh page each, as a
/// request's table would hold), with a snapshot after each listed block;
/// the request's own page references are dropped at the end, as when it
/// finishes.
std::vector<Block *> registerChain(PrefixCache &cache, PagePool &pool, const std::vector<int32_t> &t,
                                   uint64_t salt, std::vector<int64_t> snapshotsAt, uint64_t step) {
  std::vector<Block *> chain;
  std::vector<uint8_t> state(16, 7);
  for (int64_t b = 0; (b + 1) * kBlock <= int64_t(t.size()); ++b) {
    int32_t page = cache.allocatePage();
    EXPECT_GE(page, 0);
    Block *blk = cache.insert(chain.empty() ? nullptr : chain.back(), salt, &t[size_t(b * kBlock)], b,
                              {page}, 0, step);
    pool.release(page); // the request is done with it; the index keeps it
    if (std::find(snapshotsAt.begin(), snapshotsAt.end(), b) != snapshotsAt.end())
      EXPECT_TRUE(cache.addSnapshot(blk, state.data()));
    chain.push_back(blk);
  }
  return chain;
}

TEST(PagePool, ReferenceCountsAndRuns) {
  PagePool pool(8, 3);
  int32_t a = pool.allocate(), b = pool.allocate(), c = pool.allocate();
  EXPECT_EQ(pool.allocate(), -1);
  pool.retain(b);
  pool.release(b);
  EXPECT_EQ(pool.freePages(), 0);
  pool.release(b);
  EXPECT_EQ(pool.freePages(), 1);
  // A state of 20 bytes over a run of pages, in list order.
  std::vector<uint8_t> in(20), out(20);
  std::iota(in.begin(), in.end(), 1);
  int32_t d = pool.allocate();
  pool.write({c, a, d}, in.data(), 20);
  pool.read({c, a, d}, out.data(), 20);
  EXPECT_EQ(in, out);
  EXPECT_EQ(pool.data(a)[0], 9);
  // One tensor of the state (the engine's KDA inputs): 10 bytes from byte 5
  // of the run, across the first two pages, the rest untouched.
  std::vector<uint8_t> part(10, 0xAB), back(10);
  pool.write({c, a, d}, part.data(), 10, 5);
  pool.read({c, a, d}, back.data(), 10, 5);
  EXPECT_EQ(part, back);
  pool.read({c, a, d}, out.data(), 20);
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(out[size_t(i)], i >= 5 && i < 15 ? 0xAB : i + 1) << "byte " << i;
  // A read that starts on a page boundary.
  pool.read({c, a, d}, back.data(), 4, 16);
  EXPECT_EQ(back[0], 17);
  EXPECT_EQ(back[3], 20);
  // A write across all three pages (bytes 1..18), and one of no bytes.
  std::vector<uint8_t> wide(18, 0xCD);
  pool.write({c, a, d}, wide.data(), 18, 1);
  pool.write({c, a, d}, nullptr, 0, 20);
  pool.read({c, a, d}, out.data(), 20);
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(pool.data(a)[0], 0xCD);
  EXPECT_EQ(out[18], 0xCD);
  EXPECT_EQ(out[19], 20);
}

TEST(PrefixCache, LookupFollowsTheChainUpToTheLastSnapshot) {
  PagePool pool(64, 64);
  PrefixCache cache(pool, kBlock, 16);
  std::vector<int32_t> t = tokens(20); // 5 blocks
  registerChain(cache, pool, t, 1, {1, 3}, 1);
  EXPECT_EQ(cache.blocks(), 5);
  EXPECT_EQ(cache.snapshots(), 2);
  // The whole prompt: at most ⌊19/4⌋ = 4 blocks, cut back to the snapshot
  // after block 3.
  EXPECT_EQ(cache.lookup(t, 1, 2).size(), 4u);
  // Exactly 4 blocks long: one token must be computed, so 3 blocks at most;
  // the deepest snapshot within them is after block 1.
  EXPECT_EQ(cache.lookup(tokens(16), 1, 2).size(), 2u);
  // Divergence inside block 2 keeps the blocks before it.
  std::vector<int32_t> branch = t;
  branch[9] = 99;
  EXPECT_EQ(cache.lookup(branch, 1, 2).size(), 2u);
  // Another salt starts another chain; nothing from this step matches.
  EXPECT_TRUE(cache.lookup(t, 2, 2).empty());
  EXPECT_TRUE(cache.lookup(t, 1, 1).empty());
}

TEST(PrefixCache, SameContentIsRegisteredOnce) {
  PagePool pool(64, 64);
  PrefixCache cache(pool, kBlock, 16);
  std::vector<int32_t> t = tokens(8);
  std::vector<Block *> a = registerChain(cache, pool, t, 1, {}, 1);
  std::vector<Block *> b = registerChain(cache, pool, t, 1, {}, 1);
  EXPECT_EQ(a, b);
  EXPECT_EQ(cache.blocks(), 2);
  // The duplicate's pages went back to the pool.
  EXPECT_EQ(pool.freePages(), 62);
}

TEST(PrefixCache, SnapshotsAreAllOrNothing) {
  // Snapshots of 3 pages; after the blocks, 2 pages are left.
  PagePool pool(8, 6);
  PrefixCache cache(pool, kBlock, 20);
  std::vector<int32_t> t = tokens(16);
  std::vector<Block *> chain = registerChain(cache, pool, t, 1, {}, 1);
  for (Block *b : chain)
    cache.pin(b); // nothing can be evicted
  std::vector<uint8_t> state(20, 3);
  EXPECT_FALSE(cache.addSnapshot(chain[3], state.data()));
  EXPECT_EQ(cache.snapshots(), 0);
  EXPECT_EQ(pool.freePages(), 2); // the two it took are back
  // Unpinned, the leaf (block 3) is evicted to make room; block 1, pinned
  // while its snapshot finds pages, keeps it whole.
  for (Block *b : chain)
    cache.unpin(b);
  EXPECT_TRUE(cache.addSnapshot(chain[1], state.data()));
  EXPECT_EQ(cache.blocks(), 3);
  EXPECT_EQ(cache.snapshots(), 1);
  EXPECT_EQ(pool.freePages(), 0);
}

TEST(PrefixCache, EvictionIsLeastRecentlyUsedLeafFirstAndSparesPins) {
  PagePool pool(64, 8);
  PrefixCache cache(pool, kBlock, 16);
  std::vector<Block *> a = registerChain(cache, pool, tokens(8, 0), 1, {}, 1);   // 2 blocks
  std::vector<Block *> b = registerChain(cache, pool, tokens(8, 100), 1, {}, 1); // 2 blocks
  cache.touch(a[0]);
  cache.touch(a[1]); // chain a is now the most recent
  cache.pin(b[1]);
  // b[1] is pinned, b[0] has a child, a[0] has a child: only a[1] can go.
  EXPECT_TRUE(cache.evictOne());
  EXPECT_EQ(cache.blocks(), 3);
  EXPECT_TRUE(cache.lookup(tokens(9, 0), 1, 2).empty()); // no snapshot anyway
  EXPECT_TRUE(cache.evictOne()); // then a[0], now a leaf
  EXPECT_FALSE(cache.evictOne()); // b[0] has a pinned child
  EXPECT_EQ(cache.blocks(), 2);
  cache.unpin(b[1]);
  cache.clear();
  EXPECT_EQ(cache.blocks(), 0);
  EXPECT_EQ(pool.freePages(), 8);
}

TEST(PrefixCache, SnapshotsGoOnTheirOwnShallowFirstAndNotWhileRestoring) {
  PagePool pool(16, 32);
  PrefixCache cache(pool, kBlock, 16);
  std::vector<Block *> c = registerChain(cache, pool, tokens(12), 1, {0, 1, 2}, 1);
  for (Block *b : c)
    cache.pin(b); // running requests pin blocks, not their snapshots
  // All three snapshots have distinct ages; the oldest (block 0) goes first.
  EXPECT_TRUE(cache.evictOne());
  EXPECT_FALSE(c[0]->snapshot);
  EXPECT_EQ(cache.blocks(), 3); // the block stays: only its snapshot went
  ++c[1]->snapshot->pins;       // a restore in progress
  EXPECT_TRUE(cache.evictOne());
  EXPECT_TRUE(c[1]->snapshot);
  EXPECT_FALSE(c[2]->snapshot);
  EXPECT_FALSE(cache.evictOne());
  --c[1]->snapshot->pins;
  for (Block *b : c)
    cache.unpin(b);
  cache.clear();
  EXPECT_EQ(pool.freePages(), 32);
}

TEST(PrefixCache, AllocationEvictsOnlyWhatIsFree) {
  PagePool pool(64, 4);
  PrefixCache cache(pool, kBlock, 16);
  std::vector<Block *> c = registerChain(cache, pool, tokens(12), 1, {}, 1); // 3 pages
  cache.pin(c[2]);
  int32_t p = cache.allocatePage(); // the free one
  int32_t q = cache.allocatePage(); // nothing evictable: a pinned leaf
  EXPECT_GE(p, 0);
  EXPECT_EQ(q, -1);
  EXPECT_EQ(cache.blocks(), 3);
  cache.unpin(c[2]);
  q = cache.allocatePage(); // now the leaf goes
  EXPECT_GE(q, 0);
  EXPECT_EQ(cache.blocks(), 2);
  pool.release(p);
  pool.release(q);
}

} // namespace
