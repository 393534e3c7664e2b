//===- CudaDevice.cpp - The CUDA driver, loaded at run time ---------------===//
//
// Part of k3. The driver's types are declared here, not included: the
// runtime builds on machines without CUDA. The values used are the driver
// API's (cuda.h, stable across releases): attributes 75/76 (compute
// capability), JIT options 3–6 (log buffers), function attribute 8 (dynamic
// shared memory limit), CU_MEM_ATTACH_GLOBAL = 1.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/CudaDevice.h"
#include "runtime/src/Status.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <csetjmp>
#include <dlfcn.h>
#include <sstream>

using namespace k3::bundle;

namespace k3rt {

using CUresult = int;
using CUdeviceptr = unsigned long long;

struct CudaApi {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(int *, int);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGetAttribute)(int *, int, int);
  CUresult (*cuDeviceGetName)(char *, int, int);
  CUresult (*cuDevicePrimaryCtxRetain)(void **, int);
  CUresult (*cuDevicePrimaryCtxRelease)(int);
  CUresult (*cuCtxSetCurrent)(void *);
  CUresult (*cuModuleLoadDataEx)(void **, const void *, unsigned, int *, void **);
  CUresult (*cuModuleUnload)(void *);
  CUresult (*cuModuleGetFunction)(void **, void *, const char *);
  CUresult (*cuFuncSetAttribute)(void *, int, int);
  CUresult (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, void *, void **, void **);
  CUresult (*cuStreamCreate)(void **, unsigned);
  CUresult (*cuStreamSynchronize)(void *);
  CUresult (*cuStreamQuery)(void *) = nullptr; ///< optional (queryStream)
  CUresult (*cuStreamDestroy)(void *);
  CUresult (*cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpy)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuMemsetD32)(CUdeviceptr, unsigned, size_t);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  // Optional: kernel timing (absent: no device times).
  CUresult (*cuEventCreate)(void **, unsigned);
  CUresult (*cuEventRecord)(void *, void *);
  CUresult (*cuEventElapsedTime)(float *, void *, void *);
  CUresult (*cuEventDestroy)(void *);
  // Optional: CUDA graphs (absent: every call launches its kernels).
  CUresult (*cuStreamBeginCapture)(void *, int) = nullptr;
  CUresult (*cuStreamEndCapture)(void *, void **) = nullptr;
  CUresult (*cuGraphInstantiateWithFlags)(void **, void *, unsigned long long) = nullptr;
  CUresult (*cuGraphLaunch)(void *, void *) = nullptr;
  CUresult (*cuGraphExecDestroy)(void *) = nullptr;
  CUresult (*cuGraphDestroy)(void *) = nullptr;
};

namespace {

constexpr int kAttrCcMajor = 75, kAttrCcMinor = 76;
constexpr int kJitInfoLog = 3, kJitInfoLogSize = 4, kJitErrorLog = 5, kJitErrorLogSize = 6;
constexpr int kFuncMaxDynamicShared = 8;
constexpr unsigned kMemAttachGlobal = 1;
constexpr unsigned kDefaultSharedLimit = 48 * 1024;
// CU_STREAM_CAPTURE_MODE_RELAXED: the host program allocates from the pool
// (cuMemAllocManaged on a miss) while its launches are captured, which the
// default (global) mode refuses as a potentially unsafe call.
constexpr int kCaptureModeRelaxed = 2;

std::string oneLine(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0' || s.back() == ' '))
    s.pop_back();
  for (char &c : s)
    if (c == '\n')
      c = ';';
  return s;
}

} // namespace

/// The callback context of one bundle's host programs.
struct CudaDevice::Binding {
  CudaDevice *device;
  const k3rt_bundle_s *bundle;
  K3GpuOps ops;
  std::map<void *, std::string> functionNames; ///< for launch errors
};

static std::string resultName(const CudaApi &api, CUresult r) {
  const char *n = nullptr;
  if (api.cuGetErrorName && api.cuGetErrorName(r, &n) == 0 && n)
    return n;
  return "CUDA error " + std::to_string(r);
}

