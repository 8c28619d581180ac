#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test-heist-latency.py - heist-latency end to end, on small workloads (seconds).

Run by meson test with the built tool's path, plot-latency's and the generated manual
page's (the last two optional). Checks the JSON
report (keys, exact task counts, ordered percentiles), the .hgrm files (HdrHistogram's
columns and footer), the trace (valid trace-event JSON, one complete event per task),
the submit and for-each workloads, --repeat, the table, --help, --version, that the
manual page describes every option of --help, and that bad options exit 2 with a
one-line message. Then the scheduler's own numbers: per-path counts that add up, a
steal latency and trace flow arrows when a steal is forced (--force-steal), per-repeat
and per-thread JSON, --warmup, the open loop's achieved rate at a modest target, the
long-run warning and the report printed after SIGINT. Exits 77 (meson's "skipped") when heist was
built with -Dprofiler=false. Timings are printed by the tool but never checked.
"""
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile

TOOL = sys.argv[1] if len(sys.argv) > 1 else "heist-latency"
# A cross build's programs run through meson's exe wrapper (wine for Windows), which
# meson test names in MESON_EXE_WRAPPER.
WRAPPER = shlex.split(os.environ.get("MESON_EXE_WRAPPER", ""))
PLOT = sys.argv[2] if len(sys.argv) > 2 else None  # tools/plot-latency, optional
MAN = sys.argv[3] if len(sys.argv) > 3 else None  # the generated heist-latency.1, optional
PLOT_MAN = sys.argv[4] if len(sys.argv) > 4 else None  # the generated plot-latency.1
FIELDS = ["count", "min", "max", "mean", "p50", "p90", "p99", "p999", "p9999",
          "min_ns", "max_ns", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns",
          "p9999_ns"]
ORDER = ["min", "p50", "p90", "p99", "p999", "p9999", "max"]
TESTS = []


def run(*args, code=0):
    p = subprocess.run([*WRAPPER, TOOL, *args], capture_output=True, text=True, timeout=120)
    if code is not None and p.returncode != code:
        raise AssertionError(f"{' '.join(args)}: exit {p.returncode}, expected {code}\n"
                             f"stderr: {p.stderr}")
    return p


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def test(fn):
    TESTS.append(fn)
    return fn


def report(*args):
    p = run("--json", *args)
    return json.loads(p.stdout)


def check_report(r, tasks):
    for key in ["tool", "version", "workload", "parameters", "clock", "exact",
                "samples_kept", "samples_dropped", "dispatch", "end_to_end", "stats",
                "wall_ns", "percentiles", "interrupted", "repeats_done", "per_repeat",
                "threads", "path_percentiles", "steal", "paths", "sampled_every"]:
        check(key in r, f"key {key} missing")
    for key in ["name", "cycles_per_ns", "invariant", "calibration"]:
        check(key in r["clock"], f"clock.{key} missing")
    for key in ["workers", "executed", "spawned", "stolen", "steal_attempts",
                "injector_pops", "sleeps", "wakes"]:
        check(key in r["stats"], f"stats.{key} missing")
    check(r["clock"]["cycles_per_ns"] > 0, "cycles_per_ns <= 0")
    for kind in ["dispatch", "end_to_end"]:
        lat = r[kind]
        for f in FIELDS:
            check(f in lat, f"{kind}.{f} missing")
        if tasks is not None:
            check(lat["count"] == tasks, f"{kind}.count {lat['count']} != {tasks}")
        vals = [lat[f] for f in ORDER]
        check(vals == sorted(vals), f"{kind} percentiles out of order: {vals}")
        ns = [lat[f + "_ns"] for f in ORDER]
        check(ns == sorted(ns), f"{kind} ns percentiles out of order: {ns}")
        check(lat["min"] <= lat["mean"] <= lat["max"], f"{kind}: mean outside [min, max]")
        per = r["clock"]["cycles_per_ns"]
        check(abs(lat["p50_ns"] - lat["p50"] / per) <= 0.01 + 1e-6 * lat["p50_ns"],
              f"{kind}: p50_ns != p50 / cycles_per_ns")
    if tasks is not None:
        check(r["stats"]["executed"] == tasks,
              f"stats.executed {r['stats']['executed']} != {tasks}")
    check("steal" in r and "count" in r["steal"], "steal missing")
    paths = r.get("paths", {})
    names = ["inline", "own", "stolen", "injector", "helping", "guest"]
    check(sorted(paths) == sorted(names), f"paths: {sorted(paths)}")
    total = sum(paths[n]["count"] for n in names)
    check(total == r["end_to_end"]["count"],
          f"paths add up to {total}, not {r['end_to_end']['count']}")
    for n in names:
        p = paths[n]
        check(p["dispatch"]["count"] <= p["count"], f"paths.{n}: more kept than counted")
        if p["exact"]:
            check(p["dispatch"]["count"] == p["count"], f"paths.{n}: exact but not all kept")
    check(r["steal"]["count"] <= paths["stolen"]["count"] + paths["helping"]["count"] +
          paths["guest"]["count"], "more steal latencies than stolen tasks")
    check(paths["stolen"]["count"] <= r["stats"]["stolen"],
          "more stolen tasks in the profile than in the statistics")
    # the threads: every index of the pool once, their counts add up to the totals
    threads = r["threads"]
    check([t["index"] for t in threads] == list(range(len(threads))), "thread indices")
    check(len(threads) > r["stats"]["workers"], "no guest slot among the threads")
    for t in threads:
        want = ("worker" if t["index"] < r["stats"]["workers"] else
                "guest" if t["index"] == r["stats"]["workers"] else "spare")
        check(t["role"] == want, f"thread {t['index']} is a {t['role']}, not a {want}")
        check(("placement" in t) == (want == "worker"), "placement only for workers")
    # (not steal_attempts: idle workers go on searching between the two reads)
    for key in ["executed", "stolen", "injector_pops"]:
        check(sum(t[key] for t in threads) == r["stats"][key], f"threads' {key} sum")
    # each repeat's percentiles; their counts add up when every sample was kept
    reps = r["per_repeat"]
    check(len(reps) == r["repeats_done"] == len(r["repeat_wall_ns"]), "per_repeat length")
    for i, rep in enumerate(reps):
        check(rep["repeat"] == i + 1, "per_repeat numbering")
        for kind in ["dispatch", "end_to_end"]:
            v = [rep[kind][f] for f in ["min_ns", "p50_ns", "p90_ns", "p99_ns",
                                        "p999_ns", "p9999_ns", "max_ns"]]
            check(v == sorted(v), f"per_repeat {i + 1} {kind} out of order: {v}")
    if r["exact"] and not r["interrupted"]:
        check(sum(rep["dispatch"]["count"] for rep in reps) == r["dispatch"]["count"],
              "per-repeat counts do not add up")
    for name, pts in r["path_percentiles"].items():
        check(paths[name]["dispatch"]["count"] > 0, f"path_percentiles.{name}: no tasks")
        v = [p["dispatch_ns"] for p in pts]
        check(v == sorted(v) and pts[-1]["p"] == 1, f"path_percentiles.{name}")
    pts = r["percentiles"]
    check(len(pts) > 5 or r["end_to_end"]["count"] < 10, "too few percentile points")
    ps = [p["p"] for p in pts]
    check(ps == sorted(ps) and len(set(ps)) == len(ps), "percentile levels not increasing")
    check(ps[0] == 0 and ps[-1] == 1, "percentile levels do not span 0..1")
    for kind in ["dispatch", "end_to_end"]:
        v = [p[kind + "_cycles"] for p in pts]
        check(v == sorted(v), f"{kind} percentile points decrease")
        check(v[0] == r[kind]["min"] and v[-1] == r[kind]["max"],
              f"{kind} percentile points do not run from min to max")
        check(all(kind + "_ns" in p for p in pts), f"{kind}_ns missing in points")


@test
def version():
    p = run("--version")
    check(re.fullmatch(r"heist-latency \d+\.\d+\.\d+\n", p.stdout), repr(p.stdout))


@test
def help_exits_0():
    p = run("--help")
    check("Usage" in p.stdout and "--workload" in p.stdout, "no usage text")
    p = run("-h")
    check("Usage" in p.stdout, "no usage text for -h")


def check_man_page(man_path, help_text, pattern, least):
    """Every option that help_text lists (pattern) is in the man page at man_path,
    which names this version."""
    with open(man_path, encoding="utf-8") as f:
        man = f.read()
    opts = set(re.findall(pattern, help_text, re.M))
    check(len(opts) >= least, f"too few options found in --help: {opts}")
    for short, long in opts:
        for o in (short, long):
            if o:
                check(o.replace("-", "\\-") in man, f"{o} is not in {man_path}")
    version = run("--version").stdout.split()[1]
    check(f'"heist {version}"' in man, f"{man_path} does not say version {version}")


@test
def man_page_has_every_option():
    if MAN is None:
        return
    check_man_page(MAN, run("--help").stdout, r"^\s+(?:(-[a-zA-Z]), )?(--[a-z]+)", 10)


@test
def plot_man_page_has_every_option():
    if PLOT_MAN is None or PLOT is None:
        return
    # --help needs no matplotlib: argparse answers before the plot is imported.
    text = subprocess.run([sys.executable, PLOT, "--help"], check=True,
                          capture_output=True, text=True).stdout
    check_man_page(PLOT_MAN, text, r"^\s+(?:(-[a-zA-Z])(?: \S+)?, )?(--[a-z-]+)", 6)


@test
def json_fork_join():
    r = report("--depth", "8", "--threads", "2")
    check_report(r, 2 ** 9 - 1)
    check(r["workload"] == "fork-join", "workload")
    check(r["parameters"]["depth"] == 8, "parameters.depth")
    check(r["expected_tasks"] == 511, "expected_tasks")
    check(r["stats"]["workers"] == 2, "stats.workers")
    check(r["stats"]["spawned"] == 510, "stats.spawned")
    check(r["exact"] is True and r["samples_dropped"] == 0, "small run not exact")


@test
def table_leads_with_the_paths():
    p = run("--depth", "8")
    lines = p.stdout.splitlines()
    at = next(i for i, l in enumerate(lines) if l.startswith("How tasks reached"))
    table = next(i for i, l in enumerate(lines) if "Percentile" in l)
    check(at < table, "the path split does not come before the table")
    check(any(l.startswith("steal latency") for l in lines[at:table]), "no steal latency line")
    check(any(l.split()[:1] == ["inline"] for l in lines[at:table]), "no inline row")


@test
def json_depth_0_is_one_task():
    check_report(report("--depth", "0", "--threads", "1"), 1)


@test
def repeat_merges():
    r = report("--depth", "5", "--repeat", "3")
    check_report(r, 3 * 63)
    check(len(r["repeat_wall_ns"]) == 3, "repeat_wall_ns")
    check(r["wall_ns"] == sum(r["repeat_wall_ns"]), "wall_ns is not the sum")
    check([p["dispatch"]["count"] for p in r["per_repeat"]] == [63] * 3,
          "each repeat has its own 63 tasks")


@test
def warmup_is_not_recorded():
    r = report("--depth", "6", "--warmup", "2", "--repeat", "2")
    check_report(r, 2 * 127)  # the statistics too: the warm-up's are taken off
    check(r["parameters"]["warmup"] == 2, "parameters.warmup")
    check(r["stats"]["spawned"] == 2 * 126, "stats.spawned counts the warm-up")


@test
def forced_steal_has_a_steal_latency_and_a_flow_arrow():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        r = report("--depth", "7", "--threads", "2", "--force-steal", "--trace", path)
        check_report(r, 2 ** 8 - 1 + 1)  # the tree, and the no-op job that publishes
        check(r["paths"]["stolen"]["count"] + r["paths"]["helping"]["count"] >= 1,
              "no task was stolen with --force-steal")
        s = r["steal"]
        check(s["count"] >= 1, "no steal latency with a forced steal")
        check(0 <= s["min_ns"] <= s["p50_ns"] <= s["p99_ns"] <= s["max_ns"],
              "steal latency out of order")
        ev = json.load(open(path))["traceEvents"]
        names = {e["tid"]: e["args"]["name"] for e in ev
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        check(names.get(2, "").startswith("guest"), f"guest track not named: {names}")
        x = [e for e in ev if e["ph"] == "X"]
        check({e["name"] for e in x} <= {"spawned", "submitted", "for-each range",
                                         "guest spawned", "guest submitted",
                                         "guest for-each range"},
              f"event names {sorted({e['name'] for e in x})}")
        check(sum(e["name"] == "submitted" for e in x) == 2, "the root and the no-op")
        stolen = [e for e in x if "victim" in e["args"]]
        check(len(stolen) == s["count"], "stolen events != steal latencies")
        starts = {e["id"]: e for e in ev if e["ph"] == "s"}
        ends = {e["id"]: e for e in ev if e["ph"] == "f"}
        check(len(starts) == len(ends) == len(stolen) >= 1, "flow events do not pair up")
        for i, f in ends.items():
            s0 = starts.get(i)
            check(s0 is not None, f"flow {i} has no start")
            check(f["bp"] == "e" and s0["cat"] == f["cat"] == "steal", "flow fields")
            check(s0["tid"] != f["tid"], "a flow from a track to itself")
            check(s0["tid"] in names and f["tid"] in names, "a flow to an unnamed track")
            check(s0["ts"] <= f["ts"], "a flow that goes back in time")
        for e in stolen:  # the arrow ends where the stolen task starts
            check(any(f["tid"] == e["tid"] and f["ts"] == e["ts"] for f in ends.values()),
                  "no flow ends at a stolen task")


@test
def open_loop_meets_a_modest_rate():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "lat.hgrm")
        r = report("--workload", "submit", "--rate", "2000", "--duration", "0.5",
                   "--payload", "100", "--producers", "2", "--hgrm", path)
        check_report(r, 1000)
        o = r["open_loop"]
        check(o["tasks_per_repeat"] == 1000 and o["submitted"] == 1000, "open_loop counts")
        check(abs(o["submit_rate"] - 2000) <= 200, f"submitted at {o['submit_rate']}/s")
        check(abs(o["complete_rate"] - 2000) <= 200, f"completed at {o['complete_rate']}/s")
        check(o["target_met"] is True, "target_met")
        for kind in ["due_to_submitted", "due_to_started", "due_to_finished"]:
            v = [o[kind][f] for f in ["min_ns", "p50_ns", "p99_ns", "max_ns"]]
            check(o[kind]["count"] == 1000 and v == sorted(v), f"open_loop.{kind}")
        check(o["due_to_submitted"]["p50_ns"] <= o["due_to_started"]["p50_ns"] <=
              o["due_to_finished"]["p50_ns"], "due -> submitted/started/finished order")
        # the whole distributions, for plot-latency: the summaries' values at their ticks
        pts = o["due_percentiles"]
        check(len(pts) > 5 and pts[-1]["p"] == 1.0, "due_percentiles incomplete")
        for key in ["due_to_started_ns", "due_to_finished_ns"]:
            vals = [p[key] for p in pts]
            check(vals == sorted(vals), f"due_percentiles.{key} not monotonic")
        at = {p["p"]: p for p in pts}
        check(0.5 in at and abs(at[0.5]["due_to_started_ns"] -
                                 o["due_to_started"]["p50_ns"]) < 1, "due P50 differs")
        check(abs(pts[-1]["due_to_finished_ns"] - o["due_to_finished"]["max_ns"]) < 1,
              "due max differs")
        for infix in ["due-started", "due-finished", "dispatch-injector"]:
            f = os.path.join(d, f"lat.{infix}.hgrm")
            check(os.path.exists(f), f"{f} not written")
        table = run("--workload", "submit", "--rate", "2000", "--duration", "0.2").stdout
        check("Open loop" in table and "due -> started" in table, "no open-loop table")


@test
def sigint_prints_the_report():
    p = subprocess.Popen([*WRAPPER, TOOL, "--json", "--depth", "30"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    first = p.stderr.readline()  # the long-run warning comes before the run
    check("will take about" in first and "Ctrl-C" in first, f"no warning: {first!r}")
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    check(p.returncode == 130, f"exit {p.returncode} after SIGINT, not 130: {err}")
    r = json.loads(out)
    check_report(r, None)
    check(r["interrupted"] is True and r["expected_tasks"] is None, "interrupted")
    # (a signal that comes before the first task, on a slow machine, leaves 0)
    n = r["end_to_end"]["count"]
    check(n == r["stats"]["executed"], f"{n} samples, {r['stats']['executed']} executed")
    check(r["repeats_done"] <= 1, "repeats_done")
    check("stopped by Ctrl-C" in err, "no message on stderr")


@test
def sample_records_about_one_task_in_n():
    tasks = 2 ** 15 - 1
    r = report("--depth", "14", "--payload", "10", "--sample", "10")
    check(r["sampled_every"] == 16,
          f"sampled_every {r['sampled_every']}, not 16 (10 rounded up)")
    n = r["end_to_end"]["count"]
    check(tasks // 64 <= n <= tasks // 4, f"{n} of {tasks} tasks recorded, sampling 1 in 16")
    check(r["dispatch"]["count"] == n, "dispatch and end-to-end counts differ")
    check(r["stats"]["executed"] == tasks, "the statistics must still count every task")
    check(report("--depth", "3")["sampled_every"] == 1, "sampled_every without --sample")
    p = run("--depth", "10", "--sample", "64")
    check("one task in 64 recorded" in p.stdout, "the table does not say it samples")


@test
def buffer_sets_the_samples_kept():
    r = report("--depth", "11", "--threads", "1", "--buffer", "1000")
    check(r["buffer_samples_per_worker"] == 1000, "buffer_samples_per_worker")
    check(r["samples_kept"] == 1000, f"samples_kept {r['samples_kept']}, not 1000")
    check(r["samples_dropped"] == 2 ** 12 - 1 - 1000, "samples_dropped")
    check(r["exact"] is False, "an overflowed run reported exact")
    check_report(r, 2 ** 12 - 1)
    big = report("--depth", "11", "--threads", "1", "--buffer", "5000")
    check(big["exact"] is True and big["samples_dropped"] == 0, "5000 should keep all")


@test
def submit_workload():
    r = report("--workload", "submit", "--tasks", "2000", "--payload", "50")
    check_report(r, 2000)
    check(r["workload"] == "submit" and r["parameters"]["tasks"] == 2000, "parameters")


@test
def for_each_workload():
    r = report("--workload", "for-each", "--tasks", "1000", "--loops", "10")
    check_report(r, None)
    # each loop is at least the task that enters the pool; splits add more
    check(r["end_to_end"]["count"] >= 10, "fewer tasks than loops")
    check(r["end_to_end"]["count"] == r["stats"]["executed"], "count != executed")
    check(r["parameters"]["loops"] == 10, "parameters.loops")


@test
def table():
    p = run("--depth", "12", "--payload", "10")
    out = p.stdout
    for word in ["Percentile", "Dispatch latency", "End-to-end", "P50", "P90", "P99",
                 "P99.9", "P99.99", "max", "min", "mean", "count", "8,191", "clock",
                 "tasks executed", "wall time"]:
        check(word in out, f"{word!r} not in the table:\n{out}")


@test
def hgrm():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "lat.hgrm")
        run("--depth", "8", "--hgrm", path)
        for f in [path, os.path.join(d, "lat.dispatch.hgrm")]:
            lines = open(f).read().splitlines()
            check(lines[0] == "       Value     Percentile TotalCount 1/(1-Percentile)",
                  f"header {lines[0]!r}")
            check(lines[1] == "", "no blank line after the header")
            rows = [l.split() for l in lines[2:] if l and not l.startswith("#")]
            check(len(rows) > 10, "too few rows")
            check(all(len(r) == 4 for r in rows[:-1]) and len(rows[-1]) == 3,
                  "rows need 4 columns, the last 3")
            vals = [float(r[0]) for r in rows]
            ps = [float(r[1]) for r in rows]
            counts = [int(r[2]) for r in rows]
            check(vals == sorted(vals), "values decrease")
            check(ps == sorted(ps) and ps[0] == 0 and ps[-1] == 1, "percentiles")
            check(counts == sorted(counts) and counts[-1] == 511, "total counts")
            foot = [l for l in lines if l.startswith("#")]
            check(len(foot) == 3, f"footer {foot}")
            check(re.fullmatch(r"#\[Mean    = +[\d.]+, StdDeviation   = +[\d.]+\]",
                               foot[0]), foot[0])
            check(re.fullmatch(r"#\[Max     = +[\d.]+, Total count    = +511\]", foot[1]),
                  foot[1])
            check(re.fullmatch(r"#\[Buckets = +\d+, SubBuckets     = +\d+\]", foot[2]),
                  foot[2])
            check(abs(float(foot[1].split("=")[1].split(",")[0]) - vals[-1]) < 0.0015,
                  "footer max != last row")


@test
def trace():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        run("--depth", "6", "--threads", "2", "--trace", path)
        t = json.load(open(path))
        ev = t["traceEvents"]
        x = [e for e in ev if e["ph"] == "X"]
        check(len(x) == 127, f"{len(x)} complete events, expected 127")
        check(all(e["pid"] == 1 and 0 <= e["tid"] < 2 for e in x), "pid/tid")
        check(all(e["ts"] >= 0 and e["dur"] >= 0 for e in x), "negative ts or dur")
        names = {e["tid"]: e["args"]["name"] for e in ev
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        check(names == {0: "heist-0", 1: "heist-1", 2: "guest (outside heist_for_each)"},
              f"thread names {names}")
        check(t["otherData"]["samples_dropped"] == 0, "samples dropped")


@test
def plot():
    if not PLOT:
        print("     (no plot-latency path given)")
        return
    with tempfile.TemporaryDirectory() as d:
        a, b, png = (os.path.join(d, n) for n in ["a.json", "b.json", "lat.png"])
        open(a, "w").write(run("--json", "--depth", "9").stdout)
        open(b, "w").write(run("--json", "--workload", "submit", "--tasks", "500").stdout)
        p = subprocess.run([sys.executable, PLOT, a, b, "--label", "tree", "-o", png],
                           capture_output=True, text=True, timeout=120)
        if p.returncode == 1 and "matplotlib is missing" in p.stderr:
            print("     (matplotlib is missing: plot not checked)")
            return
        check(p.returncode == 0, f"plot-latency exit {p.returncode}: {p.stderr}")
        check(open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n", "not a PNG")
        # an open loop, alone (plotted from the due times) and beside a closed one
        c = os.path.join(d, "c.json")
        open(c, "w").write(run("--json", "--workload", "submit", "--rate", "2000",
                               "--duration", "0.2").stdout)
        for args in [[c], [c, a]]:
            p = subprocess.run([sys.executable, PLOT, *args, "-o", png],
                               capture_output=True, text=True, timeout=120)
            check(p.returncode == 0, f"plot-latency {args}: exit {p.returncode}: {p.stderr}")


@test
def bad_options_exit_2():
    for args in [["--threads", "abc"], ["--depth", "99"], ["--workload", "nope"],
                 ["--bogus"], ["--threads", "-1"], ["--repeat", "0"],
                 ["--workload", "submit", "--tasks", "0"], ["--pin", "sideways"],
                 ["--depth"], ["--depth", "5", "--workload", "submit"],
                 ["--payload", "1x"], ["stray"], ["-x"], ["--sample", "0"],
                 ["--sample", "2000000"], ["--buffer", "0"], ["--buffer", "x"],
                 ["--rate", "0", "-w", "submit"], ["--rate", "x", "-w", "submit"],
                 ["--rate", "100"], ["-w", "submit", "--producers", "2"],
                 ["-w", "submit", "--rate", "10", "--duration", "0"],
                 ["-w", "submit", "--rate", "10", "--tasks", "5"], ["--warmup", "x"],
                 ["--force-steal", "-w", "submit"], ["--force-steal", "-d", "0"],
                 ["--spin", "-1"], ["--injector-limit", "x"]]:
        p = run(*args, code=2)
        check(p.stdout == "", f"{args}: output on stdout")
        msg = p.stderr.strip()
        check(msg.startswith("heist-latency: ") and "\n" not in msg,
              f"{args}: not a one-line message: {p.stderr!r}")


def main():
    probe = run("--json", "--depth", "1", code=None)
    if probe.returncode == 1 and "not supported" in probe.stderr:
        print("skipped: heist was built without the profiler")
        return 77
    failures = []
    for fn in TESTS:
        try:
            fn()
            print(f"ok   {fn.__name__}")
        except Exception as e:  # report every failure, not just the first
            failures.append(fn.__name__)
            print(f"FAIL {fn.__name__}: {e}")
    if failures:
        print(f"{len(failures)} failed: {', '.join(failures)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
