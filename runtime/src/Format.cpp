//===- Format.cpp - The .k3b checksums ------------------------------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Format.h"

// The whole of xxHash, in this file alone.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <new>

namespace k3rt {

uint64_t hash64(const void *data, size_t size) { return XXH3_64bits(data, size); }

Hash64::Hash64() : state(XXH3_createState()) {
  if (!state)
    throw std::bad_alloc();
  XXH3_64bits_reset(static_cast<XXH3_state_t *>(state));
}

Hash64::~Hash64() { XXH3_freeState(static_cast<XXH3_state_t *>(state)); }

void Hash64::update(const void *data, size_t size) {
  if (size)
    XXH3_64bits_update(static_cast<XXH3_state_t *>(state), data, size);
}

uint64_t Hash64::digest() const {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t *>(state));
}

uint64_t codeChecksum(const void *object, size_t objectSize, const void *ptx, size_t ptxSize,
                      const void *cubin, size_t cubinSize) {
  Hash64 hash;
  hash.update(object, objectSize);
  hash.update(ptx, ptxSize);
  hash.update(cubin, cubinSize);
  return hash.digest();
}

} // namespace k3rt
