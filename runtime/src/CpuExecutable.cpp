//===- CpuExecutable.cpp - Run a bundle's CPU kernels ---------------------===//
//
// Part of k3. The kernel ABI (lib/Target/Cpu/CpuTarget.cpp): each entry
// exports `void k3_entry_<name>(void **args)`; args[0] points to the result
// struct (one memref descriptor per output), args[1 + i] to the descriptor of
// argument i. A rank-r descriptor is {allocated, aligned, offset, sizes[r],
// strides[r]}, all 8-byte fields.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/CpuExecutable.h"
#include "runtime/src/CpuLevel.h"
#include "runtime/src/Status.h"

#include <cstdlib>
#include <cstring>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif
#include <algorithm>
#include <atomic>
#include <csetjmp>
#include <dlfcn.h>
#include <malloc.h>
#include <mutex>
#include <sched.h>
#include <map>
#include <set>
#include <sys/mman.h>
#include <unistd.h>

using namespace k3::bundle;

namespace k3rt {
namespace {

int64_t elementBytes(DType t) {
  switch (t) {
  case DType_F32:
  case DType_I32:
    return 4;
  case DType_BF16:
  case DType_F16:
    return 2;
  case DType_I64:
    return 8;
  default:
    return 1;
  }
}

std::string shapeText(const std::vector<int64_t> &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

/// A descriptor for a dense row-major buffer.
std::vector<int64_t> descriptor(const void *data, const std::vector<int64_t> &shape) {
  std::vector<int64_t> d(3 + 2 * shape.size());
  d[0] = d[1] = int64_t(reinterpret_cast<uintptr_t>(data));
  d[2] = 0;
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    d[3 + i] = shape[i];
    d[3 + shape.size() + i] = stride;
    stride *= shape[i];
  }
  return d;
}

} // namespace

HostTensor HostTensor::zeros(DType dtype, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.bytes.assign(t.numElements() * elementBytes(dtype), 0);
  return t;
}

int64_t HostTensor::byteSize() const { return numElements() * elementBytes(dtype); }

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Runs a kernel with subnormal floats flushed to zero (x86 MXCSR FTZ and
/// DAZ), restoring the caller's mode after. Chunked KDA scales by e^G with
/// G down to −5 per token: over a 64-token chunk many products pass through
/// the subnormal range, where each x86 operation takes a microcode assist
/// (~100 cycles); flushed, they cost nothing. A flushed value is below
/// 1.2e-38; the largest factor it could later meet is the factored tile's
/// e^{(B−1)|lb|} ≤ e^75 (k3-kda-chunkwise's bound), so a dropped term is
/// below 5e-6 times |q||k|, inside every fp32 threshold of the tests.
///
/// With a device, a failing callback of the GPU host program longjmps back
/// here (CudaDevice::setEscape): false then, the program left mid-way. This
/// frame and the generated code hold no C++ objects.
static bool callKernel(void (*fn)(void **), void **args, CudaDevice *device) {
#if defined(__x86_64__) || defined(__i386__)
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040u); // FTZ (bit 15) | DAZ (bit 6)
#endif
  std::jmp_buf escape;
  bool completed = true;
  if (device) {
    if (setjmp(escape) == 0)
      device->setEscape(&escape);
    else
      completed = false;
  }
  if (completed)
    fn(args);
  if (device)
    device->setEscape(nullptr);
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr(saved);
#endif
  return completed;
}

/// Attaches a host program to its device, guarded like `callKernel` (the
/// kernel modules load in it).
static void attachGuarded(void (*attach)(const K3GpuOps *), const K3GpuOps *ops,
                          CudaDevice *device) {
  std::jmp_buf escape;
  if (setjmp(escape) == 0) {
    device->setEscape(&escape);
    attach(ops);
  }
  device->setEscape(nullptr);
}

namespace {

/// `k3_comm_collective` of a sharded binary's host object, on the grid.
void runCollective(void *ctx, int32_t kind, void *input, void *output, int64_t count,
                   int32_t dtype, int64_t axes) {
  auto &c = *static_cast<CommBinding *>(ctx);
  if (c.failure)
    return; // the call fails as a whole; later collectives are not run
  auto fail = [&](k3rt_status_t s) { c.failure = s; };
  comm::Communicator *group = nullptr;
  if (auto it = c.groups.find(axes); it != c.groups.end()) {
    group = it->second;
  } else {
    std::vector<int> list;
    for (int a = 0; a < 63; ++a)
      if (axes >> a & 1)
        list.push_back(a);
    if (k3rt_status_t s = c.grid->axes(list, group))
      return fail(s);
    c.groups[axes] = group;
  }
  if ((kind != 0 && kind != 1) || (dtype != 0 && dtype != 1) || count < 0)
    return fail(makeStatus(K3RT_INTERNAL, "k3_comm_collective: kind " + std::to_string(kind) +
                                              ", dtype " + std::to_string(dtype) + ", count " +
                                              std::to_string(count) +
                                              " (a binary newer than this runtime?)"));
  comm::DType type = dtype == 0 ? comm::DType::F32 : comm::DType::BF16;
  if (k3rt_status_t s = kind == 0 ? group->allReduce(output, size_t(count), type, comm::Reduce::Sum)
                                  : group->allGather(input, output, size_t(count), type))
    fail(s);
}

/// `k3_comm_index`: a coordinate, or (-1) the rank on the grid.
int64_t gridIndex(void *ctx, int64_t axis) {
  auto &c = *static_cast<CommBinding *>(ctx);
  if (axis < 0)
    return c.grid->rank();
  std::vector<int64_t> coords = c.grid->coordinates();
  return axis < int64_t(coords.size()) ? coords[axis] : 0;
}

/// The kernels' temporaries come from malloc, each step the same buffers
/// of several sizes (a prompt's [T, hidden] rows: megabytes). With glibc's
/// adaptive defaults, a block over the mapping threshold is a fresh mapping
/// (zero-filled on first touch, unmapped on free) until a free raises the
/// threshold, and the heap's top is trimmed whenever twice the threshold is
/// free there, to be faulted in again by the next layer. Fixed thresholds
/// keep those buffers on the heap and the heap in place: perf had 8 % of
/// Kimi-Linear-small's 512-token prefill in page faults; one thread, runs
/// interleaved, 1.74–1.89 s → 1.50–1.51 s. Set once per process when the
/// first binary's host code loads (CPU kernels or a GPU host program), and
/// not at all when the user tuned malloc through the environment.
void tuneMalloc() {
#if defined(__GLIBC__)
  static std::once_flag once;
  std::call_once(once, [] {
    const char *tunables = std::getenv("GLIBC_TUNABLES");
    if ((tunables && std::strstr(tunables, "glibc.malloc.")) ||
        std::getenv("MALLOC_MMAP_THRESHOLD_") || std::getenv("MALLOC_TRIM_THRESHOLD_") ||
        std::getenv("MALLOC_TOP_PAD_"))
      return;
    mallopt(M_MMAP_THRESHOLD, 32 << 20); // glibc's largest on 64-bit
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  });
#endif
}

} // namespace

k3rt_status_t CpuExecutable::load(const k3rt_bundle_s &b,
                                  std::unique_ptr<CpuExecutable> &out,
                                  CudaDevice *device, comm::Grid *grid) {
  std::unique_ptr<CpuExecutable> exe(new CpuExecutable());
  exe->bundle = &b;
  exe->device = device;
  if (const Grid *g = b.root->grid()) {
    std::vector<int64_t> shape(g->shape()->begin(), g->shape()->end());
    int64_t ranks = 1;
    for (int64_t e : shape)
      ranks *= e;
    if (!grid)
      return makeStatus(K3RT_INVALID_ARGUMENT,
                        "the binary is rank " + std::to_string(g->rank()) + " of a " +
                            comm::formatGrid(shape) + " grid: run its ranks under mpirun -np " +
                            std::to_string(ranks));
    if (grid->shape() != shape || grid->rank() != g->rank())
      return makeStatus(K3RT_INVALID_ARGUMENT,
                        "the binary is rank " + std::to_string(g->rank()) + " of a " +
                            comm::formatGrid(shape) + " grid, this process rank " +
                            std::to_string(grid->rank()) + " of " +
                            comm::formatGrid(grid->shape()));
    exe->comm = std::make_unique<CommBinding>();
    exe->comm->grid = grid;
    exe->comm->ops = K3CommOps{exe->comm.get(), runCollective, gridIndex};
  }
  if (!b.root->kernels())
    return makeStatus(K3RT_UNIMPLEMENTED, "the binary has no kernels");
  if (weightsMissing(b))
    return makeStatus(K3RT_INVALID_ARGUMENT,
                      "the binary's weights were omitted at compile time (--omit-weights); "
                      "run it with synthetic weights (--synthetic-weights=SEED)");
  if (device)
    if (k3rt_status_t s = device->checkTarget(b))
      return s;
  // Every weight, once, before the first kernel reads one: a flipped byte is
  // one line, not a silently wrong answer (k3-small: see runtime/README.md).
  if (k3rt_status_t s = verifyWeights(b))
    return s;
  tuneMalloc();
  // Host objects by kernel index: entry points may share one.
  std::map<uint32_t, void *> loaded;
  auto loadKernel = [&](uint32_t index, void *&handle) -> k3rt_status_t {
    if (auto it = loaded.find(index); it != loaded.end()) {
      handle = it->second;
      return nullptr;
    }
    const Kernel *k = b.root->kernels()->Get(index);
    bool usable = device ? k->target() != Target_CPU && k->object() && k->object()->size()
                         : k->target() == Target_CPU;
    if (!usable)
      return makeStatus(K3RT_UNIMPLEMENTED,
                        "kernel '" + k->name()->str() + "' is not " +
                            (device ? "a GPU host program" : "a CPU kernel"));
    // Kernels built for a level above this machine's would die of SIGILL
    // mid-run: refuse them here. (An empty level: binaries from before the
    // level was recorded, baseline code.)
    std::string cpu = k->cpu() ? k->cpu()->str() : "";
    if (std::string capError = cpuLevelCapError(); !capError.empty())
      return makeStatus(K3RT_INVALID_ARGUMENT, capError);
    if (cpuLevelRank(cpu) < 0)
      return makeStatus(K3RT_UNIMPLEMENTED, "kernels '" + k->name()->str() +
                                                "' are built for an unknown CPU level '" + cpu +
                                                "'; rebuild them with this k3-compile");
    if (cpuLevelRank(cpu) > cpuLevelRank(k3rt_cpu_level())) {
      std::string mine = k3rt_cpu_level();
      return makeStatus(K3RT_UNIMPLEMENTED,
                        "kernels '" + k->name()->str() + "' need an " + cpu +
                            " CPU, which this machine is not (it runs " + mine +
                            "; rebuild with k3-compile --cpu=" +
                            (mine == "generic" ? std::string("host") : mine) + ")");
    }
    // dlopen needs a file: an anonymous in-memory one, never on disk.
    int fd = memfd_create(k->name()->c_str(), MFD_CLOEXEC);
    if (fd < 0 ||
        write(fd, k->object()->data(), k->object()->size()) != ssize_t(k->object()->size())) {
      if (fd >= 0)
        close(fd);
      return makeStatus(K3RT_INTERNAL, "cannot stage kernel '" + k->name()->str() +
                                           "' in memory");
    }
    // The fd stays open while the object is loaded: glibc matches loaded
    // objects by path, and a reused /proc/self/fd/N would hand a second
    // bundle the first one's code.
    std::string path = "/proc/self/fd/" + std::to_string(fd);
    void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    exe->fds.push_back(fd);
    if (!h) {
      const char *e = dlerror();
      return makeStatus(K3RT_DATA_LOSS, "kernels '" + k->name()->str() +
                                            "': cannot load its object: " +
                                            (e ? e : "unknown error"));
    }
    exe->handles.push_back(h);
    if (auto attach = reinterpret_cast<void (*)(const K3CommOps *)>(dlsym(h, "k3_comm_attach"))) {
      if (!exe->comm)
        return makeStatus(K3RT_DATA_LOSS, "kernels '" + k->name()->str() +
                                              "' call collectives, but the binary has no grid");
      attach(&exe->comm->ops);
    }
    if (device) {
      using Attach = void (*)(const K3GpuOps *);
      auto attach = reinterpret_cast<Attach>(dlsym(h, "k3_gpu_attach"));
      auto detach = reinterpret_cast<void (*)()>(dlsym(h, "k3_gpu_detach"));
      if (!attach || !detach)
        return makeStatus(K3RT_DATA_LOSS, "kernels '" + k->name()->str() +
                                              "': the host program exports no k3_gpu_attach");
      attachGuarded(attach, device->ops(b), device);
      exe->detaches.push_back(detach);
      if (k3rt_status_t s = device->takeError())
        return s;
    }
    loaded[index] = handle = h;
    return nullptr;
  };
  if (b.root->entry_points())
    for (const EntryPoint *ep : *b.root->entry_points()) {
      if (!ep->steps() || ep->steps()->size() != 1)
        continue;
      void *h = nullptr;
      if (k3rt_status_t s = loadKernel(ep->steps()->Get(0)->kernel(), h))
        return s;
      std::string symbol = "k3_entry_" + ep->name()->str();
      auto fn = reinterpret_cast<void (*)(void **)>(dlsym(h, symbol.c_str()));
      if (!fn)
        return makeStatus(K3RT_DATA_LOSS, "entry point '" + ep->name()->str() +
                                              "': its kernel exports no " + symbol);
      exe->entries[ep->name()->str()] = fn;
      // Objects with parallel loops take the process's thread count
      // (k3rt_set_threads) on each call; older ones have no setter.
      if (auto set = reinterpret_cast<void (*)(int)>(dlsym(h, "k3_set_threads")))
        exe->threadSetters[ep->name()->str()] = set;
      // An emulated GPU binary's blocks share one process-wide fragment
      // exchange (lib/Target/Cpu/k3emu.c): its calls never run at once.
      if (dlsym(h, "k3emu_team"))
        exe->emulatedGpu = true;
      // The object's libomp (a dependency: dlsym on the handle searches
      // it), for runParts.
      if (!device && !exe->gompParallel) {
        using Parallel = void (*)(void (*)(void *), void *, unsigned, unsigned);
        auto parallel = reinterpret_cast<Parallel>(dlsym(h, "GOMP_parallel"));
        auto num = reinterpret_cast<int (*)()>(dlsym(h, "omp_get_thread_num"));
        auto size = reinterpret_cast<int (*)()>(dlsym(h, "omp_get_num_threads"));
        if (parallel && num && size) {
          exe->gompParallel = parallel;
          exe->ompThreadNum = num;
          exe->ompNumThreads = size;
        }
      }
    }
  if (device)
    if (k3rt_status_t s = exe->bindWeightsOnDevice())
      return s;
  out = std::move(exe);
  return nullptr;
}

/// One copy of the weight section in managed memory: kernels cannot read
/// the mapped file.
k3rt_status_t CpuExecutable::bindWeightsOnDevice() {
  if (!bundle->root->weights() || bundle->root->weights()->size() == 0)
    return nullptr;
  uint64_t begin = UINT64_MAX, end = 0;
  for (const Weight *w : *bundle->root->weights()) {
    begin = std::min<uint64_t>(begin, w->offset());
    end = std::max<uint64_t>(end, w->offset() + w->length());
  }
  deviceWeights = static_cast<uint8_t *>(device->allocateExact(end - begin));
  if (!deviceWeights)
    return device->takeError();
  std::memcpy(deviceWeights, bundle->data + begin, end - begin);
  deviceWeightsBytes = end - begin;
  weightsBegin = begin;
  return nullptr;
}

CpuExecutable::~CpuExecutable() {
  for (auto &[signature, captured] : graphs)
    dropGraph(*captured);
  for (auto detach : detaches)
    detach();
  if (device && deviceWeights)
    device->release(deviceWeights);
  for (void *h : handles)
    dlclose(h);
  for (int fd : fds)
    close(fd);
}

const EntryPoint *CpuExecutable::entry(const std::string &name) const {
  if (bundle->root->entry_points())
    for (const EntryPoint *e : *bundle->root->entry_points())
      if (e->name()->str() == name)
        return e;
  return nullptr;
}

/// The address bound to a zero-size buffer: never null, never freed.
static int64_t kEmptyStorage[1];

/// Whether `strides` (in elements) lay `shape` out densely, row-major
/// (a unit dimension's stride is free).
static bool isDense(const std::vector<int64_t> &shape, const int64_t *strides) {
  int64_t expected = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] != 1 && strides[k] != expected)
      return false;
    expected *= shape[k];
  }
  return true;
}

