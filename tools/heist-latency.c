/* SPDX-License-Identifier: MIT */
/* heist-latency.c - the profiler's command-line tool. It runs one workload on a pool
 * created with .profile = true (by default W8 of docs/workloads.md: a fork-join binary
 * tree of depth 19, a 500-iteration floating-point payload per task), then prints how
 * tasks reached their threads (dispatch latency by path, steal latency) and dispatch
 * and end-to-end latency percentiles as a table, or as JSON (--json), and can write
 * HdrHistogram percentile distributions (--hgrm) and a Chrome/Perfetto trace (--trace).
 * The other workloads are W5 (submit, closed or open loop) and W4 (for-each).
 *
 * This file holds the options and main; latency.h lists the other parts. Only the
 * public API is used (heist/heist.h, heist/profile.h). docs/profiler.md describes the
 * output. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include "latency.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(_WIN32)
#include <windows.h>
#endif

#include "w8.h"		/* bench/w8.h: W8_DEPTH, W8_PAYLOAD */

/* This program's file, in malloc'd memory; NULL if unknown. */
static char *
own_path(void)
{
#if defined(_WIN32)
	/* The module's path, with / for its backslashes (Windows takes either). */
	char *exe = malloc(MAX_PATH + 1);
	DWORD n = exe ? GetModuleFileNameA(NULL, exe, MAX_PATH + 1) : 0;
	if (!n || n > MAX_PATH) {
		free(exe);
		return NULL;
	}
	for (char *c = exe; *c; c++)
		if (*c == '\\')
			*c = '/';
	return exe;
#else
	return realpath("/proc/self/exe", NULL);
#endif
}

/* Where --help sends the reader: the installed guide if it is there; else, for a tool
 * run from its build directory (build/tools/heist-latency, the build a child of the
 * source tree), the source tree's, found from /proc/self/exe (Windows: the module's path); else a description. */
static const char *
profiler_guide(void)
{
#ifdef HEIST_DOCDIR
	if (access(HEIST_DOCDIR "/profiler.md", R_OK) == 0)
		return HEIST_DOCDIR "/profiler.md";
#endif
	static char path[PATH_MAX + 32];
	char *exe = own_path();
	if (exe) {
		char *slash = exe;
		for (int up = 0; up < 3 && slash; up++) {	/* tools/, build/, the root */
			slash = strrchr(exe, '/');
			if (slash)
				*slash = '\0';
		}
		if (slash && snprintf(path, sizeof(path), "%s/docs/profiler.md", exe) <
				     (int)sizeof(path) && access(path, R_OK) == 0) {
			free(exe);
			return path;
		}
		free(exe);
	}
	return "docs/profiler.md in heist's source tree";
}

const char *const workload_names[3] = {"fork-join", "submit", "for-each"};
const char *const pin_names[3] = {"none", "core", "pu"};

/* ---------------------------------------------------------------------------------- */
/* Messages                                                                           */

static void
die_usage(const char *fmt, ...)
{
	va_list ap;
	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (try --help)\n", stderr);
	exit(EXIT_USAGE);
}

/* A library or system call failed: its name and strerror, exit 1. */
void
die_err(const char *what, int err)
{
	fprintf(stderr, PROG ": %s: %s%s\n", what, strerror(err),
		err == ENOTSUP ? " (heist was built with -Dprofiler=false?)" : "");
	exit(1);
}

