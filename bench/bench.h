/* bench.h - what every workload file of heist-bench shares: the options, the measuring
 * loop (one warm-up, then repetitions with the implementations alternated so that drift
 * hits all of them alike, then medians), the result rows that end up in the one table,
 * and failing loudly on a wrong answer. The workloads themselves are defined in
 * WORKLOADS.md; each lives in its own w_*.c file. */
#ifndef HEIST_BENCH_H
#define HEIST_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <heist/heist.h>

enum {
	BENCH_MAX_REPS = 99,	/* timed repetitions per implementation, at most */
	BENCH_MAX_ROWS = 192,
	ROW_MAX_METRICS = 8,
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

/* Sleep for ms milliseconds (EINTR-safe). */
void bench_sleep_ms(unsigned ms);

/* A wrong answer or a broken setup: print to stderr and exit(1). */
void bench_fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* A progress line on stderr (the table goes to stdout). */
void bench_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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
heist_pool *bench_heist_pool_with(unsigned threads, enum heist_pin pin, bool profile);

struct row;

/* On a heist-pin row: where the pool's workers are bound (heist_pool_placement), or
 * that binding failed, and that little difference is expected on a small machine. */
void bench_pin_note(struct row *r, const heist_pool *pool);

/*
 * One way to run a workload: an implementation at a thread count. run() performs one
 * run, times only the parallel region (inputs are reset before its clock starts),
 * checks its answer (bench_fail on a wrong one) and returns the nanoseconds; rep is -1
 * for the warm-up, else 0..reps-1.
 */
struct variant {
	const char *impl;
	unsigned threads;
	uint64_t (*run)(void *ctx, int rep);
	void *ctx;
	uint64_t ns[BENCH_MAX_REPS];
	uint64_t median_ns;
};

/* Append a variant to v[*n] when --impl enables impl. */
void bench_add(const struct bench_opts *o, struct variant *v, unsigned *n, const char *impl,
	       unsigned threads, uint64_t (*run)(void *ctx, int rep), void *ctx);

/* Fail loudly unless got == want. */
void bench_check(const char *workload, const char *impl, unsigned threads, long long got,
		 long long want);

/* Warm up each variant once, then run o->reps repetitions, in each of which every
 * variant runs once, in the order given; fills ns[] and median_ns. */
void bench_measure(const struct bench_opts *o, struct variant *v, unsigned n);

/* The variant whose impl and threads match, or NULL. */
struct variant *bench_find(struct variant *v, unsigned n, const char *impl, unsigned threads);

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
	__attribute__((format(printf, 4, 5)));

/* A free-text remark appended to the row (both table and JSON). */
void row_note(struct row *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Add the rows of a measured set of variants (time = median). Returns nothing; use
 * bench_row_for() to attach metrics afterwards. */
void bench_rows_from(const char *workload, const char *size, struct variant *v, unsigned n);

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

/* In an --rss child, bench_measure resets the peak RSS before its warm-up and reads it
 * after its last run, and the rows added next carry that peak. Reset: true if the
 * kernel let us (/proc/self/clear_refs). Peak: VmHWM in KiB, or -1. */
bool bench_rss_reset_peak(void);
long bench_rss_peak_kib(void);

/* In an --rss child: print every row's peak RSS on stdout, one tab-separated line each
 * ("rss", workload, size, impl, threads, KiB), for the parent to read. */
void bench_rss_report(void);

/* Print every row: the table, or JSON with --json. */
void bench_print(const struct bench_opts *o);

#endif /* HEIST_BENCH_H */
