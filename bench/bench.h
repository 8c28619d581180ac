/* SPDX-License-Identifier: MIT */
/* bench.h - what every workload file of heist-bench shares: the options; the table a
 * workload describes itself with (struct bench_workload: sizes, inputs, answer check,
 * figures, and a static array of variants, struct bench_impl); the one driver that
 * measures them all alike (one warm-up, then repetitions with the implementations
 * alternated so that drift hits all of them alike, then medians); the result rows that
 * end up in the one table; and failing loudly on a wrong answer. The workloads
 * themselves are defined in docs/workloads.md; each lives in its own w_*.c file. */
#ifndef HEIST_BENCH_H
#define HEIST_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <heist/heist.h>

enum {
	BENCH_MAX_REPS = 99,	/* timed repetitions per implementation, at most */
	BENCH_MAX_ROWS = 256,	/* every workload, W10 included (48 rows) */
	ROW_MAX_METRICS = 8,
	BENCH_MAX_SIZES = 8,	/* per workload: W10's four shapes at two widths */
};

struct bench_opts {
	unsigned threads;	/* --threads: workers of the parallel implementations */
	unsigned reps;		/* timed repetitions per implementation (after one warm-up) */
	unsigned settle_ms;	/* pause after every run, so spinning idle threads of the
				   implementation that just ran do not eat the next one's CPU
				   (at least 20 ms after OpenMP runs: see bench.c) */
	bool quick;		/* --quick: small sizes, a smoke run */
	bool json;		/* --json: print JSON instead of the table */
	const char *only;	/* --only: comma list of workloads, or NULL for all */
	const char *impls;	/* --impl: comma list of implementations, or NULL for all */
	bool exact;		/* --exact: --only and --impl match names only, not groups
				   ("W5" is then not "W5-fine", "heist" not "heist-pin") */
	bool rss;		/* --rss: peak RSS per workload and implementation (rss.c) */
	bool rss_child;		/* internal: a child of --rss; prints its peak RSS only */
};

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);

/* CPU time so far, user + system, in ms (cpu.c): the process's (every thread's), and
 * the calling thread's. */
double bench_cpu_ms(void);
double bench_thread_cpu_ms(void);

/* Sleep for ms milliseconds (EINTR-safe). */
void bench_sleep_ms(unsigned ms);

/* A wrong answer or a broken setup: print to stderr and exit(1). */
/* printf-style checks. MinGW's gcc checks a plain format(printf) as Microsoft's printf
 * (no %zu); on Windows the bench is built with __USE_MINGW_ANSI_STDIO=1
 * (bench/meson.build), so its printf is C99's: gnu_printf says so. */
#if defined(__MINGW32__)
#define BENCH_PRINTF(f, a) __attribute__((format(gnu_printf, f, a)))
#else
#define BENCH_PRINTF(f, a) __attribute__((format(printf, f, a)))
#endif

void bench_fail(const char *fmt, ...) __attribute__((noreturn)) BENCH_PRINTF(1, 2);

/* A progress line on stderr (the table goes to stdout). */
void bench_progress(const char *fmt, ...) BENCH_PRINTF(1, 2);

/* Progress lines are dropped (an --rss child): only failures reach stderr. */
extern bool bench_quiet;

/* Whether --only selects the workload: name (e.g. "W5-fine") or its group ("W5"); with
 * --exact, the name only. */
bool bench_selected(const struct bench_opts *o, const char *group, const char *name);

/* Whether --impl lets the implementation run ("serial", "baseline", "heist", ...). A
 * variant named base-suffix ("heist-pin") runs when the list names it or, without
 * --exact, its base ("heist"). */
bool bench_impl_enabled(const struct bench_opts *o, const char *impl);

/* A heist pool of the given size, or exit(1) saying why not. */
heist_pool *bench_heist_pool(unsigned threads);

/* The same with a placement policy and the profiler on or off. */
/* profile: 0 off, else heist_config.profile on with profile_every = profile. */
heist_pool *bench_heist_pool_with(unsigned threads, enum heist_pin pin, unsigned profile);

struct row;

/* ---- the workload table and its driver ------------------------------------------ */

struct baseline_pool;
struct bench_set;
struct bench_workload;
struct peer;

/* The pool the driver makes for a variant and keeps for the workload's later sizes
 * (W5 and W5-fine share theirs), so that pools live across repetitions and sizes. */
enum bench_pool {
	POOL_NONE,		/* serial: no pool */
	POOL_HEIST,		/* heist: HEIST_PIN_NONE, profiler off */
	POOL_HEIST_PROF,	/* heist_config.profile = true */
	POOL_HEIST_SAMPLE,	/* and profile_every = BENCH_PROFILE_EVERY */
	POOL_HEIST_PIN,		/* heist_config.pin = HEIST_PIN_CORE */
	POOL_BASELINE,		/* baseline_pool.c */
	POOL_PEER,		/* another runtime (peers.h), named by the impl; left out
				   when it was not built */
};

