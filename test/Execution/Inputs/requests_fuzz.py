"""Randomized multi-request runs through the cache pool equal isolated runs.

usage: requests_fuzz.py WORKDIR K3_RUN BINARY.k3b COUNT

Writes COUNT seeded requests over a dozen shared documents: random prefix
lengths (including 16n-1, 16n, 16n+1), branches that diverge inside or at
block ends, other cache salts, early stops (max_new_tokens 0..8, stop
tokens). Runs them
  isolated: --no-prefix-cache --max-batch=1 (every request from scratch),
  cached:   4 in flight through a pool small enough to evict and make
            admissions wait, 2-block pages (hits inside a page copy it),
            decode steps as two groups of calls at once,
  spec:     the same with 3-token n-gram speculation, one call a step,
and checks that every request generates exactly the isolated tokens, that
prefix hits, evictions and waits happened, and that the pool is empty once
the cache is cleared. A sample is also checked against k3-run --tokens, one
process per request. Prints a summary; exits 1 on any failure.
"""
import json
import os
import random
import re
import subprocess
import sys

work, run, binary, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rng = random.Random(17)
docs = [[rng.randrange(512) for _ in range(160)] for _ in range(12)]
reqs = []
for i in range(count):
    doc = rng.choice(docs)
    n = rng.choice([rng.randrange(1, 160), 16 * rng.randrange(1, 10) + rng.choice([-1, 0, 1])])
    tokens = doc[:n] + [rng.randrange(512) for _ in range(rng.choice([0, 0, 3, 17]))]
    r = {"id": "r%d" % i, "tokens": tokens, "max_new_tokens": rng.choice([0, 1, 2, 4, 8, 8])}
    if rng.random() < 0.1:
        r["cache_salt"] = rng.choice(["tenant-a", "tenant-b"])
    if rng.random() < 0.2:
        r["stop"] = [rng.randrange(512) for _ in range(40)]
    reqs.append(r)
path = os.path.join(work, "requests.jsonl")
with open(path, "w") as f:
    for r in reqs:
        f.write(json.dumps(r) + "\n")

common = ["--block-tokens=16", "--prefill-chunk=32"]
configs = {
    "isolated": ["--no-prefix-cache", "--max-batch=1"],
    # Decode steps as two groups of calls at once (cached, roomy) and as
    # one call (spec), whatever the machine's cores.
    "cached": ["--max-batch=4", "--page-blocks=2", "--pool-kib=250", "--decode-groups=2"],
    "spec": ["--max-batch=4", "--page-blocks=2", "--pool-kib=250", "--speculate=3",
             "--decode-groups=1"],
    "roomy": ["--max-batch=4", "--page-blocks=2", "--decode-groups=2"],
}
results, stats, failed = {}, {}, False
for name, flags in configs.items():
    p = subprocess.run([run, binary, "--requests=" + path] + common + flags,
                       capture_output=True, text=True)
    if p.returncode != 0:
        print("FAIL %s exited %d: %s" % (name, p.returncode, p.stderr.strip()))
        sys.exit(1)
    results[name] = {json.loads(l)["id"]: json.loads(l) for l in p.stdout.splitlines()}
    stats[name] = p.stderr
    m = re.search(r"pool after clearing the cache: (\d+) of (\d+) pages free", p.stderr)
    empty = bool(m) and m.group(1) == m.group(2)
    failed |= not empty
    print("%s %s: pool empty after clearing the cache" % ("ok" if empty else "FAIL", name))


def number(text, pattern):
    m = re.search(pattern, text)
    return int(m.group(1)) if m else -1


for name in ["cached", "spec", "roomy"]:
    bad = [i for i, r in results["isolated"].items() if results[name][i]["tokens"] != r["tokens"]]
    failed |= bool(bad)
    print("%s %s: %d requests, %d differ from isolated runs%s" %
          ("FAIL" if bad else "ok", name, len(reqs), len(bad), (" (first %s)" % bad[0]) if bad else ""))
    hits = sum(r["prefix_hit_tokens"] for r in results[name].values())
    ev = number(stats[name], r"(\d+) evictions")
    waits = number(stats[name], r"(\d+) requests waited")
    cow = number(stats[name], r"(\d+) pages copied on write")
    # The small pools must evict and make admissions wait; every run hits,
    # some hits end inside a 2-block page.
    ok = hits > 0 and cow > 0 and (name == "roomy" or (ev > 0 and waits > 0))
    failed |= not ok
    print("%s %s: prefix_hit_tokens %d, copied pages %d, evictions %d, waits %d" %
          ("ok" if ok else "FAIL", name, hits, cow, ev, waits))
acc = re.search(r"speculation: (\d+) drafted, (\d+) accepted", stats["spec"])
ok = bool(acc) and int(acc.group(2)) > 0
failed |= not ok
print("%s spec: %s" % ("ok" if ok else "FAIL", acc.group(0) if acc else "no speculation line"))
isolated_hits = sum(r["prefix_hit_tokens"] for r in results["isolated"].values())
failed |= isolated_hits != 0
print("%s isolated: prefix_hit_tokens %d" % ("ok" if isolated_hits == 0 else "FAIL", isolated_hits))

# A sample against separate k3-run processes (no stop list, some tokens).
sample = [r for r in reqs if "stop" not in r and r["max_new_tokens"] > 0][:20]
mismatch = 0
for r in sample:
    p = subprocess.run([run, binary, "--tokens=" + ",".join(map(str, r["tokens"])),
                        "--generate=%d" % r["max_new_tokens"]], capture_output=True, text=True)
    got = [int(t) for t in p.stdout.strip().split(",")]
    mismatch += got != results["cached"][r["id"]]["tokens"]
failed |= mismatch > 0
print("%s %d sampled requests equal separate k3-run processes (%d differ)" %
      ("ok" if mismatch == 0 else "FAIL", len(sample), mismatch))
sys.exit(1 if failed else 0)
