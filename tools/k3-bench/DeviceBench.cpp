//===- DeviceBench.cpp - One function of a binary, timed on its device ----===//
//
// Part of k3. `k3-bench device BINARY.k3b --function=NAME [--dim=N]
// [--compare=OTHER.k3b] [--tolerance=X] [--repeat=N] [--seed=S]
// [--range=I:LO,HI] [--bytes=B] [--flops=F]`: runs an op-level function on
// the binary's device (CUDA for a GPU target, else the CPU) on seeded random
// inputs (every dynamic extent = --dim), best of --repeat calls. With
// --compare, the same inputs through another binary of the same module (the
// CPU one): relative RMSE per output against it (the numerics check of a GPU
// binary, DESIGN.md §6: bf16 < 5e-3) and the time ratio, side by side. With
// --bytes/--flops, achieved GB/s and TFLOP/s and their fractions of an
// H200's 4.8 TB/s and 989 bf16 dense TFLOP/s. MLIR-free: it runs where only
// the runtime does (the device script, test/Gpu/device/run.sh).
//
//===----------------------------------------------------------------------===//

#include "tools/k3-bench/BenchUtil.h"

#include "runtime/src/CudaDevice.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

using namespace k3bench;
using k3rt::HostTensor;

namespace {

struct Binary {
  k3rt_bundle_t *bundle = nullptr;
  std::unique_ptr<k3rt::CudaDevice> device;
  std::unique_ptr<k3rt::CpuExecutable> exe;
  ~Binary() {
    exe.reset(); // detaches from the device first
    device.reset();
    if (bundle)
      k3rt_bundle_release(bundle);
  }
};

bool open(const std::string &path, Binary &b, std::string &error) {
  if (k3rt_status_t s = k3rt_bundle_open(path.c_str(), &b.bundle)) {
    error = k3rt_status_message(s);
    k3rt_status_free(s);
    return false;
  }
  k3rt::CudaDevice *device = nullptr;
  if (b.bundle->root->target() != k3::bundle::Target_CPU) {
    if (k3rt_status_t s = k3rt::CudaDevice::open(0, b.device)) {
      error = path + ": " + k3rt_status_message(s);
      k3rt_status_free(s);
      return false;
    }
    device = b.device.get();
  }
  if (k3rt_status_t s = k3rt::CpuExecutable::load(*b.bundle, b.exe, device)) {
    error = path + ": " + k3rt_status_message(s);
    k3rt_status_free(s);
    return false;
  }
  return true;
}

/// Best-of-`repeat` seconds of `fn` on copies of `inputs`; on a device that
/// times kernels, `kernelSeconds` gets the best call's summed kernel time
/// (without the staging of inputs and outputs through managed memory).
double best(Binary &b, const std::string &fn, const std::vector<HostTensor> &inputs,
            int64_t repeat, std::vector<HostTensor> &outputs, std::string &error,
            double *kernelSeconds = nullptr) {
  double bestSeconds = 1e30;
  if (kernelSeconds)
    *kernelSeconds = -1;
  for (int64_t r = 0; r < repeat; ++r) {
    std::vector<HostTensor> copies = inputs;
    std::vector<HostTensor *> args;
    for (HostTensor &t : copies)
      args.push_back(&t);
    double kernelsBefore = b.device ? b.device->counters.kernelSeconds : 0;
    auto t0 = std::chrono::steady_clock::now();
    if (k3rt_status_t s = b.exe->run(fn, args, outputs)) {
      error = k3rt_status_message(s);
      k3rt_status_free(s);
      return -1;
    }
    bestSeconds = std::min(
        bestSeconds,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (kernelSeconds && b.device && b.device->timesKernels()) {
      double k = b.device->counters.kernelSeconds - kernelsBefore;
      *kernelSeconds = *kernelSeconds < 0 ? k : std::min(*kernelSeconds, k);
    }
  }
  return bestSeconds;
}

double toDouble(const HostTensor &t, int64_t i) {
  if (t.dtype == k3::bundle::DType_F32)
    return t.f32()[i];
  if (t.dtype == k3::bundle::DType_BF16) {
    uint32_t u = uint32_t(reinterpret_cast<const uint16_t *>(t.bytes.data())[i]) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  if (t.dtype == k3::bundle::DType_I32)
    return reinterpret_cast<const int32_t *>(t.bytes.data())[i];
  return t.bytes[i];
}

} // namespace

int runDeviceBench(int argc, char **argv) {
  if (argc < 3)
    return fail("usage: k3-bench device BINARY.k3b --function=NAME [--dim=N] "
                "[--compare=OTHER.k3b] [--tolerance=X] [--repeat=N] [--seed=S] "
                "[--range=I:LO,HI] [--bytes=B] [--flops=F]");
  std::string path = argv[2], fn, compare;
  int64_t dim = 16, repeat = 5, seed = 1;
  double tolerance = 5e-3, bytes = 0, flops = 0;
  std::map<int64_t, std::pair<double, double>> ranges;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char *flag) -> const char * {
      size_t n = std::strlen(flag);
      return a.compare(0, n, flag) == 0 ? a.c_str() + n : nullptr;
    };
    if (positiveFlag(a, "--dim=", dim) || positiveFlag(a, "--repeat=", repeat) ||
        positiveFlag(a, "--seed=", seed))
      continue;
    if (const char *v = value("--function="))
      fn = v;
    else if (const char *v = value("--compare="))
      compare = v;
    else if (const char *v = value("--tolerance="))
      tolerance = std::atof(v);
    else if (const char *v = value("--bytes="))
      bytes = std::atof(v);
    else if (const char *v = value("--flops="))
      flops = std::atof(v);
    else if (const char *v = value("--range=")) {
      int64_t index;
      double lo, hi;
      if (std::sscanf(v, "%ld:%lf,%lf", &index, &lo, &hi) != 3 || !(lo < hi))
        return fail("--range=" + std::string(v) + ": expected INDEX:LO,HI with LO < HI");
      ranges[index] = {lo, hi};
    } else
      return fail("unknown flag '" + a + "' (see k3-bench --help)");
  }
  if (fn.empty())
    return fail("k3-bench device needs --function=NAME");