static void
usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [OPTION]...\n"
"Run a workload on a profiling heist pool and print dispatch latency (task created ->\n"
"started on a worker) and end-to-end latency (created -> finished) percentiles.\n"
"\n"
"Workloads (--workload, default fork-join):\n"
"  fork-join   W8: binary tree of depth D (2^(D+1)-1 tasks, default D = 19); every\n"
"              task runs the payload loop, then spawns and syncs up to two children\n"
"  submit      W5: N independent fire-and-forget tasks submitted from the main thread\n"
"              (default N = 1,000,000), which then waits for them all; with --rate,\n"
"              an open loop: tasks due at a fixed rate, latency from their due time\n"
"  for-each    W4: heist_for_each over N doubles (default N = 10,000), repeated L\n"
"              times (default L = 1,000); the tasks are the loop's lazy splits\n"
"\n"
"Options:\n"
"  -w, --workload NAME   fork-join, submit or for-each\n"
"  -t, --threads N       workers (default 0: one per core, or per CPU without hwloc)\n"
"  -d, --depth D         fork-join tree depth, 0..%d (default 19)\n"
"  -p, --payload ITERS   iterations of x = x*1.0000001 + c per task (fork-join: 500)\n"
"                        or per element (for-each: 8); submit: 1000\n"
"  -n, --tasks N         submit: tasks; for-each: array length\n"
"  -l, --loops L         for-each: parallel loops per repeat\n"
"      --pin POLICY      none, core or pu (heist_config.pin; default none)\n"
"      --force-steal     fork-join: the root waits until another worker has started\n"
"                        its first subtree, so that one task at least is stolen\n"
"                        (one more task: a no-op job that publishes it)\n", MAX_DEPTH);
	fprintf(f,
"  -r, --repeat K        run the workload K times; the profile is not reset between\n"
"                        runs, so the report merges all K (default 1); JSON has\n"
"                        each repeat's percentiles too\n"
"      --warmup N        run the workload N times first, not recorded (default 0)\n"
"      --rate R          submit: an open loop, R tasks a second (decimal), each due\n"
"                        at its time whatever the others did; the report adds the\n"
"                        latency from the due time, and the achieved rates\n"
"      --producers P     open loop: P threads share the schedule (default 1)\n"
"      --duration S      open loop: seconds a repeat (decimal; default 2):\n"
"                        R x S tasks\n"
"      --injector-limit N  heist_config.injector_limit: an outside submit blocks\n"
"                        while N tasks wait in the injector (default 0: unbounded)\n"
"      --spin N          heist_config.spin: idle steal rounds before a worker sleeps\n"
"                        (default 0: the library's)\n"
"      --buffer N        samples each worker keeps (default 262,144; at most 2^26,\n"
"                        48 bytes each): beyond, tasks count only in histograms,\n"
"                        which keep no path and give percentiles within 1%%\n"
"      --sample N        record one task in N (rounded up to a power of two;\n"
"                        heist_config.profile_every): the profiler's own cost drops\n"
"                        about N-fold; counts are then of the recorded tasks\n"
"  -j, --json            print the report as one JSON object instead of the table\n"
"      --hgrm FILE       write HdrHistogram percentile distributions (values in us):\n"
"                        end-to-end to FILE, dispatch to FILE with \".dispatch\" put\n"
"                        before the extension (lat.hgrm -> lat.dispatch.hgrm), and\n"
"                        .dispatch-PATH (each path), .steal, and with --rate\n"
"                        .due-started and .due-finished the same way\n"
"      --trace FILE      write a Chrome/Perfetto trace (trace-event JSON): one event per\n"
"                        kept task sample, named by kind, one track per thread, and a\n"
"                        flow arrow from victim to thief per steal (ui.perfetto.dev)\n"
"  -h, --help            print this help and exit\n"
"  -V, --version         print the version and exit\n"
"\n"
"A run estimated to take over a minute is announced first; on a terminal a progress\n"
"line shows the time left. Ctrl-C stops the workload and prints the report of what\n"
"ran (a second Ctrl-C kills).\n"
"\n"
"Exit status: 0 on success, 1 on a library or I/O error, 2 on bad options, 130 when\n"
"Ctrl-C stopped the run (the report is printed).\n"
"See heist-latency(1) and the profiler guide, %s.\n", profiler_guide());
}

/* ---------------------------------------------------------------------------------- */
/* Option values                                                                      */

/* A decimal number in [min, max]; anything else is a usage error naming the option. */
static uint64_t
parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	const char *p = s;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '-')
		die_usage("%s '%s': must not be negative", opt, s);
	if (*p < '0' || *p > '9')
		die_usage("%s '%s': not a number", opt, s);
	errno = 0;
	char *end;
	unsigned long long v = strtoull(p, &end, 10);
	if (*end)
		die_usage("%s '%s': not a number", opt, s);
	if (errno == ERANGE || v > max)
		die_usage("%s %s: must be at most %" PRIu64, opt, s, max);
	if (v < min)
		die_usage("%s %s: must be at least %" PRIu64, opt, s, min);
	return v;
}

/* A positive decimal number (12, 0.5, 2e5) in (0, max]. */
static double
parse_positive(const char *opt, const char *s, double max)
{
	errno = 0;
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || errno == ERANGE || !isfinite(v))
		die_usage("%s '%s': not a number", opt, s);
	if (v <= 0)
		die_usage("%s %s: must be more than 0", opt, s);
	if (v > max)
		die_usage("%s %s: must be at most %g", opt, s, max);
	return v;
}