enum { THREADS = 0 };	/* bench_impl.threads: the --threads count */
enum { BENCH_PROFILE_EVERY = 64 };	/* POOL_HEIST_SAMPLE's sampling */

/* What a run found, for the workload's check(). */
struct bench_answer {
	long long value;	/* fib(n), solutions, nodes, tasks */
	uint64_t sum;		/* W3, W8: the checksum mod 2^64 */
};

/* A tree's answer (W3, W8): how many nodes, and their checksum. */
static inline struct bench_answer
bench_tree_answer(uint64_t count, uint64_t checksum)
{
	struct bench_answer a = { (long long)count, checksum };
	return a;
}

/* A size: the rows' size column, and its numbers as its workload reads them (W4: n and
 * loops, W8: depth and payload, ...). */
struct bench_param {
	const char *label;	/* NULL: setup() writes it */
	uint64_t a, b;
};

/* One size of a workload: the rows' workload column (and its --only name), and the
 * numbers for the full run and for --quick. */
struct bench_size {
	const char *name;
	struct bench_param full, quick;
};

/* One run of one variant, as the workload's functions see it. */
struct bench_job {
	struct bench_param p;		/* the size */
	void *in;			/* the size's inputs, from setup() (may be NULL) */
	const char *impl;
	unsigned threads;
	enum bench_pool kind;
	heist_pool *pool;		/* POOL_HEIST*: the pool, else NULL */
	struct baseline_pool *bpool;	/* POOL_BASELINE: the pool, else NULL */
	const struct peer *peer;	/* POOL_PEER: the runtime's functions, else NULL */
	unsigned slot;			/* the variant's index among this size's variants */
	int rep;			/* -1 for the warm-up, else 0..reps-1 */
	struct bench_answer answer;	/* where run() leaves its result for check() */
};

/*
 * One line of a workload's table of variants: an implementation at a thread count.
 * run() performs one repetition (the parallel region and nothing else: it is all the
 * clock sees) and leaves its answer in the job, or in the workload's inputs.
 */
struct bench_impl {
	const char *impl;		/* the row's impl, and what --impl matches */
	unsigned threads;		/* 1, or THREADS */
	enum bench_pool pool;
	void (*run)(struct bench_job *j);
	bool count_allocs;		/* count heap allocations over repetition 0 */
	bool (*when)(const struct bench_set *s);	/* whether the size has it; NULL: all */
	const char *note;		/* a fixed remark for its rows, or NULL */
};

/* One measured variant: its table line, its job, and what the driver measured. */
struct variant {
	const struct bench_impl *spec;
	struct bench_job job;		/* job.impl and job.threads name it */
	uint64_t ns[BENCH_MAX_REPS];
	uint64_t median_ns;
	uint64_t allocs;		/* count_allocs: heap allocations in repetition 0 */
	bool counted;			/* allocs was counted (count_allocs, malloc counting on) */
	struct row *row;		/* its row, once added */
};

enum { BENCH_MAX_VARIANTS = 14 };	/* W1: 12 rows with the C++ and worker-passing ones */

/* One size of one workload, while it is measured. */
struct bench_set {
	const struct bench_opts *o;
	const struct bench_workload *w;
	unsigned index;			/* which of the workload's sizes */
	const char *name;		/* its name ("W5-fine") */
	struct bench_param p;
	char size[24];			/* the rows' size column: p.label, or setup() writes it */
	char detail[40];		/* setup() may add to the progress line: " (16 per run)" */
	void *in;			/* what setup() returned */
	struct variant v[BENCH_MAX_VARIANTS];
	unsigned n;
	void *allocs[8];		/* bench_alloc's, freed after the size */
	unsigned nallocs;
};

/*
 * A workload: its sizes, its inputs, its answer check, and its table of variants. For
 * each size --only selects, the driver makes the variants' pools (kept for the
 * workload's later sizes), calls setup() (inputs and reference answers, before any
 * clock), warms every variant up once, then runs o->reps repetitions, in each of which
 * every variant runs once in table order, each run being reset() (untimed), run()
 * (timed), check() (untimed; bench_fail on a wrong answer); then it takes the medians,
 * calls times(), adds a row per variant with the median as its time, calls figures(),
 * adds the variants' notes, calls teardown() and frees what bench_alloc gave. Every
 * hook may be NULL. A size with no variant left (by --impl, or the table's when())
 * is skipped, setup() included. A workload marked only_named runs only when --only
 * is given (and selects it).
 */
struct bench_workload {
	const char *group;		/* --only selects every size by this, without --exact */
	const char *title;		/* for the progress line: "W2 nqueens n=10:" */
	unsigned nsizes;
	struct bench_size sizes[BENCH_MAX_SIZES];
	void *(*setup)(struct bench_set *s);
	void (*teardown)(void *in);	/* what bench_alloc does not free */
	void (*reset)(struct bench_job *j);
	void (*check)(const struct bench_job *j);
	void (*times)(struct bench_set *s);	/* set median_ns when the rows show another time */
	void (*figures)(struct bench_set *s);
	const struct bench_impl *impls;
	unsigned nimpls;
	bool only_named;		/* runs only when --only selects it, not by default
					   (W10: its full sizes take minutes) */
};

