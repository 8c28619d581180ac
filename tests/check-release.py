#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-release.py - every place that states heist's version states the same one.

Usage: check-release.py SOURCE_ROOT

The version lives in meson.build's project() alone; CMakeLists.txt reads it from
there. What cannot read it must repeat it: the newest entry of CHANGELOG.md (dated
"(YYYY-MM-DD)", or "(unreleased)" while it is being written) and debian/changelog's
newest entry (as VERSION-N, a Debian revision, with source format 3.0 (quilt)). Fails
naming each one that differs."""
import os
import re
import sys


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read()


def main():
    root = sys.argv[1]
    problems = []
    m = re.search(r"^  version: '(\d+\.\d+\.\d+)',$", read(root, "meson.build"), re.M)
    if not m:
        print("meson.build: no MAJOR.MINOR.PATCH version in project()")
        return 1
    version = m.group(1)
    m = re.search(r"^## (\S+) \((\d{4}-\d{2}-\d{2}|unreleased)\)$",
                  read(root, "CHANGELOG.md"), re.M)
    if not m:
        problems.append("CHANGELOG.md: no '## VERSION (YYYY-MM-DD)' entry")
    elif m.group(1) != version:
        problems.append(f"CHANGELOG.md's newest entry is {m.group(1)}, not {version}")
    # Debian's version is upstream's with a Debian revision: 0.2.0-1 (3.0 (quilt)).
    deb = read(root, "debian/changelog").splitlines()[0]
    m = re.match(r"heist \(([^)-]+)-([0-9]+)\) ", deb)
    if not m or m.group(1) != version:
        problems.append(f"debian/changelog's newest entry is '{deb}', not heist ({version}-N)")
    fmt = read(root, "debian/source/format").strip()
    if fmt != "3.0 (quilt)":
        problems.append(f"debian/source/format is '{fmt}', not '3.0 (quilt)'")
    if "'([0-9]+)" not in read(root, "CMakeLists.txt") or \
            "meson.build" not in read(root, "CMakeLists.txt"):
        problems.append("CMakeLists.txt does not read its version from meson.build")
    for p in problems:
        print(p)
    if not problems:
        print(f"version {version} everywhere")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
