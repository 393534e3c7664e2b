#!/usr/bin/env bash
# The device checks of issue 9, for a machine with an NVIDIA GPU and CUDA's
# driver but no MLIR: given the artifacts of prepare.sh (MLIR-free k3-run,
# k3-bench, k3-dump and compiled binaries), it runs
#   1. GPU numerics: every op-level module's sm_90a build (and sm_80 build,
#      JIT-compiled from PTX) against its CPU
#      build on the same seeded inputs (k3-bench device --compare; relative
#      RMSE < 5e-3), at lengths 1, 15, 63 and more, gates saturated at the
#      −5 bound; k3-tiny's, Kimi Linear tiny's (SwiGLU) and k3-small's logits and greedy tokens, GPU
#      against CPU; k3-tiny's batched decode (decode_batch, five requests
#      through the engine) against its build without it and the CPU;
#   2. SASS: cuobjdump on every cubin, counting kernels with HMMA / HGMMA and
#      local-memory traffic (LDL / STL);
#   3. benchmarks: KDA prefill, the chunk kernels, the column scan and the
#      chunked form as linalg (T = 8192, H = 64, dk = dv = 128), the KDA
#      decode step (the step kernel and the batched form), MLA
#      decode over a long cache, the MXFP4 MoE, k3-small and k3-tiny decode
#      tokens/s (k3-small's weights synthesized at load: --omit-weights),
#      k3-tiny's decode tokens/s per batch size (k3-bench decode --device=cuda);
# ("ranks", not in the default: k3-tiny at TP 2 under mpirun over NCCL on
# two GPUs against one GPU's logits)
# and writes REPORT_DIR/report.md (and logs beside it). Each step has a time
# limit. Measured on an H200 (2026-12-04): numerics and end to end about
# 6.5 minutes, SASS about one; K3_DEVICE_SECTIONS picks some of
# "numerics e2e sass bench" to fit what is left of a session's device time,
# and "debug" (not in the default) runs the checked runs and
# compute-sanitizer that look for the end-to-end error of RESULTS.md.
#   usage: [K3_DEVICE_SECTIONS="e2e bench"] run.sh ARTIFACTS_DIR REPORT_DIR
set -uo pipefail
art=$(cd "${1:?artifacts dir}" && pwd)
rep=${2:?report dir}
mkdir -p "$rep"
report=$rep/report.md
log=$rep/log.txt
: > "$report"
: > "$log"
bin=$art/bin
export LD_LIBRARY_PATH=$art/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# The binaries travel gzipped (prepare.sh).
k3b=$(mktemp -d)
trap 'rm -rf "$k3b"' EXIT
for f in "$art"/k3b/*.k3b.gz; do
  gunzip -c "$f" > "$k3b/$(basename "$f" .gz)"
done
failures=0
say() { echo "$*" | tee -a "$report"; }
# step LIMIT_SECONDS CMD...: runs CMD, its output into the log; prints it.
step() {
  local limit=$1
  shift
  echo "\$ $*" >> "$log"
  timeout "$limit" "$@" > "$rep/step.out" 2>&1
  local rc=$?
  cat "$rep/step.out" >> "$log"
  cat "$rep/step.out"
  return $rc
}

say "# k3 device report"
say ""
say "- date: $(date -u +%FT%TZ)"
say "- gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
say "- runtime tools start: $("$bin/k3-run" --help > /dev/null 2>&1 && echo yes || echo "NO ($("$bin/k3-run" --help 2>&1 | head -1))")"
say ""

# Sections to run (K3_DEVICE_SECTIONS, default all): numerics e2e sass bench.
sections=${K3_DEVICE_SECTIONS:-numerics e2e sass bench}
want() { [[ " $sections " == *" $1 "* ]]; }

if want numerics; then
section=$SECONDS
say "## 1. Numerics: sm_90a against the CPU build (relative RMSE, bf16 threshold 5e-3)"
say ""
say "| module | function | length | inputs | outputs' relative RMSE | result |"
say "|---|---|---|---|---|---|"
# check MODULE FUNCTION LENGTH NOTE [k3-bench flags]; $target picks the GPU
# build (sm90a unless set), $cpu the CPU build it is compared with (MODULE's
# unless set).
check() {
  local module=$1 fn=$2 len=$3 note=$4
  shift 4
  local out rc
  out=$(step 120 "$bin/k3-bench" device "$k3b/$module.${target:-sm90a}.k3b" --function="$fn" --dim="$len" \
        --compare="$k3b/${cpu:-$module}.cpu.k3b" --repeat=1 "$@")
  rc=$?
  local rmse
  rmse=$(echo "$out" | sed -n 's/^output \([0-9]*\) relative_rmse: \([^ ]*\).*/\2/p' | paste -sd, -)
  if (( rc != 0 )); then
    failures=$((failures + 1))
    say "| $module | $fn | $len | $note | ${rmse:-—} | FAIL: $(echo "$out" | grep -m1 -E 'error|FAIL' | cut -c1-160) |"
  else
    say "| $module | $fn | $len | $note | $rmse | ok |"
  fi
}
# kda_lb runs the chunk kernels (the default), kda_softplus the pairwise
# chunk kernels (its unbounded gate: exact exponents per entry).
for len in 1 15 63 200; do
  check kda_layer kda_lb "$len" "uniform, chunk kernels"
  check kda_layer kda_softplus "$len" "uniform, pairwise chunk kernels"
