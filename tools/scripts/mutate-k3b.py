#!/usr/bin/python3
"""Runs random mutants of a .k3b through k3-run and classifies each.

Every mutant must either run to the end (exit 0) or be refused with exactly
one line on stderr, `k3-run: error: ...`, and exit 1; a signal, a timeout,
another exit status or a second line is a failure, kept as
<workdir>/failure-N.k3b and listed. Mutations, in equal shares: 1-8 random
bytes flipped anywhere, one byte flipped in the flatbuffer, one in the weight
region, a truncation at a random length.

usage: mutate-k3b.py K3B --k3-run=PATH [--count=1000] [--seed=1]
                     [--timeout=20] [--workdir=DIR] [-- k3-run args...]
       (k3-run args default to --tokens=1,2,3 --generate=2)
"""
import collections
import os
import random
import re
import struct
import subprocess
import sys
import tempfile


def main(argv):
    args, run_args = argv, ["--tokens=1,2,3", "--generate=2"]
    if "--" in argv:
        i = argv.index("--")
        args, run_args = argv[:i], argv[i + 1:]
    opts = {"count": "1000", "seed": "1", "timeout": "20", "workdir": "", "k3-run": ""}
    files = []
    for a in args:
        if a.startswith("--") and "=" in a and a[2:a.index("=")] in opts:
            opts[a[2:a.index("=")]] = a[a.index("=") + 1:]
        elif a.startswith("-"):
            sys.exit(f"mutate-k3b.py: error: unknown argument '{a}' (see the docstring)")
        else:
            files.append(a)
    if len(files) != 1 or not opts["k3-run"]:
        sys.exit("mutate-k3b.py: error: needs one .k3b and --k3-run=PATH")
    good = open(files[0], "rb").read()
    fb_off, fb_size, w_off = struct.unpack_from("<QQQ", good, 16)
    rng = random.Random(int(opts["seed"]))
    work = opts["workdir"] or tempfile.mkdtemp(prefix="k3-mutants-")
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "mutant.k3b")
    counts = {"ran": 0, "refused": 0}
    reasons = collections.Counter()
    failures = []
    for n in range(int(opts["count"])):
        data = bytearray(good)
        kind = n % 4
        if kind == 0:
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] ^= rng.randint(1, 255)
        elif kind == 1:
            data[fb_off + rng.randrange(fb_size)] ^= rng.randint(1, 255)
        elif kind == 2 and w_off < len(data):
            data[w_off + rng.randrange(len(data) - w_off)] ^= rng.randint(1, 255)
        else:
            data = data[:rng.randrange(len(data))]
        with open(path, "wb") as f:
            f.write(data)
        try:
            p = subprocess.run([opts["k3-run"], path] + run_args, capture_output=True,
                               timeout=float(opts["timeout"]))
            err = p.stderr.decode("utf-8", "replace").splitlines()
            if p.returncode == 0:
                counts["ran"] += 1
                continue
            if p.returncode == 1 and len(err) == 1 and err[0].startswith("k3-run: error: "):
                counts["refused"] += 1
                # The kind of refusal: the message without the path, names
                # and numbers.
                m = err[0][len("k3-run: error: "):].replace(path + ": ", "")
                m = re.sub(r"'[^']*'", "'…'", m)
                reasons[re.sub(r"\b(0x[0-9a-f]+|\d+)\b", "N", m)[:90]] += 1
                continue
            why = f"exit {p.returncode}, {len(err)} stderr lines: {err[:2]}"
        except subprocess.TimeoutExpired:
            why = f"no exit within {opts['timeout']} s"
        keep = os.path.join(work, f"failure-{n}.k3b")
        os.replace(path, keep)
        failures.append(f"{keep}: {why}")
    total = int(opts["count"])
    print(f"mutants: {total}, ran to the end: {counts['ran']}, refused with one line: "
          f"{counts['refused']}, failures: {len(failures)}")
    for r, c in reasons.most_common(12):
        print(f"  {c:5d} refused: {r}")
    for f in failures:
        print("  FAILURE " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
