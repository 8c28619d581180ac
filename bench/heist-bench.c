/* SPDX-License-Identifier: MIT */
/* heist-bench.c - runs the reference workloads of docs/workloads.md on heist and on its
 * peers (serial, a mutex+condvar pool, OpenMP and oneTBB where built) and prints one
 * table. Every run checks its answer and the program exits 1 on a wrong one. The
 * workloads live in w_*.c; this file parses options and hands their table to the
 * driver (bench_run, bench.c). */
#define _POSIX_C_SOURCE 200809L

#include "workloads.h"

#include "malloc_count.h"
#include "peers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct bench_workload *const workloads[] = {
	&w1_fib, &w2_nqueens, &w3_uts, &w4_for_each, &w_reduce, &w5_storm, &w6_round_trip,
	&w7_matmul, &w8_latency, &w_chain, &w10_graph,
};
enum { NWORKLOADS = sizeof workloads / sizeof workloads[0] };
enum { INSTR_FIB_N = 27 };	/* --instructions: W1 at fib(27), issue 12's size */

/* Every name --only accepts, in order: the workloads' size names once each (W2's two
 * sizes are both "W2"), then "W9", "W11", "timers" and "idle". Returns how many. */
static size_t
workload_names(const char **names, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < NWORKLOADS; i++)
		for (unsigned k = 0; k < workloads[i]->nsizes; k++) {
			const char *name = workloads[i]->sizes[k].name;
			if (n < max && (n == 0 || strcmp(names[n - 1], name) != 0))
				names[n++] = name;
		}
	if (n < max)
		names[n++] = "W9";
	if (n < max)
		names[n++] = "W11";
	if (n < max)
		names[n++] = "timers";
	if (n < max)
		names[n++] = "idle";
	return n;
}

static const char *const impl_names[] = {
	"serial", "baseline", "heist", "omp", "tbb", "threads",
	/* variants of heist, also selected by "heist" (unless --exact) */
	"heist-outside", "heist-nested", "heist-prof", "heist-sample", "heist-pin",
	"heist-futures", "heist-group", "heist-then", "heist-wait", "heist-det",
	"heist-foreach", "heist-graph", "heist-worker",
	/* the C++ API's rows (w_cxx.cpp), with a C++ compiler */
	"heist-cxx", "heist-cxx-futures",
};

/* Exit 2 unless every item of the comma list is one of names[]. */
static void
check_list(const char *opt, const char *list, const char *const *names, size_t n)
{
	const char *p = list;
	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		bool known = false;
		for (size_t i = 0; i < n && !known; i++)
			known = strlen(names[i]) == len && strncasecmp(p, names[i], len) == 0;
		if (!known) {
			fprintf(stderr, "heist-bench: %s: unknown name '%.*s'; known:", opt,
				(int)len, p);
			for (size_t i = 0; i < n; i++)
				fprintf(stderr, " %s", names[i]);
			fputc('\n', stderr);
			exit(2);
		}
		if (!end)
			return;
		p = end + 1;
	}
}

static void
usage(FILE *f)
{
	fputs("usage: heist-bench [--quick] [--threads N] [--reps N] [--only LIST] [--impl LIST]\n"
	      "                   [--exact] [--settle MS] [--rss] [--json]\n"
	      "       heist-bench --instructions\n"
	      "  --quick        small sizes: a smoke run of a few seconds (CI)\n"
	      "  --threads N    workers of the parallel implementations (default 2)\n"
	      "  --reps N       timed repetitions per implementation, after one warm-up\n"
	      "                 (default 5; at most 99)\n"
	      "  --only LIST    comma list of workloads:", f);
	const char *names[32];
	size_t n = workload_names(names, sizeof names / sizeof names[0]);
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %s%s", names[i], i + 1 < n ? "," : "\n");
	fputs("                 (W10 runs only when named: its full sizes take minutes)\n", f);
	fputs("  --impl LIST    comma list of implementations: serial, baseline, heist",
	      f);
	fputs(" (and its\n                 variants heist-outside, heist-nested, heist-prof,\n"
	      "                 heist-sample, heist-pin, heist-futures, heist-group,\n"
	      "                 heist-then, heist-wait, heist-foreach, heist-worker,\n"
	      "                 heist-cxx, heist-cxx-futures)", f);
#ifdef HEIST_BENCH_OMP
	fputs(", omp", f);
#endif
#ifdef HEIST_BENCH_TBB
	fputs(", tbb", f);
#endif
	fputs(",\n                 threads (W4: plain threads, static shares: the ceiling)", f);
	fputs("\n  --exact        --only and --impl take names only: W5 is not W5-fine, heist\n"
	      "                 not heist-pin\n"
	      "  --settle MS    pause after every run (default 5; at least 20 after OpenMP)\n"
	      "  --rss          also measure the peak RSS of each implementation per workload,\n"
	      "                 in a child process each (this program with --only, --impl,\n"
	      "                 --exact, --reps 1)\n"
	      "  --json         print the rows as JSON instead of a table\n"
	      "  --instructions instructions per spawn+sync pair, W1 fib(27) on 1 worker\n"
	      "                 against the serial fib, per W5-fine submit + run +\n"
	      "                 finish (100k tasks) against the serial bodies, and per W10\n"
	      "                 dependent task (1, 2 and 3 inputs) beside a plain submit,\n"
	      "                 counted by valgrind's callgrind (deterministic; needs\n"
	      "                 valgrind)\n", f);
}

