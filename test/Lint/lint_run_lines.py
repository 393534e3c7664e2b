"""Flags dead lit lines: a RUN or check line whose keyword lacks its colon.

A `// RUN k3-opt ...` or `CHECK-DAG k3.kda` is silently ignored by lit and
FileCheck (STYLE §6). Check prefixes are CHECK plus those a file declares with
--check-prefix(es); lines may carry a `//` or `#` comment marker or none
(.test files). An optional second argument names a directory to skip.
Prints every offending line and exits 1 if there is one.
"""
import os
import re
import sys

SUFFIXES = ("CHECK", "NEXT", "SAME", "NOT", "DAG", "LABEL", "EMPTY", "COUNT")


def prefixes(text):
    found = {"CHECK"}
    for m in re.finditer(r"--check-prefix(?:es)?[= ]([A-Za-z0-9_,-]+)", text):
        found.update(p for p in m.group(1).split(",") if p)
    return found


def dead_lines(path):
    text = open(path, encoding="utf-8").read()
    keys = "|".join(sorted(re.escape(p) for p in prefixes(text)))
    # keyword, optional -SUFFIX, then whitespace or end of line: no colon.
    pattern = re.compile(
        r"^\s*(?://|#)?\s*(RUN|(?:%s)(?:-(?:%s)(?:-\d+)?)?)(\s|$)"
        % (keys, "|".join(SUFFIXES)))
    for number, line in enumerate(text.splitlines(), 1):
        if pattern.match(line):
            yield number, line


def main(root, exclude=None):
    bad = 0
    for dirpath, dirs, files in os.walk(root):
        if exclude:
            dirs[:] = [d for d in dirs
                       if os.path.realpath(os.path.join(dirpath, d)) != os.path.realpath(exclude)]
        for name in sorted(files):
            if name.endswith((".mlir", ".test")):
                path = os.path.join(dirpath, name)
                for number, line in dead_lines(path):
                    print("%s:%d: dead lit line: %s" % (path, number, line.strip()))
                    bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    # usage: lint_run_lines.py ROOT [EXCLUDED_DIR]
    sys.exit(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
