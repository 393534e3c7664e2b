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

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace k3rt {

/// Version of the container and its schema; a reader refuses any other.
/// 2: an MLA cache input with `appends_rows` is passed with room for the
/// call's rows (version 1 passed the cached rows alone).
/// 3: XXH3-64 checksums: the flatbuffer's in the header, each kernel's code,
/// each weight's (version 2 had FNV-1a 32-bit on weights alone).
constexpr uint32_t kFormatVersion = 3;
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
  /// hash64 of the flatbuffer's bytes: a flipped byte in any table (a
  /// binding, a grid, a shape) is refused before anything reads it.
  uint64_t flatbufferChecksum;
};
static_assert(sizeof(FileHeader) == 64, "the header is 64 bytes");

inline uint64_t alignUp(uint64_t n) {
  return (n + kAlignment - 1) / kAlignment * kAlignment;
}

/// XXH3-64 (Debian's libxxhash-dev, inlined so that the runtime carries no
/// extra shared library onto a GPU machine): the checksum of the flatbuffer,
/// of kernel code and of weights. Not a signature: it catches corruption,
/// and a .k3b is code to be trusted like any executable.
inline uint64_t hash64(const void *data, size_t size) {
  return XXH3_64bits(data, size);
}

/// Streams parts (a weight stacked from per-expert tensors, a kernel's
/// object, PTX and cubin) into one hash64.
class Hash64 {
public:
  Hash64() { XXH3_64bits_reset(&state); }
  void update(const void *data, size_t size) {
    if (size)
      XXH3_64bits_update(&state, data, size);
  }
  uint64_t digest() const { return XXH3_64bits_digest(&state); }

private:
  XXH3_state_t state;
};

} // namespace k3rt

#endif // RUNTIME_SRC_FORMAT_H
