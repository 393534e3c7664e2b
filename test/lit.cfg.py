# -*- Python -*- lit configuration of the k3 test suite.

import ctypes
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "K3"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.k3_obj_root, "test")
# Unit/ holds GoogleTest sources run by CTest, not lit tests.
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Unit", "Inputs", "Reference", "FakeCuda", "device", "node_modules", "Fuzz"]

# Captures reset at every CHECK-LABEL; `$`-prefixed names stay global.
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"
# The CPU kernels' OpenMP threads sleep as soon as a parallel loop ends
# instead of spinning for 200 ms: lit runs tests side by side, each with a
# thread per core.
config.environment["KMP_BLOCKTIME"] = "0"

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%k3_src", config.k3_src_root))
config.substitutions.append(("%k3_bin", config.k3_tools_dir))
config.substitutions.append(("%k3_obj", config.k3_obj_root))
# The stand-in driver (test/FakeCuda): `env LD_LIBRARY_PATH=%fake_cuda k3-run ...`.
config.substitutions.append(("%fake_cuda", os.path.join(config.k3_obj_root, "test", "fake-cuda")))

llvm_config.with_system_environment(
    ["HOME", "INCLUDE", "LIB", "TMP", "TEMP", "ASAN_OPTIONS", "UBSAN_OPTIONS"]
)
llvm_config.use_default_substitutions()

tool_dirs = [config.k3_tools_dir, config.llvm_tools_dir]
tools = [
    ToolSubst("k3-opt", unresolved="fatal"),
    ToolSubst("k3-compile", unresolved="fatal"),
    ToolSubst("k3-dump", unresolved="fatal"),
    ToolSubst("k3-run", unresolved="fatal"),
    ToolSubst("k3-serve", unresolved="fatal"),
    ToolSubst("k3-tokenize", unresolved="fatal"),
    ToolSubst("k3-reference", unresolved="fatal"),
    ToolSubst("k3rt-c-api", unresolved="fatal"),
    ToolSubst("k3-bench", unresolved="fatal"),
    ToolSubst("k3-comm-check", unresolved="ignore"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# Execution tests lower with k3-opt and run on the host with mlir-runner.
llvm_config.add_tool_substitutions(
    [ToolSubst("mlir-runner", unresolved="fatal")], [config.llvm_tools_dir]
)
runner_libs = os.path.join(os.path.dirname(config.llvm_tools_dir), "lib")
runner_utils = [
    os.path.join(runner_libs, "libmlir_runner_utils.so"),
    os.path.join(runner_libs, "libmlir_c_runner_utils.so"),
]


def runner(libs):
    return "mlir-runner -e main -entry-point-result=void -shared-libs=" + ",".join(libs)


config.substitutions.append(("%run_main", runner(runner_utils)))

# The x86-64 levels this machine runs (k3-compile --cpu): features
# x86-64-v3 (AVX2, FMA, BMI2) and x86-64-v4 (AVX-512 F, BW, CD, DQ, VL).
try:
    with open("/proc/cpuinfo") as f:
        flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
except OSError:
    flags = []
if {"avx2", "fma", "bmi2"} <= set(flags):
    config.available_features.add("x86-64-v3")
    if {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"} <= set(flags):
        config.available_features.add("x86-64-v4")

# GPU kernels run on the CPU (k3-gpu-launches-to-openmp): each block an
# OpenMP team (LLVM's libomp, Debian's libomp-dev), the tensor cores'
# instructions in lib/Target/Cpu/k3emu.c. KMP_BLOCKTIME=0: a thread waiting
# at a barrier sleeps at once (a block has far more threads than cores).
libomp = "/usr/lib/x86_64-linux-gnu/libomp.so.5"
if os.path.exists(libomp):
    config.available_features.add("openmp")
emulation = os.path.join(config.k3_obj_root, "test", "emulation", "libk3-gpu-emulation.so")
config.substitutions.append(
    ("%run_emulated", "env KMP_BLOCKTIME=0 " + runner(runner_utils + [libomp, emulation]))
)

# Features: `nvptx-target` when LLVM has the NVPTX backend, `cuda-driver`
# when libcuda.so.1 loads (device tests say `REQUIRES: cuda-driver`).
if "NVPTX" in config.llvm_targets.split(";"):
    config.available_features.add("nvptx-target")
# `ptxas` when CUDA's assembler is installed (cubins and their figures).
if os.path.exists("/usr/local/cuda/bin/ptxas") or any(
    os.path.exists(os.path.join(d, "ptxas")) for d in os.environ.get("PATH", "").split(":")
):
    config.available_features.add("ptxas")
# `cuda-toolkit` when CUDA's libdevice is there (the GPU ptx phase links it).
if any(
    os.path.exists(os.path.join(d, "nvvm", "libdevice", "libdevice.10.bc"))
    for d in [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]
    if d
):
    config.available_features.add("cuda-toolkit")
try:
    ctypes.CDLL("libcuda.so.1")
    config.available_features.add("cuda-driver")
except OSError:
    pass

# `mpi` when OpenMPI's launcher and the MPI test driver are built (the
# collectives, test/Comm): `%mpirun -np N`. Root runs need the flag; two
# cores run up to eight ranks oversubscribed.
import shutil
if shutil.which("mpirun") and os.path.exists(os.path.join(config.k3_tools_dir, "k3-comm-check")):
    config.available_features.add("mpi")
    config.substitutions.append(("%mpirun", "mpirun --allow-run-as-root --oversubscribe"))
