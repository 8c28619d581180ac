#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-strict.py - the public headers compile cleanly under strict consumer flags.

    check-strict.py SOURCE INCLUDE_DIR... -- COMPILER [ARGS...]

Compiles SOURCE (tests/strict-consumer.c or .cpp) as a strict user would: with -Werror
and the warnings such projects turn on, at -O0 and -O2 (some warnings need the
optimiser), through -I (not -isystem, which would hide the headers' warnings). A .c
file gets -std=c11, a .cpp file -std=c++17 and the C++-only warnings (-Wold-style-cast;
-Wuseless-cast with gcc, which alone has it). A .cpp file is also compiled with
-fno-exceptions, which must fail first with heist.hpp's #error that says why, and
with no other error inside the header (the user's own uses of heist:: follow). Fails with the compiler's messages."""
import os
import subprocess
import sys
import tempfile

COMMON = ["-Wall", "-Wextra", "-Wpedantic", "-Wconversion", "-Wsign-conversion",
          "-Wshadow", "-Wcast-qual", "-Wundef", "-Wdouble-promotion", "-Werror"]
C_ONLY = ["-std=c11", "-Wstrict-prototypes", "-Wmissing-prototypes"]
CXX_ONLY = ["-std=c++17", "-Wold-style-cast", "-Wzero-as-null-pointer-constant",
            "-Wnon-virtual-dtor", "-Woverloaded-virtual", "-Wextra-semi"]
GCC_CXX_ONLY = ["-Wuseless-cast"]


def is_gcc(compiler):
    out = subprocess.run(compiler + ["--version"], check=True, capture_output=True,
                         text=True).stdout
    return "clang" not in out.lower()


def main(argv):
    sep = argv.index("--")
    source, includes, compiler = argv[1], argv[2:sep], argv[sep + 1:]
    cxx = source.endswith(".cpp")
    flags = COMMON + (CXX_ONLY if cxx else C_ONLY)
    if cxx and is_gcc(compiler):
        flags += GCC_CXX_ONLY
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for opt in ("-O0", "-O2"):
            obj = os.path.join(tmp, "strict" + opt + ".o")
            cmd = compiler + flags + [opt, "-c", source, "-o", obj]
            cmd += [arg for inc in includes for arg in ("-I", inc)]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                print(f"{opt}: failed: {' '.join(cmd)}\n{r.stderr}")
                failed = True
            else:
                print(f"{opt}: clean")
        if cxx:
            # -fno-exceptions: one clear error from heist.hpp, not one per throw.
            cmd = compiler + ["-std=c++17", "-fno-exceptions", "-c", source, "-o",
                              os.path.join(tmp, "noexcept.o")]
            cmd += [arg for inc in includes for arg in ("-I", inc)]
            r = subprocess.run(cmd, capture_output=True, text=True)
            first = next((l for l in r.stderr.splitlines() if "error" in l), "")
            inside = [l for l in r.stderr.splitlines()
                      if "heist.hpp:" in l and "error" in l]
            if r.returncode and "needs C++ exceptions" in first and len(inside) == 1:
                print("-fno-exceptions: heist.hpp's one #error first")
            else:
                print(f"-fno-exceptions: want heist.hpp's #error first and alone in the "
                      f"header (exit {r.returncode}):\n{r.stderr}")
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
