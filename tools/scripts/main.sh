#!/usr/bin/env bash
# The main job, until the CPU backend lands: set up, then run k3-opt over the
# K3-shaped sample model (verify, decompose the dense MLPs, canonicalize) and
# print the resulting IR, with pass timings on stderr.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${K3_BUILD_DIR:-$root/build}

"$root/tools/scripts/setup.sh"
"$build/bin/k3-opt" "$root/models/k3-tiny/k3-tiny.mlir" \
  --k3-decompose-mlp --canonicalize --mlir-timing