/// Copies a strided array (`strides` in elements) into dense row-major
/// `out`: one memcpy per innermost row when that row is contiguous, the
/// outer indices advanced as an odometer.
static void copyStrided(const uint8_t *src, const std::vector<int64_t> &shape,
                        const int64_t *strides, int64_t eb, uint8_t *out) {
  size_t r = shape.size();
  for (int64_t s : shape)
    if (s == 0)
      return;
  if (r == 0) {
    std::memcpy(out, src, eb);
    return;
  }
  int64_t inner = shape[r - 1], innerStride = strides[r - 1];
  std::vector<int64_t> idx(r, 0);
  int64_t off = 0;
  for (;;) {
    if (innerStride == 1) {
      std::memcpy(out, src + off * eb, inner * eb);
      out += inner * eb;
    } else {
      for (int64_t e = 0; e < inner; ++e, out += eb)
        std::memcpy(out, src + (off + e * innerStride) * eb, eb);
    }
    size_t k = r - 1;
    for (; k-- > 0;) {
      off += strides[k];
      if (++idx[k] < shape[k])
        break;
      off -= strides[k] * shape[k];
      idx[k] = 0;
    }
    if (k == size_t(-1))
      return;
  }
}

k3rt_status_t CpuExecutable::run(const std::string &name,
                                 std::vector<HostTensor *> inputs,
                                 std::vector<HostTensor> &outputs,
                                 const std::vector<bool> &keep, int threads) {
  const EntryPoint *ep = entry(name);
  if (!ep)
    return makeStatus(K3RT_NOT_FOUND, "no entry point '" + name + "'");
  if (!ep->steps() || ep->steps()->size() != 1)
    return makeStatus(K3RT_UNIMPLEMENTED, "entry point '" + name +
                                              "' has no single CPU step");
  const Step *step = ep->steps()->Get(0);
  auto fn = entries.find(name);
  if (fn == entries.end())
    return makeStatus(K3RT_UNIMPLEMENTED, "entry point '" + name + "' has no " +
                                              (device ? "GPU host program" : "CPU kernel"));
  size_t numInputs = ep->inputs() ? ep->inputs()->size() : 0;
  if (inputs.size() != numInputs)
    return makeStatus(K3RT_INVALID_ARGUMENT,
                      name + ": " + std::to_string(inputs.size()) +
                          " inputs given, the entry takes " + std::to_string(numInputs));
  for (size_t i = 0; i < numInputs; ++i) {
    const TensorInfo *info = ep->inputs()->Get(i);
    const HostTensor &t = *inputs[i];
    bool ok = t.dtype == info->dtype() && t.shape.size() == info->shape()->size();
    for (size_t d = 0; ok && d < t.shape.size(); ++d)
      ok = info->shape()->Get(d) < 0 || info->shape()->Get(d) == t.shape[d];
    if (!ok || (!t.kept && int64_t(t.bytes.size()) != t.byteSize()))
      return makeStatus(K3RT_INVALID_ARGUMENT,
                        name + " input '" + info->name()->str() + "' is " +
                            dtypeName(t.dtype) + shapeText(t.shape) +
                            ", the entry takes " + dtypeName(info->dtype()));
    // An appended cache holds its cached rows, then room for the call's T
    // (the leading extent of the first input, the ids): fewer rows would
    // put the new ones before the buffer.
    if (info->appends_rows() && !t.shape.empty() && !inputs[0]->shape.empty() &&
        t.shape[0] < inputs[0]->shape[0])
      return makeStatus(K3RT_INVALID_ARGUMENT,
                        name + " input '" + info->name()->str() + "' has " +
                            std::to_string(t.shape[0]) + " rows, fewer than the call's " +
                            std::to_string(inputs[0]->shape[0]) +
                            " new ones (an appended cache is its cached rows, then room for "
                            "the call's)");
    if (t.kept && !isOwnKept(t))
      return makeStatus(K3RT_INVALID_ARGUMENT,
                        name + " input '" + info->name()->str() +
                            "' is kept in another executable's memory or is larger than its buffer");
  }

  // CUDA graphs: the call this one captures, or the captured one it
  // replays. The entry that runs every step, over signatures that change
  // only when the batch or a block table grows.
  CapturedCall *graph = nullptr;
  bool capturing = false;
  std::string signature;
  if (capturesGraphs(name)) {
    for (const HostTensor *t : inputs) {
      signature += std::to_string(int(t->dtype));
      for (int64_t d : t->shape)
        signature += "," + std::to_string(d);
      if (t->kept)
        signature += "@" + std::to_string(uintptr_t(t->kept.get()));
      signature += ";";
    }
    // A bounded cache: the 16 signatures used last (each graph holds its
    // intermediate buffers).
    if (!graphs.count(signature) && graphs.size() >= 16) {
      auto oldest = std::min_element(graphs.begin(), graphs.end(), [](auto &a, auto &b) {
        return a.second->lastUse < b.second->lastUse;
      });
      dropGraph(*oldest->second);
      graphs.erase(oldest);
    }
    std::unique_ptr<CapturedCall> &slot = graphs[signature];
    capturing = !slot;
    if (!slot)
      slot = std::make_unique<CapturedCall>();
    graph = slot.get();
    graph->lastUse = ++graphClock;
  }

  // Bind the arguments in step order; a zero-size buffer still gets a
  // non-null address.
  std::vector<std::vector<int64_t>> descs;
  std::set<uintptr_t> owned; // buffers the kernel must not free
  // On a device, each input is staged in managed memory (index → buffer):
  // per call, or a graph's own buffers (copied into on every call).
  std::map<uint32_t, void *> staged;
  std::map<uint32_t, void *> &bound = graph ? graph->staged : staged;
  std::set<uint32_t> copied;
  for (const Binding *a : *step->args()) {
    if (a->kind() == BindingKind_Weight) {
      const Weight *w = bundle->root->weights()->Get(a->index());
      std::vector<int64_t> shape(w->shape()->begin(), w->shape()->end());
      // Kernels read MXFP4 codes as their packed bytes, two per byte.
      if (w->dtype() == DType_F4E2M1FN && !shape.empty())
        shape.back() /= 2;
      const uint8_t *data = device ? deviceWeights + (w->offset() - weightsBegin)
                                   : bundle->data + w->offset();
      descs.push_back(descriptor(data, shape));
    } else if (a->kind() == BindingKind_Pack) {
      // A layer's weights back to back from the first one's offset, as bytes.
      const Weight *w = bundle->root->weights()->Get(a->index());
      const uint8_t *data = device ? deviceWeights + (w->offset() - weightsBegin)
                                   : bundle->data + w->offset();
      descs.push_back(descriptor(data, {int64_t(a->bytes())}));
    } else {
      HostTensor *t = inputs[a->index()];
      const void *data = t->kept           ? static_cast<const void *>(t->kept.get())
                         : t->bytes.empty() ? static_cast<const void *>(kEmptyStorage)
                                            : t->bytes.data();
      // A kept tensor is already where the kernels read (the device's
      // managed memory, or a CPU kernel's buffer): bound in place.
      if (device && !t->kept) {
        void *&buffer = bound[a->index()];
        if (!buffer)
          buffer = device->allocate(t->bytes.size());
        if (!buffer)
          break;
        if (copied.insert(a->index()).second) {
          if (!t->bytes.empty()) // an empty vector's data() may be null
            std::memcpy(buffer, t->bytes.data(), t->bytes.size());
          device->counters.stagedBytes += t->bytes.size();
        }
        data = buffer;
      }
      owned.insert(reinterpret_cast<uintptr_t>(data));
      descs.push_back(descriptor(data, t->shape));
    }
  }
  if (device)
    if (k3rt_status_t s = device->takeError()) {
      for (auto &[i, buffer] : staged)
        device->release(buffer);
      if (graph) {
        dropGraph(*graph);
        graphs.erase(signature);
      }
      return s;
    }
  size_t numOutputs = ep->outputs() ? ep->outputs()->size() : 0;
  size_t resultWords = 0;
  for (size_t i = 0; i < numOutputs; ++i)
    resultWords += 3 + 2 * ep->outputs()->Get(i)->shape()->size();
  std::vector<int64_t> result(resultWords, 0);
  std::vector<void *> args{result.data()};
  for (auto &d : descs)
    args.push_back(d.data());
  if (auto set = threadSetters.find(name); set != threadSetters.end())
    set->second(threads > 0 ? threads : k3rt_threads());
  bool completed = true;
  if (graph && !capturing) {
    device->launch(*graph->graph);
    result = graph->result;
  } else if (capturing) {
    device->beginCapture();
    completed = callKernel(fn->second, args.data(), device);
    std::string why;
    graph->graph = device->endCapture(why);
    if (!completed || !graph->graph) {
      // Nothing ran (the launches were only recorded): free what the
      // program allocated and run the call as usual. The entry was marked
      // capturable, so the driver refused: graphs are off from here on.
      (void)device->takeError();
      if (completed)
        freeResults(result, *ep, owned, {});
      dropGraph(*graph);
      graphs.erase(signature);
      cudaGraphs = false;
      std::fprintf(stderr, "k3: %s runs without CUDA graphs from now on: %s\n", name.c_str(),
                   why.c_str());
      return run(name, inputs, outputs, keep, threads);
    }
    graph->result = result;
    size_t at = 0;
    for (size_t i = 0; i < numOutputs; ++i) {
      uintptr_t alloc = uintptr_t(result[at]);
      at += 3 + 2 * ep->outputs()->Get(i)->shape()->size();
      if (isCallsOwn(alloc, owned))
        graph->results.insert(alloc);
    }
    device->launch(*graph->graph);
  } else {
    completed = callKernel(fn->second, args.data(), device);
  }
  if (device) {
    device->synchronize();
    // A failed call leaves the caller's inputs as they were and frees what
    // it can: its results when the program returned them, else only the
    // staged inputs (the program's own buffers stay in the pool's live set).
    if (k3rt_status_t s = device->takeError()) {
      if (graph) // its buffers are the graph's, kept for the next replay
        return s;
      if (completed)
        freeResults(result, *ep, owned, staged);
      else
        for (auto &[i, buffer] : staged)
          device->release(buffer);
      (void)device->takeError();
      return s;
    }
    // Inputs come back: the entry may update them in place.
    for (auto &[i, buffer] : bound)
      if (!inputs[i]->bytes.empty()) {
        std::memcpy(inputs[i]->bytes.data(), buffer, inputs[i]->bytes.size());
        device->counters.returnedBytes += inputs[i]->bytes.size();
      }
  }

  // The kept inputs by address, taken before `outputs` is cleared (an input
  // may be one of its tensors).
  std::map<uintptr_t, std::pair<std::shared_ptr<uint8_t>, int64_t>> keptInputs;
  for (const HostTensor *in : inputs)
    if (in->kept)
      keptInputs[uintptr_t(in->kept.get())] = {in->kept, in->keptBytes};
  // Keep each result asked for in its allocation, or copy it out
  // (honouring offset and strides); then free the kernel's other
  // allocations: once each, never an input's buffer or a kept one.
  outputs.clear();
  std::map<uintptr_t, std::shared_ptr<uint8_t>> keptAllocs;
  size_t at = 0;
  for (size_t i = 0; i < numOutputs; ++i) {
    const TensorInfo *info = ep->outputs()->Get(i);
    size_t r = info->shape()->size();
    const int64_t *d = &result[at];
    at += 3 + 2 * r;
    HostTensor t;
    t.dtype = info->dtype();
    t.shape.assign(d + 3, d + 3 + r);
    int64_t eb = elementBytes(t.dtype), n = t.numElements();
    auto *base = reinterpret_cast<uint8_t *>(uintptr_t(d[1]));
    uintptr_t alloc = uintptr_t(d[0]);
    bool wanted = i < keep.size() && keep[i] && n > 0 && isDense(t.shape, d + 3 + r);
    // An entry returns an input it updated in place as that input's buffer
    // (k3-return-arguments): a kept input's result shares its buffer.
    auto same = keptInputs.find(alloc);
    if (wanted && same != keptInputs.end()) {
      // The input's capacity carries over (a cache appended in place keeps
      // its room for the next call's rows).
      t.kept = std::shared_ptr<uint8_t>(same->second.first, base + d[2] * eb);
      t.keptBytes = same->second.second - int64_t(d[2] * eb + (uintptr_t(base) - alloc));
    } else if (wanted && !graph && isCallsOwn(alloc, owned)) {
      // (A graph's results are its own: copied out, never adopted.)
      std::shared_ptr<uint8_t> &owner = keptAllocs[alloc];
      if (!owner)
        owner = adopt(alloc);
      t.kept = std::shared_ptr<uint8_t>(owner, base + d[2] * eb);
      t.keptBytes = n * eb;
    } else {
      t.bytes.resize(n * eb);
      copyStrided(base + d[2] * eb, t.shape, d + 3 + r, eb, t.bytes.data());
      if (device)
        device->counters.returnedBytes += t.bytes.size();
    }
    outputs.push_back(std::move(t));
  }
  std::set<uintptr_t> notFreed = owned;
  for (auto &[alloc, owner] : keptAllocs)
    notFreed.insert(alloc);
  if (!graph)
    freeResults(result, *ep, notFreed, staged);
  if (device)
    if (k3rt_status_t s = device->takeError())
      return s;
  // A collective that failed (a peer gone): the outputs are not the
  // model's, and every later call is refused with the same line.
  if (comm && comm->failure)
    return makeStatus(k3rt_status_code(comm->failure),
                      name + ": " + k3rt_status_message(comm->failure));
  return nullptr;
}

