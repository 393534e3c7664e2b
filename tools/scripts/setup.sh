#!/usr/bin/env bash
# k3 set-up: install whatever Debian packages are missing, then configure and
# build. Idempotent: on a machine that has everything it only builds.
# Used by the README's commands and by CI. Build dir: $K3_BUILD_DIR or build/;
# extra configure arguments for a new build dir: $K3_CMAKE_ARGS.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${K3_BUILD_DIR:-$root/build}

packages=(
  cmake g++ ninja-build ccache python3
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  flatbuffers-compiler libflatbuffers-dev nlohmann-json3-dev
  libgtest-dev libbenchmark-dev libomp-dev
  libpcre2-dev libicu-dev libcpp-httplib-dev libxxhash-dev
  libopenmpi-dev openmpi-bin
  # The sanitizer and fuzz builds' compiler (.ci/run, tools/scripts/fuzz.sh).
  clang-22 libclang-rt-22-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "k3 setup: installing ${missing[*]}" >&2
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >&2
fi

if [ ! -f "$build/build.ninja" ]; then
  if [ -f "$build/CMakeCache.txt" ]; then
    echo "k3 setup: $build holds a non-Ninja CMake build; remove it or set K3_BUILD_DIR" >&2
    exit 1
  fi
  # shellcheck disable=SC2086 # K3_CMAKE_ARGS is a list of arguments
  cmake -S "$root" -B "$build" -G Ninja ${K3_CMAKE_ARGS:-} >&2
fi
cmake --build "$build" >&2