/// Reads `K3_CUDA_CHECK` (see CudaDevice::Checks).
static k3rt_status_t parseChecks(CudaDevice::Checks &c) {
  const char *env = std::getenv("K3_CUDA_CHECK");
  if (!env)
    return nullptr;
  std::stringstream list(env);
  for (std::string word; std::getline(list, word, ',');) {
    if (word == "sync")
      c.sync = true;
    else if (word == "poison")
      c.poison = true;
    else if (word == "nan")
      c.nan = c.sync = c.poison = true;
    else if (!word.empty())
      return makeStatus(K3RT_INVALID_ARGUMENT, "K3_CUDA_CHECK: unknown check '" + word +
                                                   "' (known: sync, poison, nan)");
  }
  return nullptr;
}

namespace {
/// The loaded driver's stream calls, for queryStream (a plain function:
/// NCCL's waits take no context). One driver per process.
CUresult (*g_streamQuery)(void *) = nullptr;
CUresult (*g_streamSynchronize)(void *) = nullptr;
} // namespace

int CudaDevice::queryStream(void *stream) {
  constexpr CUresult kNotReady = 600; // CUDA_ERROR_NOT_READY
  if (g_streamQuery) {
    CUresult r = g_streamQuery(stream);
    return r == 0 ? 0 : r == kNotReady ? 1 : -1;
  }
  return g_streamSynchronize && g_streamSynchronize(stream) == 0 ? 0 : -1;
}