void CpuExecutable::runParts(int parts, const std::function<void(int)> &fn) const {
  if (parts <= 1 || !runsParts()) {
    for (int i = 0; i < parts; ++i)
      fn(i);
    return;
  }
  struct Job {
    const std::function<void(int)> *fn;
    int parts;
    int (*num)();
    int (*size)();
  } job{&fn, parts, ompThreadNum, ompNumThreads};
  // A team may have fewer threads than asked for (a thread limit): each
  // thread takes every size-th part.
  gompParallel(
      [](void *p) {
        const Job &j = *static_cast<const Job *>(p);
        for (int i = j.num(), step = std::max(1, j.size()); i < j.parts; i += step)
          (*j.fn)(i);
      },
      &job, unsigned(parts), 0);
}

int64_t CpuExecutable::weightBytes() const {
  int64_t bytes = 0;
  if (bundle->root->weights())
    for (const Weight *w : *bundle->root->weights())
      bytes += int64_t(w->length());
  return bytes;
}

bool CpuExecutable::capturesGraphs(const std::string &name) const {
  const EntryPoint *ep = entry(name);
  return device && cudaGraphs && name == "decode_batch" && ep && ep->graph_capturable() &&
         device->graphsAvailable();
}

void CpuExecutable::dropGraph(CapturedCall &c) {
  if (c.graph)
    device->destroy(*c.graph);
  c.graph.reset();
  for (auto &[i, buffer] : c.staged)
    device->release(buffer);
  c.staged.clear();
  for (uintptr_t alloc : c.results)
    device->release(reinterpret_cast<void *>(alloc));
  c.results.clear();
}

