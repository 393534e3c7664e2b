"""Prints `NAME LAUNCHES` for each func.func of a gpu-phase module whose name
starts with PREFIX (the gpu.launch_func ops in its body), then `step N`:
the launches of one call of the function named PREFIX itself, its own plus
those of every call it makes to the others (the layer functions).

usage: launches_per_function.py MODULE.mlir PREFIX
"""
import re
import sys

path, prefix = sys.argv[1:3]
counts, calls, current = {}, {}, None
for line in open(path):
    m = re.match(r"\s*func\.func (?:private )?@([\w.]+)", line)
    if m:
        current = m.group(1) if m.group(1).startswith(prefix) else None
        if current:
            counts[current], calls[current] = 0, []
    elif current:
        if "gpu.launch_func" in line:
            counts[current] += 1
        calls[current] += re.findall(r"call @([\w.]+)", line)
for name in sorted(counts):
    print(name, counts[name])
if prefix in counts:
    print("step", counts[prefix] + sum(counts.get(c, 0) for c in calls[prefix]))
