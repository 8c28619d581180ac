#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-spdx.py - every source, header and script carries heist's licence tag.

Usage: check-spdx.py SOURCE_ROOT

Reads the files git tracks under SOURCE_ROOT (or, in a tree without .git such as
the meson dist tarball, or without git installed, every file outside build
directories) and fails, naming
them, when one lacks "SPDX-License-Identifier: MIT" in its first five lines, or
when LICENSE is missing or does not name the MIT licence. The files that cannot
hold a comment, or are the licence text themselves, are listed in EXEMPT.
"""
import fnmatch
import os
import shutil
import subprocess
import sys

TAG = "SPDX-License-Identifier: MIT"
EXEMPT = [
    "*.md",                  # documentation, not source (LICENSE covers it)
    "docs/img/*.png",        # the documentation's pictures
    "LICENSE",               # the licence itself
    ".gitignore",
    "debian/copyright",      # the machine-readable licence statement itself
    "debian/changelog",      # its format has no comments
    "debian/source/format",  # one line, no comments
]


def tracked(root):
    # .git is a directory in a clone and a file in a worktree (git worktree add).
    if os.path.exists(os.path.join(root, ".git")) and shutil.which("git"):
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
        return [f for f in out.decode().split("\0") if f]
    found = []
    for top, dirs, names in os.walk(root):
        # A build directory (meson-private inside) or a parent's subprojects are not ours.
        dirs[:] = [d for d in dirs if d != "subprojects" and
                   not os.path.isdir(os.path.join(top, d, "meson-private"))]
        found += [os.path.relpath(os.path.join(top, n), root) for n in names]
    return found


def main():
    root = sys.argv[1]
    files = tracked(root)
    missing = []
    for f in sorted(files):
        if any(fnmatch.fnmatch(f, p) for p in EXEMPT):
            continue
        path = os.path.join(root, f)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        with open(path, "rb") as fh:
            head = b"".join(fh.readline() for _ in range(5))
        if TAG.encode() not in head:
            missing.append(f)
    with open(os.path.join(root, "LICENSE")) as fh:
        licence = fh.read()
    if "MIT License" not in licence or "Copyright (c)" not in licence:
        print("LICENSE does not hold the MIT licence with a copyright line")
        return 1
    if missing:
        print("no '%s' in the first five lines of:" % TAG)
        for f in missing:
            print("  " + f)
        return 1
    print("%d files checked, all tagged" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
