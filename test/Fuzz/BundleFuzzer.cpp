//===- BundleFuzzer.cpp - the .k3b verifier, loader and a tiny run --------===//
//
// Part of k3. Each input is opened twice from memory:
//  1. as it is: k3rt_bundle_open_memory never reads out of bounds (ASan)
//     and refuses with one line; a bundle that verifies (checksums
//     included) is loaded and runs two tokens, or refuses with one line.
//  2. with the header's flatbuffer checksum recomputed, so that mutated
//     tables reach the semantic checks behind it (a checksum would stop
//     nearly every mutant first). What verifies this way is not run: its
//     tables no longer match the code the compiler wrote for them, which
//     only a forged file can achieve, and a .k3b is code to trust.
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/Fuzz.h"
#include "runtime/include/k3rt/k3rt.h"
#include "runtime/src/Format.h"
#include "runtime/src/Status.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

void requireOneLine(k3rt_status_t s) { k3fuzz::requireOneLine(k3rt::takeMessage(s)); }

/// Opens `size` bytes (64-byte-aligned, outliving the bundle, as the API
/// wants); runs what verifies when `run` is set.
void open(const uint8_t *bytes, size_t size, bool run) {
  void *data = std::aligned_alloc(64, (size + 63) / 64 * 64 + 64);
  std::memcpy(data, bytes, size);
  k3rt_bundle_t *bundle = nullptr;
  if (k3rt_status_t s = k3rt_bundle_open_memory(data, size, &bundle)) {
    requireOneLine(s);
    std::free(data);
    return;
  }
  k3rt_session_t *session = nullptr;
  if (!run) {
  } else if (k3rt_status_t s = k3rt_session_create(bundle, &session)) {
    requireOneLine(s);
  } else {
    std::vector<float> logits(k3rt_session_vocab_size(session));
    const int32_t ids[2] = {1, 2};
    if (logits.size() < 3) {
    } else if (k3rt_status_t s = k3rt_session_append(session, ids, 2, logits.data())) {
      requireOneLine(s);
    }
    k3rt_session_release(session);
  }
  k3rt_bundle_release(bundle);
  std::free(data);
}

} // namespace

int k3fuzz::testOneInput(const uint8_t *bytes, size_t size) {
  open(bytes, size, /*run=*/true);
  k3rt::FileHeader h;
  if (size < sizeof h)
    return 0;
  std::memcpy(&h, bytes, sizeof h);
  if (h.flatbufferOffset != sizeof h || h.flatbufferSize > size - sizeof h)
    return 0;
  uint64_t sum = k3rt::hash64(bytes + sizeof h, h.flatbufferSize);
  if (sum == h.flatbufferChecksum)
    return 0;
  std::vector<uint8_t> fixed(bytes, bytes + size);
  std::memcpy(fixed.data() + offsetof(k3rt::FileHeader, flatbufferChecksum), &sum, sizeof sum);
  open(fixed.data(), size, /*run=*/false);
  return 0;
}