k3rt_status_t CudaDevice::open(int ordinal, std::unique_ptr<CudaDevice> &out) {
  std::unique_ptr<CudaDevice> d(new CudaDevice());
  if (k3rt_status_t s = parseChecks(d->checking))
    return s;
  d->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!d->lib) {
    const char *e = dlerror();
    return makeStatus(K3RT_UNAVAILABLE,
                      std::string("no CUDA driver (") + (e ? e : "libcuda.so.1 not found") + ")");
  }
  d->api = std::make_unique<CudaApi>();
  CudaApi &a = *d->api;
  std::string missing;
  auto sym = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(d->lib, name));
    if (!fn && missing.empty())
      missing = name;
  };
  sym(a.cuInit, "cuInit");
  sym(a.cuDeviceGet, "cuDeviceGet");
  sym(a.cuDeviceGetCount, "cuDeviceGetCount");
  sym(a.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  sym(a.cuDeviceGetName, "cuDeviceGetName");
  sym(a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  sym(a.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  sym(a.cuCtxSetCurrent, "cuCtxSetCurrent");
  sym(a.cuModuleLoadDataEx, "cuModuleLoadDataEx");
  sym(a.cuModuleUnload, "cuModuleUnload");
  sym(a.cuModuleGetFunction, "cuModuleGetFunction");
  sym(a.cuFuncSetAttribute, "cuFuncSetAttribute");
  sym(a.cuLaunchKernel, "cuLaunchKernel");
  sym(a.cuStreamCreate, "cuStreamCreate");
  sym(a.cuStreamSynchronize, "cuStreamSynchronize");
  sym(a.cuStreamDestroy, "cuStreamDestroy_v2");
  sym(a.cuMemAllocManaged, "cuMemAllocManaged");
  sym(a.cuMemFree, "cuMemFree_v2");
  sym(a.cuMemcpy, "cuMemcpy");
  sym(a.cuMemsetD32, "cuMemsetD32_v2");
  sym(a.cuGetErrorName, "cuGetErrorName");
  if (!missing.empty())
    return makeStatus(K3RT_UNAVAILABLE,
                      "no CUDA driver (libcuda.so.1 lacks " + missing + ")");
  std::string optional;
  std::swap(optional, missing);
  sym(a.cuEventCreate, "cuEventCreate");
  sym(a.cuEventRecord, "cuEventRecord");
  sym(a.cuEventElapsedTime, "cuEventElapsedTime_v2");
  if (!a.cuEventElapsedTime)
    sym(a.cuEventElapsedTime, "cuEventElapsedTime");
  sym(a.cuEventDestroy, "cuEventDestroy_v2");
  sym(a.cuStreamQuery, "cuStreamQuery");
  sym(a.cuStreamBeginCapture, "cuStreamBeginCapture_v2");
  sym(a.cuStreamEndCapture, "cuStreamEndCapture");
  sym(a.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
  sym(a.cuGraphLaunch, "cuGraphLaunch");
  sym(a.cuGraphExecDestroy, "cuGraphExecDestroy");
  sym(a.cuGraphDestroy, "cuGraphDestroy");
  g_streamQuery = a.cuStreamQuery;
  g_streamSynchronize = a.cuStreamSynchronize;
  const bool events = a.cuEventCreate && a.cuEventRecord &&
                      a.cuEventElapsedTime && a.cuEventDestroy;
  auto check = [&](CUresult r, const char *what) -> k3rt_status_t {
    if (r == 0)
      return nullptr;
    return makeStatus(K3RT_UNAVAILABLE, std::string("CUDA: ") + what + " failed: " +
                                            resultName(a, r));
  };
  if (k3rt_status_t s = check(a.cuInit(0), "cuInit"))
    return s;
  int count = 0;
  if (k3rt_status_t s = check(a.cuDeviceGetCount(&count), "cuDeviceGetCount"))
    return s;
  if (ordinal < 0 || ordinal >= count)
    return makeStatus(K3RT_UNAVAILABLE, "CUDA device " + std::to_string(ordinal) +
                                            " does not exist (" + std::to_string(count) +
                                            " devices)");
  if (k3rt_status_t s = check(a.cuDeviceGet(&d->device, ordinal), "cuDeviceGet"))
    return s;
  char name[256] = {0};
  a.cuDeviceGetName(name, sizeof name - 1, d->device);
  d->name = name;
  if (k3rt_status_t s = check(a.cuDeviceGetAttribute(&d->ccMajor, kAttrCcMajor, d->device),
                              "cuDeviceGetAttribute"))
    return s;
  if (k3rt_status_t s = check(a.cuDeviceGetAttribute(&d->ccMinor, kAttrCcMinor, d->device),
                              "cuDeviceGetAttribute"))
    return s;
  if (k3rt_status_t s = check(a.cuDevicePrimaryCtxRetain(&d->context, d->device),
                              "cuDevicePrimaryCtxRetain"))
    return s;
  if (k3rt_status_t s = check(a.cuCtxSetCurrent(d->context), "cuCtxSetCurrent"))
    return s;
  if (k3rt_status_t s = check(a.cuStreamCreate(&d->stream, 0), "cuStreamCreate"))
    return s;
  if (events && a.cuEventCreate(&d->eventStart, 0) == 0 && a.cuEventCreate(&d->eventEnd, 0) == 0)
    d->timed = true;
  out = std::move(d);
  return nullptr;
}

CudaDevice::~CudaDevice() {
  if (api && context) {
    if (stream) {
      api->cuStreamSynchronize(stream);
      api->cuStreamDestroy(stream);
    }
    if (eventStart)
      api->cuEventDestroy(eventStart);
    if (eventEnd)
      api->cuEventDestroy(eventEnd);
    for (auto &[cls, list] : freeLists)
      for (void *p : list)
        api->cuMemFree(CUdeviceptr(uintptr_t(p)));
    for (auto &[p, cls] : live)
      api->cuMemFree(CUdeviceptr(uintptr_t(p)));
    for (void *p : quarantine)
      api->cuMemFree(CUdeviceptr(uintptr_t(p)));
    api->cuDevicePrimaryCtxRelease(device);
  }
  if (lib)
    dlclose(lib);
}

std::string CudaDevice::describe() const {
  return name + " (sm_" + std::to_string(ccMajor) + std::to_string(ccMinor) + ")";
}

k3rt_status_t CudaDevice::checkTarget(const k3rt_bundle_s &bundle) const {
  Target t = bundle.root->target();
  if (t == Target_SM90A && computeCapability() != 90)
    return makeStatus(K3RT_UNIMPLEMENTED,
                      "the kernels are for sm_90a (Hopper, compute capability 9.0); " +
                          describe() + " cannot run them: compile with --target=sm_80");
  if (t == Target_SM80 && computeCapability() < 80)
    return makeStatus(K3RT_UNIMPLEMENTED,
                      "the kernels are for sm_80 and later; " + describe() + " is older");
  if (t == Target_CPU)
    return makeStatus(K3RT_UNIMPLEMENTED,
                      "the binary has CPU kernels only: compile with --target=sm_90a or sm_80");
  return nullptr;
}

void CudaDevice::fail(const std::string &message) {
  if (error.empty())
    error = message;
}

k3rt_status_t CudaDevice::takeError() {
  if (error.empty())
    return nullptr;
  std::string e;
  e.swap(error);
  return makeStatus(K3RT_INTERNAL, e);
}

void CudaDevice::copy(void *dst, const void *src, size_t bytes) {
  if (capture.active) { // cuMemcpy is not a stream operation: not captured
    capture.spoiled = "the program copies memory";
    return;
  }
  if (error.empty() && bytes)
    if (CUresult r = api->cuMemcpy(CUdeviceptr(uintptr_t(dst)), CUdeviceptr(uintptr_t(src)), bytes))
      fail("CUDA: cuMemcpy failed: " + resultName(*api, r));
}

void CudaDevice::synchronize() {
  if (capture.active) {
    // The program's last wait stays out of the graph (the caller waits for
    // the graph launch); an earlier one means host code reads device
    // memory between launches, which a replay would not redo.
    if (++capture.synchronizations > 1)
      capture.spoiled = "the program waits for the device before its end";
    return;
  }
  bool timing = eventStartPending && api->cuEventRecord(eventEnd, stream) == 0;
  eventStartPending = false;
  ++counters.synchronizations;
  if (CUresult r = api->cuStreamSynchronize(stream)) {
    fail("CUDA: cuStreamSynchronize failed: " + resultName(*api, r));
    return;
  }
  float ms = 0;
  if (timing && api->cuEventElapsedTime(&ms, eventStart, eventEnd) == 0)
    counters.kernelSeconds += ms * 1e-3;
}

void *CudaDevice::allocate(size_t bytes) {
  // Size classes of powers of two from 256 bytes: the host programs
  // allocate and free the same sizes on every call.
  size_t cls = 256;
  while (cls < bytes)
    cls <<= 1;
  if (capture.active) { // a buffer this capture freed, still live
    auto &mine = capture.freed[cls];
    if (!mine.empty()) {
      void *p = mine.back();
      mine.pop_back();
      requested[p] = bytes;
      ++counters.poolHits;
      return p;
    }
  }
  auto &list = freeLists[cls];
  if (!list.empty()) {
    void *p = list.back();
    list.pop_back();
    live[p] = cls;
    requested[p] = bytes;
    ++counters.poolHits;
    return p;
  }
  CUdeviceptr p = 0;
  if (CUresult r = api->cuMemAllocManaged(&p, cls, kMemAttachGlobal)) {
    fail("CUDA: cannot allocate " + std::to_string(bytes) + " bytes of managed memory: " +
         resultName(*api, r));
    return nullptr;
  }
  ++counters.allocations;
  void *ptr = reinterpret_cast<void *>(uintptr_t(p));
  live[ptr] = cls;
  requested[ptr] = bytes;
  // The whole size class, so that a read past the requested end is a NaN too.
  if (checking.poison)
    if (CUresult r = api->cuMemsetD32(p, ~0u, cls / 4))
      fail("CUDA: cuMemsetD32 failed: " + resultName(*api, r));
  return ptr;
}

void *CudaDevice::allocateExact(size_t bytes) {
  CUdeviceptr p = 0;
  if (CUresult r = api->cuMemAllocManaged(&p, std::max<size_t>(bytes, 1), kMemAttachGlobal)) {
    fail("CUDA: cannot allocate " + std::to_string(bytes) + " bytes of managed memory: " +
         resultName(*api, r));
    return nullptr;
  }
  ++counters.allocations;
  void *ptr = reinterpret_cast<void *>(uintptr_t(p));
  live[ptr] = 0;
  return ptr;
}

void CudaDevice::release(void *ptr) {
  if (!ptr)
    return;
  auto it = live.find(ptr);
  if (it == live.end()) {
    fail("CUDA: free of a pointer the device did not allocate");
    return;
  }
  if (capture.active) {
    // The graph's launches use it again on every replay: held until the
    // graph goes (`destroy`), still live; the capture's later allocations
    // may take it.
    capture.freed[it->second].push_back(ptr);
    return;
  }
  if (it->second == 0) {
    api->cuMemFree(CUdeviceptr(uintptr_t(ptr)));
  } else if (checking.poison) {
    // Poisoned on the stream (after the launches that use it) and kept out
    // of the pool until the device closes: a later read of it is a NaN,
    // never another buffer's data.
    if (CUresult r = api->cuMemsetD32(CUdeviceptr(uintptr_t(ptr)), ~0u, it->second / 4))
      fail("CUDA: cuMemsetD32 failed: " + resultName(*api, r));
    quarantine.push_back(ptr);
  } else {
    freeLists[it->second].push_back(ptr);
  }
  requested.erase(ptr);
  live.erase(it);
}

bool CudaDevice::graphsAvailable() const {
  return api->cuStreamBeginCapture && api->cuStreamEndCapture &&
         api->cuGraphInstantiateWithFlags && api->cuGraphLaunch && api->cuGraphExecDestroy &&
         api->cuGraphDestroy && !checking.sync && !checking.poison && !checking.nan;
}

void CudaDevice::beginCapture() {
  capture = Capture();
  if (!error.empty())
    return;
  // Kernel times are measured around the graph launches instead.
  if (eventStartPending)
    synchronize();
  if (CUresult r = api->cuStreamBeginCapture(stream, kCaptureModeRelaxed)) {
    fail("CUDA: cuStreamBeginCapture failed: " + resultName(*api, r));
    return;
  }
  capture.active = true;
}

std::unique_ptr<CudaDevice::Graph> CudaDevice::endCapture(std::string &why) {
  if (!capture.active) {
    why = error.empty() ? "no capture" : error;
    return nullptr;
  }
  capture.active = false;
  auto g = std::make_unique<Graph>();
  for (auto &[cls, list] : capture.freed)
    g->held.insert(g->held.end(), list.begin(), list.end());
  capture.freed.clear();
  g->kernels = capture.kernels;
  CUresult r = api->cuStreamEndCapture(stream, &g->graph);
  if (r)
    why = "cuStreamEndCapture failed: " + resultName(*api, r);
  else if (!error.empty())
    why = error;
  else if (!capture.spoiled.empty())
    why = capture.spoiled;
  else if (CUresult ri = api->cuGraphInstantiateWithFlags(&g->exec, g->graph, 0))
    why = "cuGraphInstantiateWithFlags failed: " + resultName(*api, ri);
  if (!why.empty()) {
    destroy(*g);
    return nullptr;
  }
  ++counters.graphsCaptured;
  return g;
}

void CudaDevice::launch(const Graph &g) {
  if (!error.empty())
    return;
  if (timed && !eventStartPending)
    eventStartPending = api->cuEventRecord(eventStart, stream) == 0;
  if (CUresult r = api->cuGraphLaunch(g.exec, stream)) {
    fail("CUDA: cuGraphLaunch failed: " + resultName(*api, r));
    return;
  }
  ++counters.graphLaunches;
  counters.graphKernels += g.kernels;
}

void CudaDevice::destroy(Graph &g) {
  if (g.exec)
    api->cuGraphExecDestroy(g.exec);
  if (g.graph)
    api->cuGraphDestroy(g.graph);
  g.exec = g.graph = nullptr;
  for (void *p : g.held)
    release(p);
  g.held.clear();
}

bool CudaDevice::findBuffer(const void *p, char *&start, size_t &bytes) const {
  auto it = requested.upper_bound(const_cast<void *>(p));
  if (it == requested.begin())
    return false;
  --it;
  char *s = static_cast<char *>(it->first);
  if (static_cast<const char *>(p) >= s + std::max<size_t>(it->second, 1))
    return false;
  start = s;
  bytes = it->second;
  return true;
}

size_t CudaDevice::countNaNs(const char *start, size_t bytes) {
  // The buffer's element type is unknown: a 32-bit word counts when it is
  // an f32 NaN or its upper half (a bf16 element, little-endian) is a bf16
  // NaN. A half that is still poison (0xffff: a bf16 buffer partly
  // written) leaves only the other half to judge; a lower half alone is
  // not judged, since an f32's low bits look like anything.
  size_t n = 0;
  auto bf16NaN = [](uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f); };
  for (size_t i = 0; i + 4 <= bytes; i += 4) {
    uint32_t w;
    std::memcpy(&w, start + i, 4);
    uint16_t lo = uint16_t(w), hi = uint16_t(w >> 16);
    if (hi == 0xffff)
      continue;
    bool f32NaN = (w & 0x7f800000u) == 0x7f800000u && (w & 0x007fffffu);
    n += lo == 0xffff ? bf16NaN(hi) : f32NaN || bf16NaN(hi);
  }
  return n;
}

std::vector<std::pair<char *, size_t>> CudaDevice::paramBuffers(void **params,
                                                                size_t count) const {
  // A parameter's size is the kernel's business: every one is read as 8
  // bytes, and those equal to an address inside a pooled buffer name it (a
  // memref's pointers; an integer that happens to be such an address only
  // adds a buffer to scan).
  std::vector<std::pair<char *, size_t>> out;
  for (size_t i = 0; params && i < count; ++i) {
    uint64_t v;
    std::memcpy(&v, params[i], sizeof v);
    char *start;
    size_t bytes;
    if (findBuffer(reinterpret_cast<const void *>(uintptr_t(v)), start, bytes) &&
        std::none_of(out.begin(), out.end(), [&](auto &b) { return b.first == start; }))
      out.push_back({start, countNaNs(start, bytes)});
  }
  return out;
}

void *CudaDevice::loadModule(const k3rt_bundle_s &bundle, const void *data, size_t size) {
  // The host program names a kernel of the bundle (lib/Target/Gpu).
  static const char kPrefix[] = "k3-kernel:";
  std::string ref(static_cast<const char *>(data), size);
  if (ref.compare(0, sizeof kPrefix - 1, kPrefix) != 0) {
    fail("CUDA: a host program loads a module that is not a k3 kernel reference");
    return nullptr;
  }
  std::string kernelName = ref.substr(sizeof kPrefix - 1);
  const Kernel *kernel = nullptr;
  if (bundle.root->kernels())
    for (const Kernel *k : *bundle.root->kernels())
      if (k->name()->str() == kernelName && k->ptx() && k->ptx()->size())
        kernel = k;
  if (!kernel) {
    fail("CUDA: the binary has no kernel '" + kernelName + "'");
    return nullptr;
  }
  // The cubin when it was assembled for this device (sm_90a: exactly 9.0;
  // sm_80: any 8.x, binary compatible within the major version), else the
  // PTX, compiled by the driver.
  Target t = bundle.root->target();
  bool cubinFits = kernel->cubin() && kernel->cubin()->size() &&
                   ((t == Target_SM90A && computeCapability() == 90) ||
                    (t == Target_SM80 && ccMajor == 8));
  const void *image = cubinFits ? static_cast<const void *>(kernel->cubin()->data())
                                : static_cast<const void *>(kernel->ptx()->c_str());
  char infoLog[4096] = {0}, errorLog[4096] = {0};
  int options[] = {kJitInfoLog, kJitInfoLogSize, kJitErrorLog, kJitErrorLogSize};
  void *values[] = {infoLog, reinterpret_cast<void *>(uintptr_t(sizeof infoLog - 1)), errorLog,
                    reinterpret_cast<void *>(uintptr_t(sizeof errorLog - 1))};
  void *module = nullptr;
  if (CUresult r = api->cuModuleLoadDataEx(&module, image, 4, options, values)) {
    fail("CUDA: kernel '" + kernelName + "': cuModuleLoadDataEx (" +
         (cubinFits ? "cubin" : "PTX, JIT for " + describe()) + ") failed: " +
         resultName(*api, r) + (errorLog[0] ? ": JIT log: " + oneLine(errorLog) : "") +
         (infoLog[0] ? " (info: " + oneLine(infoLog) + ")" : ""));
    return nullptr;
  }
  ++counters.modules;
  if (!cubinFits)
    ++counters.jitModules;
  return module;
}

/// The callbacks behind `K3GpuOps`. Each does nothing once an error is
/// pending; the wrappers in `ops` then leave the host program through the
/// escape the caller set (`setEscape`), after these have returned: no C++
/// object is left undestroyed on the way out.
struct GpuCallbacks {
  using Binding = CudaDevice::Binding;
  static CudaDevice &device(void *ctx) { return *static_cast<Binding *>(ctx)->device; }

  static void *moduleLoad(void *ctx, const void *data, size_t size) {
    auto *b = static_cast<Binding *>(ctx);
    return b->device->error.empty() ? b->device->loadModule(*b->bundle, data, size) : nullptr;
  }
  static void moduleUnload(void *ctx, void *module) {
    if (module)
      device(ctx).api->cuModuleUnload(module);
  }
  static void *moduleGetFunction(void *ctx, void *module, const char *name) {
    auto *b = static_cast<Binding *>(ctx);
    CudaDevice &d = *b->device;
    if (!d.error.empty() || !module)
      return nullptr;
    void *f = nullptr;
    if (CUresult r = d.api->cuModuleGetFunction(&f, module, name)) {
      d.fail(std::string("CUDA: kernel function '") + name + "' not found: " +
             resultName(*d.api, r));
      return nullptr;
    }
    b->functionNames[f] = name;
    return f;
  }
  static void synchronize(void *ctx) {
    if (device(ctx).error.empty())
      device(ctx).synchronize();
  }
  static constexpr unsigned kMaxNaNReports = 20;
  static void launch(void *ctx, void *f, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx,
                     intptr_t by, intptr_t bz, int32_t smem, void **params, void **extra,
                     size_t paramsCount) {
    auto *b = static_cast<Binding *>(ctx);
    CudaDevice &d = *b->device;
    if (!d.error.empty() || !f)
      return;
    if (gx == 0 || gy == 0 || gz == 0)
      return; // an empty grid: nothing to do (e.g. zero tokens)
    std::string name = b->functionNames.count(f) ? b->functionNames[f] : "?";
    auto dims = [&] {
      return "grid (" + std::to_string(gx) + ", " + std::to_string(gy) + ", " +
             std::to_string(gz) + "), block (" + std::to_string(bx) + ", " +
             std::to_string(by) + ", " + std::to_string(bz) + ")";
    };
    if (gx < 0 || gy < 0 || gz < 0 || gx > 0x7fffffff || gy > 65535 || gz > 65535) {
      d.fail("CUDA: kernel '" + name + "': " + dims() +
             " is outside the device's grid limits (x < 2^31, y and z <= 65535)");
      return;
    }
    // Over 48 KiB a kernel must opt in; a device with less shared memory
    // refuses here, named, rather than at the launch.
    if (unsigned(smem) > kDefaultSharedLimit)
      if (CUresult r = d.api->cuFuncSetAttribute(f, kFuncMaxDynamicShared, smem)) {
        d.fail("CUDA: kernel '" + name + "': " + std::to_string(smem) +
               " bytes of dynamic shared memory refused: " + resultName(*d.api, r));
        return;
      }
    std::vector<std::pair<char *, size_t>> before;
    if (d.checking.nan) {
      d.synchronize();
      before = d.paramBuffers(params, paramsCount);
    }
    if (d.timed && !d.eventStartPending && !d.capture.active)
      d.eventStartPending = d.api->cuEventRecord(d.eventStart, d.stream) == 0;
    if (CUresult r = d.api->cuLaunchKernel(f, unsigned(gx), unsigned(gy), unsigned(gz),
                                           unsigned(bx), unsigned(by), unsigned(bz),
                                           unsigned(smem), d.stream, params, extra)) {
      d.fail("CUDA: kernel '" + name + "': launch with " + dims() + " failed: " +
             resultName(*d.api, r));
      return;
    }
    if (d.capture.active) {
      ++d.capture.kernels; // recorded into the graph, not run
      return;
    }
    ++d.counters.launches;
    if (!d.checking.sync)
      return;
    if (CUresult r = d.api->cuStreamSynchronize(d.stream)) {
      d.fail("CUDA: kernel '" + name + "' (launch " + std::to_string(d.counters.launches) +
             ", " + dims() + ") failed: " + resultName(*d.api, r));
      return;
    }
    // The first kernels that leave more NaNs in a buffer than it held.
    for (auto &[start, nans] : before) {
      size_t now = CudaDevice::countNaNs(start, d.requested.count(start) ? d.requested[start] : 0);
      if (now > nans && d.nanReports < kMaxNaNReports) {
        ++d.nanReports;
        std::fprintf(stderr,
                     "K3_CUDA_CHECK: kernel '%s' (launch %llu, %s): a buffer of %zu bytes "
                     "holds %zu NaNs, %zu before\n",
                     name.c_str(), (unsigned long long)d.counters.launches, dims().c_str(),
                     d.requested[start], now, nans);
      }
    }
  }
  static void *alloc(void *ctx, uint64_t bytes) {
    return device(ctx).error.empty() ? device(ctx).allocate(std::max<uint64_t>(bytes, 1))
                                     : nullptr;
  }
  static void copy(void *ctx, void *dst, void *src, size_t bytes) {
    device(ctx).copy(dst, src, bytes);
  }
  static void fill(void *ctx, void *dst, unsigned value, size_t count) {
    CudaDevice &d = device(ctx);
    if (d.capture.active) { // cuMemsetD32 is not a stream operation
      d.capture.spoiled = "the program fills memory";
      return;
    }
    if (d.error.empty())
      if (CUresult r = d.api->cuMemsetD32(CUdeviceptr(uintptr_t(dst)), value, count))
        d.fail("CUDA: cuMemsetD32 failed: " + resultName(*d.api, r));
  }
  /// Leaves the host program when an error is pending and the caller set an
  /// escape: the program cannot stop by itself, and its host code may read
  /// what a failed launch did not compute (an index, a count) or write to
  /// an allocation that failed.
  static void escape(void *ctx) {
    CudaDevice &d = device(ctx);
    if (!d.error.empty() && d.escapeTo)
      std::longjmp(*d.escapeTo, 1);
  }
};

const K3GpuOps *CudaDevice::ops(const k3rt_bundle_s &bundle) {
  auto b = std::make_unique<Binding>();
  b->device = this;
  b->bundle = &bundle;
  K3GpuOps &o = b->ops;
  o.ctx = b.get();
  // The wrappers hold no C++ objects: `escape` may leave through them.
  o.moduleLoad = [](void *ctx, const void *data, size_t size) -> void * {
    void *m = GpuCallbacks::moduleLoad(ctx, data, size);
    GpuCallbacks::escape(ctx);
    return m;
  };
  o.moduleUnload = [](void *ctx, void *module) { GpuCallbacks::moduleUnload(ctx, module); };
  o.moduleGetFunction = [](void *ctx, void *module, const char *name) -> void * {
    void *f = GpuCallbacks::moduleGetFunction(ctx, module, name);
    GpuCallbacks::escape(ctx);
    return f;
  };
  // One in-order stream per device: the host program chains its launches
  // and frees on it and synchronises before touching memory (see
  // k3-gpu-async-launches), which relies on this order.
  o.streamCreate = [](void *ctx) -> void * { return GpuCallbacks::device(ctx).stream; };
  o.streamSynchronize = [](void *ctx, void *) {
    GpuCallbacks::synchronize(ctx);
    GpuCallbacks::escape(ctx);
  };
  o.streamDestroy = [](void *, void *) {};
  o.launchKernel = [](void *ctx, void *f, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx,
                      intptr_t by, intptr_t bz, int32_t smem, void *, void **params,
                      void **extra, size_t paramsCount) {
    GpuCallbacks::launch(ctx, f, gx, gy, gz, bx, by, bz, smem, params, extra, paramsCount);
    GpuCallbacks::escape(ctx);
  };
  o.memAlloc = [](void *ctx, uint64_t bytes, void *, bool) -> void * {
    void *p = GpuCallbacks::alloc(ctx, bytes);
    GpuCallbacks::escape(ctx);
    return p;
  };
  o.memFree = [](void *ctx, void *p, void *) {
    GpuCallbacks::device(ctx).release(p);
    GpuCallbacks::escape(ctx);
  };
  o.memcpy = [](void *ctx, void *dst, void *src, size_t bytes, void *) {
    GpuCallbacks::copy(ctx, dst, src, bytes);
    GpuCallbacks::escape(ctx);
  };
  o.memset32 = [](void *ctx, void *dst, unsigned value, size_t count, void *) {
    GpuCallbacks::fill(ctx, dst, value, count);
    GpuCallbacks::escape(ctx);
  };
  bindings.push_back(std::move(b));
  return &bindings.back()->ops;
}

} // namespace k3rt
