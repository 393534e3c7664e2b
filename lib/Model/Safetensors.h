//===- Safetensors.h - Memory-mapped safetensors shards ---------*- C++ -*-===//
//
// Part of k3. Reads one or more `*.safetensors` files (with or without
// `model.safetensors.index.json`) by mapping them read-only; tensors are
// views into the mappings, never copies. Every header field is checked
// before use. Also writes safetensors files (synthetic checkpoints).
//
//===----------------------------------------------------------------------===//

#ifndef LIB_MODEL_SAFETENSORS_H
#define LIB_MODEL_SAFETENSORS_H

#include "lib/Model/TensorTable.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace k3::model {

/// A tensor inside a mapped file.
struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t *data = nullptr;
  size_t bytes = 0;
  std::string file; ///< the shard it lives in, for messages
};

/// A read-only memory mapping, unmapped on destruction.
class MappedFile {
public:
  static std::unique_ptr<MappedFile> open(const std::string &path,
                                          std::string &error);
  ~MappedFile();
  const uint8_t *data() const { return base; }
  size_t size() const { return length; }

private:
  MappedFile() = default;
  const uint8_t *base = nullptr;
  size_t length = 0;
};

/// Parses and checks one safetensors image: 8-byte little-endian header
/// length, JSON header, data. `file` names it in messages.
std::optional<std::vector<TensorView>>
parseSafetensors(const uint8_t *data, size_t size, const std::string &file,
                 std::string &error);

/// All tensors of a checkpoint directory, across shards.
class WeightStore {
public:
  /// Opens the shards listed by `model.safetensors.index.json` when present,
  /// else every `*.safetensors` file of `dir` (none is not an error: a
  /// config-only directory has an empty store).
  static std::unique_ptr<WeightStore> open(const std::string &dir,
                                           std::string &error);

  const TensorView *find(const std::string &name) const;
  const std::map<std::string, TensorView> &tensors() const { return byName; }
  bool empty() const { return byName.empty(); }
  size_t numFiles() const { return files.size(); }

private:
  std::vector<std::unique_ptr<MappedFile>> files;
  std::map<std::string, TensorView> byName;
};

/// A tensor to write.
struct OwnedTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

/// Writes `tensors` as one safetensors file (header padded to 8 bytes).
bool writeSafetensors(const std::string &path,
                      const std::vector<const OwnedTensor *> &tensors,
                      std::string &error);

} // namespace k3::model

#endif // LIB_MODEL_SAFETENSORS_H
