/* heist-latency.c - the profiler's command-line tool. It runs one workload on a pool
 * created with .profile = true (by default W8 of docs/workloads.md: a fork-join binary
 * tree of depth 19, a 500-iteration floating-point payload per task), then prints dispatch
 * and end-to-end latency percentiles as a table, or as JSON (--json), and can write
 * HdrHistogram percentile distributions (--hgrm) and a Chrome/Perfetto trace of every
 * kept sample (--trace). The other workloads are W5 (submit) and W4 (for-each).
 *
 * Only the public API is used (heist/heist.h, heist/profile.h): this file is also an
 * example of reading the profiler. Measuring is the library's job; this file chooses
 * the workload, waits for it, and formats. The W8 tree itself is bench/w8.c, shared
 * with heist-bench's W8 rows and tests/test-profile.c and compiled in by
 * tools/meson.build. docs/profiler.md describes the output. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heist/heist.h"
#include "heist/profile.h"
#include "w8.h"		/* bench/w8.h: the W8 tree heist-bench runs too */

#define PROG "heist-latency"

/* Where --help sends the reader: the installed guide, or the source tree's. */
#ifdef HEIST_DOCDIR
#define PROFILER_GUIDE HEIST_DOCDIR "/profiler.md"
#else
#define PROFILER_GUIDE "docs/profiler.md in heist's source tree"
#endif

enum {
	MAX_DEPTH = 30,		/* 2^31 - 1 tasks: the tree's count still fits an int */
	TICKS_PER_HALF = 5,	/* HdrHistogram's default percentile ticks per half distance */
	MAX_HALVINGS = 62,	/* far beyond any count a run can reach */
	MAX_TICKS = TICKS_PER_HALF * (MAX_HALVINGS + 1) + 1,
	STDDEV_GRID = 4096,	/* quantiles integrated for a standard deviation estimate */
	EXIT_USAGE = 2,
};

enum workload { FORK_JOIN, SUBMIT, FOR_EACH };

static const char *const workload_names[] = {"fork-join", "submit", "for-each"};
static const char *const pin_names[] = {"none", "core", "pu"};

/* What the command line asked for. A value of 0 in payload_set etc. means "not given":
 * the defaults depend on the workload (W8, W5 and W4 define different payloads). */
struct options {
	enum workload workload;
	unsigned threads;
	unsigned depth;
	uint64_t payload, tasks, loops, repeat;
	unsigned sample;	/* heist_config.profile_every; 0: every task */
	uint64_t buffer;	/* heist_config.profile_buffer; 0: the library's default */
	bool depth_set, payload_set, tasks_set, loops_set;
	enum heist_pin pin;
	bool json;
	const char *hgrm, *trace;
};

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
static void
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
"              (default N = 1,000,000), which then waits for them all\n"
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
"  -r, --repeat K        run the workload K times; the profile is not reset between\n"
"                        runs, so the report merges all K (default 1)\n"
"      --buffer N        samples each worker keeps (default 262,144; at most 2^26,\n"
"                        40 bytes each): beyond, tasks count only in histograms,\n"
"                        which keep no path and give percentiles within 1%%\n"
"      --sample N        record one task in N (rounded up to a power of two;\n"
"                        heist_config.profile_every): the profiler's own cost drops\n"
"                        about N-fold; counts are then of the recorded tasks\n"
"  -j, --json            print the report as one JSON object instead of the table\n"
"      --hgrm FILE       write HdrHistogram percentile distributions (values in us):\n"
"                        end-to-end to FILE, dispatch to FILE with \".dispatch\" put\n"
"                        before the extension (lat.hgrm -> lat.dispatch.hgrm)\n"
"      --trace FILE      write a Chrome/Perfetto trace (trace-event JSON): one event per\n"
"                        kept task sample, one track per worker (ui.perfetto.dev)\n"
"  -h, --help            print this help and exit\n"
"  -V, --version         print the version and exit\n"
"\n"
"Exit status: 0 on success, 1 on a library or I/O error, 2 on bad options.\n"
"See heist-latency(1) and the profiler guide, " PROFILER_GUIDE ".\n", MAX_DEPTH);
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
	enum { OPT_PIN = 256, OPT_HGRM, OPT_TRACE, OPT_SAMPLE, OPT_BUFFER };
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
		{"json", no_argument, NULL, 'j'},
		{"hgrm", required_argument, NULL, OPT_HGRM},
		{"trace", required_argument, NULL, OPT_TRACE},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	*o = (struct options){.workload = FORK_JOIN, .depth = W8_DEPTH, .repeat = 1};
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
	static const uint64_t payloads[] = {W8_PAYLOAD, 1000, 8}, tasks[] = {0, 1000000, 10000};
	if (!o->payload_set)
		o->payload = payloads[o->workload];
	if (!o->tasks_set)
		o->tasks = tasks[o->workload];
	if (!o->loops_set)
		o->loops = o->workload == FOR_EACH ? 1000 : 0;
}

/* ---------------------------------------------------------------------------------- */
/* Workloads                                                                          */

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double
spin(unsigned iters, double x, double c)
{
	for (unsigned i = 0; i < iters; i++)
		x = x * 1.0000001 + c;
	return x;
}

/* W5: fire-and-forget tasks have no future, so the last one to finish posts. */
static struct {
	double *out;
	unsigned payload;
	atomic_uint_fast64_t left;
	sem_t done;
} storm;

