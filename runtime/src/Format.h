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
// The header is copied to and from the file as it is in memory.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "a .k3b is little-endian");

inline uint64_t alignUp(uint64_t n) {
  return (n + kAlignment - 1) / kAlignment * kAlignment;
}

/// XXH3-64 (Debian's libxxhash-dev, compiled into Format.cpp with
/// XXH_INLINE_ALL, so that the runtime carries no extra shared library onto
/// a GPU machine): the checksum of the flatbuffer, of kernel code and of
/// weights. Not a signature: it catches corruption, and a .k3b is code to
/// be trusted like any executable.
uint64_t hash64(const void *data, size_t size);

/// Streams parts (a weight stacked from per-expert tensors) into one hash64.
class Hash64 {
public:
  Hash64();
  ~Hash64();
  Hash64(const Hash64 &) = delete;
  Hash64 &operator=(const Hash64 &) = delete;
  void update(const void *data, size_t size);
  uint64_t digest() const;

private:
  void *state; ///< XXH3_state_t, opaque here
};

/// A kernel's `code_checksum`: hash64 of its object, then PTX, then cubin
/// (any may be empty). The writer records it, the reader checks it.
uint64_t codeChecksum(const void *object, size_t objectSize, const void *ptx, size_t ptxSize,
                      const void *cubin, size_t cubinSize);

} // namespace k3rt

#endif // RUNTIME_SRC_FORMAT_H
