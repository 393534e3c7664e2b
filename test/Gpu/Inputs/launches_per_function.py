"""Prints `NAME LAUNCHES` for each func.func of a gpu-phase module whose name
starts with PREFIX: the gpu.launch_func ops in its body.

usage: launches_per_function.py MODULE.mlir PREFIX
"""
import re
import sys

path, prefix = sys.argv[1:3]
counts, current = {}, None
for line in open(path):
    m = re.match(r"\s*func\.func (?:private )?@([\w.]+)", line)
    if m:
        current = m.group(1) if m.group(1).startswith(prefix) else None
        if current:
            counts[current] = 0
    elif current and "gpu.launch_func" in line:
        counts[current] += 1
for name in sorted(counts):
    print(name, counts[name])