done
# Softplus decays of about -20 to -75 per token (raw gate inputs 20..30):
# the factored kernels would overflow (e^400), the pairwise ones may not.
check kda_layer kda_softplus 70 "pairwise chunk kernels, steep decays (raw 20..30)" --range=3:20,30
check kda_layer kda_boundaries 200 "chunk kernels, boundary states every 16"
check kda_layer kda_snapshots 63 "chunk kernels, k3.kda snapshots every 16"
for len in 15 63 200; do
  cpu=kda_layer check kda_scan kda_lb "$len" "column scan (--kda-prefill-form=scan)"
done
# Gates saturated at the −5 lower bound (raw gate inputs far negative and far positive).
check kda_layer kda_lb 63 "gates saturated (raw -30..-20)" --range=3:-30,-20
check kda_layer kda_lb 63 "gates saturated (raw 20..30)" --range=3:20,30
# The decode step kernel (the GPU default, k3-gpu-kda-step) and the batched
# form it replaced, with GVA (2 value heads per q/k head); input 9 is f.
for fn in decode_lb decode_softplus; do
  check kda_decode "$fn" 1 "step kernel, GVA"
  cpu=kda_decode check kda_decode_batched "$fn" 1 "batched form (--kda-decode-form=batched), GVA"
done
check kda_decode decode_lb 1 "step kernel, gates saturated (raw 20..30)" --range=9:20,30
# The chunked form (--kda-prefill-form=loops: 16-token tiles on mma.sync).
for len in 15 63 200; do
  check kda_chunked kda_lb "$len" "chunked form, mma.sync"
done
check kda_chunked kda_softplus 63 "chunked form, mma.sync"
target=sm80 check kda_chunked kda_lb 63 "chunked form, sm_80 build (PTX JIT)"
for len in 1 15 63 1000; do
  check mla_decode mla "$len" "fused kernel, cache of len (parts of 256: 1000 has 3 and a short one)"
done
for len in 15 63 200; do
  check mla_decode_k16 mla "$len" "fused kernel, parts of 16, the last short"
done
# The parts form (--mla-decode-kernel=parts: score, softmax and P · V as
# separate kernels), against the same CPU builds.
for len in 1 15 63 1000; do
  cpu=mla_decode check mla_decode_parts mla "$len" "parts form, cache of len"
done
for len in 15 63 200; do
  cpu=mla_decode check mla_decode_parts_k16 mla "$len" "parts form, parts of 16"
done
for len in 1 15 63; do
  check mla_prefill mla "$len" "len new tokens, len cached"
done
for len in 1 15 63; do
  check moe_layer moe_mx "$len" "MXFP4 scales 2^-4..2^2" --range=9:123,130 --range=10:123,130 --range=11:123,130
  check moe_layer moe_f32 "$len" "uniform"
done
# The sm_80 builds: mma.sync m16n8k16 instead of wgmma, PTX JIT-compiled by
# the driver.
target=sm80 check kda_layer kda_lb 63 "sm_80 build (chunk kernels, PTX JIT)"
target=sm80 check kda_decode decode_lb 1 "sm_80 build (step kernel, PTX JIT)"
target=sm80 check mla_decode mla 63 "sm_80 build (mma.sync, PTX JIT)"
target=sm80 check mla_prefill mla 63 "sm_80 build (mma.sync, PTX JIT)"
target=sm80 check moe_layer moe_f32 63 "sm_80 build (mma.sync, PTX JIT)"
target=sm80 check moe_layer moe_mx 63 "sm_80 build (expert kernels, fma.rn.bf16x2 decode, PTX JIT)" --range=9:123,130 --range=10:123,130 --range=11:123,130
# The slot GEMMs (--moe-dispatch=slots), against the same CPU builds.
for len in 1 63; do
  cpu=moe_layer check moe_slots moe_mx "$len" "slot GEMMs (--moe-dispatch=slots)" --range=9:123,130 --range=10:123,130 --range=11:123,130
