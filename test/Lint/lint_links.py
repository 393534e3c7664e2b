"""Every relative link in the repository's Markdown pages resolves.

Usage: lint_links.py ROOT. Checks `[text](target)` links that are not URLs
or pure anchors: the target (without its #anchor) must exist relative to the
page. Skips build trees and node_modules. One line per broken link; exit 1
if there is any.
"""
import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def main():
    root = sys.argv[1]
    bad = 0
    pages = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames
                       if d not in ("node_modules", ".git") and not d.startswith("build")]
        for name in filenames:
            if not name.endswith(".md"):
                continue
            pages += 1
            page = os.path.join(dirpath, name)
            with open(page, encoding="utf-8") as f:
                text = f.read()
            # Code blocks and spans hold examples, not links.
            text = re.sub(r"```.*?```", "", text, flags=re.S)
            text = re.sub(r"`[^`\n]*`", "", text)
            for m in LINK.finditer(text):
                target = m.group(1)
                if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                    continue
                path = target.split("#", 1)[0]
                if not os.path.exists(os.path.join(dirpath, path)):
                    line = text.count("\n", 0, m.start()) + 1
                    print(f"{os.path.relpath(page, root)}: broken link '{target}'")
                    bad += 1
    print(f"{pages} pages, {bad} broken links")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