static int
storm_task(void *arg)
{
	uint64_t k = (uintptr_t)arg;
	storm.out[k] = spin(storm.payload, (double)k, 1e-7);
	/* acq_rel: the last decrement sees every other task's write of out[] (each
	 * released its own decrement), and sem_post hands them to the main thread. */
	if (atomic_fetch_sub_explicit(&storm.left, 1, memory_order_acq_rel) == 1)
		sem_post(&storm.done);
	return 0;
}

/* W4 */
struct loop {
	double *a;
	unsigned payload;
};

static int
loop_body(void *arg, size_t begin, size_t end)
{
	struct loop *l = arg;
	for (size_t i = begin; i < end; i++)
		l->a[i] = spin(l->payload, l->a[i], 1e-9);
	return 0;
}

struct run {
	const struct options *o;
	heist_pool *pool;
	double *array;		/* submit: out[]; for-each: a[] */
	uint64_t expected;	/* tasks per repeat, or 0 when not known beforehand */
	double checksum;
	uint64_t *repeat_ns;	/* wall time of each repeat */
	uint64_t wall_ns;
	/* for the progress line */
	atomic_uint current;	/* 1-based repeat being run */
	double t0;
};

static void
run_once(struct run *r)
{
	const struct options *o = r->o;
	int err = 0;
	switch (o->workload) {
	case FORK_JOIN: {
		/* W8, bench/w8.c: each node is a task in its parent's frame that writes
		 * its subtree's count back, so the count checks that every task ran
		 * exactly once. */
		struct w8_result res;
		err = w8_run(r->pool, o->depth, (unsigned)o->payload, &res);
		if (err)
			die_err("heist_run", err);
		if (res.tasks != r->expected) {
			fprintf(stderr, PROG ": the tree ran %" PRIu64 " tasks, expected %"
				PRIu64 "\n", res.tasks, r->expected);
			exit(1);
		}
		r->checksum += (double)res.sum;
		break;
	}
	case SUBMIT: {
		storm.out = r->array;
		storm.payload = (unsigned)o->payload;
		/* relaxed: each heist_submit hands its task over with release, which
		 * orders this store before any task's decrement. */
		atomic_store_explicit(&storm.left, o->tasks, memory_order_relaxed);
		uint64_t k = 0;
		for (; k < o->tasks; k++) {
			err = heist_submit(r->pool, storm_task, (void *)(uintptr_t)k, NULL);
			if (err)
				break;
		}
		/* Tasks never submitted will not count down: take them off at once. */
		uint64_t missing = o->tasks - k;
		bool wait = !missing ||
			    atomic_fetch_sub_explicit(&storm.left, missing,
						      memory_order_acq_rel) != missing;
		while (wait && sem_wait(&storm.done) != 0 && errno == EINTR)
			;
		if (err)
			die_err("heist_submit", err);
		for (k = 0; k < o->tasks; k++)
			r->checksum += r->array[k];
		break;
	}
	case FOR_EACH: {
		struct loop l = {r->array, (unsigned)o->payload};
		for (uint64_t i = 0; i < o->loops; i++) {
			err = heist_for_each(r->pool, 0, o->tasks, 0, loop_body, &l);
			if (err)
				die_err("heist_for_each", err);
		}
		break;
	}
	}
}

/* The progress line: only on a terminal, only once a run takes more than a second. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop, printed;
} progress = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false};

static void
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

static void
describe_workload(char *buf, size_t size, const struct options *o)
{
	char a[32], b[32];
	switch (o->workload) {
	case FORK_JOIN:
		snprintf(buf, size, "fork-join depth %u", o->depth);
		break;
	case SUBMIT:
		fmt_count(a, sizeof(a), o->tasks);
		snprintf(buf, size, "submit %s tasks", a);
		break;
	case FOR_EACH:
		fmt_count(a, sizeof(a), o->tasks);
		fmt_count(b, sizeof(b), o->loops);
		snprintf(buf, size, "for-each %s x %s", a, b);
		break;
	}
}

static void *
progress_main(void *arg)
{
	struct run *r = arg;
	char what[96];
	describe_workload(what, sizeof(what), r->o);
	pthread_mutex_lock(&progress.lock);
	while (!progress.stop) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 250000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&progress.cond, &progress.lock, &until);
		double t = now_s() - r->t0;
		if (progress.stop || t < 1.0)
			continue;
		fprintf(stderr, "\rrunning %s: repeat %u/%" PRIu64 ", %.1f s ", what,
			atomic_load(&r->current), r->o->repeat, t);
		progress.printed = true;
	}
	if (progress.printed)
		fputs("\r\033[K", stderr);
	pthread_mutex_unlock(&progress.lock);
	return NULL;
}

static void
run_workload(struct run *r)
{
	const struct options *o = r->o;
	switch (o->workload) {
	case FORK_JOIN:
		r->expected = w8_tasks(o->depth);
		break;
	case SUBMIT:
		r->expected = o->tasks;
		if (sem_init(&storm.done, 0, 0))
			die_err("sem_init", errno);
		/* fallthrough */
	case FOR_EACH:
		r->array = malloc(o->tasks * sizeof(double));
		if (!r->array)
			die_err("malloc", ENOMEM);
		for (uint64_t i = 0; i < o->tasks; i++)	/* W4: a[i] = i */
			r->array[i] = (double)i;
		break;
	}
	r->repeat_ns = calloc(o->repeat, sizeof(*r->repeat_ns));
	if (!r->repeat_ns)
		die_err("calloc", ENOMEM);

	pthread_t prog;
	bool show = isatty(STDERR_FILENO);
	r->t0 = now_s();
	if (show && pthread_create(&prog, NULL, progress_main, r))
		show = false;
	for (uint64_t i = 0; i < o->repeat; i++) {
		atomic_store(&r->current, (unsigned)(i + 1));
		uint64_t t = now_ns();
		run_once(r);
		r->repeat_ns[i] = now_ns() - t;
		r->wall_ns += r->repeat_ns[i];
	}
	if (o->workload == FOR_EACH)
		for (uint64_t i = 0; i < o->tasks; i++)
			r->checksum += r->array[i];
	if (show) {
		pthread_mutex_lock(&progress.lock);
		progress.stop = true;
		pthread_cond_signal(&progress.cond);
		pthread_mutex_unlock(&progress.lock);
		pthread_join(prog, NULL);
	}
}

