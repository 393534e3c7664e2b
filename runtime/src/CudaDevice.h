//===- CudaDevice.h - The CUDA driver, loaded at run time -------*- C++ -*-===//
//
// Part of k3. The CUDA device of DESIGN.md §4: the driver API is loaded with
// dlopen("libcuda.so.1") (never linked; the build needs no CUDA at all), on
// the device's primary context. It owns one stream, a pool of managed
// allocations (size classes of powers of two, reused across calls) and the
// kernel modules of the bundles run on it.
//
// GPU host programs (lib/Target/Cpu with a GPU target) call MLIR's mgpu*
// runtime functions; their objects forward each one through a `K3GpuOps`
// table, which `CudaDevice::ops` builds. Errors inside those callbacks (a
// failed launch, an allocation the device cannot hold) are sticky: later
// callbacks do nothing and `takeError` reports the first one after the call.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_SRC_CUDADEVICE_H
#define RUNTIME_SRC_CUDADEVICE_H

#include "runtime/src/Bundle.h"

#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include "runtime/include/k3rt/k3rt_gpu.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace k3rt {

// K3GpuOps, the table a GPU host program's mgpu* functions forward to:
// runtime/include/k3rt/k3rt_gpu.h (one C definition for both sides).

struct CudaApi; // the driver entry points (CudaDevice.cpp)

class CudaDevice {
public:
  /// Loads the driver and opens device `ordinal`. Without a driver:
  /// K3RT_UNAVAILABLE "no CUDA driver (<why>)".
  static k3rt_status_t open(int ordinal, std::unique_ptr<CudaDevice> &out);
  ~CudaDevice();

  /// "NVIDIA H200 (sm_90)".
  std::string describe() const;
  int computeCapability() const { return ccMajor * 10 + ccMinor; }

  /// Checks that `bundle`'s kernels can run here (sm_90a needs compute
  /// capability 9.0 exactly; sm_80 PTX runs on 8.0 and later).
  k3rt_status_t checkTarget(const k3rt_bundle_s &bundle) const;

  /// The callback table for host programs of `bundle` (kernel references
  /// resolve against its kernel table). Stable while the device lives.
  const K3GpuOps *ops(const k3rt_bundle_s &bundle);

  /// Managed memory, reachable by host and kernels; pooled by size class.
  void *allocate(size_t bytes);
  /// Managed memory of exactly `bytes` (the weights), not pooled.
  void *allocateExact(size_t bytes);
  void release(void *ptr);
  /// Copies between device buffers on the device (cuMemcpy; sticky error).
  void copy(void *dst, const void *src, size_t bytes);
  /// Waits for the stream.
  void synchronize();
  /// The one stream the kernels run on (a CUstream): a GPU grid's NCCL
  /// collectives queue on it, in order with the launches.
  void *kernelStream() const { return stream; }
  /// Whether `stream`'s work has finished: 0 yes, 1 not yet, -1 an error
  /// (cuStreamQuery of the driver this process loaded; a driver without it
  /// is waited for). A comm::StreamQuery for the NCCL grid.
  static int queryStream(void *stream);

  /// The first error since the last call, or null.
  k3rt_status_t takeError();

  /// A host program's launches captured once (cuStreamBeginCapture) and
  /// replayed as one graph launch. It owns the buffers the program freed
  /// while it was captured (the replays write them again), kept out of the
  /// pool until `destroy`.
  struct Graph {
    void *graph = nullptr, *exec = nullptr;
    std::vector<void *> held;
    uint64_t kernels = 0; ///< kernel launches recorded
  };
  /// Whether the driver has CUDA graphs and no K3_CUDA_CHECK is on (each
  /// check synchronises or fills buffers between launches).
  bool graphsAvailable() const;
  /// Starts capturing the stream: launches are recorded, not run; a freed
  /// buffer is held for the graph (and reused by the capture's later
  /// allocations of its size class, so a graph holds about a call's peak);
  /// allocations are served as usual. A
  /// copy, a fill, or a second synchronisation (a host program waits once,
  /// at its end, unless it reads device memory on the way: not capturable)
  /// spoils the capture.
  void beginCapture();
  /// Ends the capture: the instantiated graph, or null with `why` set (the
  /// held buffers then go back to the pool).
  std::unique_ptr<Graph> endCapture(std::string &why);
  /// Launches `g` on the stream (one graph launch).
  void launch(const Graph &g);
  /// Frees `g`'s graph and returns its held buffers to the pool.
  void destroy(Graph &g);

