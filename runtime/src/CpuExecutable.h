//===- CpuExecutable.h - Run a bundle's CPU kernels -------------*- C++ -*-===//
//
// Part of k3. Loads the shared objects of a verified bundle's CPU kernels
// (from memory, through memfd + dlopen) and runs an entry point's plan:
// arguments are bound per the step's bindings (inputs, weights in the mapped
// file) as MLIR memref descriptors, and the results come back through the
// kernel's result struct, copied into owned tensors, or, for the results a
// caller asks to keep, left in the buffers the kernels wrote (a session's
// state: the next call reads it where it is).
//
// With a CUDA device, the shared objects are a GPU target's host programs:
// they are attached to the device (their kernel modules load then), the
// weights are copied once into managed memory, and each call stages its
// host inputs there (copied back after: states are updated in place). An
// input already in the device's memory (a kept result) is bound as it is:
// a session's KDA state and MLA cache stay on the GPU between calls.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_SRC_CPUEXECUTABLE_H
#define RUNTIME_SRC_CPUEXECUTABLE_H

#include "runtime/include/k3rt/k3rt_comm.h"
#include "runtime/src/Bundle.h"
#include "runtime/src/CudaDevice.h"
#include "runtime/src/comm/Collectives.h"

#include <functional>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

namespace k3rt {

/// A dense, row-major tensor. Its elements are in `bytes`, or, for a result
/// that `CpuExecutable::run` kept where the kernels wrote it, in `kept`: a
/// CPU kernel's allocation, or a buffer of the CUDA device's pool (managed
/// memory), released when the last tensor sharing it goes. Copies of a kept
/// tensor share its buffer, and the device must outlive them.
struct HostTensor {
  k3::bundle::DType dtype = k3::bundle::DType_F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  std::shared_ptr<uint8_t> kept;
  int64_t keptBytes = 0; ///< bytes of the kept buffer from `kept.get()` on

  static HostTensor zeros(k3::bundle::DType dtype, std::vector<int64_t> shape);
  int64_t numElements() const;
  int64_t byteSize() const;
  const uint8_t *data() const { return kept ? kept.get() : bytes.data(); }
  const float *f32() const { return reinterpret_cast<const float *>(data()); }
};

class CpuExecutable {
public:
  /// Loads every CPU kernel of `bundle` (which must outlive this object),
  /// or with `device` (which must outlive it too) every GPU host program.
  /// A binary compiled for a grid of ranks (its `grid` table) needs the
  /// process's `grid` (which must outlive this object): the same shape,
  /// and this process's rank the file's; its collectives run on it.
  static k3rt_status_t load(const k3rt_bundle_s &bundle,
                            std::unique_ptr<CpuExecutable> &out,
                            CudaDevice *device = nullptr, comm::Grid *grid = nullptr);
  ~CpuExecutable();

  /// The entry point named `name`, or null.
  const k3::bundle::EntryPoint *entry(const std::string &name) const;

  /// A zero tensor kept where this executable's kernels read (the device's
  /// memory, or a CPU allocation): a session's initial state, which calls
  /// then bind and update in place without staging it.
  HostTensor keptZeros(k3::bundle::DType dtype, std::vector<int64_t> shape);
  /// A kept tensor of `shape`, contents unspecified (on the CPU, untouched
  /// pages cost no memory); `kept` is null when the memory cannot be had.
  HostTensor allocateKept(k3::bundle::DType dtype, std::vector<int64_t> shape);

  /// Adds `rows` to `t`'s leading extent, for a call to write (an input
  /// with `appends_rows`): within a kept buffer's capacity when it has
  /// room, else into a kept buffer of twice the rows (the old ones copied
  /// on the device). The new rows' contents are unspecified.
  k3rt_status_t growRows(HostTensor &t, int64_t rows);

  /// Runs entry `name` on `inputs` (one per entry input, in order; their
  /// buffers may be updated in place) and fills `outputs` (one per entry
  /// output). Shapes and dtypes are checked against the entry's signature.
  /// Output i with `keep[i]` set stays in the kernels' buffer (`kept`) when
  /// that buffer is dense and the call's own; it is copied otherwise (a
  /// weight, an input's host or staged buffer, a strided view). After a
  /// failed call, kept inputs may have been partly updated in place.
  /// `threads` > 0 runs the kernels' parallel loops on that many threads
  /// instead of k3rt_threads(). On the CPU, calls may run at once from
  /// several threads (the engine's decode groups): the kernels keep no
  /// state between calls, and this reads only the loaded binary.
  k3rt_status_t run(const std::string &name, std::vector<HostTensor *> inputs,
                    std::vector<HostTensor> &outputs, const std::vector<bool> &keep = {},
                    int threads = 0);