done
check moe_layer moe_mx_all 63 "every token to all 8 experts (tiles of 16 per expert)" --range=9:123,130 --range=10:123,130 --range=11:123,130
check bench_kda_prefill kda 63 "H=64, dk=dv=128, chunk kernels"
check bench_kda_prefill kda 1000 "H=64, dk=dv=128, chunk kernels"
check bench_kda_prefill kda_softplus 1000 "H=64, dk=dv=128, softplus gate, pairwise chunk kernels"
cpu=bench_kda_prefill check bench_kda_scan kda 63 "H=64, dk=dv=128, column scan"
check bench_kda_chunked kda 63 "H=64, dk=dv=128, chunked form"
check bench_mla_decode mla 1000 "K3 MLA, bf16 cache"
check bench_mla_one_pass mla 1000 "K3 MLA, bf16 cache, one pass over the keys"
check bench_mla_decode mla 32769 "K3 MLA, bf16 cache, 32768 cached"
cpu=bench_mla_decode check bench_mla_parts mla 1000 "K3 MLA, bf16 cache, parts form"
check bench_moe_mxfp4 moe 15 "64 experts, top-8, expert kernels" --range=9:123,130 --range=10:123,130 --range=11:123,130
cpu=bench_moe_mxfp4 check bench_moe_slots moe 15 "64 experts, top-8, slot GEMMs" --range=9:123,130 --range=10:123,130 --range=11:123,130

say ""
say "(section numerics: $((SECONDS - section)) s)"
say ""
fi
if want e2e; then
section=$SECONDS
say "## 1b. End to end: GPU against the CPU build"
# End to end: the prompt's logits and 8 greedy steps, GPU vs CPU, for
# k3-tiny, Kimi Linear tiny and k3-small, whose weights are synthesized at
# load (seed 1: the checkpoint prepare.sh compiled it from). Synthetic
# models' logits are nearly flat, so bf16 rounding may pick another greedy
# token; from there the two runs feed different tokens and their logits
# rows no longer compare. So: the rows computed from the same inputs (the
# prompt's, and the steps up to the first token that differs) are compared,
# and a teacher-forced prefill of the prompt and the CPU's tokens compares
# all 70 positions.
prompt=3,1,4,1,5,9,2,6,5,3,5,8,9,7,9,3,2,3,8,4,6,2,6,4,3,3,8,3,2,7,9,5,0,2,8,8,4,1,9,7,1,6,9,3,9,9,3,7,5,1,0,5,8,2,0,9,7,4,9,4,4,5,9
end_to_end() { # MODEL LIMIT_SECONDS [k3-run flags]; $gpu: the GPU build (MODEL's unless set)
  local model=$1 limit=$2 cpu_tokens gpu_tokens gpu_rc cmp cmp_rc forced forced_rc forced_gpu_rc same=0
  local gpu_build=${gpu:-$model}
  shift 2
  # Named for the GPU build, and removed first: a run that fails before
  # writing its dump must not leave an earlier build's file to compare.
  rm -f "$rep/$model.cpu.npy" "$rep/$gpu_build.gpu.npy" "$rep/$model.cpu70.npy" "$rep/$gpu_build.gpu70.npy"
  step "$limit" "$bin/k3-run" "$k3b/$model.cpu.k3b" "$@" --tokens=$prompt --generate=8 --dump-logits="$rep/$model.cpu.npy" > /dev/null
  cpu_tokens=$(grep -v : "$rep/step.out" | tail -1)
  step "$limit" "$bin/k3-run" "$k3b/$gpu_build.sm90a.k3b" "$@" --device=cuda --tokens=$prompt --generate=8 --dump-logits="$rep/$gpu_build.gpu.npy" > /dev/null
  gpu_rc=$?
  gpu_tokens=$(grep -v : "$rep/step.out" | tail -1)
  (( gpu_rc != 0 )) && gpu_tokens="error: $(grep -m1 error "$rep/step.out")"
  # Steps fed the same tokens: up to and including the first that differs.
  local -a c g
  IFS=, read -ra c <<< "$cpu_tokens"
  IFS=, read -ra g <<< "$gpu_tokens"
  while (( same < 8 )) && [ "${c[same]:-x}" = "${g[same]:-y}" ]; do same=$((same + 1)); done
  local rows=$((63 + (same < 7 ? same : 7)))
  cmp=$(step 60 python3 "$art/compare_npy.py" "$rep/$model.cpu.npy" "$rep/$gpu_build.gpu.npy" 5e-3 "$rows")
  cmp_rc=$?
  # Teacher-forced: the prompt and the CPU's first 7 tokens as one prefill.
  local all=$prompt,$(echo "$cpu_tokens" | cut -d, -f1-7)
  step "$limit" "$bin/k3-run" "$k3b/$model.cpu.k3b" "$@" --tokens=$all --generate=1 --dump-logits="$rep/$model.cpu70.npy" > /dev/null
  step "$limit" "$bin/k3-run" "$k3b/$gpu_build.sm90a.k3b" "$@" --device=cuda --tokens=$all --generate=1 --dump-logits="$rep/$gpu_build.gpu70.npy" > /dev/null
  forced_gpu_rc=$?
  forced=$(step 60 python3 "$art/compare_npy.py" "$rep/$model.cpu70.npy" "$rep/$gpu_build.gpu70.npy" 5e-3 70)
  forced_rc=$?
  (( gpu_rc != 0 || cmp_rc != 0 || forced_gpu_rc != 0 || forced_rc != 0 )) && failures=$((failures + 1))
  say ""
  say "- k3-$gpu_build, 63-token prompt + 8 greedy steps: tokens CPU [$cpu_tokens] GPU [$gpu_tokens] ($same of 8 the same)"
  say "  - logits of the rows fed the same tokens: $cmp (rc $cmp_rc)"
  say "  - teacher-forced prefill of 70 tokens: $forced (rc $forced_rc)"
}
end_to_end tiny 120
end_to_end kltiny 120
end_to_end small 240 --synthetic-weights=1
gpu=tiny_parts end_to_end tiny 120
gpu=small_parts end_to_end small 240 --synthetic-weights=1
# Batched decode (issue 29): the request engine's decode steps of all
# running requests as one decode_batch call (the batched KDA step kernel,
# a block per value head and request; MLA through the block tables, read on
# the device: k3-gpu-paged-attend), against the same GPU build without
# decode_batch (a call per request): the same tokens and logits within 5e-3
# per request (emulated here: identical tokens, 0.002-0.003); with and
# without CUDA graphs (the same kernels: the same logits); the CPU build's
# tokens for information (seed 6's k3-tiny leaves the CPU within a few
# tokens on the GPU's bf16 operands, with or without decode_batch); the
# paged attention's keys split in blocks of 16 (--mla-paged-split-keys=16,
# a merge kernel after; within 5e-3: emulated here, within 1e-5 on an f32
# cache). Five
# requests of 1, 15, 16, 63 and 130 prompt tokens crossing 16-row pages, 8
# new tokens each, the batch shrinking as they end.
python3 -c "import json; [print(json.dumps({'id': 'r%d' % i, 'tokens': [(i * 37 + j * 11) % 512 for j in range(n)], 'max_new_tokens': 8})) for i, n in enumerate([1, 15, 16, 63, 130])]" > "$rep/reqs.jsonl"
for b in tiny.sm90a tiny.sm90a.nographs tiny_nobatch.sm90a tiny_split.sm90a tiny.cpu; do
  rm -rf "$rep/req.$b"
  mkdir -p "$rep/req.$b"
  flags=(--device=cuda)
  [ $b = tiny.cpu ] && flags=()
  [ $b = tiny.sm90a.nographs ] && flags+=(--no-cuda-graphs)
  step 180 "$bin/k3-run" "$k3b/${b%.nographs}.k3b" "${flags[@]}" --requests="$rep/reqs.jsonl" \
    --max-batch=5 --block-tokens=16 --prefill-chunk=64 --dump-logits-dir="$rep/req.$b" > /dev/null
  rc=$?
  grep '^{' "$rep/step.out" > "$rep/req.$b.out" # the tokens (stderr is in step.out too)
  say "  - $b: rc $rc; $(grep -m1 '^calls:' "$rep/step.out"); $(grep -m1 '^device:' "$rep/step.out" | sed 's/.*bytes returned; //')"
  (( rc == 0 )) || failures=$((failures + 1))
