"""Seeded inputs of an op-level MLA decode step, as float32 .npy files.

usage: mla_inputs.py DIR S H P R L VD SEED [PEAK [T]]

Writes q [T,H,P+R], c [T,L], kr [T,R], kvb [H*(P+VD),L], cache [S,L+R] and
g [T,H,VD] into DIR (T new tokens, 1 by default). PEAK multiplies q, making
the softmax peaked so that a wrong scale would show.
"""
import random
import struct
import sys

out = sys.argv[1]
s, h, p, r, l, vd, seed = (int(x) for x in sys.argv[2:9])
peak = float(sys.argv[9]) if len(sys.argv) > 9 else 1.0
t = int(sys.argv[10]) if len(sys.argv) > 10 else 1
rng = random.Random(seed)


def write(name, shape, lo, hi, mult=1.0):
    n = 1
    for d in shape:
        n *= d
    d = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        ", ".join(map(str, shape)) + ("," if len(shape) == 1 else ""))
    d += " " * ((64 - (10 + len(d) + 1) % 64) % 64) + "\n"
    body = struct.pack("<%df" % n, *[mult * rng.uniform(lo, hi) for _ in range(n)])
    open("%s/%s.npy" % (out, name), "wb").write(
        b"\x93NUMPY\x01\x00" + struct.pack("<H", len(d)) + d.encode() + body)


write("q", [t, h, p + r], -1, 1, peak)
write("c", [t, l], -1, 1)
write("kr", [t, r], -1, 1)
write("kvb", [h * (p + vd), l], -0.3, 0.3)
write("cache", [s, l + r], -1, 1)
write("g", [t, h, vd], -2, 2)