std::string CpuExecutable::commFailure() const {
  return comm && comm->failure ? k3rt_status_message(comm->failure) : "";
}

bool CpuExecutable::isCallsOwn(uintptr_t alloc, const std::set<uintptr_t> &owned) const {
  bool inBundle = alloc >= uintptr_t(bundle->data) && alloc < uintptr_t(bundle->data) + bundle->size;
  bool inWeights = alloc >= uintptr_t(deviceWeights) &&
                   alloc < uintptr_t(deviceWeights) + deviceWeightsBytes;
  return alloc && !owned.count(alloc) && !inBundle && !inWeights &&
         alloc != uintptr_t(kEmptyStorage);
}

namespace {
/// Frees a kept buffer: back to the device's pool, or std::free (a CPU
/// kernel's allocation). The device identifies whose memory it is.
struct KeptDeleter {
  CudaDevice *device;
  void operator()(uint8_t *p) const {
    if (device)
      device->release(p);
    else
      std::free(p);
  }
};
} // namespace

std::shared_ptr<uint8_t> CpuExecutable::adopt(uintptr_t alloc) {
  return std::shared_ptr<uint8_t>(reinterpret_cast<uint8_t *>(alloc), KeptDeleter{device});
}

bool CpuExecutable::isOwnKept(const HostTensor &t) const {
  const KeptDeleter *d = std::get_deleter<KeptDeleter>(t.kept);
  return d && d->device == device && t.byteSize() <= t.keptBytes;
}