  std::string error;
  Binary bin, other;
  if (!open(path, bin, error))
    return fail(error);
  const k3::bundle::EntryPoint *ep = bin.exe->entry(fn);
  if (!ep)
    return fail(path + " has no entry point '" + fn + "'");

  // Seeded inputs: f32/bf16 uniform in [-1, 1), bytes in [0, 256), i32 in
  // [0, 16), unless --range says otherwise; dynamic extents are --dim.
  std::mt19937_64 rng{uint64_t(seed)};
  std::vector<HostTensor> inputs;
  for (size_t i = 0; ep->inputs() && i < ep->inputs()->size(); ++i) {
    const k3::bundle::TensorInfo *info = ep->inputs()->Get(i);
    std::vector<int64_t> shape;
    for (int64_t d : *info->shape())
      shape.push_back(d < 0 ? dim : d);
    auto dtype = info->dtype();
    auto range = ranges.count(i) ? ranges[i] : std::pair{-1.0, 1.0};
    if (dtype == k3::bundle::DType_F32 || dtype == k3::bundle::DType_BF16) {
      inputs.push_back(randomTensor(shape, rng, range.first, range.second, dtype));
      continue;
    }
    HostTensor t = HostTensor::zeros(dtype, shape);
    if (!ranges.count(i))
      range = dtype == k3::bundle::DType_I32 ? std::pair{0.0, 16.0} : std::pair{0.0, 256.0};
    for (int64_t e = 0; e < t.numElements(); ++e) {
      int64_t v = int64_t(range.first) +
                  int64_t(rng() % uint64_t(std::max(1.0, range.second - range.first)));
      if (dtype == k3::bundle::DType_I32)
        reinterpret_cast<int32_t *>(t.bytes.data())[e] = int32_t(v);
      else
        t.bytes[e] = uint8_t(v);
    }
    inputs.push_back(std::move(t));
  }

  std::vector<HostTensor> outputs, reference;
  double kernelSeconds = -1;
  double seconds = best(bin, fn, inputs, repeat, outputs, error, &kernelSeconds);
  if (seconds < 0)
    return fail(path + ": " + error);
  std::printf("function: %s, dim %ld, device: %s\n", fn.c_str(), long(dim),
              bin.device ? bin.device->describe().c_str() : "cpu");
  std::printf("best_ms: %.4f (of %ld; with input and output staging)\n", seconds * 1e3,
              long(repeat));
  if (kernelSeconds >= 0) {
    std::printf("kernel_ms: %.4f (%llu launches, %llu synchronisations per call)\n",
                kernelSeconds * 1e3,
                (unsigned long long)(bin.device->counters.launches / uint64_t(repeat)),
                (unsigned long long)(bin.device->counters.synchronizations / uint64_t(repeat)));
    seconds = kernelSeconds; // the rates below are the kernels'
  }
  if (bytes > 0)
    std::printf("GB_per_s: %.1f fraction_of_4.8TB_per_s: %.3f\n", bytes / seconds / 1e9,
                bytes / seconds / 4.8e12);
  if (flops > 0)
    std::printf("TFLOP_per_s: %.2f fraction_of_989: %.4f\n", flops / seconds / 1e12,
                flops / seconds / 989e12);
  if (compare.empty())
    return 0;

  if (!open(compare, other, error))
    return fail(error);
  double otherSeconds = best(other, fn, inputs, repeat, reference, error);
  if (otherSeconds < 0)
    return fail(compare + ": " + error);
  std::printf("compare_best_ms: %.4f speedup_vs_compare: %.2f\n", otherSeconds * 1e3,
              otherSeconds / seconds);
  bool ok = reference.size() == outputs.size();
  for (size_t o = 0; o < outputs.size() && o < reference.size(); ++o) {
    const HostTensor &x = outputs[o], &r = reference[o];
    if (x.numElements() != r.numElements()) {
      std::printf("output %zu: %ld elements vs %ld\n", o, long(x.numElements()),
                  long(r.numElements()));
      ok = false;
      continue;
    }
    double num = 0, den = 0;
    for (int64_t e = 0; e < x.numElements(); ++e) {
      double d = toDouble(x, e) - toDouble(r, e);
      num += d * d;
      den += toDouble(r, e) * toDouble(r, e);
    }
    double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    bool pass = std::isfinite(rel) && rel < tolerance;
    ok = ok && pass;
    std::printf("output %zu relative_rmse: %.3g (%s, tolerance %.0e)\n", o, rel,
                pass ? "ok" : "FAIL", tolerance);
  }
  return ok ? 0 : 1;
}
