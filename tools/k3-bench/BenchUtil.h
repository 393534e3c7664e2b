//===- BenchUtil.h - Shared pieces of k3-bench's programs ---------*- C++ -*-===//
//
// Part of k3. Compiling a generated op-level module with the k3-compile
// beside k3-bench, loading binaries through the runtime, seeded inputs.
//
//===----------------------------------------------------------------------===//

#ifndef TOOLS_K3_BENCH_BENCHUTIL_H
#define TOOLS_K3_BENCH_BENCHUTIL_H

#include "runtime/src/CpuExecutable.h"
#include "runtime/src/CudaDevice.h"

#include <random>
#include <string>
#include <vector>

namespace k3bench {

/// One line on stderr, exit status 1.
int fail(const std::string &m);

/// Runs `args` (args[0] a path) and waits; true on exit status 0.
bool spawn(const std::vector<std::string> &args);

/// The directory of this executable (where k3-compile is looked up).
std::string selfDir();

/// A tensor of `shape` with values uniform in [lo, hi).
k3rt::HostTensor randomTensor(std::vector<int64_t> shape, std::mt19937_64 &rng, double lo,
                              double hi, k3::bundle::DType dtype = k3::bundle::DType_F32);

/// A loaded binary.
struct Loaded {
  k3rt_bundle_t *bundle = nullptr;
  std::unique_ptr<k3rt::CudaDevice> device; ///< with `cuda`: GPU 0, opened
  std::unique_ptr<k3rt::CpuExecutable> exe;
  ~Loaded();
};

/// Opens `path` and loads its kernels (`cuda`: its GPU kernels on GPU 0,
/// through the dlopen'd driver); it must have entry point `entry`.
bool load(const std::string &path, const std::string &entry, Loaded &out, std::string &error,
          bool cuda = false);

/// Runs `entry` once on copies of `inputs` (copied untimed: kernels may
/// update inputs in place); the seconds the call took, or a negative value
/// with `error` set.
double timedRun(Loaded &form, const std::string &entry, const std::vector<k3rt::HostTensor> &inputs,
                std::vector<k3rt::HostTensor> &outputs, std::string &error);

/// Parses `arg` as `flag` followed by a positive integer into `value`;
/// false if `arg` is another flag. A bad value is one error line and exit 1.
bool positiveFlag(const std::string &arg, const char *flag, int64_t &value);

/// Parses "1,4,16" (counts from 1 to `max`, separated by single commas)
/// into `out`; false for an empty list or item, a trailing comma, or any
/// other text. The caller prints its flag's error line.
bool countList(const std::string &text, int64_t max, std::vector<int64_t> &out);

/// Two binaries of one op-level module (form 0 and form 1), timed side by
/// side. The temporary directory holding compiled ones goes with it.
struct SideBySide {
  std::string paths[2];
  Loaded forms[2];
  double best[2];
  std::vector<k3rt::HostTensor> outs[2];
  std::string tmp;
  ~SideBySide();

  /// Takes `binaries` ("FORM0.k3b,FORM1.k3b") when given, else writes
  /// `module` as NAME.mlir into a temporary directory and compiles it once
  /// per form with `compiler` and that form's flags.
  bool prepare(const std::string &binaries, const std::string &compiler,
               const std::string &name, const std::string &module,
               const std::vector<std::string> flags[2], std::string &error);

  /// Loads both and runs `entry` `repeat` times each, alternating, keeping
  /// each form's best time and last outputs.
  bool run(const std::string &entry, const std::vector<k3rt::HostTensor> &inputs,
           int64_t repeat, std::string &error);
};

/// Relative RMSE of f32 `b` against `a`.
double relativeRmse(const k3rt::HostTensor &a, const k3rt::HostTensor &b);

} // namespace k3bench

#endif // TOOLS_K3_BENCH_BENCHUTIL_H