#define BENCH_IMPLS(table) .impls = (table), .nimpls = sizeof(table) / sizeof((table)[0])

/* Zeroed memory for n objects of size bytes that lives until the size's rows are done
 * (setup's inputs); exit(1) if there is none. */
void *bench_alloc(struct bench_set *s, size_t n, size_t size);

/* The peer runtime whose rows are called impl ("omp", "tbb"), or NULL if it was not
 * built. */
const struct peer *bench_peer(const char *impl);

/* Measure each selected workload of w[0..n-1] in order and add its rows. */
void bench_run(const struct bench_opts *o, const struct bench_workload *const *w, size_t n);

/* Fail loudly unless got == want. */
void bench_check(const char *workload, const char *impl, unsigned threads, long long got,
		 long long want);

/* The same for a checksum mod 2^64, printed in hex. */
void bench_check_sum(const char *what, const struct bench_job *j, uint64_t got, uint64_t want);

/* Fail loudly unless got[0..n) and want[0..n) are equal bit for bit (the array answers
 * of W4, W5 and W7): what names the workload and size, cause says what a difference
 * means. */
void bench_check_array(const char *what, const struct bench_job *j, const double *got,
		       const double *want, size_t n, const char *cause);

/* The set's variant whose impl and threads match, or NULL. */
struct variant *bench_find(struct bench_set *s, const char *impl, unsigned threads);

/* The set's row for impl and threads, or NULL (row_metric and row_note accept NULL). */
struct row *bench_set_row(struct bench_set *s, const char *impl, unsigned threads);

/* On the set's heist-pin row (--threads workers), if it has one: where the pool's
 * workers are bound (heist_pool_placement), or that binding failed, and that little
 * difference is expected on a small machine. */
void bench_pin_note(struct bench_set *s);

/* On every row of the set: key = median / per, shown with `decimals` decimals and unit
 * ("ns/call" with per = calls). */
void bench_figure_per(struct bench_set *s, const char *key, double per, int decimals,
		      const char *unit);

/* On every row of the set: key = count per second, shown in millions ("Mtasks/s"). */
void bench_figure_rate(struct bench_set *s, const char *key, double count, int decimals,
		       const char *unit);

/* Median (n odd) or mean of the middle two, of x[0..n-1]; sorts x. */
uint64_t bench_median(uint64_t *x, size_t n);

/* Nearest-rank percentile p (0 < p <= 100) of sorted x[0..n-1]. */
uint64_t bench_percentile(const uint64_t *sorted, size_t n, double p);

/* Sort x[0..n-1] ascending. */
void bench_sort(uint64_t *x, size_t n);

/*
 * A result row. The table shows workload, size, impl, threads, the median time and its
 * ratio to the serial row and to the heist row (heist with --threads workers) of the same
 * workload and size, then the metrics and the note. time_ns < 0 means "no time".
 */
struct row;

struct row *bench_row(const char *workload, const char *size, const char *impl,
		      unsigned threads, double time_ns);

/* A named figure: key and value go to JSON; the printf text goes to the table. */
void row_metric(struct row *r, const char *key, double value, const char *fmt, ...)
	BENCH_PRINTF(4, 5);

/* A free-text remark appended to the row (both table and JSON). */
void row_note(struct row *r, const char *fmt, ...) BENCH_PRINTF(2, 3);

/* The row already added for workload, size, impl and threads, or NULL. */
struct row *bench_row_for(const char *workload, const char *size, const char *impl,
			  unsigned threads);

/* The rows added so far, for walking them (rss.c): count, the i-th one, its keys, and
 * the peak RSS recorded with it (KiB; -1 if none: see bench_rss_peak_kib). */
unsigned bench_row_count(void);
struct row *bench_row_at(unsigned i);
const char *row_workload(const struct row *r);
const char *row_size(const struct row *r);
const char *row_impl(const struct row *r);
unsigned row_threads(const struct row *r);
long row_rss_kib(const struct row *r);
/* The value of the row's metric key, or -1 if it has none. */
double bench_row_metric(const struct row *r, const char *key);

/* --rss (rss.c): for every (workload, impl) pair that has rows, run this program again
 * as a child with only that pair and one repetition, and add the child's peak RSS per
 * size to those rows. self is the path to re-execute (/proc/self/exe). */
void bench_rss(const struct bench_opts *o, const char *self);

/* In an --rss child, the driver resets the peak RSS before each size's warm-up and
 * reads it after its last run, and that size's rows carry that peak. Reset: true if the
 * kernel let us (/proc/self/clear_refs). Peak: VmHWM in KiB, or -1. */
bool bench_rss_reset_peak(void);
long bench_rss_peak_kib(void);

/* In an --rss child: print every row's peak RSS on stdout, one tab-separated line each
 * ("rss", workload, size, impl, threads, KiB), for the parent to read. */
void bench_rss_report(void);

/* Print every row: the table, or JSON with --json. */
void bench_print(const struct bench_opts *o);

#endif /* HEIST_BENCH_H */
