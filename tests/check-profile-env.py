#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-profile-env.py - HEIST_PROFILE and HEIST_TRACE on programs that never call the
profiler (src/report.c): each pool writes one complete report when it is destroyed, or
at exit; %p is the process id, pools after the first get .2, .3, ... before the
extension; a forked child writes only its own pools, numbered from 1, and without %p
its names carry its pid (f-PID.json); the report has heist-latency's
keys and plot-latency reads it.

    check-profile-env.py PROFILE-PROGRAM PLOT-LATENCY [--static PROGRAM] [--no-fork]

--static names the same program linked statically: run as root, the check makes a
set-user-ID copy of it and runs it as nobody, which must write no file.

--no-fork (the ThreadSanitizer build) leaves out the runs that fork: TSan cannot
follow a threaded process into its child (it refuses new threads there, and with
die_after_fork=0 mistakes them for the parent's, whose stacks glibc reuses).
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")


def run(argv, env_extra, what):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEIST_")}
    env.update(env_extra)
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"{what}: exit {p.returncode}: {p.stderr.strip()}")
    check("heist:" not in p.stderr, f"{what}: said {p.stderr.strip()!r}")
    return p


KEYS = ["tool", "version", "workload", "program", "pid", "pool", "written_at",
        "parameters", "clock", "exact", "samples_kept", "samples_dropped",
        "sampled_every", "dispatch", "end_to_end", "steal", "paths", "stats", "threads",
        "percentiles", "path_percentiles"]
PATHS = ["inline", "own", "stolen", "injector", "helping", "guest"]


def check_report(path, what, pool=None, pid=None, when="destroy", every=4):
    """One report: parses, complete, and consistent with itself."""
    try:
        with open(path) as f:
            r = json.load(f)
    except (OSError, ValueError) as e:
        check(False, f"{what}: {path}: {e}")
        return None
    for k in KEYS:
        check(k in r, f"{what}: {path}: no {k!r}")
    if any(k not in r for k in KEYS):
        return None
    check(r["workload"] == "program", f"{what}: workload {r['workload']!r}")
    check(r["written_at"] == when, f"{what}: written at {r['written_at']!r}, not {when}")
    check(r["sampled_every"] == every, f"{what}: sampled every {r['sampled_every']}")
    if pool is not None:
        check(r["pool"] == pool, f"{what}: {path}: pool {r['pool']}, not {pool}")
    if pid is not None:
        check(r["pid"] == pid, f"{what}: {path}: pid {r['pid']}, not {pid}")
    n = r["dispatch"]["count"]
    check(n > 0, f"{what}: no task recorded")
    check(r["end_to_end"]["count"] == n, f"{what}: end_to_end count differs")
    check(sum(r["paths"][k]["count"] for k in PATHS) == n,
          f"{what}: the paths' counts do not add up to {n}")
    check(r["stats"]["executed"] >= n, f"{what}: fewer tasks executed than recorded")
    check(len(r["threads"]) >= r["parameters"]["workers"] + 1,
          f"{what}: threads lack a worker or the guest")
    pts = r["percentiles"]
    check(len(pts) > 2 and pts[-1]["p"] == 1.0, f"{what}: percentiles incomplete")
    check(all(a["dispatch_ns"] <= b["dispatch_ns"] for a, b in zip(pts, pts[1:])),
          f"{what}: percentiles not monotonic")
    check(r["path_percentiles"], f"{what}: no path_percentiles")
    return r


def files(d):
    return sorted(os.path.basename(f) for f in glob.glob(os.path.join(d, "*")))


def check_fork(program):
    # Fork: the parent's first pool, the child's (its own first), then the parent's
    # second, each in its own file; the child never writes the parent's pool.
    with tempfile.TemporaryDirectory() as d:
        run([program, "fork"], {"HEIST_PROFILE": f"{d}/f-%p.json"}, "fork")
        got = files(d)
        check(len(got) == 3, f"fork: files {got}, want one per pool")
        pools = []
        for name in got:
            r = check_report(f"{d}/{name}", f"fork {name}")
            if r:
                pools.append((r["pid"], r["pool"], name))
        pids = sorted({pid for pid, _, _ in pools})
        check(len(pids) == 2, f"fork: pools {pools}, want two processes")
        if len(pools) == 3 and len(pids) == 2:
            parent = max(pids, key=lambda p: sum(1 for q, _, _ in pools if q == p))
            child = min(pids, key=lambda p: sum(1 for q, _, _ in pools if q == p))
            want = sorted([(parent, 1, f"f-{parent}.json"), (child, 1, f"f-{child}.json"),
                           (parent, 2, f"f-{parent}.2.json")])
            check(sorted(pools) == want, f"fork: pools {sorted(pools)}, want {want}")

    # The same without %p: the child's names carry its pid, so that the parent's
    # second pool does not write over the child's first (both were f.2.json).
    with tempfile.TemporaryDirectory() as d:
        run([program, "fork"], {"HEIST_PROFILE": f"{d}/f.json"}, "fork without %p")
        got = files(d)
        check(len(got) == 3, f"fork without %p: files {got}, want one per pool")
        reports = {name: check_report(f"{d}/{name}", f"fork without %p: {name}")
                   for name in got}
        parent = [reports.get(n) for n in ("f.json", "f.2.json")]
        check(all(parent), f"fork without %p: files {got}, want f.json and f.2.json")
        if all(parent):
            check([r["pool"] for r in parent] == [1, 2] and
                  parent[0]["pid"] == parent[1]["pid"],
                  f"fork without %p: the parent's files {[(r['pid'], r['pool']) for r in parent]}")
            for name, r in reports.items():
                if r and name not in ("f.json", "f.2.json"):
                    check(r["pid"] != parent[0]["pid"] and
                          name == f"f-{r['pid']}.json" and r["pool"] == 1,
                          f"fork without %p: the child's pool {r['pool']} "
                          f"(pid {r['pid']}) in {name}")


