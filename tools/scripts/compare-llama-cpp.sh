#!/usr/bin/env bash
# compare-llama-cpp.sh: k3 and llama.cpp on the same Kimi Linear weights,
# prefill (512 tokens) and decode (32 steps after a 512-token context) at 1
# and 2 threads, the two engines interleaved round by round so that both see
# the same machine (a shared VM's speed drifts by tens of percent within
# minutes: compare within a round, not across rounds or days).
#
# Usage:
#   compare-llama-cpp.sh CHECKPOINT_DIR BINARY.k3b LLAMA_BIN_DIR MODEL.gguf [ROUNDS]
#
#   CHECKPOINT_DIR  the HF-layout checkpoint both were made from
#   BINARY.k3b      k3-compile CHECKPOINT_DIR -o BINARY.k3b
#   LLAMA_BIN_DIR   llama.cpp's build/bin (tools/scripts/build-llama-cpp.sh)
#   MODEL.gguf      the same checkpoint converted (build-llama-cpp.sh)
#   ROUNDS          default 3
#
# Environment: K3_BIN (default: build/bin next to this script's repository),
# THREADS (default 1,2), PROMPT (512), DECODE (32).
#
# Prints one line per round, engine and thread count, then the medians and
# k3's ratio over llama.cpp. A manual benchmark: it must NOT run in CI.

set -euo pipefail
[[ $# -ge 4 ]] || { sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
CKPT=$1 K3B=$2 LLAMA=$3 GGUF=$4 ROUNDS=${5:-3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
K3_BIN=${K3_BIN:-$HERE/../../build/bin}
THREADS=${THREADS:-1,2} PROMPT=${PROMPT:-512} DECODE=${DECODE:-32}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "compare-llama-cpp.sh: ROUNDS must be a positive count, not '$ROUNDS'" >&2; exit 2; }
for f in "$K3_BIN/k3-bench" "$LLAMA/llama-bench"; do
  [[ -x $f ]] || { echo "compare-llama-cpp.sh: no $f" >&2; exit 1; }
done
for f in "$K3B" "$GGUF" "$CKPT/config.json"; do
  [[ -f $f ]] || { echo "compare-llama-cpp.sh: no $f" >&2; exit 1; }
done

results=$(mktemp) out=$(mktemp) log=$(mktemp)
trap 'rm -f "$results" "$out" "$log"' EXIT
# Runs "$@" with stdout to $out; on failure, says which command and shows
# its stderr.
run() {
  if ! "$@" >"$out" 2>"$log"; then
    echo "compare-llama-cpp.sh: failed: $*" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
}
# llama-bench's JSON lines as "round R llama.cpp threads T WHAT TOKENS/S".
llama_rows() {
  /usr/bin/python3 -c '
import json, sys
for line in open(sys.argv[1]):
    j = json.loads(line)
    print("round %s llama.cpp threads %d %s %.1f" % (sys.argv[2], j["n_threads"], sys.argv[3], j["avg_ts"]))
' "$out" "$1" "$2" | tee -a "$results"
}
for ((r = 1; r <= ROUNDS; ++r)); do
  # llama.cpp: prompt processing, then generation after a context of PROMPT
  # tokens (-d), as k3-bench's decode runs after its prompt.
  run "$LLAMA/llama-bench" -m "$GGUF" -t "$THREADS" -p "$PROMPT" -n 0 -o jsonl
  llama_rows "$r" prefill
  run "$LLAMA/llama-bench" -m "$GGUF" -t "$THREADS" -p 0 -n "$DECODE" -d "$PROMPT" -o jsonl
  llama_rows "$r" decode
  run "$K3_BIN/k3-bench" cpu "$CKPT" "$K3B" --prompt="$PROMPT" --decode="$DECODE" \
    --threads="$THREADS" --repeat=1 --no-reference
  awk -v r="$r" '/^threads / { t = $2; sub(":", "", t); print "round " r " k3 threads " t " prefill " $4; print "round " r " k3 threads " t " decode " $6 }' "$out" |
    tee -a "$results"
done

/usr/bin/python3 - "$results" <<'EOF'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    w = line.split()
    runs[(w[2], int(w[4]), w[5])].append(float(w[6]))
counts = {key: len(v) for key, v in runs.items()}
if len(set(counts.values())) != 1 or len({k[0] for k in counts}) != 2:
    sys.exit("compare-llama-cpp.sh: some runs printed no figures: %s" % counts)
print("median tokens/s over the rounds; ratio = k3 / llama.cpp")
for what in ("prefill", "decode"):
    for t in sorted({k[1] for k in runs}):
        k3, ll = runs.get(("k3", t, what)), runs.get(("llama.cpp", t, what))
        if k3 and ll:
            a, b = statistics.median(k3), statistics.median(ll)
            print(f"{what:8s} threads {t}: k3 {a:8.1f}  llama.cpp {b:8.1f}  ratio {a / b:.2f}")
EOF
