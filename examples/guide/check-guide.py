#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-guide.py - docs/guide.md shows the examples exactly as they are in the tree.

Every code block in the guide that follows a line `<!-- file: PATH -->` must be the
whole of PATH (relative to the source root), character for character: the examples
are built and run as tests, so a guide that matches them is a guide that compiles.
With --write, the blocks are rewritten from the files instead (after editing an
example). Usage: check-guide.py SOURCE_ROOT [--write]
"""
import os
import re
import sys

BLOCK = re.compile(r"<!-- file: (?P<path>[^ ]+) -->\n```(?P<lang>[a-z+]*)\n(?P<code>.*?)```\n",
                   re.S)
LANG = {".c": "c", ".cpp": "cpp", ".txt": "cmake"}


def main():
    root = sys.argv[1]
    write = "--write" in sys.argv[2:]
    guide_path = os.path.join(root, "docs", "guide.md")
    with open(guide_path, encoding="utf-8") as f:
        guide = f.read()
    problems = []
    seen = []

    def replace(m):
        path = m.group("path")
        seen.append(path)
        with open(os.path.join(root, path), encoding="utf-8") as f:
            code = f.read()
        if m.group("code") != code:
            problems.append(path)
        lang = LANG.get(os.path.splitext(path)[1], "")
        return f"<!-- file: {path} -->\n```{lang}\n{code}```\n"

    new = BLOCK.sub(replace, guide)
    if write:
        with open(guide_path, "w", encoding="utf-8") as f:
            f.write(new)
        print(f"wrote {len(seen)} blocks")
        return 0
    if len(seen) < 5:
        print(f"only {len(seen)} example blocks found in {guide_path}")
        return 1
    for path in problems:
        print(f"docs/guide.md: the block for {path} differs from the file "
              f"(check-guide.py --write updates it)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