done
say "- k3-tiny CPU tokens: $(cmp -s "$rep/req.tiny.sm90a.out" "$rep/req.tiny.cpu.out" && echo the same as the GPU || echo not all the same as the GPU)"
for b in tiny_nobatch.sm90a tiny.sm90a.nographs tiny_split.sm90a; do
  same=no
  cmp -s "$rep/req.tiny.sm90a.out" "$rep/req.$b.out" && [ -s "$rep/req.$b.out" ] && same=yes
  worst=""
  bound=5e-3
  [ $b = tiny.sm90a.nographs ] && bound=1e-9 # the same kernels: the same values
  for r in r0 r1 r2 r3 r4; do
    line=$(step 60 python3 "$art/compare_npy.py" "$rep/req.$b/$r.npy" "$rep/req.tiny.sm90a/$r.npy" $bound)
    (( $? == 0 )) || failures=$((failures + 1))
    worst+="$(echo "$line" | tail -1 | sed 's/.*relative_rmse=//') "
  done
  [ $same = yes ] || failures=$((failures + 1))
  say "- k3-tiny batched decode on the GPU against $b: tokens the same: $same; relative RMSE per request: $worst"
done
# Where the parts form's NaN starts: a 1-token prompt, 16 steps.
step 120 "$bin/k3-run" "$k3b/small_parts.sm90a.k3b" --synthetic-weights=1 --device=cuda --tokens=7 --generate=16 > /dev/null
say "- k3-small_parts, 1-token prompt, 16 steps: $(grep -v : "$rep/step.out" | tail -1) $(grep -m1 error "$rep/step.out")"
say ""
say ""
say "(section e2e: $((SECONDS - section)) s)"
say ""
fi
if want debug; then
section=$SECONDS
say "## 1c. Finding the end-to-end error: checked runs and compute-sanitizer"
say ""
# The 63-token prompt and 2 greedy steps, each GPU run against the CPU
# build's logits (the rows fed the same tokens: the prompt's 63 and the
# first step's), listing the rows over 5e-3 (compare_npy.py rows_over):
#   plain, plain2, plain3   as the engine runs it, three times (the same
#               binary on the same inputs must give the same logits);
#   sync        K3_CUDA_CHECK=sync (the host waits after every launch): if
#               this alone is right, the host races the kernels;
# (K3_CUDA_CHECK=nan and poison, and compute-sanitizer's memcheck,
# initcheck and racecheck with K3_DEVICE_SANITIZE=1, found nothing on
# 2026-12-04: RESULTS.md); then k3-small's variants and cuts (prepare.sh).
checked_run() { # MODEL LABEL LIMIT [k3-run flags]; env K3_CUDA_CHECK as given
  local model=$1 label=$2 limit=$3
  shift 3
  rm -f "$rep/$model.$label.npy"
  local out rc
  out=$(step "$limit" "$bin/k3-run" "$k3b/$model.sm90a.k3b" "$@" --device=cuda --tokens=$prompt \
        --generate=2 --dump-logits="$rep/$model.$label.npy")
  rc=$?
  local cmp="no logits" same=""
  if [ -e "$rep/$model.$label.npy" ]; then
    cmp=$(step 60 python3 "$art/compare_npy.py" "$rep/$model.dbgcpu.npy" "$rep/$model.$label.npy" 5e-3 64 | tail -1)
    # And against the first plain GPU run: the same binary on the same inputs.
    [ "$label" != plain ] && [ -e "$rep/$model.plain.npy" ] &&
      same="; against the plain GPU run: $(step 60 python3 "$art/compare_npy.py" "$rep/$model.plain.npy" "$rep/$model.$label.npy" 1e-6 64 | tail -1)"
  fi
  say "- k3-$model $label (rc $rc): tokens [$(echo "$out" | grep -v : | tail -1)] against the CPU: $cmp$same"
  echo "$out" | grep -E "K3_CUDA_CHECK|error" | head -12 | sed 's/^/    /' | tee -a "$report"
}
prompt=3,1,4,1,5,9,2,6,5,3,5,8,9,7,9,3,2,3,8,4,6,2,6,4,3,3,8,3,2,7,9,5,0,2,8,8,4,1,9,7,1,6,9,3,9,9,3,7,5,1,0,5,8,2,0,9,7,4,9,4,4,5,9
for model in small tiny; do
  flags=()
  [ $model = small ] && flags=(--synthetic-weights=1)
  step 120 "$bin/k3-run" "$k3b/$model.cpu.k3b" "${flags[@]}" --tokens=$prompt --generate=2 \
    --dump-logits="$rep/$model.dbgcpu.npy" > /dev/null
  for label in plain plain2 plain3; do checked_run $model $label 120 "${flags[@]}"; done
  K3_CUDA_CHECK=sync checked_run $model sync 120 "${flags[@]}"
