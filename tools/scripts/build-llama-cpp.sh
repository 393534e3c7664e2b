#!/usr/bin/env bash
# build-llama-cpp.sh: build llama.cpp (CPU only, Release) and convert a
# Kimi Linear checkpoint in HF layout to GGUF with it, for benchmarking k3
# against llama.cpp on the same weights (e.g. the synthetic checkpoint of
# `k3-compile models/kimi-linear-small --write-synthetic=DIR --synthetic-experts=bf16`).
#
# Usage:
#   build-llama-cpp.sh LLAMA_CPP_SRC CHECKPOINT_DIR OUT_DIR
#
#   LLAMA_CPP_SRC   a llama.cpp source tree (with src/models/kimi-linear.cpp,
#                   convert_hf_to_gguf.py and gguf-py/)
#   CHECKPOINT_DIR  config.json + *.safetensors (a tokenizer is optional: without
#                   one a placeholder vocabulary is written, see
#                   convert_kimi_linear_gguf.py next to this script)
#   OUT_DIR         gets build/ (llama.cpp binaries in build/bin: llama-bench,
#                   llama-completion, llama-simple) and NAME-OUTTYPE.gguf
#
# Environment (optional):
#   OUTTYPE=bf16       converter --outtype (f32, f16, bf16, q8_0, ...)
#   JOBS=$(nproc)      parallel compile jobs
#   NICE=10            niceness of the build and the conversion
#   PYTHON=python3     interpreter for the converter (/usr/bin/python3 when it exists)
#   SKIP_BUILD=1       only convert;  SKIP_CONVERT=1: only build
#
# Then e.g.:
#   OUT_DIR/build/bin/llama-bench -m OUT_DIR/NAME-bf16.gguf -p 512 -n 64 -t 1,2
#
# Needs: cmake, a C++17 compiler, and for the converter torch, numpy and tqdm
# (Debian 12: apt-get install python3-torch python3-numpy python3-tqdm; the
# old torch 1.13 there is fine). transformers, sentencepiece and safetensors
# are not needed. gguf-py comes from the llama.cpp tree.
#
# This is a manual benchmarking aid: it builds a large third-party project and
# writes ~0.6 GB per small checkpoint. It must NOT run in CI.

set -euo pipefail

usage() { sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

[[ "${1:-}" == "-h" || "${1:-}" == "--help" ]] && usage 0
[[ $# -eq 3 ]] || { echo "usage: $0 LLAMA_CPP_SRC CHECKPOINT_DIR OUT_DIR (--help for more)" >&2; exit 2; }

SRC=$(cd "$1" && pwd)
CKPT=$(cd "$2" && pwd)
mkdir -p "$3"
OUT=$(cd "$3" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CONVERTER="$HERE/convert_kimi_linear_gguf.py"

OUTTYPE=${OUTTYPE:-bf16}
JOBS=${JOBS:-$(nproc)}
NICE=${NICE:-10}
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x /usr/bin/python3 ]]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi

[[ -f "$SRC/CMakeLists.txt" && -f "$SRC/convert_hf_to_gguf.py" ]] \
    || { echo "$SRC does not look like a llama.cpp source tree" >&2; exit 1; }
[[ -f "$CKPT/config.json" ]] || { echo "$CKPT has no config.json" >&2; exit 1; }
[[ -f "$CONVERTER" ]] || { echo "missing $CONVERTER (keep it next to this script)" >&2; exit 1; }

BUILD="$OUT/build"
GGUF="$OUT/$(basename "$CKPT")-$OUTTYPE.gguf"

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
    echo "== configuring llama.cpp ($SRC -> $BUILD)"
    # Options a given llama.cpp version does not know are ignored by cmake (with a warning).
    nice -n "$NICE" cmake -S "$SRC" -B "$BUILD" \
        -DCMAKE_BUILD_TYPE=Release \
        -DGGML_NATIVE=ON \
        -DGGML_CUDA=OFF \
        -DLLAMA_OPENSSL=OFF \
        -DLLAMA_CURL=OFF \
        -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_SERVER=OFF \
        -DLLAMA_BUILD_APP=OFF \
        -DLLAMA_BUILD_UI=OFF \
        -DLLAMA_USE_PREBUILT_UI=OFF
    # llama-bench, plus whichever greedy-generation tools this version has
    available=$(cmake --build "$BUILD" --target help)
    targets=(llama-bench)
    for t in llama-completion llama-simple llama-cli; do
        if grep -qx -- "\.\.\. $t" <<<"$available"; then targets+=("$t"); fi
    done
    echo "== building ${targets[*]} with $JOBS jobs"
    nice -n "$NICE" cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}"
fi

if [[ "${SKIP_CONVERT:-0}" != 1 ]]; then
    "$PYTHON" -c 'import torch, numpy, tqdm' 2>/dev/null || {
        echo "$PYTHON lacks torch/numpy/tqdm (Debian: apt-get install python3-torch python3-numpy python3-tqdm)" >&2
        exit 1
    }
    echo "== converting $CKPT -> $GGUF ($OUTTYPE)"
    nice -n "$NICE" "$PYTHON" "$CONVERTER" --llama-cpp "$SRC" "$CKPT" \
        --outtype "$OUTTYPE" --outfile "$GGUF"
fi

echo "== done"
[[ "${SKIP_BUILD:-0}" != 1 ]] && echo "binaries: $BUILD/bin"
[[ "${SKIP_CONVERT:-0}" != 1 ]] && echo "model:    $GGUF"
exit 0
