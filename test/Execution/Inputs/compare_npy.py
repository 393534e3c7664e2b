"""Relative RMSE between two float32 .npy files of one shape (DESIGN §6).

usage: compare_npy.py REF.npy OUT.npy THRESHOLD
Prints `rows=R cols=C relative_rmse=X` and exits 1 if X >= THRESHOLD or the
shapes differ.
"""
import math
import struct
import sys


def load(path):
    data = open(path, "rb").read()
    assert data[:6] == b"\x93NUMPY", path
    n = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + n].decode()
    shape = tuple(int(x) for x in header.split("'shape': (")[1].split(")")[0].split(",") if x.strip())
    body = data[10 + n:]
    return shape, struct.unpack("<%df" % (len(body) // 4), body)


ref_shape, ref = load(sys.argv[1])
out_shape, out = load(sys.argv[2])
if ref_shape != out_shape:
    print("shape mismatch: %s vs %s" % (ref_shape, out_shape))
    sys.exit(1)
num = sum((a - b) ** 2 for a, b in zip(ref, out))
den = sum(a * a for a in ref)
rel = math.sqrt(num / den) if den else math.sqrt(num)
print("rows=%d cols=%d relative_rmse=%.3g" % (ref_shape[0], ref_shape[1], rel))
sys.exit(0 if rel < float(sys.argv[3]) else 1)