def check_setuid(static_program):
    """A set-user-ID program writes no file its caller's environment names."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        print("set-user-ID run skipped: not root")
        return
    try:
        import pwd
        pwd.getpwnam("nobody")
    except (ImportError, KeyError):
        print("set-user-ID run skipped: no user nobody")
        return
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o777)
        copy = f"{d}/suid-program"
        with open(static_program, "rb") as src, open(copy, "wb") as dst:
            dst.write(src.read())
        os.chown(copy, 0, 0)
        os.chmod(copy, 0o4755)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HEIST_")}
        env["HEIST_PROFILE"] = f"{d}/r.json"
        p = subprocess.run([copy, "pools", "1"], env=env, capture_output=True, text=True,
                           timeout=120, user="nobody")
        if p.returncode and not os.path.exists(f"{d}/r.json") and \
                "ignored" not in p.stderr:
            print(f"set-user-ID run skipped: it did not start ({p.stderr.strip()})")
            return
        check(p.returncode == 0, f"set-user-ID: exit {p.returncode}: {p.stderr.strip()}")
        check(not os.path.exists(f"{d}/r.json"), "set-user-ID: wrote HEIST_PROFILE's file")
        check("set-user-ID" in p.stderr, f"set-user-ID: said {p.stderr.strip()!r}")


def main():
    program, plot = sys.argv[1], sys.argv[2]
    forks = "--no-fork" not in sys.argv[3:]
    static = sys.argv[sys.argv.index("--static") + 1] if "--static" in sys.argv else None

    # 100 pools, one after another: one report each, numbered, none left half-written.
    with tempfile.TemporaryDirectory() as d:
        run([program, "pools", "100"], {"HEIST_PROFILE": f"{d}/p.json"}, "100 pools")
        want = ["p.json"] + [f"p.{i}.json" for i in range(2, 101)]
        check(files(d) == sorted(want), f"100 pools: files {files(d)[:5]}...")
        for i in range(1, 101):
            name = "p.json" if i == 1 else f"p.{i}.json"
            if os.path.exists(f"{d}/{name}"):
                check_report(f"{d}/{name}", f"pool {i} of 100", pool=i)

    # A pool never destroyed: written at exit. HEIST_PROFILE_EVERY=1 records every task.
    with tempfile.TemporaryDirectory() as d:
        run([program, "exit"], {"HEIST_PROFILE": f"{d}/exit-%p.json",
                                "HEIST_PROFILE_EVERY": "1"}, "exit")
        got = files(d)
        check(len(got) == 1 and got[0].startswith("exit-") and got[0].endswith(".json"),
              f"exit: files {got}")
        if len(got) == 1:
            pid = int(got[0][len("exit-"):-len(".json")])
            r = check_report(f"{d}/{got[0]}", "exit", pool=1, pid=pid, when="exit",
                             every=1)
            if r:
                check(r["dispatch"]["count"] >= 200 + 987,
                      f"exit: {r['dispatch']['count']} tasks recorded of every one")

    if forks:
        check_fork(program)
    if static:
        check_setuid(static)

    # The trace alone: the profiler on, a trace and no report.
    with tempfile.TemporaryDirectory() as d:
        run([program, "pools", "1"], {"HEIST_TRACE": f"{d}/t.json"}, "trace")
        check(files(d) == ["t.json"], f"trace: files {files(d)}")
        if os.path.exists(f"{d}/t.json"):
            with open(f"{d}/t.json") as f:
                t = json.load(f)
            events = [e for e in t["traceEvents"] if e.get("ph") == "X"]
            check(len(events) > 0, "trace: no task")
            check(t["otherData"]["samples_kept"] == len(events),
                  f"trace: {len(events)} tasks, {t['otherData']['samples_kept']} kept")

    # plot-latency reads the report as it reads heist-latency's.
    with tempfile.TemporaryDirectory() as d:
        run([program, "pools", "1"], {"HEIST_PROFILE": f"{d}/r.json"}, "plot")
        p = subprocess.run([sys.executable, plot, f"{d}/r.json", "-o", f"{d}/r.png"],
                           capture_output=True, text=True, timeout=120)
        if p.returncode and "matplotlib" in p.stderr:
            print("plot-latency not run: no matplotlib")
        else:
            check(p.returncode == 0 and os.path.getsize(f"{d}/r.png") > 0,
                  f"plot-latency: {p.stderr.strip()}")

    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("every report whole and in its place")
    return 0


if __name__ == "__main__":
    sys.exit(main())