k3rt_status_t CpuExecutable::growRows(HostTensor &t, int64_t rows) {
  if (t.shape.empty() || rows < 0)
    return makeStatus(K3RT_INTERNAL, "growRows: no leading extent to grow");
  const int64_t oldBytes = t.byteSize();
  t.shape[0] += rows;
  if (!t.kept) {
    t.bytes.resize(size_t(t.byteSize()));
    return nullptr;
  }
  if (t.byteSize() <= t.keptBytes)
    return nullptr;
  // Twice the rows (amortised: a decode step copies nothing), at least 64.
  std::vector<int64_t> shape = t.shape;
  shape[0] = std::max<int64_t>({t.shape[0], 2 * (t.shape[0] - rows), 64});
  HostTensor bigger = allocateKept(t.dtype, shape);
  if (!bigger.kept)
    return device ? device->takeError()
                  : makeStatus(K3RT_RESOURCE_EXHAUSTED, "no memory for a growing cache");
  if (device) {
    device->copy(bigger.kept.get(), t.kept.get(), size_t(oldBytes));
    if (k3rt_status_t s = device->takeError())
      return s;
  } else {
    std::memcpy(bigger.kept.get(), t.kept.get(), size_t(oldBytes));
  }
  bigger.shape = t.shape;
  t = std::move(bigger);
  return nullptr;
}

