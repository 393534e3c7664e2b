//===- Format.h - The .k3b container header ---------------------*- C++ -*-===//
//
// Part of k3. `[64-byte header | flatbuffer | pad to 64 | weight blobs]`
// (STYLE.md §9). Shared by the runtime (reader) and the compiler (writer).
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_SRC_FORMAT_H
#define RUNTIME_SRC_FORMAT_H

#include <cstddef>
#include <cstdint>

namespace k3rt {

/// Version of the container and its schema; a reader refuses any other.
/// 2: an MLA cache input with `appends_rows` is passed with room for the
/// call's rows (version 1 passed the cached rows alone).
constexpr uint32_t kFormatVersion = 2;
/// First 8 bytes of every .k3b. The high-bit byte and the CR LF pair catch
/// text-mode transfers (as PNG does).
constexpr char kMagic[8] = {'\x89', 'K', '3', 'B', '\r', '\n', '\x1a', '\n'};
/// Every section and weight blob starts on this boundary.
constexpr uint64_t kAlignment = 64;
/// header.flags: the weight blobs were left out (k3-compile --omit-weights):
/// the file ends at weights_offset, and weights_size is the region a runtime
/// fills with synthetic values (k3rt_bundle_open_synthetic) before use.
constexpr uint32_t kFlagWeightsOmitted = 1;

/// Little-endian on disk, like the flatbuffer.
struct FileHeader {
  char magic[8];
  uint32_t formatVersion;
  uint32_t flags; ///< 0 or kFlagWeightsOmitted
  uint64_t flatbufferOffset;
  uint64_t flatbufferSize;
  uint64_t weightsOffset;
  uint64_t weightsSize;
  uint64_t fileSize;
  uint64_t reserved;
};
static_assert(sizeof(FileHeader) == 64, "the header is 64 bytes");

inline uint64_t alignUp(uint64_t n) {
  return (n + kAlignment - 1) / kAlignment * kAlignment;
}

/// FNV-1a 32-bit: the weights' checksum.
inline uint32_t checksum(const uint8_t *data, size_t size) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < size; ++i)
    h = (h ^ data[i]) * 16777619u;
  return h;
}

} // namespace k3rt

#endif // RUNTIME_SRC_FORMAT_H
