#!/usr/bin/env bash
# The main job: set up and build; write the deterministic synthetic k3-tiny
# checkpoint (MXFP4 experts); compile it for the CPU; generate 32 tokens
# from a short prompt. The ids go to stdout, sizes and tokens/s to stderr.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${K3_BUILD_DIR:-$root/build}
ckpt=$build/models/k3-tiny

"$root/tools/scripts/setup.sh"
"$build/bin/k3-compile" "$root/models/k3-tiny" --write-synthetic="$ckpt" --seed=0
"$build/bin/k3-compile" "$ckpt" --stats >&2
"$build/bin/k3-compile" "$ckpt" -o "$ckpt/tiny.k3b"
"$build/bin/k3-run" "$ckpt/tiny.k3b" --tokens=1,2,3,4,5,6,7,8 --generate=32
