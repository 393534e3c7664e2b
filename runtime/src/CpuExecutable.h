//===- CpuExecutable.h - Run a bundle's CPU kernels -------------*- C++ -*-===//
//
// Part of k3. Loads the shared objects of a verified bundle's CPU kernels
// (from memory, through memfd + dlopen) and runs an entry point's plan:
// arguments are bound per the step's bindings (inputs, weights in the mapped
// file) as MLIR memref descriptors, and the results come back through the
// kernel's result struct, copied into owned tensors.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_SRC_CPUEXECUTABLE_H
#define RUNTIME_SRC_CPUEXECUTABLE_H

#include "runtime/src/Bundle.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace k3rt {

/// A dense, row-major tensor owned by the runtime.
struct HostTensor {
  k3::bundle::DType dtype = k3::bundle::DType_F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  static HostTensor zeros(k3::bundle::DType dtype, std::vector<int64_t> shape);
  int64_t numElements() const;
  const float *f32() const { return reinterpret_cast<const float *>(bytes.data()); }
};

class CpuExecutable {
public:
  /// Loads every CPU kernel of `bundle` (which must outlive this object).
  static k3rt_status_t load(const k3rt_bundle_s &bundle,
                            std::unique_ptr<CpuExecutable> &out);
  ~CpuExecutable();

  /// The entry point named `name`, or null.
  const k3::bundle::EntryPoint *entry(const std::string &name) const;

  /// Runs entry `name` on `inputs` (one per entry input, in order; their
  /// buffers may be updated in place) and fills `outputs` (one per entry
  /// output). Shapes and dtypes are checked against the entry's signature.
  k3rt_status_t run(const std::string &name, std::vector<HostTensor *> inputs,
                    std::vector<HostTensor> &outputs);

private:
  CpuExecutable() = default;
  const k3rt_bundle_s *bundle = nullptr;
  std::vector<void *> handles;
  std::vector<int> fds; ///< the memfds backing `handles`
  std::map<std::string, void (*)(void **)> entries;
};

} // namespace k3rt

#endif // RUNTIME_SRC_CPUEXECUTABLE_H
