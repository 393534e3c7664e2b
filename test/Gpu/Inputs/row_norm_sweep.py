"""k3.rms_norm as the GPU's one kernel (k3.row_norm, k3-gpu-row-norm,
emulated on the CPU) and as the CPU's loop nests, both against fp64.

usage: row_norm_sweep.py WORKDIR K3_COMPILE K3_RUN COMPARE_NPY

Writes an op-level module, compiles it for the CPU and with --target=sm_80
--emulate, and runs each function on seeded inputs: rows of D = 32 (a team
of 32, a channel each), 64, 1024 (256 threads, four channels) and 7168
(K3's hidden width: 256 threads, 28 channels), ungated and gated (the gate
through a sigmoid), R = 1, 15 and 63 rows; rows of values near 1e-3 (the
sum below eps), rows of 300 (the sum near 1e5 per channel) and an all-zero
row. Relative RMSE < 1e-5 for both forms (fp32). Pure Python (no numpy).
Prints one line per comparison; exits 1 on any failure.
"""
import math
import random
import sys

from npy import check_forms, compile_forms, f32

work, compiler, run, compare = sys.argv[1:5]
EPS = 1e-5


def plain(d):
    return f"""
func.func @d{d}(%x: tensor<?x{d}xf32>, %w: tensor<{d}xf32>) -> tensor<?x{d}xf32> {{
  %y = k3.rms_norm %x, %w {{eps = 1.0e-05 : f32}} : (tensor<?x{d}xf32>, tensor<{d}xf32>) -> tensor<?x{d}xf32>
  return %y : tensor<?x{d}xf32>
}}"""


def gated(d):
    return f"""
func.func @gated{d}(%x: tensor<?x{d}xf32>, %w: tensor<{d}xf32>, %g: tensor<?x{d}xf32>) -> tensor<?x{d}xf32> {{
  %y = k3.rms_norm %x, %w gate(%g) {{eps = 1.0e-05 : f32}}
      : (tensor<?x{d}xf32>, tensor<{d}xf32>, tensor<?x{d}xf32>) -> tensor<?x{d}xf32>
  return %y : tensor<?x{d}xf32>
}}"""


MODULE = "".join(plain(d) for d in (32, 64, 1024, 7168)) + gated(64) + gated(1024)


def norm(x, w, g, rows, d):
    out = []
    for r in range(rows):
        row = x[r * d:(r + 1) * d]
        inv = 1.0 / math.sqrt(sum(v * v for v in row) / d + EPS)
        for j in range(d):
            y = row[j] * inv * w[j]
            if g is not None:
                y /= 1.0 + math.exp(-g[r * d + j])
            out.append(y)
    return out


binaries = compile_forms(work, compiler, "row_norm", MODULE)

rng = random.Random(5)
failed = False
cases = []  # (d, rows, gated, magnitude; 0: a zero row among the others)
for d in (32, 64, 1024):
    for rows in (1, 15, 63):
        cases.append((d, rows, False, 2.0))
for rows in (1, 15):
    cases += [(7168, rows, False, 2.0), (64, rows, True, 2.0), (1024, rows, True, 2.0)]
cases += [(64, 15, False, 1e-3), (1024, 15, False, 300.0), (64, 15, True, 0.0)]
for d, rows, gate, scale in cases:
    x = [f32(rng.uniform(-1, 1) * (scale or 2.0)) for _ in range(rows * d)]
    if scale == 0.0:
        x[3 * d:4 * d] = [0.0] * d
    w = [f32(rng.uniform(0.5, 1.5)) for _ in range(d)]
    g = [f32(rng.uniform(-6, 6)) for _ in range(rows * d)] if gate else None
    inputs = [((rows, d), x), ((d,), w)] + ([((rows, d), g)] if gate else [])
    fn = f"gated{d}" if gate else f"d{d}"
    failed |= not check_forms(work, run, compare, binaries, fn, inputs,
                              ((rows, d), norm(x, w, g, rows, d)), f"{fn} R={rows} scale={scale}")
sys.exit(1 if failed else 0)
