"""Relative RMSE between two float32 .npy files of one shape (DESIGN §6).

usage: compare_npy.py REF.npy[:ROW] OUT.npy[:ROW] THRESHOLD [ROWS]
Prints `rows=R cols=C relative_rmse=X` and exits 1 if X >= THRESHOLD or the
shapes differ. With ROWS, only the first ROWS rows are compared, and the
worst row's own relative RMSE is printed too (`worst_row=I:X`), and the rows
at or over THRESHOLD, the first 16 (`rows_over=N:I,I,...`).
"""
import math
import struct
import sys


def load(path):
    # PATH:ROW takes one row of a 2-D array, as a [1, cols] array.
    row = None
    if ":" in path and path.rsplit(":", 1)[1].isdigit():
        path, row = path.rsplit(":", 1)[0], int(path.rsplit(":", 1)[1])
    data = open(path, "rb").read()
    assert data[:6] == b"\x93NUMPY", path
    n = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + n].decode()
    shape = tuple(int(x) for x in header.split("'shape': (")[1].split(")")[0].split(",") if x.strip())
    body = data[10 + n:]
    values = struct.unpack("<%df" % (len(body) // 4), body)
    if row is None:
        return shape, values
    cols = len(values) // shape[0]
    return (1, cols), values[row * cols:(row + 1) * cols]


ref_shape, ref = load(sys.argv[1])
out_shape, out = load(sys.argv[2])
if ref_shape != out_shape:
    print("shape mismatch: %s vs %s" % (ref_shape, out_shape))
    sys.exit(1)
rows = ref_shape[0]
cols = len(ref) // rows if rows else 0
worst = ""
if len(sys.argv) > 4:
    rows = min(rows, int(sys.argv[4]))
    ref, out = ref[:rows * cols], out[:rows * cols]
    per_row = []
    for r in range(rows):
        a, b = ref[r * cols:(r + 1) * cols], out[r * cols:(r + 1) * cols]
        n = sum((x - y) ** 2 for x, y in zip(a, b))
        d = sum(x * x for x in a)
        per_row.append(math.sqrt(n / d) if d else math.sqrt(n))
    if per_row:
        i = max(range(rows), key=lambda r: per_row[r])
        worst = " worst_row=%d:%.3g" % (i, per_row[i])
        over = [r for r in range(rows) if per_row[r] >= float(sys.argv[3])]
        worst += " rows_over=%d:%s" % (len(over), ",".join(map(str, over[:16])))
num = sum((a - b) ** 2 for a, b in zip(ref, out))
den = sum(a * a for a in ref)
rel = math.sqrt(num / den) if den else math.sqrt(num)
print("rows=%d cols=%d relative_rmse=%.3g%s" % (rows, cols, rel, worst))
sys.exit(0 if rel < float(sys.argv[3]) else 1)
