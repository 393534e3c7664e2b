#!/usr/bin/env bash
# Builds the libFuzzer targets (test/Fuzz) in build-fuzz with clang-22 and
# runs each over its committed corpus for --minutes=N (default 1) each, new
# inputs kept in build-fuzz/corpus/<target>. Fails on the first crash,
# leak, timeout or broken invariant; the reproducer is the crash-* file
# libFuzzer names.
#   tools/scripts/fuzz.sh [--minutes=N] [--only=tokenizer,bundle,...] [--seed=S]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${K3_FUZZ_BUILD_DIR:-$root/build-fuzz}
minutes=1 only="" seed=""
for a in "$@"; do
  case $a in
    --minutes=*) minutes=${a#*=} ;;
    --only=*) only=${a#*=} ;;
    --seed=*) seed=${a#*=} ;;
    -h|--help) sed -n 2,8p "$0"; exit 0 ;;
    *) echo "fuzz.sh: error: unknown argument '$a' (see --help)" >&2; exit 1 ;;
  esac
done
if ! [[ $minutes =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: error: --minutes takes a positive count, not '$minutes'" >&2
  exit 1
fi
for p in clang-22 libclang-rt-22-dev; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    echo "fuzz.sh: installing $p" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p" >&2
  fi
done
if [ ! -f "$build/build.ninja" ]; then
  CC=clang-22 CXX=clang++-22 cmake -S "$root" -B "$build" -G Ninja -DK3_FUZZ=ON \
    -DK3_BUILD_TESTS=OFF >&2
fi
targets=(tokenizer tokenizer-files serve-request bundle safetensors checkpoint config requests)
[ -n "$only" ] && IFS=, read -r -a targets <<< "$only"
cmake --build "$build" --target "${targets[@]/#/fuzz-}" >&2
for t in "${targets[@]}"; do
  mkdir -p "$build/corpus/$t" "$build/crashes"
  echo "== fuzz-$t: $minutes min" >&2
  dict=$root/test/Fuzz/dict/json.dict
  case $t in
    tokenizer) dict="" ;;
    bundle) dict=$root/test/Fuzz/dict/bundle.dict ;;
  esac
  ASAN_OPTIONS=detect_leaks=1 "$build/bin/fuzz-$t" "$build/corpus/$t" "$root/test/Fuzz/corpus/$t" \
    -max_total_time=$((minutes * 60)) -timeout=10 -rss_limit_mb=4096 ${dict:+-dict=$dict} \
    -artifact_prefix="$build/crashes/$t-" ${seed:+-seed=$seed} -print_final_stats=1 2>&1 |
    grep -E '^(#[0-9]+[[:space:]]+DONE|Done|stat::|==[0-9]+== ?ERROR|invariant|SUMMARY|Test unit written|artifact_prefix)' >&2
done
echo "fuzz.sh: no findings" >&2
