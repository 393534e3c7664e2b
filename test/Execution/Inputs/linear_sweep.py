"""k3.linear in both CPU forms against an fp64 product.

usage: linear_sweep.py WORKDIR K3_COMPILE K3_RUN COMPARE_NPY

Writes an op-level module (f32 weights [64, 96] and [32, 512], MXFP4 weights
[64, 96] as packed bytes and E8M0 scales), compiles it with --linear=blocked
and --linear=dot, and for T in {1, 5, 6, 7, 15, 63, 240, 241, 300} (one row,
fewer rows than a 6-row tile, one tile, tiles plus remainder rows, one and
two 240-row blocks)
runs each function on seeded inputs and compares with the product in fp64
(relative RMSE < 1e-5). K = 96 is three K blocks of 32 (one MXFP4 block
each), K = 512 two of 256. Pure Python (no numpy). Prints one line per
comparison; exits 1 on any failure.
"""
import os
import random
import struct
import subprocess
import sys

work, compiler, run, compare = sys.argv[1:5]
E2M1 = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6]

MODULE = """
func.func @f32(%x: tensor<?x96xf32>, %w: tensor<64x96xf32>) -> tensor<?x64xf32> {
  %y = k3.linear %x, %w : (tensor<?x96xf32>, tensor<64x96xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
func.func @wide(%x: tensor<?x512xf32>, %w: tensor<32x512xf32>) -> tensor<?x32xf32> {
  %y = k3.linear %x, %w : (tensor<?x512xf32>, tensor<32x512xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
func.func @mx(%x: tensor<?x96xf32>, %c: tensor<64x48xi8>, %s: tensor<64x3xf8E8M0FNU>) -> tensor<?x64xf32> {
  %w = k3.unpack_e2m1 %c : tensor<64x48xi8> -> tensor<64x96xf4E2M1FN>
  %y = k3.linear %x, %w scales(%s)
      : (tensor<?x96xf32>, tensor<64x96xf4E2M1FN>, tensor<64x3xf8E8M0FNU>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
"""


def write_npy(path, shape, values, descr="<f4"):
    d = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, ", ".join(map(str, shape)) + ("," if len(shape) == 1 else ""))
    d += " " * ((64 - (10 + len(d) + 1) % 64) % 64) + "\n"
    body = struct.pack("<%d%s" % (len(values), "f" if descr == "<f4" else "B"), *values)
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(d)) + d.encode() + body)


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def product(x, w, t, n, k):
    return [sum(x[r * k + i] * w[c * k + i] for i in range(k)) for r in range(t) for c in range(n)]


os.makedirs(work, exist_ok=True)
source = os.path.join(work, "linear.mlir")
with open(source, "w") as f:
    f.write(MODULE)
binaries = []
for form in ["blocked", "dot"]:
    binary = os.path.join(work, "linear-%s.k3b" % form)
    subprocess.run([compiler, source, "--linear=" + form, "-o", binary], check=True)
    binaries.append((form, binary))

rng = random.Random(11)
weights = {
    "f32": [f32(rng.uniform(-0.1, 0.1)) for _ in range(64 * 96)],
    "wide": [f32(rng.uniform(-0.1, 0.1)) for _ in range(32 * 512)],
}
codes = [rng.randrange(256) for _ in range(64 * 48)]
scales = [rng.randrange(120, 130) for _ in range(64 * 3)]
# Code i of row n is the low nibble of byte i / 2 when i is even.
weights["mx"] = [E2M1[(codes[n * 48 + i // 2] >> (4 * (i % 2))) & 15] *
                 2.0 ** (scales[n * 3 + i // 32] - 127) for n in range(64) for i in range(96)]
write_npy(os.path.join(work, "w_f32.npy"), [64, 96], weights["f32"])
write_npy(os.path.join(work, "w_wide.npy"), [32, 512], weights["wide"])
write_npy(os.path.join(work, "codes.npy"), [64, 48], codes, "|u1")
write_npy(os.path.join(work, "scales.npy"), [64, 3], scales, "|u1")
args = {"f32": ["w_f32.npy"], "wide": ["w_wide.npy"], "mx": ["codes.npy", "scales.npy"]}
shapes = {"f32": (64, 96), "wide": (32, 512), "mx": (64, 96)}

failed = False
for t in [1, 5, 6, 7, 15, 63, 240, 241, 300]:
    for fn, (n, k) in shapes.items():
        x = [f32(rng.uniform(-1, 1)) for _ in range(t * k)]
        xp = os.path.join(work, "x-%s-%d.npy" % (fn, t))
        want = os.path.join(work, "want-%s-%d.npy" % (fn, t))
        write_npy(xp, [t, k], x)
        write_npy(want, [t, n], product(x, weights[fn], t, n, k))
        for form, binary in binaries:
            got = os.path.join(work, "got-%s-%s-%d.npy" % (form, fn, t))
            subprocess.run([run, binary, "--function=" + fn, "--input=@" + xp] +
                           ["--input=@" + os.path.join(work, a) for a in args[fn]] +
                           ["--output=@" + got], check=True)
            r = subprocess.run([sys.executable, compare, want, got, "1e-5"],
                               capture_output=True, text=True)
            ok = r.returncode == 0
            failed |= not ok
            print("%s %s %s T=%d %s" % ("ok" if ok else "FAIL", form, fn, t, r.stdout.strip()))
sys.exit(1 if failed else 0)