HostTensor CpuExecutable::keptZeros(DType dtype, std::vector<int64_t> shape) {
  HostTensor t = allocateKept(dtype, shape);
  if (!t.kept)
    return HostTensor::zeros(dtype, std::move(shape)); // staged per call instead
  // Host stores: on a device, the pages move there once.
  std::memset(t.kept.get(), 0, size_t(t.byteSize()));
  return t;
}

HostTensor CpuExecutable::allocateKept(DType dtype, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  // At least one byte: a zero-size state still has an address.
  size_t bytes = std::max<size_t>(1, size_t(t.byteSize()));
  if (void *p = device ? device->allocate(bytes) : std::malloc(bytes)) {
    t.kept = adopt(uintptr_t(p));
    t.keptBytes = t.byteSize();
  }
  return t;
}

void CpuExecutable::freeResults(const std::vector<int64_t> &result, const EntryPoint &ep,
                                const std::set<uintptr_t> &owned,
                                const std::map<uint32_t, void *> &staged) {
  std::set<uintptr_t> freed;
  size_t at = 0;
  size_t numOutputs = ep.outputs() ? ep.outputs()->size() : 0;
  for (size_t i = 0; i < numOutputs; ++i) {
    size_t r = ep.outputs()->Get(i)->shape()->size();
    uintptr_t alloc = uintptr_t(result[at]);
    at += 3 + 2 * r;
    if (!isCallsOwn(alloc, owned) || !freed.insert(alloc).second)
      continue;
    if (device)
      device->release(reinterpret_cast<void *>(alloc));
    else
      std::free(reinterpret_cast<void *>(alloc));
  }
  if (device)
    for (auto &[i, buffer] : staged)
      device->release(buffer);
}

} // namespace k3rt

