"""k3.attn_res as the GPU's one kernel (k3-gpu-attn-res, emulated on the CPU)
and as the CPU's loop nests, both against an fp64 mix.

usage: attn_res_sweep.py WORKDIR K3_COMPILE K3_RUN COMPARE_NPY

Writes an op-level module, compiles it for the CPU and with --target=sm_80
--emulate, and runs each function on seeded inputs: rows of D = 64 (a team
of 64, a channel each), 1024 (256 threads, four channels) and 2304 (256,
nine); a stack of N = 0, 1 and 3 blocks before the running sum, a stack
alone, and two [T, D] sources without a stack; T = 1, 15, 63; the mix
followed by an RMSNorm (on the GPU folded into the mix's kernel by
k3-gpu-fuse-row-norms), D = 64 and 1024. One case has
norm and query weights of 40, so that scores reach the hundreds and the
softmax saturates (a plain exp would overflow). Relative RMSE < 1e-5 for
both forms (fp32). Pure Python (no numpy). Prints one line per comparison;
exits 1 on any failure.
"""
import math
import random
import sys

from npy import check_forms, compile_forms, f32

work, compiler, run, compare = sys.argv[1:5]
EPS = 1e-5


def stacked(name, d):
    return f"""
func.func @{name}(%s: tensor<?x?x{d}xf32>, %r: tensor<?x{d}xf32>, %n: tensor<{d}xf32>, %q: tensor<{d}xf32>) -> tensor<?x{d}xf32> {{
  %y = k3.attn_res [%s, %r] norm(%n) query(%q) {{eps = 1.0e-05 : f32}}
      : (tensor<?x?x{d}xf32>, tensor<?x{d}xf32>, tensor<{d}xf32>, tensor<{d}xf32>) -> tensor<?x{d}xf32>
  return %y : tensor<?x{d}xf32>
}}"""


MODULE = stacked("d64", 64) + stacked("d1024", 1024) + stacked("d2304", 2304) + """
func.func @alone(%s: tensor<?x?x64xf32>, %n: tensor<64xf32>, %q: tensor<64xf32>) -> tensor<?x64xf32> {
  %y = k3.attn_res [%s] norm(%n) query(%q) {eps = 1.0e-05 : f32}
      : (tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
func.func @pair(%a: tensor<?x64xf32>, %b: tensor<?x64xf32>, %n: tensor<64xf32>, %q: tensor<64xf32>) -> tensor<?x64xf32> {
  %y = k3.attn_res [%a, %b] norm(%n) query(%q) {eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
""" + "".join(f"""
func.func @normed{d}(%s: tensor<?x?x{d}xf32>, %r: tensor<?x{d}xf32>, %n: tensor<{d}xf32>, %q: tensor<{d}xf32>, %w: tensor<{d}xf32>) -> tensor<?x{d}xf32> {{
  %y = k3.attn_res [%s, %r] norm(%n) query(%q) {{eps = 1.0e-05 : f32}}
      : (tensor<?x?x{d}xf32>, tensor<?x{d}xf32>, tensor<{d}xf32>, tensor<{d}xf32>) -> tensor<?x{d}xf32>
  %z = k3.rms_norm %y, %w {{eps = 1.0e-05 : f32}} : (tensor<?x{d}xf32>, tensor<{d}xf32>) -> tensor<?x{d}xf32>
  return %z : tensor<?x{d}xf32>
}}""" for d in (64, 1024))


def mix(candidates, norm, query, t, d):
    """fp64: softmax over the candidates' scores of row t, then the sum."""
    scores = []
    for c in candidates:
        row = c[t * d:(t + 1) * d]
        dot = sum(v * w * q for v, w, q in zip(row, norm, query))
        rms = math.sqrt(sum(v * v for v in row) / d + EPS)
        scores.append(dot / rms)
    m = max(scores)
    e = [math.exp(s - m) for s in scores]
    total = sum(e)
    return [sum(e[i] * candidates[i][t * d + j] for i in range(len(e))) / total for j in range(d)]


binaries = compile_forms(work, compiler, "attn_res", MODULE)

rng = random.Random(11)
failed = False
cases = []  # (function, d, t, blocks (None: no stack), extra [T, D] sources, weight scale)
for d, fn in ((64, "d64"), (1024, "d1024"), (2304, "d2304")):
    for t in (1, 15, 63):
        for n in (0, 1, 3):
            if d != 64 and (n == 0 or t == 15):
                continue
            cases.append((fn, d, t, n, 1, 1.0))
cases += [("d64", 64, 15, 3, 1, 40.0), ("alone", 64, 15, 2, 0, 1.0), ("alone", 64, 1, 1, 0, 1.0),
          ("pair", 64, 15, None, 2, 1.0), ("pair", 64, 1, None, 2, 1.0)]
# The mix then RMSNorm: one kernel (k3-gpu-fuse-row-norms).
cases += [("normed64", 64, t, 3, 1, 1.0) for t in (1, 15, 63)] + [("normed1024", 1024, 15, 1, 1, 1.0)]
for case, (fn, d, t, n, extra, scale) in enumerate(cases):
    inputs, candidates = [], []
    if n is not None:
        values = [f32(rng.uniform(-2, 2)) for _ in range(n * t * d)]
        inputs.append(((n, t, d), values))
        candidates += [values[i * t * d:(i + 1) * t * d] for i in range(n)]
    for _ in range(extra):
        values = [f32(rng.uniform(-2, 2)) for _ in range(t * d)]
        inputs.append(((t, d), values))
        candidates.append(values)
    norm = [f32(scale * rng.uniform(0.5, 1.5)) for _ in range(d)]
    query = [f32(scale * rng.uniform(-1, 1)) for _ in range(d)]
    inputs += [((d,), norm), ((d,), query)]
    expected = []
    for row in range(t):
        expected += mix(candidates, norm, query, row, d)
    if fn.startswith("normed"):
        weight = [f32(rng.uniform(0.5, 1.5)) for _ in range(d)]
        inputs.append(((d,), weight))
        for row in range(t):
            y = expected[row * d:(row + 1) * d]
            inv = 1.0 / math.sqrt(sum(v * v for v in y) / d + EPS)
            expected[row * d:(row + 1) * d] = [v * inv * w for v, w in zip(y, weight)]
    failed |= not check_forms(work, run, compare, binaries, fn, inputs, ((t, d), expected),
                              f"{fn} T={t} N={n} scale={scale}")
sys.exit(1 if failed else 0)
