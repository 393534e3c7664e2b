"""Prefix hits at many block boundaries give the logits of a full recompute.

usage: requests_hits.py WORKDIR K3_RUN BINARY.k3b COMPARE_NPY

One 100-token document is run first (prefill chunks of one 16-token block,
so a snapshot lands on every boundary); then, one at a time, prompts that
share its first n tokens (n = 1, 15, 16, 17, 31, ..., 97, 100) and continue
differently. Each must hit at the deepest whole block it shares (at most
len - 1 tokens), and its logits (every generated step) must match the run
without the prefix cache to 1e-6 relative RMSE. Prints one line per
request; exits 1 on any failure.
"""
import json
import os
import subprocess
import sys

work, run, binary, compare = sys.argv[1:5]
B = 16
doc = [(i * 37 + 11) % 512 for i in range(100)]
reqs = [{"id": "doc", "tokens": doc, "max_new_tokens": 4}]
for n in [1, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65, 80, 95, 96, 97, 100]:
    tail = [(n * 7 + j * 13) % 512 for j in range(5)] if n < 100 else []
    reqs.append({"id": "n%d" % n, "tokens": doc[:n] + tail, "max_new_tokens": 6})
path = os.path.join(work, "hits.jsonl")
with open(path, "w") as f:
    for r in reqs:
        f.write(json.dumps(r) + "\n")
out = {}
for name, flags in {"cached": [], "uncached": ["--no-prefix-cache"]}.items():
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    p = subprocess.run([run, binary, "--requests=" + path, "--block-tokens=%d" % B,
                        "--prefill-chunk=%d" % B, "--max-batch=1", "--dump-logits-dir=" + d] + flags,
                       capture_output=True, text=True, check=True)
    out[name] = {json.loads(l)["id"]: json.loads(l) for l in p.stdout.splitlines()}
failed = False
for r in reqs:
    i = r["id"]
    shared = len(r["tokens"]) if i == "n100" else (int(i[1:]) if i != "doc" else 0)
    want = min(shared // B, (len(r["tokens"]) - 1) // B) * B
    got = out["cached"][i]["prefix_hit_tokens"]
    c = subprocess.run([sys.executable, compare, os.path.join(work, "uncached", i + ".npy"),
                        os.path.join(work, "cached", i + ".npy"), "1e-6"], capture_output=True, text=True)
    line = c.stdout.strip()
    rel = float(line.split("relative_rmse=")[1]) if "relative_rmse=" in line else float("inf")
    ok = (got == want and c.returncode == 0 and
          out["cached"][i]["tokens"] == out["uncached"][i]["tokens"])
    failed |= not ok
    print("%s %s prefix_hit_tokens=%d (want %d) logits relative_rmse=%.3g" %
          ("ok" if ok else "FAIL", i, got, want, rel))
sys.exit(1 if failed else 0)
