//===- BenchUtil.cpp - Shared pieces of k3-bench's programs ---------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "tools/k3-bench/BenchUtil.h"

#include <chrono>
#include <algorithm>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace k3bench {

int fail(const std::string &m) {
  std::fprintf(stderr, "k3-bench: error: %s\n", m.c_str());
  return 1;
}

bool spawn(const std::vector<std::string> &args) {
  std::vector<char *> argv;
  for (const std::string &a : args)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
    return false;
  int status = 0;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string selfDir() {
  std::vector<char> buf(4096);
  ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  std::string path(buf.data(), n > 0 ? size_t(n) : 0);
  return path.substr(0, path.rfind('/'));
}

k3rt::HostTensor randomTensor(std::vector<int64_t> shape, std::mt19937_64 &rng, double lo,
                              double hi, k3::bundle::DType dtype) {
  k3rt::HostTensor t = k3rt::HostTensor::zeros(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numElements(); ++i) {
    float v = float(lo + (hi - lo) * double(rng() >> 11) * 0x1.0p-53);
    if (dtype == k3::bundle::DType_F32) {
      reinterpret_cast<float *>(t.bytes.data())[i] = v;
    } else { // bf16: the high half, rounded to nearest even
      uint32_t u;
      std::memcpy(&u, &v, 4);
      u += 0x7FFF + ((u >> 16) & 1);
      reinterpret_cast<uint16_t *>(t.bytes.data())[i] = uint16_t(u >> 16);
    }
  }
  return t;
}

Loaded::~Loaded() {
  exe.reset(); // detaches from the device before it closes
  device.reset();
  if (bundle)
    k3rt_bundle_release(bundle);
}

bool load(const std::string &path, const std::string &entry, Loaded &out, std::string &error,
          bool cuda) {
  out.exe.reset(); // a second load replaces the first
  out.device.reset();
  if (out.bundle)
    k3rt_bundle_release(out.bundle);
  out.bundle = nullptr;
  if (k3rt_status_t s = k3rt_bundle_open(path.c_str(), &out.bundle)) {
    error = k3rt_status_message(s);
    k3rt_status_free(s);
    return false;
  }
  if (cuda)
    if (k3rt_status_t s = k3rt::CudaDevice::open(0, out.device)) {
      error = std::string("--device=cuda: ") + k3rt_status_message(s);
      k3rt_status_free(s);
      return false;
    }
  if (k3rt_status_t s = k3rt::CpuExecutable::load(*out.bundle, out.exe, out.device.get())) {
    error = k3rt_status_message(s);
    k3rt_status_free(s);
    return false;
  }
  if (!out.exe->entry(entry)) {
    error = path + " has no entry point '" + entry + "'";
    return false;
  }
  return true;
}

double timedRun(Loaded &form, const std::string &entry, const std::vector<k3rt::HostTensor> &inputs,
                std::vector<k3rt::HostTensor> &outputs, std::string &error) {
  std::vector<k3rt::HostTensor> copies = inputs;
  std::vector<k3rt::HostTensor *> args;
  for (k3rt::HostTensor &t : copies)
    args.push_back(&t);
  auto t0 = std::chrono::steady_clock::now();
  k3rt_status_t s = form.exe->run(entry, args, outputs);
  double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (s) {
    error = k3rt_status_message(s);
    k3rt_status_free(s);
    return -1;
  }
  return dt;
}

bool positiveFlag(const std::string &arg, const char *flag, int64_t &value) {
  size_t n = std::strlen(flag);
  if (arg.compare(0, n, flag) != 0)
    return false;
  char *end = nullptr;
  value = std::strtoll(arg.c_str() + n, &end, 10);
  if (*end || value <= 0)
    std::exit(fail("'" + arg + "' needs a positive integer"));
  return true;
}

bool countList(const std::string &text, int64_t max, std::vector<int64_t> &out) {
  out.clear();
  for (size_t at = 0; at <= text.size();) {
    size_t comma = std::min(text.find(',', at), text.size());
    std::string item = text.substr(at, comma - at);
    char *end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || item.size() > 19 || *end || v < 1 || v > max)
      return false;
    out.push_back(v);
    at = comma + 1;
  }
  return true;
}

SideBySide::~SideBySide() {
  if (!tmp.empty())
    spawn({"/bin/rm", "-rf", tmp});
}

bool SideBySide::prepare(const std::string &binaries, const std::string &compiler,
                         const std::string &name, const std::string &module,
                         const std::vector<std::string> flags[2], std::string &error) {
  if (!binaries.empty()) {
    size_t comma = binaries.find(',');
    if (comma == std::string::npos) {
      error = "--binaries takes two .k3b paths separated by a comma";
      return false;
    }
    paths[0] = binaries.substr(0, comma);
    paths[1] = binaries.substr(comma + 1);
    return true;
  }
  std::string pattern = "/tmp/k3-bench-" + name + "-XXXXXX";
  std::vector<char> dir(pattern.begin(), pattern.end());
  dir.push_back('\0');
  if (!mkdtemp(dir.data())) {
    error = "cannot create a temporary directory";
    return false;
  }
  tmp = dir.data();
  std::string source = tmp + "/" + name + ".mlir";
  std::ofstream(source) << module;
  for (int f = 0; f < 2; ++f) {
    paths[f] = tmp + "/form" + std::to_string(f) + ".k3b";
    std::vector<std::string> args{compiler, source};
    args.insert(args.end(), flags[f].begin(), flags[f].end());
    args.insert(args.end(), {"-o", paths[f]});
    if (!spawn(args)) {
      error = "compiling " + source + " with " + compiler + " failed";
      return false;
    }
  }
  return true;
}

bool SideBySide::run(const std::string &entry, const std::vector<k3rt::HostTensor> &inputs,
                     int64_t repeat, std::string &error) {
  for (int f = 0; f < 2; ++f) {
    best[f] = INFINITY;
    if (!load(paths[f], entry, forms[f], error))
      return false;
  }
  for (int64_t r = 0; r < repeat; ++r)
    for (int f = 0; f < 2; ++f) {
      double dt = timedRun(forms[f], entry, inputs, outs[f], error);
      if (dt < 0)
        return false;
      best[f] = std::min(best[f], dt);
    }
  return true;
}

double relativeRmse(const k3rt::HostTensor &a, const k3rt::HostTensor &b) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < a.numElements(); ++i) {
    double x = a.f32()[i], y = b.f32()[i];
    num += (x - y) * (x - y);
    den += x * x;
  }
  return std::sqrt(num / den);
}

} // namespace k3bench
