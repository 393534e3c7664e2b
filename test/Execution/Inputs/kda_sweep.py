"""Chunked KDA against the fp64 reference over the KDA.md §9 hard cases.

usage: kda_sweep.py WORKDIR K3_REFERENCE K3_RUN COMPARE_NPY BINARY.k3b [BINARY.k3b ...]

For every gate case (lower bound varied and saturated at -5, softplus with
ordinary and large A_log) and every T in {1, 15, 16, 17, 63, 64, 65, 200,
1000}, writes the seeded case (non-zero initial state) with k3-reference,
runs each binary's kda_lb or kda_softplus through k3-run and compares output
and final state (relative RMSE < 1e-5). The first binary also runs
kda_boundaries (chunks of 16) against the reference boundary states, and
every unsegmented binary kda_snapshots (every 16 tokens; T >= 16). Prints
one line per comparison and the worst; exits 1 on any failure.
"""
import os
import subprocess
import sys

work, reference, run, compare = sys.argv[1:5]
binaries = sys.argv[5:]
inputs = ["q", "k", "v", "graw", "alog", "dt", "braw", "s0"]
worst, failed = 0.0, False


def check(want, got, label):
    global worst, failed
    r = subprocess.run([sys.executable, compare, want, got, "1e-5"], capture_output=True, text=True)
    line = r.stdout.strip()
    rel = float(line.split("relative_rmse=")[1]) if "relative_rmse=" in line else float("inf")
    worst = max(worst, rel)
    ok = r.returncode == 0
    failed |= not ok
    print("%s %s %s" % ("ok" if ok else "FAIL", label, line))


for gate in ["lb", "lb-saturated", "softplus", "softplus-large"]:
    fn = "kda_softplus" if gate.startswith("softplus") else "kda_lb"
    for t in [1, 15, 16, 17, 63, 64, 65, 200, 1000]:
        case = os.path.join(work, "%s-%d" % (gate, t))
        os.makedirs(case, exist_ok=True)
        subprocess.run([reference, "--kda-case=" + gate, "--tokens-count=%d" % t, "--seed=%d" % t,
                        "--write-dir=" + case, "--boundary-chunk=16"], check=True)
        args = ["--input=@%s/%s.npy" % (case, n) for n in inputs]
        for i, binary in enumerate(binaries):
            name = os.path.basename(binary)
            o, s = os.path.join(case, "o.npy"), os.path.join(case, "s.npy")
            subprocess.run([run, binary, "--function=" + fn] + args +
                           ["--output=@" + o, "--output=@" + s], check=True)
            check(os.path.join(case, "want_o.npy"), o, "%s %s T=%d out" % (name, gate, t))
            check(os.path.join(case, "want_s.npy"), s, "%s %s T=%d state" % (name, gate, t))
            if i == 0 and gate.startswith("lb"):
                b = os.path.join(case, "b.npy")
                subprocess.run([run, binary, "--function=kda_boundaries"] + args + ["--output=@" + b],
                               check=True)
                check(os.path.join(case, "want_b.npy"), b, "%s %s T=%d boundaries" % (name, gate, t))
            if gate == "lb" and t >= 16 and "seg" not in name:
                snap = os.path.join(case, "snap.npy")
                subprocess.run([run, binary, "--function=kda_snapshots"] + args +
                               ["--output=@" + snap], check=True)
                check(os.path.join(case, "want_snap.npy"), snap, "%s %s T=%d snapshots" % (name, gate, t))
print("worst relative_rmse=%.3g" % worst)
sys.exit(1 if failed else 0)
