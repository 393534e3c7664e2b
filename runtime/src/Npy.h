//===- Npy.h - NumPy .npy files ---------------------------------*- C++ -*-===//
//
// Part of k3. Reads and writes the NumPy array format (versions 1-3,
// C order) for k3-run's --dump-logits, --input and --output. Every header
// field is checked; a bad file gives one line naming the problem.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_SRC_NPY_H
#define RUNTIME_SRC_NPY_H

#include <cstdint>
#include <string>
#include <vector>

namespace k3rt {

struct NpyArray {
  /// NumPy dtype string: "<f4", "<i4", "<i8", "<f2", "|u1".
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data; ///< C order, little-endian
  int64_t elementBytes() const;
  int64_t numElements() const;
};

bool readNpy(const std::string &path, NpyArray &out, std::string &error);
bool writeNpy(const std::string &path, const NpyArray &array,
              std::string &error);

/// Convenience: a float32 array of `shape` from `values`.
NpyArray makeF32(const std::vector<int64_t> &shape, const float *values);

} // namespace k3rt

#endif // RUNTIME_SRC_NPY_H