//===--- Threads ----------------------------------------------------------===//

namespace {
/// 0: the default, the cores this process may run on.
std::atomic<int> gThreads{0};

/// The default, computed once (before libomp may pin the calling thread):
/// OMP_NUM_THREADS when it is a count, else the cores in the process's
/// affinity mask (sized for any machine), else the online cores.
int defaultThreads() {
  static const int n = [] {
    if (const char *env = std::getenv("OMP_NUM_THREADS")) {
      char *end = nullptr;
      long v = std::strtol(env, &end, 10);
      if (end != env && *end == '\0' && v > 0 && v <= 4096)
        return int(v);
    }
    long online = sysconf(_SC_NPROCESSORS_CONF);
    int cpus = online > 0 ? int(online) : 1;
    cpu_set_t *set = CPU_ALLOC(cpus);
    size_t size = CPU_ALLOC_SIZE(cpus);
    int count = 0;
    if (set && sched_getaffinity(0, size, set) == 0)
      count = CPU_COUNT_S(size, set);
    if (set)
      CPU_FREE(set);
    return std::max(1, count > 0 ? count : cpus);
  }();
  return n;
}
} // namespace

extern "C" int k3rt_set_threads(int threads) {
  gThreads.store(threads > 0 ? threads : 0);
  return k3rt_threads();
}

extern "C" int k3rt_threads(void) {
  int n = gThreads.load();
  return n > 0 ? n : defaultThreads();
}