done
# Where the GPU leaves the CPU: k3-small cut to two layers, and that cut
# with one thing changed at a time (prepare.sh), GPU against CPU.
say ""
for g in "$k3b"/small_L2*.sm90a.k3b; do
  [ -e "$g" ] || continue
  name=$(basename "$g" .sm90a.k3b)
  c=$k3b/$name.cpu.k3b
  [ -e "$c" ] || c=$k3b/small_L2.cpu.k3b
  rm -f "$rep/c.npy" "$rep/g.npy"
  step 120 "$bin/k3-run" "$c" --synthetic-weights=1 --tokens=$prompt --generate=2 --dump-logits="$rep/c.npy" > /dev/null
  step 120 "$bin/k3-run" "$g" --synthetic-weights=1 --device=cuda --tokens=$prompt --generate=2 --dump-logits="$rep/g.npy" > /dev/null
  say "- $name: $([ -e "$rep/g.npy" ] && step 60 python3 "$art/compare_npy.py" "$rep/c.npy" "$rep/g.npy" 5e-3 64 | tail -1 || grep -m1 error "$rep/step.out")"
done
# k3-small's router and MoE layer at op level (moe_small.mlir), GPU
# against CPU: inputs x in [-0.05, 0.05) (router logits of about the
# model's spread) and in [-1, 1) (saturated sigmoids, ties).
if [ -e "$k3b/moe_small.sm90a.k3b" ]; then
  scales=(--range=9:123,130 --range=10:123,130 --range=11:123,130)
  for args in "router 1 --range=0:-0.05,0.05" "router 63 --range=0:-0.05,0.05" "router 63" \
              "moe 63 --range=0:-0.05,0.05 ${scales[*]}" "moe 63 ${scales[*]}" "moe 1 --range=0:-0.05,0.05 ${scales[*]}"; do
    set -- $args
    fn=$1 len=$2
    shift 2
    out=$(step 120 "$bin/k3-bench" device "$k3b/moe_small.sm90a.k3b" --function=$fn --dim=$len \
          --compare="$k3b/moe_small.cpu.k3b" --repeat=1 "$@")
    say "- moe_small @$fn, $len tokens, $*: $(echo "$out" | sed -n 's/^output \([0-9]*\) relative_rmse: \([^ ]*\).*/\1:\2/p' | paste -sd, -) $(echo "$out" | grep -m1 -E 'error')"
  done
