#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-docs-programs.py - every complete program in README.md and docs/*.md compiles
as a reader would compile it: C with -std=c11 -Wall -Wextra -Wpedantic -Werror, C++
with -std=c++17 and the same warnings, no defines of the build's (no _GNU_SOURCE), only
heist's include directories. A complete program is a ```c or ```cpp block that defines
main. One that includes liburcu is compiled with liburcu-bp's flags from pkg-config,
and skipped (said so) where it is not installed.

    check-docs-programs.py SOURCE_ROOT BUILD_INCLUDE -- CC [ARGS...] [--cxx CXX [ARGS...]]
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

BLOCK = re.compile(r"^```(?P<lang>c|cpp)\n(?P<code>.*?)^```$", re.S | re.M)
MAIN = re.compile(r"^int\s*\n?\s*main\s*\(", re.M)
WARN = ["-Wall", "-Wextra", "-Wpedantic", "-Werror"]


def pkg_cflags(name):
    if not shutil.which("pkg-config"):
        return None
    p = subprocess.run(["pkg-config", "--cflags", name], capture_output=True, text=True)
    return p.stdout.split() if p.returncode == 0 else None


def main():
    root, build_inc = sys.argv[1], sys.argv[2]
    rest = sys.argv[sys.argv.index("--") + 1:]
    cc, cxx = rest, None
    if "--cxx" in rest:
        cc, cxx = rest[:rest.index("--cxx")], rest[rest.index("--cxx") + 1:]
    inc = ["-I", os.path.join(root, "include"), "-I", build_inc]
    docs = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs",
                                                                              "*.md")))
    checked, skipped, failed = 0, 0, []
    with tempfile.TemporaryDirectory() as d:
        for doc in docs:
            text = open(doc, encoding="utf-8").read()
            for m in BLOCK.finditer(text):
                code, lang = m.group("code"), m.group("lang")
                if not MAIN.search(code):
                    continue	# a fragment, not a program
                line = text.count("\n", 0, m.start()) + 1
                where = f"{os.path.relpath(doc, root)}:{line}"
                extra = []
                if "urcu" in code:
                    extra = pkg_cflags("liburcu-bp")
                    if extra is None:
                        print(f"{where}: skipped (liburcu-bp is not installed)")
                        skipped += 1
                        continue
                if lang == "cpp":
                    if not cxx:
                        print(f"{where}: skipped (no C++ compiler)")
                        skipped += 1
                        continue
                    cmd = cxx + ["-std=c++17"]
                else:
                    cmd = cc + ["-std=c11"]
                src = os.path.join(d, f"prog.{lang}")
                with open(src, "w") as f:
                    f.write(code)
                p = subprocess.run(cmd + WARN + inc + extra + ["-c", src, "-o",
                                                               os.path.join(d, "prog.o")],
                                   capture_output=True, text=True)
                checked += 1
                if p.returncode:
                    failed.append(where)
                    print(f"{where}: does not compile as {' '.join(cmd[:1] + cmd[-1:])} "
                          f"{' '.join(WARN)}:\n{p.stderr}")
    print(f"{checked} programs compiled, {skipped} skipped, {len(failed)} failed")
    if checked < 5:
        print("fewer than 5 programs found: the docs' blocks are not what this expects")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
