"""The LatentMoE (router + k3.moe) against the fp64 reference.

usage: moe_sweep.py WORKDIR K3_REFERENCE K3_RUN COMPARE_NPY BINARY.k3b [BINARY.k3b ...]

For every routing case (random; exact ties, so experts 0 and 1 take every
token and 2..7 none; every token to expert 3; top-k = all 8 experts) and
T in {1, 15, 63, 200}, writes the seeded case with k3-reference, runs each
binary's MXFP4 and f32 functions (the same expert values) through k3-run and
compares with the reference (relative RMSE < 1e-5); the MXFP8-input
function against the reference that rounds the same way (< 1e-3: an f32 value
within a few ulp of an E4M3 midpoint may round the other way, one E4M3 step;
one such element is 6e-5 of the output at T = 200 and, in one token's row,
about 8.5e-4 at T = 1; a wrong rounding rule is over 1e-2 away). Prints one
line per comparison and the worst exact-input one; exits 1 on any failure.
"""
import os
import subprocess
import sys

work, reference, run, compare = sys.argv[1:5]
binaries = sys.argv[5:]
mx = ["x", "wr", "bias", "wd", "wu", "norm", "c1", "c3", "c2", "s1", "s3", "s2", "sg", "su", "sd"]
f32 = ["x", "wr", "bias", "wd", "wu", "norm", "f1", "f3", "f2", "sg", "su", "sd"]
worst, failed = 0.0, False


def check(want, got, label, bound, exact):
    global worst, failed
    r = subprocess.run([sys.executable, compare, want, got, bound], capture_output=True, text=True)
    line = r.stdout.strip()
    rel = float(line.split("relative_rmse=")[1]) if "relative_rmse=" in line else float("inf")
    if exact:
        worst = max(worst, rel)
    ok = r.returncode == 0
    failed |= not ok
    print("%s %s %s" % ("ok" if ok else "FAIL", label, line))


for kind in ["random", "ties", "one-expert", "all-experts"]:
    suffix = "_all" if kind == "all-experts" else ""
    for t in [1, 15, 63, 200]:
        case = os.path.join(work, "%s-%d" % (kind, t))
        os.makedirs(case, exist_ok=True)
        subprocess.run([reference, "--moe-case=" + kind, "--tokens-count=%d" % t,
                        "--seed=%d" % (t + 7), "--write-dir=" + case], check=True)
        runs = [("moe_mx" + suffix, mx, "want_y", "1e-5", True),
                ("moe_f32" + suffix, f32, "want_y", "1e-5", True)]
        if kind == "random":
            runs.append(("moe_mx8", mx, "want_y8", "1e-3", False))
        for binary in binaries:
            name = os.path.basename(binary)
            for fn, inputs, want, bound, exact in runs:
                y = os.path.join(case, "%s-%s.npy" % (name, fn))
                subprocess.run([run, binary, "--function=" + fn] +
                               ["--input=@%s/%s.npy" % (case, n) for n in inputs] +
                               ["--output=@" + y], check=True)
                check(os.path.join(case, want + ".npy"), y, "%s %s %s T=%d" % (name, fn, kind, t), bound, exact)
print("worst relative_rmse=%.3g" % worst)
sys.exit(1 if failed else 0)
