"""Prefill snapshots of a model binary against prefix prefills.

usage: prefill_snapshots.py WORKDIR BINARY.k3b K3_DUMP K3_RUN COMPARE_NPY INTERVAL TOKENS

Runs the binary's prefill entry (k3-run --function) on TOKENS ids from a
fresh state and, for every m with m·INTERVAL <= TOKENS, on the first
m·INTERVAL ids alone; snapshot m-1 of every KDA layer from the long call
must equal that layer's final kda_state from the short one (relative RMSE
< 1e-6). Prints one line per comparison; exits 1 on a mismatch.
"""
import json
import os
import struct
import subprocess
import sys

work, binary, dump, run, compare, interval, tokens = sys.argv[1:8]
interval, tokens = int(interval), int(tokens)
meta = json.loads(subprocess.run([dump, binary, "--json"], check=True, capture_output=True,
                                 text=True).stdout)
prefill = [e for e in meta["entry_points"] if e["name"] == "prefill"][0]


def write(path, dtype, shape, values):
    d = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype, ", ".join(map(str, shape)) + ("," if len(shape) == 1 else ""))
    d += " " * ((64 - (10 + len(d) + 1) % 64) % 64) + "\n"
    body = struct.pack("<%d%s" % (len(values), "i" if dtype == "<i4" else "f"), *values)
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(d)) + d.encode() + body)


def prefill_outputs(n):
    """Runs prefill on ids 0..n-1 (mod 500); returns {output name: path}."""
    d = os.path.join(work, "n%d" % n)
    os.makedirs(d, exist_ok=True)
    args = []
    for i, t in enumerate(prefill["inputs"]):
        path = os.path.join(d, "in%d.npy" % i)
        if t["name"] == "ids":
            write(path, "<i4", [n], [(7 * j + 3) % 500 for j in range(n)])
        else:
            # No cached rows; an appended cache has room for the n new ones.
            shape = [(n if t.get("appends_rows") else 0) if s < 0 else s for s in t["shape"]]
            count = 1
            for s in shape:
                count *= s
            write(path, "<f4" if t["dtype"] == "F32" else "<f4", shape, [0.0] * count)
        args.append("--input=@" + path)
    outs = {}
    for i, t in enumerate(prefill["outputs"]):
        outs[t["name"]] = os.path.join(d, "out%d.npy" % i)
        args.append("--output=@" + outs[t["name"]])
    subprocess.run([run, binary, "--function=prefill"] + args, check=True)
    return outs


def rows(path, index, out_path):
    """Writes row `index` of a .npy (float32) to out_path."""
    data = open(path, "rb").read()
    n = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + n].decode()
    shape = [int(x) for x in header.split("'shape': (")[1].split(")")[0].split(",") if x.strip()]
    per = 1
    for s in shape[1:]:
        per *= s
    body = data[10 + n + 4 * per * index:10 + n + 4 * per * (index + 1)]
    write(out_path, "<f4", shape[1:], list(struct.unpack("<%df" % per, body)))


long_run = prefill_outputs(tokens)
failed = False
for m in range(1, tokens // interval + 1):
    short = prefill_outputs(m * interval)
    for name, path in long_run.items():
        if not name.endswith(".kda_snapshots"):
            continue
        layer = name[: -len(".kda_snapshots")]
        got = os.path.join(work, "%s.%d.npy" % (layer, m))
        rows(path, m - 1, got)
        r = subprocess.run([sys.executable, compare, short[layer + ".kda_state"], got, "1e-6"],
                           capture_output=True, text=True)
        failed |= r.returncode != 0
        print("%s %s snapshot %d (after %d tokens) %s" % ("ok" if r.returncode == 0 else "FAIL",
                                                          layer, m - 1, m * interval, r.stdout.strip()))
sys.exit(1 if failed else 0)
