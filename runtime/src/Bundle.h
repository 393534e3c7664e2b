//===- Bundle.h - A verified .k3b in memory ---------------------*- C++ -*-===//
//
// Part of k3. The C++ view behind k3rt_bundle_t, used by the runtime and by
// k3-dump: every accessor is safe because open() verified the whole file.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_SRC_BUNDLE_H
#define RUNTIME_SRC_BUNDLE_H

#include "runtime/include/k3rt/k3rt.h"
#include "runtime/schemas/k3_bundle_generated.h"
#include "runtime/src/Format.h"

#include <atomic>
#include <mutex>
#include <cstdint>
#include <string>

struct k3rt_bundle_s {
  std::atomic<int> refs{1};
  const uint8_t *data = nullptr;
  size_t size = 0;
  bool mapped = false; ///< unmap on release
  /// The file with its weight region filled in (k3rt_bundle_open_synthetic),
  /// 64-byte aligned like a mapping's blobs; `data` points here. Freed on
  /// release.
  uint8_t *owned = nullptr;
  k3rt::FileHeader header;
  const k3::bundle::Bundle *root = nullptr;
  /// k3rt::verifyWeights' verdict, computed by the first session and kept:
  /// the bytes do not change while the bundle lives.
  std::once_flag weightsChecked;
  k3rt_status_code_t weightsCode = K3RT_OK;
  std::string weightsError;
};

namespace k3rt {

/// Checks `size` bytes at `data` as a .k3b: header, flatbuffer verifier, then
/// every index, offset and size. On failure returns a status naming the bad
/// field; on success sets `header` and `root`.
k3rt_status_t verifyBundle(const uint8_t *data, size_t size,
                           FileHeader &header,
                           const k3::bundle::Bundle *&root);

/// hash64 of a kernel's object, PTX and cubin, in that order: what the
/// writer records as `code_checksum` and verifyBundle checks.
uint64_t kernelChecksum(const k3::bundle::Kernel &kernel);

/// Every weight blob against its recorded checksum, once per bundle (later
/// calls return the first verdict); the first mismatch is one line naming
/// the weight. Nothing to check when the weights were
/// omitted (filled-in synthetic weights are checked by nobody: the runtime
/// made them).
k3rt_status_t verifyWeights(const k3rt_bundle_s &bundle);

/// Bytes a weight of `dtype` and `shape` occupies (F4E2M1FN: two per byte);
/// -1 if the shape is negative, overflows, or (F4E2M1FN) has no even last
/// dimension.
int64_t weightBytes(k3::bundle::DType dtype, const flatbuffers::Vector<int64_t> &shape);

const char *dtypeName(k3::bundle::DType dtype);

/// True when the bundle's weights were left out at compile time and not
/// filled in: nothing may read them.
inline bool weightsMissing(const k3rt_bundle_s &b) {
  return (b.header.flags & kFlagWeightsOmitted) && !b.owned;
}

} // namespace k3rt

#endif // RUNTIME_SRC_BUNDLE_H
