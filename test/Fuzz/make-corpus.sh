#!/usr/bin/env bash
# Regenerates the generated seeds of test/Fuzz/corpus from a built tree
# (default build/): binaries of the micro model (Inputs/micro, 2 layers),
# its checkpoint as one shard and as an index + shard, and every model's
# config.json. Rerun after a .k3b format change.
#   test/Fuzz/make-corpus.sh [BUILD_DIR]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${1:-$root/build}/bin
corpus=$here/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin/k3-compile" "$here/Inputs/micro" --write-synthetic="$tmp/ck" --seed=1
"$bin/k3-compile" "$tmp/ck" -o "$corpus/bundle/micro-cpu.k3b"
"$bin/k3-compile" "$tmp/ck" --compile-to=bundle -o "$corpus/bundle/micro-meta.k3b"
# A rank's file of a grid (--ep=2: the micro model has one head): its grid
# table and its weights' splits.
"$bin/k3-compile" "$tmp/ck" --ep=2 --compile-to=bundle -o "$tmp/grid.k3b" 2> /dev/null
cp "$tmp/grid.rank1.k3b" "$corpus/bundle/micro-grid-rank1.k3b"
cp "$tmp/ck/model.safetensors" "$corpus/safetensors/micro.safetensors"
cut=$'\n--k3--\n'
shard=model-00001-of-00001.safetensors
# The index names every tensor of the shard (its header's keys).
index=$(/usr/bin/python3 - "$tmp/ck/model.safetensors" "$shard" <<'PY'
import json, struct, sys
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
names = [k for k in json.loads(data[8:8 + n]) if k != "__metadata__"]
print(json.dumps({"metadata": {}, "weight_map": {k: sys.argv[2] for k in names}}))
PY
)
{ cat "$tmp/ck/config.json"; printf '%s%s' "$cut" "$cut"; cat "$tmp/ck/model.safetensors"; } \
  > "$corpus/checkpoint/micro-shard"
{ cat "$tmp/ck/config.json"; printf '%s%s%s' "$cut" "$index" "$cut"; cat "$tmp/ck/model.safetensors"; } \
  > "$corpus/checkpoint/micro-index"
for m in "$root"/models/*/; do
  name=$(basename "$m")
  cp "$m/config.json" "$corpus/config/$name.json"
  # K3 itself takes over 10 s to tabulate under ASan: fuzz-config has it.
  [ "$name" = k3 ] || { cat "$m/config.json"; printf '%s%s' "$cut" "$cut"; } > "$corpus/checkpoint/$name-config-only"
done
cp "$here/Inputs/micro/config.json" "$corpus/config/micro.json"