static unsigned
parse_uint(const char *opt, const char *s, unsigned min, unsigned max)
{
	char *end;
	unsigned long v = s ? strtoul(s, &end, 10) : 0;
	if (!s || *end || end == s || v < min || v > max) {
		fprintf(stderr, "heist-bench: %s wants a number from %u to %u\n", opt, min, max);
		exit(2);
	}
	return (unsigned)v;
}

int
main(int argc, char **argv)
{
	struct bench_opts o = { .threads = 2, .reps = 5, .settle_ms = 5 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--quick") == 0) {
			o.quick = true;
		} else if (strcmp(a, "--json") == 0) {
			o.json = true;
		} else if (strcmp(a, "--exact") == 0) {
			o.exact = true;
		} else if (strcmp(a, "--rss") == 0) {
			o.rss = true;
		} else if (strcmp(a, "--rss-child") == 0) {	/* internal: see rss.c */
			o.rss_child = true;
			bench_quiet = true;
		} else if (strcmp(a, "--instructions") == 0) {
			return bench_instructions(argv[0], INSTR_FIB_N);
		} else if (strcmp(a, "--instr-child") == 0 && next && i + 2 < argc) {
			return bench_instr_child(next, atoi(argv[i + 2]));	/* internal */
		} else if (strcmp(a, "--threads") == 0) {
			o.threads = parse_uint(a, next, 1, HEIST_MAX_THREADS);
			i++;
		} else if (strcmp(a, "--reps") == 0) {
			o.reps = parse_uint(a, next, 1, BENCH_MAX_REPS);
			i++;
		} else if (strcmp(a, "--settle") == 0) {
			o.settle_ms = parse_uint(a, next, 0, 10000);
			i++;
		} else if (strcmp(a, "--only") == 0 && next) {
			o.only = next;
			i++;
		} else if (strcmp(a, "--impl") == 0 && next) {
			o.impls = next;
			i++;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "heist-bench: unknown option %s\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (o.only) {
		const char *names[32];
		check_list("--only", o.only, names,
			   workload_names(names, sizeof names / sizeof names[0]));
	}
	if (o.impls)
		check_list("--impl", o.impls, impl_names, sizeof impl_names / sizeof impl_names[0]);
#ifndef HEIST_BENCH_OMP
	if (o.impls && bench_impl_enabled(&o, "omp"))
		bench_progress("heist-bench: omp was not built (OpenMP not found); no omp rows\n");
#endif
#ifndef HEIST_BENCH_TBB
	if (o.impls && bench_impl_enabled(&o, "tbb"))
		bench_progress("heist-bench: tbb was not built (oneTBB not found); no tbb rows\n");
#endif
	if (o.reps < 5 && !o.rss_child)
		bench_progress("heist-bench: %u repetitions: fewer than the 5 "
			       "docs/workloads.md asks for\n", o.reps);

	bench_progress("heist-bench: %u thread%s, %u repetitions + 1 warm-up, %s sizes; peers:%s%s;"
		       " malloc counting %s\n",
		       o.threads, o.threads == 1 ? "" : "s", o.reps, o.quick ? "quick" : "full",
#ifdef HEIST_BENCH_OMP
		       " omp",
#else
		       "",
#endif
#ifdef HEIST_BENCH_TBB
		       " tbb",
#else
		       "",
#endif
		       malloc_count_available() ? "on" : "unavailable");
#ifdef HEIST_BENCH_TBB
	if (bench_impl_enabled(&o, "tbb"))
		peer_tbb_start(o.threads);
#endif

	bench_run(&o, workloads, NWORKLOADS);
	light_load(&o);
	timer_load(&o);
	prio_load(&o);
	idle_cpu(&o);

#ifdef HEIST_BENCH_TBB
	peer_tbb_stop();
#endif
	if (o.rss_child) {
		bench_rss_report();
		return 0;
	}
	if (o.rss)
		bench_rss(&o, "/proc/self/exe");
	bench_print(&o);
	return 0;
}