/* ---------------------------------------------------------------------------------- */
/* Collecting the report                                                              */

/* enum heist_dispatch_path's names, for the table and JSON. */
static const char *const path_names[HEIST_PATHS] = {"inline", "own", "stolen", "injector",
						    "helping", "guest"};
static const char *const path_help[HEIST_PATHS] = {
	"synced by its parent, or claimed by its waiter",
	"popped from the runner's own deque",
	"stolen by an idle worker",
	"taken from the injector",
	"run by a thread inside a wait",
	"run by the guest slot (an outside heist_for_each)",
};

struct result {
	struct heist_latency_report rep;
	struct heist_latency_report path[HEIST_PATHS];	/* by dispatch path */
	struct heist_stats stats;
	double stddev_ns[2];	/* dispatch, end-to-end */
	bool stddev_exact;
	/* JSON's percentile points, at HdrHistogram's ticks */
	size_t nticks;
	double ticks[MAX_TICKS];
	uint64_t at[2][MAX_TICKS];
};

/* A worker records a task's sample just after the task returns, so a waiter woken by
 * the task's end can look before the last samples are in. Every task was counted in
 * the statistics before it started; wait (briefly) until the profile caught up. */
static void
settle(heist_pool *pool, struct result *res)
{
	int err;
	for (int tries = 0;; tries++) {
		if ((err = heist_pool_stats(pool, &res->stats)))
			die_err("heist_pool_stats", err);
		if ((err = heist_profile_report(pool, &res->rep)))
			die_err("heist_profile_report", err);
		if (res->rep.end_to_end.count >= res->stats.executed || tries == 1000)
			return;
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
}

/* The nearest rank profile.c uses: ceil(q * count), at least 1. */
static uint64_t
rank_of(double q, uint64_t count)
{
	double r = ceil(q * (double)count);
	return r < 1 ? 1 : (uint64_t)r;
}

/* HdrHistogram's percentile ticks: TICKS_PER_HALF equal steps in each half of the
 * remaining distance to 100% (0, 10, .., 40, 50, 55, .., 70, 75, 77.5, ..), up to the
 * first tick whose rank is the last sample, then 100% itself. */
static size_t
make_ticks(uint64_t count, double *q)
{
	size_t n = 0;
	for (int h = 0; h <= MAX_HALVINGS; h++) {
		double base = 1.0 - ldexp(1.0, -h), step = ldexp(1.0, -(h + 1)) / TICKS_PER_HALF;
		for (int j = 0; j < TICKS_PER_HALF; j++) {
			double p = base + j * step;
			if (p >= 1.0)	/* beyond a double's resolution */
				goto last;
			q[n++] = p;
			if (rank_of(p, count) >= count)
				goto last;
		}
	}
last:
	q[n++] = 1.0;
	return n;
}

struct moments {
	long double sum2[2];
	double mean[2];
	uint64_t n;
};

static uint64_t
since(uint64_t from, uint64_t to)
{
	return to > from ? to - from : 0;	/* the library clamps skew the same way */
}

static void
add_moments(void *ctx, const struct heist_profile_sample *s)
{
	struct moments *m = ctx;
	long double d = (long double)since(s->created, s->started) - m->mean[0];
	long double e = (long double)since(s->created, s->ended) - m->mean[1];
	m->sum2[0] += d * d;
	m->sum2[1] += e * e;
	m->n++;
}

static void
collect(heist_pool *pool, struct result *res)
{
	int err;
	settle(pool, res);
	const struct heist_latency_report *rep = &res->rep;
	double per_ns = rep->clock.cycles_per_ns;
	uint64_t count = rep->end_to_end.count;

	for (int k = 0; k < HEIST_PATHS; k++)
		if ((err = heist_profile_path_report(pool, (enum heist_dispatch_path)k,
						     &res->path[k])))
			die_err("heist_profile_path_report", err);
	res->nticks = make_ticks(count, res->ticks);
	for (int k = 0; k < 2; k++)
		if ((err = heist_profile_percentiles(pool, (enum heist_latency_kind)k, res->ticks,
						     res->at[k], res->nticks)))
			die_err("heist_profile_percentiles", err);

	/* Standard deviation (the .hgrm footer): from every sample when all were kept,
	 * else by integrating the quantile function on a fine grid. */
	res->stddev_exact = rep->exact;
	if (!count)
		return;
	if (rep->exact) {
		struct moments m = {.mean = {rep->dispatch.mean, rep->end_to_end.mean}};
		if ((err = heist_profile_samples(pool, add_moments, &m)))
			die_err("heist_profile_samples", err);
		for (int k = 0; k < 2; k++)
			res->stddev_ns[k] = m.n ? sqrt((double)(m.sum2[k] / m.n)) / per_ns : 0;
		return;
	}
	double *q = malloc(STDDEV_GRID * sizeof(*q));
	uint64_t *v = malloc(STDDEV_GRID * sizeof(*v));
	if (!q || !v)
		die_err("malloc", ENOMEM);
	for (int i = 0; i < STDDEV_GRID; i++)
		q[i] = (i + 0.5) / STDDEV_GRID;
	for (int k = 0; k < 2; k++) {
		if ((err = heist_profile_percentiles(pool, (enum heist_latency_kind)k, q, v,
						     STDDEV_GRID)))
			die_err("heist_profile_percentiles", err);
		double mean = k ? rep->end_to_end.mean : rep->dispatch.mean, s2 = 0;
		for (int i = 0; i < STDDEV_GRID; i++)
			s2 += ((double)v[i] - mean) * ((double)v[i] - mean);
		res->stddev_ns[k] = sqrt(s2 / STDDEV_GRID) / per_ns;
	}
	free(q);
	free(v);
}

/* ---------------------------------------------------------------------------------- */
/* The table                                                                          */

static const char *
calibration_name(int c)
{
	switch (c) {
	case 1: return "from CPUID leaf 0x15 / CNTFRQ (the counter's nominal frequency)";
	case 2: return "measured against CLOCK_MONOTONIC_RAW";
	default: return "none needed";
	}
}

static const char *
calibration_key(int c)
{
	return c == 1 ? "frequency-register" : c == 2 ? "measured" : "none";
}

/* A duration with a unit chosen for its size. */
static void
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

static void
fmt_latency(char *buf, size_t size, double cycles, double ns, bool is_ns_clock)
{
	char c[32], t[32];
	fmt_time(t, sizeof(t), ns);
	if (is_ns_clock) {	/* the counter is CLOCK_MONOTONIC: cycles are ns */
		snprintf(buf, size, "%s", t);
		return;
	}
	fmt_count(c, sizeof(c), (uint64_t)llround(cycles));
	snprintf(buf, size, "%s cycles (%s)", c, t);
}

/* Display columns of a UTF-8 string (µ is two bytes, one column). */
static int
width(const char *s)
{
	int w = 0;
	for (; *s; s++)
		w += ((unsigned char)*s & 0xC0) != 0x80;
	return w;
}

static void
print_padded(FILE *f, const char *s, int w)
{
	fputs(s, f);
	for (int i = width(s); i < w; i++)
		fputc(' ', f);
}

/* The scheduler's own numbers first: dispatch by path, and the steal latency. */
static void
print_paths(const struct result *res, bool ns_clock)
{
	const struct heist_latency_report *rep = &res->rep;
	char a[64], p50[96], p99[96], p999[96];
	printf("How tasks reached their threads (dispatch latency, created -> started, by "
	       "path):\n");
	printf("  %-9s %12s  %-10s %-10s %-10s\n", "path", "tasks", "P50", "P99", "P99.9");
	bool partial = false;
	for (int k = 0; k < HEIST_PATHS; k++) {
		const struct heist_latency *d = &res->path[k].dispatch;
		if (!rep->path_count[k])
			continue;
		fmt_count(a, sizeof(a), rep->path_count[k]);
		if (d->count) {
			fmt_time(p50, sizeof(p50), d->p50_ns);
			fmt_time(p99, sizeof(p99), d->p99_ns);
			fmt_time(p999, sizeof(p999), d->p999_ns);
		} else {	/* none of them is in the buffers */
			snprintf(p50, sizeof(p50), "-");
			snprintf(p99, sizeof(p99), "-");
			snprintf(p999, sizeof(p999), "-");
		}
		printf("  %-9s %12s%s ", path_names[k], a, res->path[k].exact ? " " : "*");
		print_padded(stdout, p50, 10);
		putchar(' ');
		print_padded(stdout, p99, 10);
		putchar(' ');
		print_padded(stdout, p999, 10);
		printf(" %s\n", path_help[k]);
		partial |= !res->path[k].exact;
	}
	if (partial)
		printf("  * percentiles of the samples kept in the buffers only (the histograms "
		       "keep no path)\n");
	const struct heist_latency *s = &rep->steal;
	if (s->count) {
		fmt_count(a, sizeof(a), s->count);
		fmt_time(p50, sizeof(p50), s->p50_ns);
		fmt_time(p99, sizeof(p99), s->p99_ns);
		fmt_time(p999, sizeof(p999), s->p999_ns);
		printf("steal latency (published -> started, %s stolen tasks): P50 %s, P99 %s, "
		       "P99.9 %s\n", a, p50, p99, p999);
	} else {
		printf("steal latency: no task was stolen\n");
	}
	(void)ns_clock;
	printf("\nEvery task, whatever its path (a spawned child's dispatch includes its wait "
	       "for the parent's heist_sync):\n");
}

static void
print_table(const struct run *r, const struct result *res)
{
	const struct options *o = r->o;
	const struct heist_latency_report *rep = &res->rep;
	const struct heist_latency *d = &rep->dispatch, *e = &rep->end_to_end;
	bool ns_clock = !strcmp(rep->clock.name, "clock_gettime");
	char a[64], b[64], c[64];

	switch (o->workload) {
	case FORK_JOIN:
		fmt_count(a, sizeof(a), r->expected);
		printf("workload: fork-join (W8), binary tree of depth %u: %s tasks, payload "
		       "%" PRIu64 " iterations per task\n", o->depth, a, o->payload);
		break;
	case SUBMIT:
		fmt_count(a, sizeof(a), o->tasks);
		printf("workload: submit (W5), %s fire-and-forget tasks from the main thread, "
		       "payload %" PRIu64 " iterations per task\n", a, o->payload);
		break;
	case FOR_EACH:
		fmt_count(a, sizeof(a), o->tasks);
		fmt_count(b, sizeof(b), o->loops);
		printf("workload: for-each (W4), %s doubles x %s loops, payload %" PRIu64
		       " iterations per element\n", a, b, o->payload);
		break;
	}
	printf("pool:     %u workers, pin %s", res->stats.workers, pin_names[o->pin]);
	if (o->repeat > 1)
		printf("; %" PRIu64 " repeats, merged (the profile is not reset between "
		       "them)", o->repeat);
	printf("\n");
	printf("clock:    %s, %.4f cycles/ns, calibration %s, %s\n", rep->clock.name,
	       rep->clock.cycles_per_ns, calibration_name(rep->clock.calibration),
	       rep->clock.invariant ? "invariant" : "not invariant");
	fmt_count(a, sizeof(a), e->count);
	if (rep->sampled_every > 1)
		printf("sampling: one task in %" PRIu64 " recorded (--sample)\n",
		       rep->sampled_every);
	if (rep->exact) {
		printf("samples:  %s, all kept: percentiles are exact\n", a);
	} else {
		fmt_count(b, sizeof(b), rep->samples_dropped);
		fmt_count(c, sizeof(c), rep->buffer_samples);
		printf("samples:  %s, of which %s overflowed the buffers (%s per worker):\n"
		       "          percentiles come from histograms (within 1%%); count, min, "
		       "max and mean are exact\n", a, b, c);
	}
	printf("\n");
	print_paths(res, ns_clock);

	struct {
		const char *name;
		double dc, dn, ec, en;
	} rows[] = {
		{"min", (double)d->min, d->min_ns, (double)e->min, e->min_ns},
		{"mean", d->mean, d->mean_ns, e->mean, e->mean_ns},
		{"P50", (double)d->p50, d->p50_ns, (double)e->p50, e->p50_ns},
		{"P90", (double)d->p90, d->p90_ns, (double)e->p90, e->p90_ns},
		{"P99", (double)d->p99, d->p99_ns, (double)e->p99, e->p99_ns},
		{"P99.9", (double)d->p999, d->p999_ns, (double)e->p999, e->p999_ns},
		{"P99.99", (double)d->p9999, d->p9999_ns, (double)e->p9999, e->p9999_ns},
		{"max", (double)d->max, d->max_ns, (double)e->max, e->max_ns},
	};
	enum { NROWS = sizeof(rows) / sizeof(rows[0]) };
	char cells[NROWS][2][96];
	const char *head1 = "Dispatch latency (wait)", *head2 = "End-to-end";
	int w1 = width(head1), w2 = width(head2);
	for (int i = 0; i < NROWS; i++) {
		fmt_latency(cells[i][0], sizeof(cells[i][0]), rows[i].dc, rows[i].dn, ns_clock);
		fmt_latency(cells[i][1], sizeof(cells[i][1]), rows[i].ec, rows[i].en, ns_clock);
		if (width(cells[i][0]) > w1)
			w1 = width(cells[i][0]);
		if (width(cells[i][1]) > w2)
			w2 = width(cells[i][1]);
	}
	fmt_count(a, sizeof(a), d->count);
	fmt_count(b, sizeof(b), e->count);
	printf("  %-10s | ", "Percentile");
	print_padded(stdout, head1, w1);
	printf(" | %s\n", head2);
	printf("  -----------+-");
	for (int i = 0; i < w1; i++)
		putchar('-');
	printf("-+-");
	for (int i = 0; i < w2; i++)
		putchar('-');
	printf("\n");
	printf("  %-10s | ", "count");
	print_padded(stdout, a, w1);
	printf(" | %s\n", b);
	for (int i = 0; i < NROWS; i++) {
		printf("  %-10s | ", rows[i].name);
		print_padded(stdout, cells[i][0], w1);
		printf(" | %s\n", cells[i][1]);
	}
	printf("\n");

	const struct heist_stats *s = &res->stats;
	char n[7][32];
	uint64_t v[7] = {s->executed, s->spawned, s->stolen, s->steal_attempts,
			 s->injector_pops, s->sleeps, s->wakes};
	for (int i = 0; i < 7; i++)
		fmt_count(n[i], sizeof(n[i]), v[i]);
	printf("pool statistics: %s tasks executed, %s spawned, %s stolen, %s steal "
	       "attempts,\n                 %s injector pops, %s sleeps, %s wakes\n",
	       n[0], n[1], n[2], n[3], n[4], n[5], n[6]);
	fmt_time(a, sizeof(a), (double)r->wall_ns);
	fmt_count(b, sizeof(b), (uint64_t)llround((double)e->count * 1e9 /
						 (double)(r->wall_ns ? r->wall_ns : 1)));
	printf("wall time:       %s", a);
	if (o->repeat > 1) {
		fmt_time(c, sizeof(c), (double)r->wall_ns / (double)o->repeat);
		printf(" (%" PRIu64 " repeats, %s each on average)", o->repeat, c);
	}
	printf(", %s tasks/s\n", b);
}

/* ---------------------------------------------------------------------------------- */
/* JSON                                                                               */

static void
json_latency(FILE *f, const char *name, const struct heist_latency *l, double stddev_ns)
{
	fprintf(f, "  \"%s\": {\"count\": %" PRIu64 ", \"min\": %" PRIu64 ", \"max\": %" PRIu64
		", \"mean\": %.3f, \"p50\": %" PRIu64 ", \"p90\": %" PRIu64 ", \"p99\": %" PRIu64
		", \"p999\": %" PRIu64 ", \"p9999\": %" PRIu64 ",\n", name, l->count, l->min,
		l->max, l->mean, l->p50, l->p90, l->p99, l->p999, l->p9999);
	fprintf(f, "    \"min_ns\": %.3f, \"max_ns\": %.3f, \"mean_ns\": %.3f, \"p50_ns\": %.3f, "
		"\"p90_ns\": %.3f, \"p99_ns\": %.3f, \"p999_ns\": %.3f, \"p9999_ns\": %.3f, ",
		l->min_ns, l->max_ns, l->mean_ns, l->p50_ns, l->p90_ns, l->p99_ns, l->p999_ns,
		l->p9999_ns);
	if (isnan(stddev_ns))	/* not computed for this distribution */
		fprintf(f, "\"stddev_ns\": null}");
	else
		fprintf(f, "\"stddev_ns\": %.3f}", stddev_ns);
}

static void
print_json(const struct run *r, const struct result *res)
{
	const struct options *o = r->o;
	const struct heist_latency_report *rep = &res->rep;
	const struct heist_stats *s = &res->stats;
	double per_ns = rep->clock.cycles_per_ns;
	FILE *f = stdout;

	fprintf(f, "{\n  \"tool\": \"" PROG "\", \"version\": \"%s\",\n", HEIST_VERSION);
	fprintf(f, "  \"workload\": \"%s\",\n", workload_names[o->workload]);
	fprintf(f, "  \"parameters\": {\"threads\": %u, \"workers\": %u, \"pin\": \"%s\", "
		"\"payload\": %" PRIu64 ", \"repeat\": %" PRIu64 ", \"merged\": true",
		o->threads, s->workers, pin_names[o->pin], o->payload, o->repeat);
	if (o->workload == FORK_JOIN)
		fprintf(f, ", \"depth\": %u", o->depth);
	else
		fprintf(f, ", \"tasks\": %" PRIu64, o->tasks);
	if (o->workload == FOR_EACH)
		fprintf(f, ", \"loops\": %" PRIu64, o->loops);
	fprintf(f, "},\n");
	if (r->expected)
		fprintf(f, "  \"expected_tasks\": %" PRIu64 ",\n", r->expected * o->repeat);
	else
		fprintf(f, "  \"expected_tasks\": null,\n");
	if (isfinite(r->checksum))	/* JSON has no inf */
		fprintf(f, "  \"checksum\": %.17g,\n", r->checksum);
	else
		fprintf(f, "  \"checksum\": null,\n");
	fprintf(f, "  \"clock\": {\"name\": \"%s\", \"cycles_per_ns\": %.6f, \"invariant\": %d, "
		"\"calibration\": %d, \"calibration_method\": \"%s\"},\n", rep->clock.name,
		rep->clock.cycles_per_ns, rep->clock.invariant, rep->clock.calibration,
		calibration_key(rep->clock.calibration));
	fprintf(f, "  \"exact\": %s, \"samples_kept\": %" PRIu64 ", \"samples_dropped\": %"
		PRIu64 ", \"buffer_samples_per_worker\": %" PRIu64 ", \"stddev_exact\": %s,\n",
		rep->exact ? "true" : "false", rep->samples_kept, rep->samples_dropped,
		rep->buffer_samples, res->stddev_exact ? "true" : "false");
	fprintf(f, "  \"sampled_every\": %" PRIu64 ",\n", rep->sampled_every);
	json_latency(f, "dispatch", &rep->dispatch, res->stddev_ns[0]);
	fprintf(f, ",\n");
	json_latency(f, "end_to_end", &rep->end_to_end, res->stddev_ns[1]);
	fprintf(f, ",\n");
	json_latency(f, "steal", &rep->steal, NAN);
	fprintf(f, ",\n  \"paths\": {\n");
	for (int k = 0; k < HEIST_PATHS; k++) {
		const struct heist_latency_report *pr = &res->path[k];
		fprintf(f, "  \"%s\": {\"count\": %" PRIu64 ", \"exact\": %s,\n", path_names[k],
			rep->path_count[k], pr->exact ? "true" : "false");
		json_latency(f, "dispatch", &pr->dispatch, NAN);
		fprintf(f, ",\n");
		json_latency(f, "end_to_end", &pr->end_to_end, NAN);
		fprintf(f, "}%s\n", k + 1 < HEIST_PATHS ? "," : "");
	}
	fprintf(f, "  },\n");
	fprintf(f, "  \"stats\": {\"workers\": %u, \"executed\": %" PRIu64 ", \"spawned\": %"
		PRIu64 ", \"stolen\": %" PRIu64 ", \"steal_attempts\": %" PRIu64
		", \"injector_pops\": %" PRIu64 ", \"sleeps\": %" PRIu64 ", \"wakes\": %" PRIu64
		"},\n", s->workers, s->executed, s->spawned, s->stolen, s->steal_attempts,
		s->injector_pops, s->sleeps, s->wakes);
	fprintf(f, "  \"wall_ns\": %" PRIu64 ",\n  \"repeat_wall_ns\": [", r->wall_ns);
	for (uint64_t i = 0; i < o->repeat; i++)
		fprintf(f, "%s%" PRIu64, i ? ", " : "", r->repeat_ns[i]);
	fprintf(f, "],\n  \"percentiles\": [\n");
	for (size_t i = 0; i < res->nticks; i++)
		fprintf(f, "    {\"p\": %.15g, \"dispatch_cycles\": %" PRIu64 ", \"dispatch_ns\": "
			"%.3f, \"end_to_end_cycles\": %" PRIu64 ", \"end_to_end_ns\": %.3f}%s\n",
			res->ticks[i], res->at[0][i], (double)res->at[0][i] / per_ns,
			res->at[1][i], (double)res->at[1][i] / per_ns,
			i + 1 < res->nticks ? "," : "");
	fprintf(f, "  ]\n}\n");
}

/* ---------------------------------------------------------------------------------- */
/* HdrHistogram percentile distribution (.hgrm)                                       */

/* FILE with ".dispatch" before its extension: a.hgrm -> a.dispatch.hgrm, a -> a.dispatch,
 * d.x/a -> d.x/a.dispatch. Dots in directories and a leading dot do not count. */
static char *
dispatch_name(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	const char *dot = strrchr(base, '.');
	if (!dot || dot == base)
		dot = path + strlen(path);
	size_t head = (size_t)(dot - path);
	char *s = malloc(strlen(path) + sizeof(".dispatch"));
	if (!s)
		die_err("malloc", ENOMEM);
	memcpy(s, path, head);
	strcpy(s + head, ".dispatch");
	strcat(s, dot);
	return s;
}

static void
close_or_die(FILE *f, const char *path)
{
	if (ferror(f) | fclose(f)) {
		fprintf(stderr, PROG ": %s: write error\n", path);
		exit(1);
	}
}

static FILE *
open_or_die(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return f;
}

/* HdrHistogram's buckets needed to hold max with 256 sub-buckets (profile.c's layout:
 * 256 unit buckets, then 128 per power of two), counted as HdrHistogram counts them. */
static int
hdr_buckets(uint64_t max)
{
	int b = 1;
	for (uint64_t limit = 256; limit <= max && b < 64; limit <<= 1)
		b++;
	return b;
}

static void
write_hgrm(FILE *f, const char *path, const struct result *res, int kind)
{
	const struct heist_latency *l = kind ? &res->rep.end_to_end : &res->rep.dispatch;
	double per_us = res->rep.clock.cycles_per_ns * 1e3;
	fprintf(f, "%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount",
		"1/(1-Percentile)");
	if (l->count) {
		for (size_t i = 0; i + 1 < res->nticks; i++) {
			double p = res->ticks[i];
			uint64_t v = res->at[kind][i];
			/* TotalCount: the nearest rank; all of them once at the max. */
			uint64_t below = v >= l->max ? l->count : rank_of(p, l->count);
			fprintf(f, "%12.3f %2.12f %10" PRIu64 " %14.2f\n", (double)v / per_us, p,
				below, 1.0 / (1.0 - p));
			if (v >= l->max)	/* reached the largest value: then 100% */
				break;
		}
		fprintf(f, "%12.3f %2.12f %10" PRIu64 "\n", (double)l->max / per_us, 1.0,
			l->count);
	}
	fprintf(f, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n", l->mean_ns / 1e3,
		res->stddev_ns[kind] / 1e3);
	fprintf(f, "#[Max     = %12.3f, Total count    = %12" PRIu64 "]\n", l->max_ns / 1e3,
		l->count);
	fprintf(f, "#[Buckets = %12d, SubBuckets     = %12d]\n", hdr_buckets(l->max), 256);
	close_or_die(f, path);
}

/* ---------------------------------------------------------------------------------- */
/* Chrome / Perfetto trace                                                            */

struct trace {
	FILE *f;
	uint64_t t0;		/* the earliest creation time among the samples */
	double per_ns;
	uint64_t n;
	unsigned max_worker;
	bool first;
};

static void
trace_origin(void *ctx, const struct heist_profile_sample *s)
{
	struct trace *t = ctx;
	if (s->created < t->t0)
		t->t0 = s->created;
	if (s->started < t->t0)	/* skew between cores' counters */
		t->t0 = s->started;
	if (s->worker > t->max_worker)
		t->max_worker = s->worker;
	t->n++;
}

/* Nanoseconds since t0, rounded the same way for every timestamp, so that an event
 * nested in another (a child synced inline) stays nested after rounding. */
static uint64_t
trace_ns(const struct trace *t, uint64_t cycles)
{
	return (uint64_t)llround((double)since(t->t0, cycles) / t->per_ns);
}

static void
trace_event(void *ctx, const struct heist_profile_sample *s)
{
	struct trace *t = ctx;
	uint64_t start = trace_ns(t, s->started), end = trace_ns(t, s->ended);
	uint64_t created = trace_ns(t, s->created);
	uint64_t dur = end > start ? end - start : 0, wait = start > created ? start - created : 0;
	fprintf(t->f, "%s{\"name\":\"task\",\"ph\":\"X\",\"pid\":1,\"tid\":%u,"
		"\"ts\":%" PRIu64 ".%03u,\"dur\":%" PRIu64 ".%03u,"
		"\"args\":{\"dispatch_us\":%" PRIu64 ".%03u}}",
		t->first ? "" : ",\n", s->worker, start / 1000, (unsigned)(start % 1000),
		dur / 1000, (unsigned)(dur % 1000), wait / 1000, (unsigned)(wait % 1000));
	t->first = false;
}

static void
write_trace(FILE *f, const char *path, heist_pool *pool, const struct run *r,
	    const struct result *res)
{
	const struct heist_latency_report *rep = &res->rep;
	struct trace t = {.t0 = UINT64_MAX, .per_ns = rep->clock.cycles_per_ns, .first = true};
	int err = heist_profile_samples(pool, trace_origin, &t);
	if (err)
		die_err("heist_profile_samples", err);
	if (t.t0 == UINT64_MAX)
		t.t0 = 0;
	t.f = f;
	fprintf(t.f, "{\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"tool\":\"" PROG " %s\","
		"\"workload\":\"%s\",\"clock\":\"%s\",\"cycles_per_ns\":%.6f,"
		"\"tasks\":%" PRIu64 ",\"samples_kept\":%" PRIu64 ",\"samples_dropped\":%" PRIu64
		",\"buffer_samples_per_worker\":%" PRIu64 ",\"note\":\"%s\"},\n\"traceEvents\":[\n",
		HEIST_VERSION, workload_names[r->o->workload], rep->clock.name,
		rep->clock.cycles_per_ns, rep->end_to_end.count, rep->samples_kept,
		rep->samples_dropped, rep->buffer_samples,
		rep->samples_dropped ? "the profiler keeps at most buffer_samples_per_worker "
				       "samples per worker; later tasks are missing here"
				     : "every task is here");
	fprintf(t.f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
		"\"args\":{\"name\":\"" PROG " %s\"}}", workload_names[r->o->workload]);
	/* Tracks by heist_thread_index(): the workers, then, as far as the samples
	 * reach, the guest slot (an outside heist_for_each's caller) and the spares. */
	unsigned n = res->stats.workers;
	for (unsigned i = 0; i < n || i <= t.max_worker; i++) {
		char name[32];
		if (i < n)
			snprintf(name, sizeof(name), "heist-%u", i);
		else if (i == n)
			snprintf(name, sizeof(name), "guest");
		else
			snprintf(name, sizeof(name), "spare-%u", i - n - 1);
		fprintf(t.f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,"
			"\"args\":{\"name\":\"%s\"}}", i, name);
	}
	t.first = false;
	if ((err = heist_profile_samples(pool, trace_event, &t)))
		die_err("heist_profile_samples", err);
	fprintf(t.f, "\n]}\n");
	close_or_die(t.f, path);
	if (rep->samples_dropped) {
		char a[32], b[32], c[32];
		fmt_count(a, sizeof(a), rep->samples_dropped);
		fmt_count(b, sizeof(b), rep->end_to_end.count);
		fmt_count(c, sizeof(c), rep->buffer_samples);
		fprintf(stderr, PROG ": %s: %s of %s tasks are not in the trace (the profiler "
			"keeps %s samples per worker)\n", path, a, b, c);
	}
}

/* ---------------------------------------------------------------------------------- */

int
main(int argc, char **argv)
{
	struct options o;
	parse_options(argc, argv, &o);

	/* Open the outputs first: a bad path should not cost a whole run. */
	char *dname = o.hgrm ? dispatch_name(o.hgrm) : NULL;
	FILE *hgrm_e2e = o.hgrm ? open_or_die(o.hgrm) : NULL;
	FILE *hgrm_dispatch = o.hgrm ? open_or_die(dname) : NULL;
	FILE *trace = o.trace ? open_or_die(o.trace) : NULL;

	struct heist_config cfg = {.threads = o.threads, .pin = o.pin, .profile = true,
				   .profile_every = o.sample, .profile_buffer = o.buffer};
	heist_pool *pool;
	int err = heist_pool_create(&pool, &cfg);
	if (err)
		die_err("heist_pool_create", err);
	struct heist_profile_clock clock;
	if ((err = heist_profile_clock(&clock)))
		die_err("heist_profile_clock", err);

	struct run r = {.o = &o, .pool = pool};
	run_workload(&r);

	struct result *res = calloc(1, sizeof(*res));
	if (!res)
		die_err("calloc", ENOMEM);
	collect(pool, res);
	if (r.expected && res->rep.sampled_every == 1 &&
	    res->rep.end_to_end.count != r.expected * o.repeat)
		fprintf(stderr, PROG ": warning: the profiler counted %" PRIu64 " tasks, "
			"expected %" PRIu64 "\n", res->rep.end_to_end.count,
			r.expected * o.repeat);

	if (o.json)
		print_json(&r, res);
	else
		print_table(&r, res);
	if (fflush(stdout)) {
		fprintf(stderr, PROG ": stdout: %s\n", strerror(errno));
		return 1;
	}
	if (o.hgrm) {
		write_hgrm(hgrm_e2e, o.hgrm, res, HEIST_LATENCY_END_TO_END);
		write_hgrm(hgrm_dispatch, dname, res, HEIST_LATENCY_DISPATCH);
		fprintf(stderr, PROG ": wrote end-to-end latency to %s, dispatch latency "
			"to %s\n", o.hgrm, dname);
		free(dname);
	}
	if (o.trace)
		write_trace(trace, o.trace, pool, &r, res);

	heist_pool_destroy(pool);
	if (o.workload == SUBMIT)
		sem_destroy(&storm.done);
	free(res);
	free(r.array);
	free(r.repeat_ns);
	return 0;
}
