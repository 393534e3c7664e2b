#!/usr/bin/env bash
# The main job, until the CPU backend lands: set up; write the deterministic
# synthetic k3-tiny checkpoint (MXFP4 experts); print its sizes; import it
# (phase `input`) and run k3-opt over the imported model (verify, decompose
# the dense MLPs, canonicalize), printing the IR with pass timings on stderr.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${K3_BUILD_DIR:-$root/build}
ckpt=$build/models/k3-tiny

"$root/tools/scripts/setup.sh"
"$build/bin/k3-compile" "$root/models/k3-tiny" --write-synthetic="$ckpt" --seed=0
"$build/bin/k3-compile" "$ckpt" --stats >&2
"$build/bin/k3-compile" "$ckpt" --compile-to=input -o "$ckpt/input.mlir"
"$build/bin/k3-opt" "$ckpt/input.mlir" --k3-decompose-mlp --canonicalize --mlir-timing
