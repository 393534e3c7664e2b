#!/usr/bin/env bash
# Prepares what the GPU machine needs (it has CUDA but no MLIR): the
# MLIR-free runtime tools and the compiled binaries, CPU and sm_90a builds of
# the same modules, in BUILD/device-carry (ignored by git; under the device
# tool's 64 MiB; the binaries gzipped). Run here after building; then, on
# the GPU machine:
#   bash test/Gpu/device/run.sh build/device-carry "$OUT"
# K3_DEVICE_SECTIONS as for run.sh: only "e2e" and "debug" need only the
# models' binaries, and then the op-level modules are not compiled.
set -euo pipefail
sections=${K3_DEVICE_SECTIONS:-numerics e2e sass bench}
want() { [[ " $sections " == *" $1 "* ]]; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
build=${1:-$root/build}
out=$build/device-carry
rm -rf "$out"
mkdir -p "$out/bin" "$out/k3b" "$out/tmp"
cp "$build/bin/k3-run" "$build/bin/k3-bench" "$build/bin/k3-dump" "$out/bin/"
cp "$root/test/Execution/Inputs/compare_npy.py" "$out/"
# The CPU builds' parallel loops call libomp (Debian's libomp5), which the
# GPU machine's image lacks: it travels beside the tools (run.sh puts it on
# LD_LIBRARY_PATH).
mkdir -p "$out/lib"
cp "$(readlink -f "$(/sbin/ldconfig -p | awk '/libomp\.so\.5 /{print $NF; exit}')")" "$out/lib/libomp.so.5"

# The binaries run on the GPU machine's host CPU, not this one's: built for
# x86-64-v3 (AVX2), which every GPU server of the last decade runs, rather
# than this machine's level (k3-compile --cpu=host: AVX-512 here).
k3c() { "$build/bin/k3-compile" "$@" --cpu=x86-64-v3; }

compile() { # NAME SOURCE [flags]: NAME.cpu.k3b and NAME.sm90a.k3b
  local name=$1 src=$2
  shift 2
  k3c "$src" "$@" -o "$out/k3b/$name.cpu.k3b"
  k3c "$src" "$@" --target=sm_90a -o "$out/k3b/$name.sm90a.k3b"
}
gpu_only() { # NAME SOURCE [flags]: NAME.sm90a.k3b
  local name=$1 src=$2
  shift 2
  k3c "$src" "$@" --target=sm_90a -o "$out/k3b/$name.sm90a.k3b"
}
if want numerics || want sass || want bench; then
# Numerics: the op-level modules of the CPU tests, and the benchmark modules.
# The op-level modules also for sm_80 (mma.sync instead of sm_90a's wgmma),
# which the driver JIT-compiles from PTX on a Hopper.
for m in kda_layer mla_decode mla_prefill moe_layer; do
  compile "$m" "$root/test/Execution/Inputs/$m.mlir"
  k3c "$root/test/Execution/Inputs/$m.mlir" --target=sm_80 \
    -o "$out/k3b/$m.sm80.k3b"
done
for m in kda_prefill kda_decode mla_decode moe_mxfp4; do
  compile "bench_$m" "$root/test/Gpu/device/$m.mlir"
done
# KDA's GPU default is the two chunk kernels (k3-gpu-kda-chunks), factored
# where the gate bounds the decay and pairwise for the softplus gate; the
# column scan (no contractions; the fallback for K over 128) and the
# chunked form as linalg (a host loop over 16-token chunks on mma.sync)
# stay selectable: checked and timed too.
gpu_only kda_scan "$root/test/Execution/Inputs/kda_layer.mlir" --kda-prefill-form=scan
gpu_only bench_kda_scan "$root/test/Gpu/device/kda_prefill.mlir" --kda-prefill-form=scan
compile kda_chunked "$root/test/Execution/Inputs/kda_layer.mlir" --kda-prefill-form=loops
k3c "$root/test/Execution/Inputs/kda_layer.mlir" --kda-prefill-form=loops \
  --target=sm_80 -o "$out/k3b/kda_chunked.sm80.k3b"
compile bench_kda_chunked "$root/test/Gpu/device/kda_prefill.mlir" --kda-prefill-form=loops
# KDA decode's GPU default is one step kernel (--kda-decode-form=kernel,
# k3-gpu-kda-step); the batched form it replaced (a dozen kernels a step)
# is checked and timed next to it.
compile kda_decode "$root/test/Execution/Inputs/kda_decode_gva.mlir"
k3c "$root/test/Execution/Inputs/kda_decode_gva.mlir" --target=sm_80 \
  -o "$out/k3b/kda_decode.sm80.k3b"
gpu_only kda_decode_batched "$root/test/Execution/Inputs/kda_decode_gva.mlir" --kda-decode-form=batched
gpu_only bench_kda_decode_batched "$root/test/Gpu/device/kda_decode.mlir" --kda-decode-form=batched
# MLA decode's GPU default splits the keys into parts of 256 (one fused
# kernel): checked with parts of 16 too (short caches have no full part of
# 256, and tiles then cross no part's end);
# one pass over all keys (--mla-split-keys=0) is timed next to it.
compile mla_decode_k16 "$root/test/Execution/Inputs/mla_decode.mlir" --mla-split-keys=16
compile bench_mla_one_pass "$root/test/Gpu/device/mla_decode.mlir" --mla-split-keys=0
# MLA decode's GPU default is one split-K kernel (--mla-decode-kernel=fused,
# k3-gpu-attend-parts); the parts form it replaced (separate score, softmax
# and P · V kernels) has GPU builds too, checked against the same CPU
# builds and timed next to it.
gpu_only mla_decode_parts "$root/test/Execution/Inputs/mla_decode.mlir" --mla-decode-kernel=parts
gpu_only mla_decode_parts_k16 "$root/test/Execution/Inputs/mla_decode.mlir" --mla-decode-kernel=parts \
  --mla-split-keys=16
gpu_only bench_mla_parts "$root/test/Gpu/device/mla_decode.mlir" --mla-decode-kernel=parts
# The MoE's GPU default runs MXFP4 experts as the expert-sorted mma.sync
# kernels (--moe-dispatch=mma, k3-gpu-moe-experts); the slot GEMMs on CUDA
# cores they replaced are checked and timed next to them.
gpu_only moe_slots "$root/test/Execution/Inputs/moe_layer.mlir" --moe-dispatch=slots
gpu_only bench_moe_slots "$root/test/Gpu/device/moe_mxfp4.mlir" --moe-dispatch=slots
fi
# End to end: k3-tiny (synthetic, seed 6), and k3-small without its weights
# (336 MB do not fit the device tool's 64 MiB): run.sh fills them with the
# synthetic checkpoint's values (k3-run --synthetic-weights=1), exactly those
# of the checkpoint it was compiled from.
k3c "$root/models/k3-tiny" --write-synthetic="$out/tmp/tiny" --seed=6
compile tiny "$out/tmp/tiny"
k3c "$root/models/k3-small" --write-synthetic="$out/tmp/small" --seed=1
compile small "$out/tmp/small" --omit-weights
# Kimi Linear at test size (the release's layout): SwiGLU in the MXFP4
# expert kernels' epilogue (its BF16 experts quantized), the softplus gate.
k3c "$root/test/Execution/Inputs/kimi-linear-tiny" --write-synthetic="$out/tmp/kl" \
  --synthetic-experts=bf16 --seed=4
compile kltiny "$out/tmp/kl" --quantize-experts=mxfp4
# GPU ranks (run.sh's "ranks", not a default section: it needs two GPUs,
# mpirun and NCCL there): k3-tiny at TP 2, one file per rank, and the MPI
# plugin k3-run loads under mpirun (beside the tools, in lib/).
if want ranks; then
  k3c "$out/tmp/tiny" --tp=2 --target=sm_90a -o "$out/k3b/tiny_tp2.sm90a.k3b"
  cp "$build/lib/libk3rt-mpi.so" "$out/lib/"
fi
gpu_only tiny_parts "$out/tmp/tiny" --mla-decode-kernel=parts
# Batched decode (run.sh, e2e and bench): k3-tiny's GPU build without
# decode_batch, one engine call per request per step, the baseline of the
# default build's one call per step.
gpu_only tiny_nobatch "$out/tmp/tiny" --no-batched-decode
# The paged attention's split keys (k3-gpu-paged-attend): blocks of 16 keys
# per head and request and the merge kernel, against the default build
# (whose short tables keep one block per head and request).
gpu_only tiny_split "$out/tmp/tiny" --mla-paged-split-keys=16
gpu_only small_parts "$out/tmp/small" --omit-weights --mla-decode-kernel=parts
# The debug section (run.sh): k3-small's GPU build with one part at a time
# in another form (KDA as the f32 column scan, the MoE as slot GEMMs, the
# layers unrolled), and k3-small cut to its first 1, 2 and 4 layers (CPU
# and GPU builds), to see where the GPU's logits leave the CPU's.
# The debug section (run.sh): k3-small cut to its first two layers (KDA +
# dense MLP, then KDA + MoE: where the GPU first leaves the CPU, 2026-12-04),
# and that cut with one thing changed at a time (CPU and GPU builds of each):
#   L2          as cut;           L2_dense   layer 2's MoE a dense MLP;
#   L2_nonorm   no latent norm;   L2_k1      one expert per token;
#   L2_bf16     bf16 experts (no MXFP4; the GPU runs them as slot GEMMs);
#   L2_slots    (GPU) MXFP4 experts as slot GEMMs.
if want debug; then
  variant() { # NAME 'python statements on c' [k3-compile flags for both builds]
    local name=$1 edit=$2
    shift 2
    /usr/bin/python3 - "$root/models/k3-small/config.json" "$out/tmp/$name" "$edit" <<'PY'
import json, os, sys
c = json.load(open(sys.argv[1]))
c["num_hidden_layers"] = 2
c["linear_attn_config"]["kda_layers"] = [1, 2]
c["linear_attn_config"]["full_attn_layers"] = []
exec(sys.argv[3])
os.makedirs(sys.argv[2], exist_ok=True)
json.dump(c, open(os.path.join(sys.argv[2], "config.json"), "w"), indent=1)
PY
    local experts=()
    [ "$name" = small_L2_bf16 ] && experts=(--synthetic-experts=bf16)
    k3c "$out/tmp/$name" --write-synthetic="$out/tmp/$name.w" --seed=1 "${experts[@]}" > /dev/null
    compile "$name" "$out/tmp/$name.w" --omit-weights "$@"
  }
  variant small_L2 'pass'
  variant small_L2_dense 'c["first_k_dense_replace"] = 2'
  variant small_L2_nonorm 'c["latent_moe_use_norm"] = False'
  variant small_L2_k1 'c["num_experts_per_token"] = 1'
  variant small_L2_bf16 'c.pop("quantization_config")'
  gpu_only small_L2_slots "$out/tmp/small_L2.w" --omit-weights --moe-dispatch=slots
  compile moe_small "$root/test/Gpu/device/moe_small.mlir"
  # CPU builds with the tensor cores' bf16 operands (--contraction-inputs=bf16):
  # the GPU's precision on the CPU, to compare the GPU builds with.
  for pair in "small $out/tmp/small" "tiny $out/tmp/tiny" "small_L2 $out/tmp/small_L2.w" \
              "moe_small $root/test/Gpu/device/moe_small.mlir"; do
    set -- $pair
    omit=(--omit-weights)
    [ "$1" = tiny ] && omit=() # k3-tiny's runs use its own weights
    k3c "$2" "${omit[@]}" --contraction-inputs=bf16 -o "$out/k3b/$1.cpubf16.k3b"
  done
  # The sm_90a build's own kernels run on the CPU (--emulate, fibers):
  # run.sh compares the GPU with them, which checks the emulation (wgmma's
  # descriptors, the fragment layouts) against the hardware.
  k3c "$out/tmp/tiny" --target=sm_90a --emulate -o "$out/k3b/tiny.emu90.k3b"
fi
rm -rf "$out/tmp"
# PTX text and cubins compress well (k3-small's 38 MB to 8): run.sh unpacks.
gzip -9 "$out"/k3b/*.k3b
du -sh "$out"
size=$(du -sm "$out" | cut -f1)
if (( size > 60 )); then
  echo "prepare.sh: $out is ${size} MiB, over the device tool's limit" >&2
  exit 1
fi
