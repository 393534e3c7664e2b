//===- CpuLevel.cpp - The machine's CPU level -----------------------------===//
//
// Part of k3. See CpuLevel.h; k3rt_cpu_level() is the C API's.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/CpuLevel.h"

#include "runtime/include/k3rt/k3rt.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>

namespace k3rt {

int cpuLevelRank(const std::string &level) {
  const auto *at = std::find(std::begin(kCpuLevels), std::end(kCpuLevels), level);
  if (at != std::end(kCpuLevels))
    return int(at - std::begin(kCpuLevels));
  return level.empty() || level == "generic" ? 0 : -1;
}

bool namedCpuLevel(const std::string &level) {
  return std::find(std::begin(kCpuLevels), std::end(kCpuLevels), level) != std::end(kCpuLevels);
}

std::string cpuLevelCapError() {
  const char *cap = std::getenv("K3RT_CPU_LEVEL");
  if (!cap || !*cap || namedCpuLevel(cap))
    return "";
  return std::string("K3RT_CPU_LEVEL=") + cap + ": expected x86-64, x86-64-v3 or x86-64-v4";
}

} // namespace k3rt

extern "C" const char *k3rt_cpu_level(void) {
  static const char *const level = [] {
    const char *best = "generic";
#if defined(__x86_64__)
    best = !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("bmi2"))
               ? "x86-64"
           : __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                   __builtin_cpu_supports("avx512vl")
               ? "x86-64-v4"
               : "x86-64-v3";
#endif
    // K3RT_CPU_LEVEL caps it (never raises it): a binary's portability to
    // a lesser machine can be checked on this one. (An unknown value is
    // refused where kernels load and by k3-compile: cpuLevelCapError.)
    const char *cap = std::getenv("K3RT_CPU_LEVEL");
    if (cap && std::string(best) != "generic" && k3rt::namedCpuLevel(cap) &&
        k3rt::cpuLevelRank(cap) < k3rt::cpuLevelRank(best))
      best = k3rt::kCpuLevels[k3rt::cpuLevelRank(cap)];
    return best;
  }();
  return level;
}
