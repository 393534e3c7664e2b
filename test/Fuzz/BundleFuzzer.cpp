//===- BundleFuzzer.cpp - the .k3b verifier from memory -------------------===//
//
// Part of k3. Invariant: k3rt_bundle_open_memory never reads out of bounds
// (ASan) and refuses with one line; a bundle that verifies is released
// cleanly. Running what verifies (kernels are machine code) waits for
// per-kernel checksums (issue 31, item 2).
//
//===----------------------------------------------------------------------===//

#include "runtime/include/k3rt/k3rt.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size) {
  // The API takes 64-byte-aligned bytes that outlive the bundle.
  void *data = std::aligned_alloc(64, (size + 63) / 64 * 64 + 64);
  std::memcpy(data, bytes, size);
  struct Free {
    void *p;
    ~Free() { std::free(p); }
  } freeData{data};
  k3rt_bundle_t *bundle = nullptr;
  if (k3rt_status_t s = k3rt_bundle_open_memory(data, size, &bundle)) {
    const char *m = k3rt_status_message(s);
    if (!*m || std::strchr(m, '\n')) {
      std::fprintf(stderr, "invariant broken: a refusal is one line\n");
      std::abort();
    }
    k3rt_status_free(s);
    return 0;
  }
  k3rt_bundle_release(bundle);
  return 0;
}
