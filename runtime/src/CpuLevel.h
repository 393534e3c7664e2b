//===- CpuLevel.h - The x86-64 levels CPU kernels are built for -*- C++ -*-===//
//
// Part of k3. One list of the CPU levels, shared by the runtime (which
// refuses kernels above the machine's level), k3-compile (`--cpu=host` is
// the level `k3rt_cpu_level()` reports) and k3-bench: the machine's level
// is detected in one place, and the K3RT_CPU_LEVEL cap is read in one place.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_SRC_CPULEVEL_H
#define RUNTIME_SRC_CPULEVEL_H

#include <string>

namespace k3rt {

/// The levels k3-compile --cpu names, lowest first (each runs the ones
/// before it).
inline constexpr const char *kCpuLevels[] = {"x86-64", "x86-64-v3", "x86-64-v4"};

/// A level's place in kCpuLevels; 0 too for an empty name (binaries from
/// before the level was recorded) and "generic" (off x86-64); -1 for
/// anything else.
int cpuLevelRank(const std::string &level);

/// Whether `level` is one of kCpuLevels.
bool namedCpuLevel(const std::string &level);

/// "" when K3RT_CPU_LEVEL is unset, empty or one of kCpuLevels; else the
/// one-line error naming the value and the levels.
std::string cpuLevelCapError();

} // namespace k3rt

#endif // RUNTIME_SRC_CPULEVEL_H