static int
lookup(const char *opt, const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	char list[128] = "";
	for (int i = 0; i < n; i++) {
		strcat(list, i ? (i == n - 1 ? " or " : ", ") : "");
		strcat(list, names[i]);
	}
	die_usage("%s '%s': unknown; expected %s", opt, s, list);
	return -1;
}

static void
parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_PIN = 256, OPT_HGRM, OPT_TRACE, OPT_SAMPLE, OPT_BUFFER, OPT_WARMUP,
	       OPT_RATE, OPT_PRODUCERS, OPT_DURATION, OPT_INJECTOR_LIMIT, OPT_SPIN,
	       OPT_FORCE_STEAL };
	static const struct option longs[] = {
		{"workload", required_argument, NULL, 'w'},
		{"threads", required_argument, NULL, 't'},
		{"depth", required_argument, NULL, 'd'},
		{"payload", required_argument, NULL, 'p'},
		{"tasks", required_argument, NULL, 'n'},
		{"loops", required_argument, NULL, 'l'},
		{"pin", required_argument, NULL, OPT_PIN},
		{"repeat", required_argument, NULL, 'r'},
		{"sample", required_argument, NULL, OPT_SAMPLE},
		{"buffer", required_argument, NULL, OPT_BUFFER},
		{"warmup", required_argument, NULL, OPT_WARMUP},
		{"rate", required_argument, NULL, OPT_RATE},
		{"producers", required_argument, NULL, OPT_PRODUCERS},
		{"duration", required_argument, NULL, OPT_DURATION},
		{"injector-limit", required_argument, NULL, OPT_INJECTOR_LIMIT},
		{"spin", required_argument, NULL, OPT_SPIN},
		{"force-steal", no_argument, NULL, OPT_FORCE_STEAL},
		{"json", no_argument, NULL, 'j'},
		{"hgrm", required_argument, NULL, OPT_HGRM},
		{"trace", required_argument, NULL, OPT_TRACE},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	*o = (struct options){.workload = FORK_JOIN, .depth = W8_DEPTH, .repeat = 1};
	bool producers_set = false, duration_set = false;
	opterr = 0;	/* our own one-line messages */
	int c;
	while ((c = getopt_long(argc, argv, ":w:t:d:p:n:l:r:jhV", longs, NULL)) != -1) {
		switch (c) {
		case 'w':
			o->workload = (enum workload)lookup("--workload", optarg,
							    workload_names, 3);
			break;
		case 't':
			o->threads = (unsigned)parse_u64("--threads", optarg, 0,
							 HEIST_MAX_THREADS);
			break;
		case 'd':
			o->depth = (unsigned)parse_u64("--depth", optarg, 0, MAX_DEPTH);
			o->depth_set = true;
			break;
		case 'p':
			o->payload = parse_u64("--payload", optarg, 0, 1000000000);
			o->payload_set = true;
			break;
		case 'n':
			o->tasks = parse_u64("--tasks", optarg, 1, UINT64_C(1) << 32);
			o->tasks_set = true;
			break;
		case 'l':
			o->loops = parse_u64("--loops", optarg, 1, 1000000000);
			o->loops_set = true;
			break;
		case 'r':
			o->repeat = parse_u64("--repeat", optarg, 1, 1000000);
			break;
		case OPT_PIN:
			o->pin = (enum heist_pin)lookup("--pin", optarg, pin_names, 3);
			break;
		case OPT_SAMPLE:
			o->sample = (unsigned)parse_u64("--sample", optarg, 1, 1u << 20);
			break;
		case OPT_BUFFER:
			o->buffer = parse_u64("--buffer", optarg, 1, UINT64_C(1) << 26);
			break;
		case OPT_WARMUP:
			o->warmup = parse_u64("--warmup", optarg, 0, 1000000);
			break;
		case OPT_RATE:
			o->rate = parse_positive("--rate", optarg, 1e9);
			break;
		case OPT_PRODUCERS:
			o->producers = (unsigned)parse_u64("--producers", optarg, 1, 256);
			producers_set = true;
			break;
		case OPT_DURATION:
			o->duration = parse_positive("--duration", optarg, 86400);
			duration_set = true;
			break;
		case OPT_INJECTOR_LIMIT:
			o->injector_limit = parse_u64("--injector-limit", optarg, 0,
						      UINT64_C(1) << 40);
			break;
		case OPT_FORCE_STEAL:
			o->force_steal = true;
			break;
		case OPT_SPIN:
			o->spin = (unsigned)parse_u64("--spin", optarg, 0, 1000000);
			break;
		case 'j':
			o->json = true;
			break;
		case OPT_HGRM:
			o->hgrm = optarg;
			break;
		case OPT_TRACE:
			o->trace = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf(PROG " %s\n", HEIST_VERSION);
			exit(0);
		case ':':
			die_usage("option '%s' needs a value", argv[optind - 1]);
			break;
		default: {
			const char *arg = argv[optind - 1];
			if (!strncmp(arg, "--", 2) && optopt && strchr(arg, '='))
				die_usage("option '%.*s' takes no value",
					  (int)(strchr(arg, '=') - arg), arg);
			if (!strncmp(arg, "--", 2) || !optopt)
				die_usage("unknown option '%s'", arg);
			die_usage("unknown option '-%c'", optopt);
		}
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	if (o->hgrm && !*o->hgrm)
		die_usage("--hgrm: empty file name");
	if (o->trace && !*o->trace)
		die_usage("--trace: empty file name");

	const char *w = workload_names[o->workload];
	if (o->depth_set && o->workload != FORK_JOIN)
		die_usage("--depth applies to --workload fork-join, not %s", w);
	if (o->tasks_set && o->workload == FORK_JOIN)
		die_usage("--tasks applies to --workload submit or for-each, not %s", w);
	if (o->loops_set && o->workload != FOR_EACH)
		die_usage("--loops applies to --workload for-each, not %s", w);
	if (o->force_steal && (o->workload != FORK_JOIN || !o->depth))
		die_usage("--force-steal applies to --workload fork-join of depth 1 or more");
	if (o->rate > 0 && o->workload != SUBMIT)
		die_usage("--rate applies to --workload submit, not %s", w);
	if (!o->rate && (producers_set || duration_set))
		die_usage("--%s needs --rate (the open loop)",
			  producers_set ? "producers" : "duration");
	if (o->rate > 0 && o->tasks_set)
		die_usage("--tasks and --rate: the open loop runs rate x --duration tasks");
	static const uint64_t payloads[] = {W8_PAYLOAD, 1000, 8}, tasks[] = {0, 1000000, 10000};
	if (!o->payload_set)
		o->payload = payloads[o->workload];
	if (!o->tasks_set)
		o->tasks = tasks[o->workload];
	if (!o->loops_set)
		o->loops = o->workload == FOR_EACH ? 1000 : 0;
	if (!o->producers)
		o->producers = 1;
	if (!duration_set)
		o->duration = 2.0;
}

/* ---------------------------------------------------------------------------------- */
/* Shared helpers (latency.h)                                                         */

uint64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The payload of W5 and W4 (W8's is bench/w8.c's). */
double
spin(unsigned iters, double x, double c)
{
	for (unsigned i = 0; i < iters; i++)
		x = x * 1.0000001 + c;
	return x;
}

void
fmt_count(char *buf, size_t size, uint64_t v)
{
	char digits[24];
	int n = snprintf(digits, sizeof(digits), "%" PRIu64, v);
	size_t j = 0;
	for (int i = 0; i < n && j + 1 < size; i++) {
		if (i && (n - i) % 3 == 0 && j + 2 < size)
			buf[j++] = ',';
		buf[j++] = digits[i];
	}
	buf[j] = '\0';
}

/* A duration with a unit chosen for its size. */
void
fmt_time(char *buf, size_t size, double ns)
{
	if (ns < 999.5)
		snprintf(buf, size, "%.0f ns", ns);
	else if (ns < 999.995e3)
		snprintf(buf, size, "%.2f µs", ns / 1e3);
	else if (ns < 999.995e6)
		snprintf(buf, size, "%.2f ms", ns / 1e6);
	else
		snprintf(buf, size, "%.2f s", ns / 1e9);
}

const char *
plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

void
describe_workload(char *buf, size_t size, const struct options *o)
{
	char a[32], b[32];
	switch (o->workload) {
	case FORK_JOIN:
		snprintf(buf, size, "fork-join depth %u", o->depth);
		break;
	case SUBMIT:
		fmt_count(a, sizeof(a), o->tasks);
		if (o->rate > 0) {
			fmt_count(a, sizeof(a), (uint64_t)llround(o->rate));
			snprintf(buf, size, "submit at %s/s for %g s", a, o->duration);
		} else {
			snprintf(buf, size, "submit %s task%s", a, plural(o->tasks));
		}
		break;
	case FOR_EACH:
		fmt_count(a, sizeof(a), o->tasks);
		fmt_count(b, sizeof(b), o->loops);
		snprintf(buf, size, "for-each %s x %s", a, b);
		break;
	}
}

/* ---------------------------------------------------------------------------------- */
/* Files                                                                              */

/* PATH with ".INFIX" before its extension: a.hgrm -> a.INFIX.hgrm, a -> a.INFIX,
 * d.x/a -> d.x/a.INFIX. Dots in directories and a leading dot do not count. */
char *
with_infix(const char *path, const char *infix)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	const char *dot = strrchr(base, '.');
	if (!dot || dot == base)
		dot = path + strlen(path);
	size_t head = (size_t)(dot - path);
	char *s = malloc(strlen(path) + strlen(infix) + 2);
	if (!s)
		die_err("malloc", ENOMEM);
	memcpy(s, path, head);
	s[head] = '.';
	strcpy(s + head + 1, infix);
	strcat(s, dot);
	return s;
}

void
close_or_die(FILE *f, const char *path)
{
	if (ferror(f) | fclose(f)) {
		fprintf(stderr, PROG ": %s: write error\n", path);
		exit(1);
	}
}

FILE *
open_or_die(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return f;
}

/* ---------------------------------------------------------------------------------- */

/* What the open loop's achieved rates say, on stderr (the table says it too). */
static void
warn_rates(const struct run *r)
{
	const struct open_result *op = r->open;
	double target = r->o->rate;
	char a[32], b[32];
	if (!op || r->interrupted || op->submitted < 2)
		return;
	fmt_count(b, sizeof(b), (uint64_t)llround(target));
	if (op->submit_rate < 0.95 * target) {
		fmt_count(a, sizeof(a), (uint64_t)llround(op->submit_rate));
		fprintf(stderr, PROG ": warning: target rate not met: submitted at %s tasks/s "
			"of %s; the producers fell behind (their lateness counts in the latency "
			"from the due time)\n", a, b);
	}
	if (op->complete_rate < 0.95 * target) {
		fmt_count(a, sizeof(a), (uint64_t)llround(op->complete_rate));
		fprintf(stderr, PROG ": warning: the pool completed %s tasks/s of %s: it is "
			"overloaded at this rate, and the latencies grow with --duration\n", a, b);
	}
}

int
main(int argc, char **argv)
{
	struct options o;
	parse_options(argc, argv, &o);

	/* Open the outputs first: a bad path should not cost a whole run. */
	if (o.hgrm) {
		char *dname = with_infix(o.hgrm, "dispatch");
		close_or_die(open_or_die(o.hgrm), o.hgrm);
		close_or_die(open_or_die(dname), dname);
		free(dname);
	}
	FILE *trace = o.trace ? open_or_die(o.trace) : NULL;

	struct heist_config cfg = {.threads = o.threads, .pin = o.pin, .profile = true,
				   .profile_every = o.sample, .profile_buffer = o.buffer,
				   .injector_limit = o.injector_limit, .spin = o.spin};
	heist_pool *pool;
	int err = heist_pool_create(&pool, &cfg);
	if (err)
		die_err("heist_pool_create", err);
	struct heist_profile_clock clock;
	if ((err = heist_profile_clock(&clock)))
		die_err("heist_profile_clock", err);

	struct run r = {.o = &o, .pool = pool};
	run_workload(&r);

	struct result *res = collect(&r);
	const struct heist_latency_report *rep = result_report(res);
	if (r.expected && !r.interrupted && rep->sampled_every == 1 &&
	    rep->end_to_end.count != r.expected * o.repeat)
		fprintf(stderr, PROG ": warning: the profiler counted %" PRIu64 " tasks, "
			"expected %" PRIu64 "\n", rep->end_to_end.count, r.expected * o.repeat);
	warn_rates(&r);

	if (o.json)
		print_json(&r, res);
	else
		print_table(&r, res);
	if (fflush(stdout)) {
		fprintf(stderr, PROG ": stdout: %s\n", strerror(errno));
		return 1;
	}
	if (o.hgrm)
		write_hgrms(o.hgrm, &r, res);
	if (o.trace)
		write_trace(trace, o.trace, &r, res);

	heist_pool_destroy(pool);
	result_free(res);
	open_free(&r);
	free(r.array);
	free(r.repeat_ns);
	free(r.repeat_mark);
	free(r.base_thread);
	if (r.interrupted)
		fprintf(stderr, PROG ": stopped by Ctrl-C; the report covers what ran\n");
	return r.interrupted ? EXIT_INTERRUPTED : 0;
}
