"""Zero inputs for a binary's entry point, as k3-run --input and --output arguments.

usage: entry_inputs.py DIR BINARY.k3b K3_DUMP ENTRY TOKENS ROWS

Writes DIR/inN.npy for each input of ENTRY (f32 and i32 only): the ids get
TOKENS entries, every other dynamic extent is ROWS. Prints the arguments,
with an --output=@DIR/outN.npy for each output.
"""
import json
import os
import struct
import subprocess
import sys

work, binary, dump, entry, tokens, rows = sys.argv[1:7]
meta = json.loads(subprocess.run([dump, binary, "--json"], check=True, capture_output=True,
                                 text=True).stdout)
ep = [e for e in meta["entry_points"] if e["name"] == entry][0]
os.makedirs(work, exist_ok=True)
args = []
for i, t in enumerate(ep["inputs"]):
    extent = int(tokens) if t["name"] == "ids" else int(rows)
    shape = [extent if s < 0 else s for s in t["shape"]]
    count = 1
    for s in shape:
        count *= s
    code = "<i4" if t["dtype"] == "I32" else "<f4"
    d = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        code, ", ".join(map(str, shape)) + ("," if len(shape) == 1 else ""))
    d += " " * ((64 - (10 + len(d) + 1) % 64) % 64) + "\n"
    path = os.path.join(work, "in%d.npy" % i)
    body = struct.pack("<%d%s" % (count, "i" if code == "<i4" else "f"), *([0] * count))
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(d)) + d.encode() + body)
    args.append("--input=@" + path)
for i in range(len(ep["outputs"])):
    args.append("--output=@" + os.path.join(work, "out%d.npy" % i))
print(" ".join(args))