  /// On a device with CUDA graphs: `decode_batch` is captured once per
  /// signature (every input's shape, and each kept input's address, which
  /// the kernels' parameters hold) and replayed as one graph launch, its
  /// other inputs copied into the graph's own buffers first and its results
  /// copied out of them; only an entry the compiler marked
  /// `graph_capturable` (its host code only launches, allocates, frees and
  /// waits). A call whose capture fails runs as before, and graphs are off
  /// from then on. On by default; `false` launches every kernel.
  void setCudaGraphs(bool on) { cudaGraphs = on; }
  /// Whether a call of entry `name` would be captured or replayed as a
  /// CUDA graph (the engine then pads its batch to a bucket, so that a few
  /// graphs serve every batch size).
  bool capturesGraphs(const std::string &name) const;

  /// Whether runParts runs parts at once: CPU kernels of one rank whose
  /// object links libomp (a device has one stream; a rank's collectives
  /// must run in the same order on every rank), not an emulated GPU
  /// binary's (`k3-compile --emulate`: its mma.sync emulation exchanges
  /// fragments through one process-wide buffer).
  bool runsParts() const { return gompParallel && !device && !comm && !emulatedGpu; }
  /// Runs fn(0), ..., fn(parts - 1), at once where runsParts(), each on a
  /// thread of the kernels' own OpenMP pool (a parallel region with a
  /// thread per part; the kernels' loops inside it are nested regions,
  /// which run serial), else in turn. Returns when all have returned.
  void runParts(int parts, const std::function<void(int)> &fn) const;
  /// The bytes of the binary's weights (the sum of their lengths).
  int64_t weightBytes() const;

  /// A sharded binary's first failed collective, "" while none failed
  /// (once one did, every later call fails with it).
  std::string commFailure() const;

private:
  CpuExecutable() = default;
  k3rt_status_t bindWeightsOnDevice();
  /// Frees a call's results (never an input's buffer or a weight) and, on
  /// a device, its staged inputs.
  void freeResults(const std::vector<int64_t> &result, const k3::bundle::EntryPoint &ep,
                   const std::set<uintptr_t> &owned, const std::map<uint32_t, void *> &staged);
  /// The owner of a call's result allocation `alloc`, which a kept output
  /// took: freed (CPU) or returned to the pool (device) with its last user.
  std::shared_ptr<uint8_t> adopt(uintptr_t alloc);
  /// Whether kept tensor `t` belongs to this executable's memory (its
  /// buffer came from `adopt` with the same device) and covers its shape.
  bool isOwnKept(const HostTensor &t) const;
  /// Whether a result allocation is the call's own: not an input's buffer
  /// (`owned`), the bundle's or the device weights', or the empty storage.
  bool isCallsOwn(uintptr_t alloc, const std::set<uintptr_t> &owned) const;
  const k3rt_bundle_s *bundle = nullptr;
  CudaDevice *device = nullptr;
  uint8_t *deviceWeights = nullptr; ///< the weight section, in managed memory
  uint64_t weightsBegin = 0;        ///< its file offset
  uint64_t deviceWeightsBytes = 0;
  std::vector<void (*)()> detaches; ///< k3_gpu_detach of each host program
  std::vector<void *> handles;
  std::vector<int> fds; ///< the memfds backing `handles`
  std::map<std::string, void (*)(void **)> entries; ///< by entry point name
  /// k3_set_threads of each entry point's object, where it has one.
  std::map<std::string, void (*)(int)> threadSetters;
  /// libomp's GNU-compatible entry points, from the kernels' libomp (null
  /// when no object links it): runParts' parallel region. The same pool as
  /// the kernels' loops, so parts and loops never oversubscribe the cores.
  void (*gompParallel)(void (*)(void *), void *, unsigned, unsigned) = nullptr;
  int (*ompThreadNum)() = nullptr;
  bool emulatedGpu = false;
  int (*ompNumThreads)() = nullptr;
  std::unique_ptr<struct CommBinding> comm;
  bool cudaGraphs = true;
  /// A captured call: its graph, the buffers its non-kept inputs are
  /// copied into (by input index), its result descriptors and the result
  /// allocations the graph writes.
  struct CapturedCall {
    std::unique_ptr<CudaDevice::Graph> graph;
    std::map<uint32_t, void *> staged;
    std::vector<int64_t> result;
    std::set<uintptr_t> results;
    uint64_t lastUse = 0; ///< for evicting the least recently used
  };
  std::map<std::string, std::unique_ptr<CapturedCall>> graphs; ///< by signature
  uint64_t graphClock = 0;
  /// Frees a captured call's graph and buffers.
  void dropGraph(CapturedCall &c);
};

/// A sharded binary's collectives: the grid, its communicators by axis
/// mask, the table its host objects call, and the first failure (the
/// compiled code cannot stop; `CpuExecutable::run` reports it).
struct CommBinding {
  comm::Grid *grid = nullptr;
  std::map<int64_t, comm::Communicator *> groups;
  K3CommOps ops{};
  k3rt_status_t failure = nullptr;
  ~CommBinding() { k3rt_status_free(failure); }
};

} // namespace k3rt

#endif // RUNTIME_SRC_CPUEXECUTABLE_H