fi
# The GPU builds against CPU builds with the tensor cores' bf16 operands
# (--contraction-inputs=bf16), and those against the f32 CPU builds: how
# much of the GPU's distance from the CPU is its precision.
for m in small tiny small_L2; do
  [ -e "$k3b/$m.cpubf16.k3b" ] || continue
  flags=()
  [ $m != tiny ] && flags=(--synthetic-weights=1)
  rm -f "$rep/b.npy" "$rep/c.npy" "$rep/g.npy"
  step 120 "$bin/k3-run" "$k3b/$m.cpubf16.k3b" "${flags[@]}" --tokens=$prompt --generate=2 --dump-logits="$rep/b.npy" > /dev/null
  step 120 "$bin/k3-run" "$k3b/$m.cpu.k3b" "${flags[@]}" --tokens=$prompt --generate=2 --dump-logits="$rep/c.npy" > /dev/null
  step 120 "$bin/k3-run" "$k3b/$m.sm90a.k3b" "${flags[@]}" --device=cuda --tokens=$prompt --generate=2 --dump-logits="$rep/g.npy" > /dev/null
  say "- $m: GPU against CPU bf16-operands: $(step 60 python3 "$art/compare_npy.py" "$rep/b.npy" "$rep/g.npy" 5e-3 64 | tail -1)"
  say "  - CPU bf16-operands against CPU f32: $(step 60 python3 "$art/compare_npy.py" "$rep/c.npy" "$rep/b.npy" 5e-3 64 | tail -1)"
done
# k3-tiny's sm_90a kernels on this machine's CPU (k3-compile --emulate):
# the same kernels, the same roundings, so only libdevice's math and the
# hardware's summation order should differ; a large distance means the
# emulation (or the kernels' reading of the PTX ISA) is wrong.
if [ -e "$k3b/tiny.emu90.k3b" ]; then
  rm -f "$rep/e.npy" "$rep/g.npy"
  step 120 "$bin/k3-run" "$k3b/tiny.emu90.k3b" --tokens=$prompt --generate=2 --dump-logits="$rep/e.npy" > /dev/null
  step 120 "$bin/k3-run" "$k3b/tiny.sm90a.k3b" --device=cuda --tokens=$prompt --generate=2 --dump-logits="$rep/g.npy" > /dev/null
  say "- tiny: GPU against its kernels emulated on the CPU: $(step 60 python3 "$art/compare_npy.py" "$rep/e.npy" "$rep/g.npy" 1e-4 64 | tail -1)"
fi
if [ -e "$k3b/moe_small.cpubf16.k3b" ]; then
  out=$(step 120 "$bin/k3-bench" device "$k3b/moe_small.sm90a.k3b" --function=moe --dim=63 \
        --compare="$k3b/moe_small.cpubf16.k3b" --repeat=1 --range=0:-0.05,0.05 --range=9:123,130 --range=10:123,130 --range=11:123,130)
  say "- moe_small @moe, 63 tokens, GPU against CPU bf16-operands: $(echo "$out" | grep -m1 relative_rmse)"
fi
short=3,1,4,1,5,9,2,6,5,3,5,8,9,7,9,3
sanitize() { # TOOL MODEL LIMIT [k3-run flags]
  local tool=$1 model=$2 limit=$3
  shift 3
  step "$limit" compute-sanitizer --tool "$tool" --print-limit 10 --error-exitcode 9 \
    "$bin/k3-run" "$k3b/$model.sm90a.k3b" "$@" --device=cuda --tokens=$short --generate=1 > /dev/null
  local rc=$?
  say "- compute-sanitizer --tool $tool, k3-$model (rc $rc; 9: errors found, 124: time limit):"
  say '```'
  grep -E "=========|error" "$rep/step.out" | grep -vE "^========= *$" | head -24 | tee -a "$report"
  say '```'
}
if [ -n "${K3_DEVICE_SANITIZE:-}" ] && command -v compute-sanitizer > /dev/null; then
  sanitize memcheck small 120 --synthetic-weights=1
  sanitize initcheck small 100 --synthetic-weights=1
  sanitize memcheck tiny 60
  sanitize racecheck small 120 --synthetic-weights=1
elif [ -n "${K3_DEVICE_SANITIZE:-}" ]; then
  say "- compute-sanitizer: not on this machine"
