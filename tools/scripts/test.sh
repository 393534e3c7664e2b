#!/usr/bin/env bash
# Runs every k3 test (the lit suite, GoogleTest through CTest, then the
# openai-client tests of k3-serve) after the set-up step, and ends with one
# summary line: `N passed, M failed`.
# Exit status is non-zero if anything failed or nothing ran.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Absolute: the client tests run from test/Serve.
build=$(realpath -m "${K3_BUILD_DIR:-$root/build}")
lit=${LLVM_EXTERNAL_LIT:-/usr/lib/llvm-22/bin/lit}

"$root/tools/scripts/setup.sh" || { echo "0 passed, 1 failed (set-up/build failed)"; exit 1; }

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

echo "== lit ==" >&2
"$lit" -sv "$build/test" 2>&1 | tee "$log/lit.txt" >&2
# lit prints one `  <Category>: N (...)` line per non-empty category, the
# names padded to one width when there are several (`  Passed  : 49 (...)`).
count() {
  local n
  n=$(sed -nE "s/^ +$1 *: +([0-9]+).*/\1/p" "$log/lit.txt" | head -n1)
  echo "${n:-0}"
}
lit_pass=$(( $(count Passed) + $(count 'Expectedly Failed') ))
lit_skip=$(( $(count Unsupported) + $(count Skipped) + $(count Excluded) ))
lit_fail=$(( $(count Failed) + $(count Unresolved) + $(count 'Timed Out') + $(count 'Unexpectedly Passed') ))
# A crashed lit run, or one where nothing passed, is a failure.
if ! grep -q "Total Discovered Tests" "$log/lit.txt" || (( lit_pass == 0 )); then
  lit_fail=$(( lit_fail + 1 ))
fi

echo "== ctest ==" >&2
ctest --test-dir "$build" --output-on-failure 2>&1 | tee "$log/ctest.txt" >&2
# `100% tests passed, 0 tests failed out of 4`
read -r ct_fail ct_total < <(sed -nE 's/.* ([0-9]+) tests failed out of ([0-9]+)/\1 \2/p' "$log/ctest.txt")
if [ -z "${ct_total:-}" ] || (( ct_total == 0 )); then
  # No summary means ctest found or ran nothing: one failure, no passes.
  ct_fail=1
  ct_pass=0
else
  ct_pass=$(( ct_total - ct_fail ))
fi

# k3-serve through the official openai client (test/Serve: node --test,
# dependencies from the committed lockfile).
echo "== clients ==" >&2
cl_pass=0
cl_fail=1
if (cd "$root/test/Serve" && npm ci --no-audit --no-fund --loglevel=error) >&2; then
  (cd "$root/test/Serve" && K3_BIN="$build/bin" node --test --test-concurrency=1 \
    --test-reporter=tap) 2>&1 | tee "$log/clients.txt" >&2
  cl_pass=$(sed -nE 's/^# pass ([0-9]+)$/\1/p' "$log/clients.txt" | tail -n1)
  cl_fail=$(sed -nE 's/^# fail ([0-9]+)$/\1/p' "$log/clients.txt" | tail -n1)
  cl_pass=${cl_pass:-0}
  # No summary, or nothing passed: one failure.
  if [ -z "$cl_fail" ] || (( cl_pass == 0 )); then cl_fail=$(( ${cl_fail:-0} + 1 )); fi
else
  echo "npm ci failed in test/Serve" >&2
fi

passed=$(( lit_pass + ct_pass + cl_pass ))
failed=$(( lit_fail + ct_fail + cl_fail ))
(( lit_skip == 0 )) || echo "($lit_skip lit tests skipped or unsupported on this machine)"
echo "$passed passed, $failed failed"
(( failed == 0 ))
