#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-inlined.py - heist_spawn and heist_sync are inline in a user's build.

    check-inlined.py SOURCE INCLUDE_DIR... -- COMPILER [ARGS...]

Compiles SOURCE (tests/inline-consumer.c) as a user would, with plain flags (-std=c11
-O1, -O2, -O3, -Os; nothing of the project's), and fails if the object has a function
of the fast paths' own (heist__spawn_inline, heist__sync_inline, heist__self, ...): one that
a call reaches, where the fast path was to be inline. It must still call the library's
heist_spawn and heist_sync, the fallbacks of the fast paths, or the source did not use
them."""
import os
import subprocess
import sys
import tempfile

FAST = ("heist__spawn_inline", "heist__sync_inline", "heist__pop_inline", "heist__self",
        "heist__here", "heist__count",
        # inline-consumer.c's typed task (HEIST_TASK_1)
        "fib_child_spawn", "fib_child_sync")
FALLBACKS = ("heist_spawn", "heist_sync")


def symbols(obj):
    out = subprocess.run(["nm", obj], check=True, capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()}


def main(argv):
    sep = argv.index("--")
    source, includes, compiler = argv[1], argv[2:sep], argv[sep + 1:]
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for opt in ("-O1", "-O2", "-O3", "-Os"):
            obj = os.path.join(tmp, "consumer" + opt + ".o")
            cmd = compiler + ["-std=c11", opt, "-c", source, "-o", obj]
            cmd += [arg for inc in includes for arg in ("-I", inc)]
            subprocess.run(cmd, check=True)
            syms = symbols(obj)
            outlined = [s for s in FAST if s in syms]
            missing = [s for s in FALLBACKS if s not in syms]
            if outlined:
                print(f"{opt}: out of line: {' '.join(outlined)}")
                failed = True
            if missing:
                print(f"{opt}: no call to {' '.join(missing)}: the source used no fast path")
                failed = True
            if not outlined and not missing:
                print(f"{opt}: inline")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