fi
say ""
say "(section debug: $((SECONDS - section)) s)"
say ""
fi
if want ranks; then
section=$SECONDS
say "## 1c. GPU ranks: k3-tiny at TP 2 over NCCL against one GPU"
# Not a default section: two GPUs (NCCL puts no two ranks of a
# communicator on one), mpirun and libnccl.so.2; the MPI plugin needs the
# machine's libmpi. Said, not failed, when one is missing.
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
missing=""
(( gpus >= 2 )) || missing+=" two GPUs (this machine has $gpus);"
command -v mpirun > /dev/null || missing+=" mpirun;"
/sbin/ldconfig -p | grep -q 'libnccl\.so\.2' || missing+=" libnccl.so.2;"
if [ -n "$missing" ]; then
  say "- skipped: needs$missing"
else
  prompt=${prompt:-3,1,4,1,5,9,2,6,5,3,5,8,9,7,9,3,2,3,8,4,6,2,6,4,3,3,8,3,2,7,9,5,0,2,8,8,4,1,9,7,1,6,9,3,9,9,3,7,5,1,0,5,8,2,0,9,7,4,9,4,4,5,9}
  mpi=(mpirun -np 2)
  [ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
  rm -f "$rep/tiny.one.npy" "$rep/tiny.tp2.npy"
  step 120 "$bin/k3-run" "$k3b/tiny.sm90a.k3b" --device=cuda --tokens=$prompt --generate=8 \
    --dump-logits="$rep/tiny.one.npy" > /dev/null
  one=$(grep -v : "$rep/step.out" | tail -1)
  step 180 "${mpi[@]}" "$bin/k3-run" "$k3b/tiny_tp2.sm90a.k3b" --device=cuda --tokens=$prompt \
    --generate=8 --dump-logits="$rep/tiny.tp2.npy" --collective-timeout=30 > /dev/null
  ranks_rc=$?
  two=$(grep -v : "$rep/step.out" | grep '^[0-9,]*$' | tail -1)
  cmp=$(step 60 python3 "$art/compare_npy.py" "$rep/tiny.one.npy" "$rep/tiny.tp2.npy" 5e-3 63)
  cmp_rc=$?
  (( ranks_rc != 0 || cmp_rc != 0 )) && failures=$((failures + 1))
  say "- tokens: one GPU [$one], TP 2 [$two] (rc $ranks_rc)"
  say "- prompt logits, TP 2 against one GPU: $cmp (rc $cmp_rc)"
fi
say ""
say "(section ranks: $((SECONDS - section)) s)"
say ""
fi
if want sass; then
section=$SECONDS
say "## 2. SASS (cuobjdump --dump-sass of every cubin)"
say ""
say "| binary | kernels | with HMMA | with HGMMA | with LDL/STL |"
say "|---|---|---|---|---|"
for b in "$k3b"/*.sm90a.k3b "$k3b"/*.sm80.k3b; do
  name=$(basename "$b" .k3b)
  dir=$rep/sass/$name
  mkdir -p "$dir"
  "$bin/k3-dump" "$b" --extract-kernels="$dir" > /dev/null
  n=0; hmma=0; hgmma=0; local_mem=0
  for c in "$dir"/*.cubin; do
    [ -e "$c" ] || continue
    n=$((n + 1))
    sass=$(cuobjdump --dump-sass "$c" 2>&1)
    grep -q HMMA <<< "$sass" && hmma=$((hmma + 1))
    grep -q HGMMA <<< "$sass" && hgmma=$((hgmma + 1))
    grep -qE "\b(LDL|STL)\b" <<< "$sass" && local_mem=$((local_mem + 1))
  done
  rm -rf "$dir"
  say "| $name | $n | $hmma | $hgmma | $local_mem |"
done
rmdir "$rep/sass" 2> /dev/null
say ""

say ""
say "(section sass: $((SECONDS - section)) s)"
say ""
fi
if want bench; then
section=$SECONDS
say "## 3. Benchmarks (kernel time: CUDA events from the first launch after each synchronisation to the next one, best of 3)"
say ""
bench() { # LABEL ANCHOR MODULE FUNCTION LENGTH [flags]
  local label=$1 anchor=$2 module=$3 fn=$4 len=$5
  shift 5
  local out
  out=$(step 240 "$bin/k3-bench" device "$k3b/$module.sm90a.k3b" --function="$fn" --dim="$len" --repeat=3 "$@")
  say "- $label ($anchor):"
  say '```'
  say "$out"
  say '```'
}
# KDA: q, k, v, g read and o written once (f32 at this op level), the state twice.
kda_bytes=$((8192 * 64 * 128 * 4 * 5 + 64 * 128 * 128 * 4 * 2))
bench "KDA prefill as two chunk kernels (the GPU default, k3-gpu-kda-chunks: preparation, recurrence), B=1 T=8192 H=64 dk=dv=128" "anchors on H200: FLA chunk_kda 1.78 ms, FlashKDA-style 1.28 ms, goal < 1.0 ms" \
  bench_kda_prefill kda 8192 --bytes=$kda_bytes
bench "KDA prefill with Kimi Linear's softplus gate: the pairwise chunk kernels (exact exponents per chunk-matrix entry), same sizes" "goal: within 15% of the bounded gate's kernels above" \
  bench_kda_prefill kda_softplus 8192 --bytes=$kda_bytes
bench "KDA prefill as the column scan (--kda-prefill-form=scan), same sizes" "the form the chunk kernels replaced" \
  bench_kda_scan kda 8192 --bytes=$kda_bytes
bench "KDA chunked prefill (--kda-prefill-form=loops: a host loop over 512 chunks), same sizes" "a host loop over chunks" \
  bench_kda_chunked kda 8192 --bytes=$kda_bytes
# KDA decode: the f32 state read twice and written once (the rest is under 1%).
kda_step_bytes=$((64 * 128 * 128 * 4 * 3))
bench "KDA decode step as one kernel (the GPU default, k3-gpu-kda-step), H=64 dk=dv=128" "the state's traffic at 4.8 TB/s: 2.6 us" \
  bench_kda_decode decode 1 --bytes=$kda_step_bytes
bench "KDA decode step batched over heads (--kda-decode-form=batched), same sizes" "the form the step kernel replaced" \
  bench_kda_decode_batched decode 1 --bytes=$kda_step_bytes
# MLA decode: the bf16 cache (576 per row) and the bf16 kv_b once.
# --dim is the cache argument's rows: 32768 cached and the new one.
mla_bytes=$((32769 * 576 * 2 + 16384 * 512 * 2))
bench "MLA decode, 32768 cached tokens, one split-K kernel over parts of 256 (the GPU default, --mla-decode-kernel=fused)" "goal >= 85% of 4.8 TB/s" bench_mla_decode mla 32769 --bytes=$mla_bytes
bench "MLA decode, 32768 cached tokens, the parts as separate kernels (--mla-decode-kernel=parts)" "the form the fused kernel replaced" bench_mla_parts mla 32769 --bytes=$mla_bytes
bench "MLA decode, 32768 cached tokens, one pass over the keys (--mla-split-keys=0)" "the form the split replaced" bench_mla_one_pass mla 32769 --bytes=$mla_bytes
# MoE: every expert's MXFP4 codes and scales once (64 x 3 x 1024 x 1024 x (1/2 + 1/32)).
moe_bytes=$((64 * 3 * 1024 * 1024 / 2 + 64 * 3 * 1024 * 32))
bench "MXFP4 MoE, 512 tokens, 64 experts, top-8, expert kernels on mma.sync (the GPU default, --moe-dispatch=mma)" "anchor: triton_kernels 2.8 TB/s effective" \
  bench_moe_mxfp4 moe 512 --bytes=$moe_bytes --range=9:123,130 --range=10:123,130 --range=11:123,130
bench "MXFP4 MoE, 512 tokens, the slot GEMMs on CUDA cores (--moe-dispatch=slots)" "the form the expert kernels replaced" \
  bench_moe_slots moe 512 --bytes=$moe_bytes --range=9:123,130 --range=10:123,130 --range=11:123,130
bench "MXFP4 MoE decode, 1 token, expert kernels" "weight-read floor: 8 of 64 experts" \
  bench_moe_mxfp4 moe 1 --range=9:123,130 --range=10:123,130 --range=11:123,130
for model in small tiny; do
  flags=()
  [ $model = small ] && flags=(--synthetic-weights=1)
  out=$(step 180 "$bin/k3-run" "$k3b/$model.sm90a.k3b" "${flags[@]}" --device=cuda --tokens=$prompt --generate=128)
  say "- k3-$model decode, 128 greedy steps after a 63-token prompt, end to end on the GPU:"
  say '```'
  say "$(echo "$out" | grep -E 'prefill|decode|device')"
  say '```'
  out=$(step 180 "$bin/k3-run" "$k3b/$model.cpu.k3b" "${flags[@]}" --tokens=$prompt --generate=128)
  say "- the same on this machine's CPU: $(echo "$out" | grep -E '^decode')"
done
# Batched decode's throughput per batch size: one decode_batch call per
# step, then the build without it (a call per request per step).
for b in tiny tiny_nobatch; do
  say "- k3-bench decode $b.sm90a --device=cuda:"
  say '```'
  say "$(step 300 "$bin/k3-bench" decode "$k3b/$b.sm90a.k3b" --device=cuda --batch=1,4,16,64 --repeat=2 2>&1 | tail -8)"
  say '```'
done
out=$(step 180 "$bin/k3-run" "$k3b/small_parts.sm90a.k3b" --synthetic-weights=1 --device=cuda --tokens=$prompt --generate=128)
say "- k3-small with MLA decode's parts as separate kernels (--mla-decode-kernel=parts), the same run:"
say '```'
say "$(echo "$out" | grep -E 'prefill|decode|device')"
say '```'
say ""
say "(section bench: $((SECONDS - section)) s)"
say ""
fi
say ""
say "numerics failures: $failures"
exit $(( failures > 0 ))