  /// While set, a host program's callback that meets an error longjmps
  /// here (see CpuExecutable: setjmp around each call into a host program);
  /// the program's own allocations are then left to the device's close.
  void setEscape(std::jmp_buf *to) { escapeTo = to; }

  /// Counters since open (k3-run prints them with --stats).
  struct Counters {
    uint64_t launches = 0, modules = 0, jitModules = 0, allocations = 0, poolHits = 0;
    /// Bytes the host copied into device memory for inputs (staging) and
    /// out of it (staged inputs back, results not kept on the device).
    uint64_t stagedBytes = 0, returnedBytes = 0;
    /// Stream synchronisations (the host waiting for the kernels).
    uint64_t synchronizations = 0;
    /// CUDA graphs: captured, launched, and the kernels those launches ran
    /// (not in `launches`, which counts kernels launched one by one).
    uint64_t graphsCaptured = 0, graphLaunches = 0, graphKernels = 0;
    /// Summed GPU time of the launches: CUDA events from the first launch
    /// after a synchronisation to the end of the last before the next one
    /// (launches are asynchronous, so events around each would serialise
    /// them); gaps the host leaves between chained launches count.
    double kernelSeconds = 0;
  } counters;
  /// Whether `counters.kernelSeconds` is measured (the driver has events).
  bool timesKernels() const { return timed; }

  /// The checks `K3_CUDA_CHECK` turns on (a comma list; read at open), for
  /// finding a kernel that reads memory nobody wrote or races the host:
  ///   sync    wait for the stream after every launch: a fault is reported
  ///           with the name of the kernel that caused it;
  ///   poison  fill every pooled buffer with 0xFF bytes (a NaN in f32 and
  ///           bf16) when handed out and when freed, and never reuse one:
  ///           a read of unwritten or freed memory yields NaN;
  ///   nan     sync and poison, and after each launch scan the pooled
  ///           buffers its parameters point into: the first kernels after
  ///           which a buffer holds more NaNs (other than the poison) than
  ///           before are reported on stderr, by name.
  struct Checks {
    bool sync = false, poison = false, nan = false;
  };
  const Checks &checks() const { return checking; }

  struct Binding;

private:
  friend struct GpuCallbacks;
  CudaDevice() = default;
  void fail(const std::string &message);
  void *loadModule(const k3rt_bundle_s &bundle, const void *data, size_t size);
  /// The pooled buffer holding `p` (start and requested bytes), if any.
  bool findBuffer(const void *p, char *&start, size_t &bytes) const;
  /// The computed NaNs in a buffer: f32 words, and bf16 halves, that are a
  /// NaN but not the poison pattern.
  static size_t countNaNs(const char *start, size_t bytes);
  /// `nan` check: the NaN counts of the buffers `params` point into.
  std::vector<std::pair<char *, size_t>> paramBuffers(void **params, size_t count) const;

  void *lib = nullptr;
  std::unique_ptr<CudaApi> api;
  int device = 0, ccMajor = 0, ccMinor = 0;
  std::string name;
  void *context = nullptr;
  void *stream = nullptr;
  void *eventStart = nullptr, *eventEnd = nullptr;
  std::jmp_buf *escapeTo = nullptr;
  bool timed = false;
  bool eventStartPending = false; ///< eventStart recorded, eventEnd not yet
  /// The capture in progress (beginCapture to endCapture).
  struct Capture {
    bool active = false;
    std::string spoiled; ///< why it cannot be replayed, if it cannot
    unsigned synchronizations = 0;
    /// Buffers the program freed, by size class: its later allocations
    /// reuse them (in stream order, as outside a capture), the graph holds
    /// the rest.
    std::map<size_t, std::vector<void *>> freed;
    uint64_t kernels = 0;
  } capture;
  std::string error; ///< sticky, see takeError
  std::map<size_t, std::vector<void *>> freeLists; ///< by size class
  std::map<void *, size_t> live;                    ///< pointer → size class (0: exact)
  std::map<void *, size_t> requested;               ///< pooled pointer → bytes asked for
  std::vector<void *> quarantine; ///< freed buffers under `poison`
  Checks checking;
  unsigned nanReports = 0; ///< kernels reported by the `nan` check
  std::vector<std::unique_ptr<Binding>> bindings;
};

} // namespace k3rt

#endif // RUNTIME_SRC_CUDADEVICE_H
