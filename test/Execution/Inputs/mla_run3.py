"""Runs an op-level MLA function from three binaries on one input set and
compares the second and third against the first.

usage: mla_run3.py DIR K3_RUN REFERENCE.k3b A.k3b B.k3b COMPARE_NPY
Exits 1 if an output differs by relative RMSE >= 1e-5 or a cache differs.
"""
import os
import subprocess
import sys

d, run, ref, a, b, compare = sys.argv[1:7]
names = ["q", "c", "kr", "kvb", "cache", "g"]


def outputs(binary):
    base = os.path.join(d, os.path.basename(binary))
    subprocess.run([run, binary, "--function=mla"] + ["--input=@%s/%s.npy" % (d, n) for n in names] +
                   ["--output=@%s.o.npy" % base, "--output=@%s.c.npy" % base], check=True)
    return base + ".o.npy", base + ".c.npy"


want_o, want_c = outputs(ref)
failed = False
for binary in (a, b):
    o, c = outputs(binary)
    r = subprocess.run([sys.executable, compare, want_o, o, "1e-5"], capture_output=True, text=True)
    failed |= r.returncode != 0
    print("%s out %s" % (os.path.basename(binary), r.stdout.strip().split(" ")[-1]))
    same = open(want_c, "rb").read() == open(c, "rb").read()
    failed |= not same
    print("%s cache %s" % (os.path.basename(binary), "identical" if same else "DIFFERENT"))
sys.exit(1 if failed else 0)
