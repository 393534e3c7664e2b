//===- TensorTable.h - Every text tensor of a K3 checkpoint -----*- C++ -*-===//
//
// Part of k3. The names, storage shapes and dtypes of K3_CHECKPOINT.md §3 for
// a configuration: one list used by the loader's checks, the synthetic
// writer, the parameter count, the importer and the reference forward.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_MODEL_TENSORTABLE_H
#define LIB_MODEL_TENSORTABLE_H

#include "lib/Model/Config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace k3::model {

/// Safetensors dtypes k3 reads.
enum class DType { F32, BF16, F16, U8 };

const char *dtypeName(DType t);
/// Parses a safetensors dtype string ("F32", "BF16", "F16", "U8").
bool parseDType(const std::string &s, DType &out);
int64_t dtypeBytes(DType t);

struct TensorSpec {
  /// Name relative to the model prefix (`layers.0.self_attn.q_proj.weight`),
  /// or `lm_head.weight` relative to the head prefix.
  std::string name;
  std::vector<int64_t> shape; ///< storage shape
  DType dtype;                ///< dtype of the release (any float loads)
  bool isHead = false;        ///< under the head prefix, not the model's
  /// Logical weights it holds (a packed byte holds two; scales count 0).
  int64_t parameters = 0;
  /// MXFP4 data (`weight_packed`) or scales (`weight_scale`): U8 only.
  bool packed = false;
  bool scale = false;
};

/// True for `X.weight` tensors that are linear layers (rank 2, not the
/// embedding table): a checkpoint may store any of them MXFP4-packed as
/// `X.weight_packed` + `X.weight_scale` (K3_CHECKPOINT.md §5).
bool isPackableLinear(const TensorSpec &spec);

/// The `weight_packed` / `weight_scale` pair replacing a linear `X.weight`
/// of shape [rows, cols] (cols a multiple of 32).
std::vector<TensorSpec> packedPair(const TensorSpec &linear);

/// Every text tensor of `config` with experts stored as `experts`, in a
/// stable order (model level first, then layer by layer).
std::vector<TensorSpec> expectedTensors(const Config &config,
                                        ExpertFormat experts);

/// The sum of their parameters, without building the table; false if it
/// overflows int64.
bool expectedParameters(const Config &config, ExpertFormat experts, int64_t &total);

/// Length the release stores `A_log` with: heads rounded up to 128.
int64_t storedALogLength(const Config &config);

/// `"[a, b, c]"`.
std::string formatShape(const std::vector<int64_t> &shape);

int64_t numElements(const std::vector<int64_t> &shape);

inline bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Reads a whole file; on failure sets `error` to "<path>: cannot open".
bool readTextFile(const std::string &path, std::string &text,
                  std::string &error);

} // namespace k3::model

#endif // LIB_MODEL_TENSORTABLE_H
