/* w_foreach.c - W4 for_each: a data-parallel loop of light work, repeated, so that the
 * fork and the join of every loop are paid each time. a[i] = i, then `reps` loops of
 * a[i] = w4_elem(a[i]) (8 rounds of x * 1.0000001 + 1e-9) over the whole array; the
 * final array must equal the serial one bit for bit.
 *
 * Rows: serial (one plain loop per repetition); heist (every repetition inside ONE
 * heist_run: a task loops calling heist_for_each, so the calling thread is a worker and
 * each loop forks in place); heist-outside (the main thread calls heist_for_each per
 * repetition, entering the pool each time); heist-nested (first size only: each
 * repetition is an outer heist_for_each over 10 blocks whose body runs heist_for_each
 * on its block, inside one heist_run, compared with the flat heist row); OpenMP (a
 * `parallel for schedule(static)` per repetition, the team's threads persisting);
 * oneTBB (parallel_for on a blocked_range, auto partitioner, every repetition inside one
 * task_arena::execute). heist always uses the automatic grain (0). */
#include "workloads.h"

#include "kernels.h"
#include "peers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NEST_BLOCKS = 10 };

struct fe {
	size_t n;
	unsigned reps;
	double *a;		/* the array every run works on, reset before its clock */
	double *ref;		/* the serial answer, computed before any clock */
	heist_pool *pool;
	unsigned threads;
};

static void
reset(struct fe *f)
{
	for (size_t i = 0; i < f->n; i++)
		f->a[i] = (double)i;
}

static void
check(const struct fe *f, const char *impl, unsigned threads)
{
	if (memcmp(f->a, f->ref, f->n * sizeof f->a[0]) == 0)
		return;
	for (size_t i = 0; i < f->n; i++)
		if (memcmp(&f->a[i], &f->ref[i], sizeof f->a[i]) != 0)
			bench_fail("WRONG ANSWER: W4 for_each n=%zu x %u, %s with %u threads: "
				   "a[%zu] = %.17g, expected %.17g (element skipped, done twice, "
				   "or its write not visible)",
				   f->n, f->reps, impl, threads, i, f->a[i], f->ref[i]);
}

/* One serial repetition, out of line so that each repetition stays one loop over the
 * array, as it is for the parallel versions. */
__attribute__((noinline)) static void
serial_pass(double *a, size_t n)
{
	w4_range(a, 0, n);
}

static uint64_t
run_serial(void *ctx, int rep)
{
	struct fe *f = ctx;
	(void)rep;
	reset(f);
	uint64_t t0 = bench_now_ns();
	for (unsigned r = 0; r < f->reps; r++)
		serial_pass(f->a, f->n);
	uint64_t ns = bench_now_ns() - t0;
	check(f, "serial", 1);
	return ns;
}

static int
body(void *arg, size_t begin, size_t end)
{
	w4_range(arg, begin, end);
	return 0;
}

/* heist: every repetition inside one task, so heist_for_each forks in place. */
static int
inside_task(void *p)
{
	struct fe *f = p;
	for (unsigned r = 0; r < f->reps; r++) {
		int err = heist_for_each(f->pool, 0, f->n, 0, body, f->a);
		if (err)
			return err;
	}
	return 0;
}

static uint64_t
run_heist(void *ctx, int rep)
{
	struct fe *f = ctx;
	(void)rep;
	reset(f);
	uint64_t t0 = bench_now_ns();
	int err = heist_run(f->pool, inside_task, f);
	uint64_t ns = bench_now_ns() - t0;
	if (err)
		bench_fail("W4: heist_run of the loops returned %d", err);
	check(f, "heist", f->threads);
	return ns;
}

/* heist-outside: the main thread (not a worker) calls heist_for_each each time. */
static uint64_t
run_heist_outside(void *ctx, int rep)
{
	struct fe *f = ctx;
	(void)rep;
	reset(f);
	uint64_t t0 = bench_now_ns();
	for (unsigned r = 0; r < f->reps; r++) {
		int err = heist_for_each(f->pool, 0, f->n, 0, body, f->a);
		if (err)
			bench_fail("W4: heist_for_each from outside returned %d", err);
	}
	uint64_t ns = bench_now_ns() - t0;
	check(f, "heist-outside", f->threads);
	return ns;
}

/* heist-nested: the outer loop's index is a block of n / NEST_BLOCKS elements; its body
 * runs an inner heist_for_each over that block (the last block takes the remainder). */
static int
outer_body(void *arg, size_t begin, size_t end)
{
	struct fe *f = arg;
	size_t block = f->n / NEST_BLOCKS;
	for (size_t k = begin; k < end; k++) {
		size_t lo = k * block, hi = k + 1 == NEST_BLOCKS ? f->n : lo + block;
		int err = heist_for_each(f->pool, lo, hi, 0, body, f->a);
		if (err)
			return err;
	}
	return 0;
}

static int
nested_task(void *p)
{
	struct fe *f = p;
	for (unsigned r = 0; r < f->reps; r++) {
		int err = heist_for_each(f->pool, 0, NEST_BLOCKS, 0, outer_body, f);
		if (err)
			return err;
	}
	return 0;
}

static uint64_t
run_heist_nested(void *ctx, int rep)
{
	struct fe *f = ctx;
	(void)rep;
	reset(f);
	uint64_t t0 = bench_now_ns();
	int err = heist_run(f->pool, nested_task, f);
	uint64_t ns = bench_now_ns() - t0;
	if (err)
		bench_fail("W4: heist_run of the nested loops returned %d", err);
	check(f, "heist-nested", f->threads);
	return ns;
}

#ifdef HEIST_BENCH_OMP
static uint64_t
run_omp(void *ctx, int rep)
{
	struct fe *f = ctx;
	(void)rep;
	reset(f);
	uint64_t t0 = bench_now_ns();
	peer_omp_for_each(f->threads, f->a, f->n, f->reps);
	uint64_t ns = bench_now_ns() - t0;
	check(f, "omp", f->threads);
	return ns;
}
#endif

#ifdef HEIST_BENCH_TBB
static uint64_t
run_tbb(void *ctx, int rep)
{
	struct fe *f = ctx;
	(void)rep;
	reset(f);
	uint64_t t0 = bench_now_ns();
	peer_tbb_for_each(f->a, f->n, f->reps);
	uint64_t ns = bench_now_ns() - t0;
	check(f, "tbb", f->threads);
	return ns;
}
#endif

/* 10000 -> "10k", 10000000 -> "10M", 3 -> "3". */
static void
count_text(char *buf, size_t len, size_t x)
{
	if (x >= 1000000 && x % 1000000 == 0)
		snprintf(buf, len, "%zuM", x / 1000000);
	else if (x >= 1000 && x % 1000 == 0)
		snprintf(buf, len, "%zuk", x / 1000);
	else
		snprintf(buf, len, "%zu", x);
}

/* One size. target: the heist row's speedup over serial that it should reach, as a
 * fraction of linear (0.975 of 2 workers = 1.95x). nested: add the heist-nested row. */
static void
one_size(const struct bench_opts *o, heist_pool *pool, size_t n, unsigned reps,
	 double target, bool nested)
{
	unsigned N = o->threads;
	char size[32], ns_text[12], reps_text[12];
	count_text(ns_text, sizeof ns_text, n);
	count_text(reps_text, sizeof reps_text, reps);
	snprintf(size, sizeof size, "%s x %s", ns_text, reps_text);
	bench_progress("W4 for_each %s:", size);

	struct fe f = { .n = n, .reps = reps, .pool = pool, .threads = N };
	f.a = malloc(n * sizeof *f.a);
	f.ref = malloc(n * sizeof *f.ref);
	if (!f.a || !f.ref)
		bench_fail("W4: out of memory for %zu doubles", n);
	for (size_t i = 0; i < n; i++)
		f.ref[i] = (double)i;
	for (unsigned r = 0; r < reps; r++)
		w4_range(f.ref, 0, n);

	struct fe serial = f;
	serial.threads = 1;
	struct variant v[8];
	unsigned nv = 0;
	bench_add(o, v, &nv, "serial", 1, run_serial, &serial);
	if (pool) {
		bench_add(o, v, &nv, "heist", N, run_heist, &f);
		bench_add(o, v, &nv, "heist-outside", N, run_heist_outside, &f);
		if (nested)
			bench_add(o, v, &nv, "heist-nested", N, run_heist_nested, &f);
	}
#ifdef HEIST_BENCH_OMP
	bench_add(o, v, &nv, "omp", N, run_omp, &f);
#endif
#ifdef HEIST_BENCH_TBB
	bench_add(o, v, &nv, "tbb", N, run_tbb, &f);
#endif
	bench_measure(o, v, nv);
	bench_rows_from("W4", size, v, nv);

	struct variant *vs = bench_find(v, nv, "serial", 1);
	struct variant *vh = bench_find(v, nv, "heist", N);
	double items = (double)n * (double)reps;
	for (unsigned i = 0; i < nv; i++) {
		struct row *r = bench_row_for("W4", size, v[i].impl, v[i].threads);
		double rate = items / ((double)v[i].median_ns / 1e9);
		row_metric(r, "items_per_s", rate, "%.0f Mitems/s", rate / 1e6);
		if (vs && &v[i] != vs) {
			double sp = (double)vs->median_ns / (double)v[i].median_ns;
			row_metric(r, "speedup", sp, "x%.2f vs serial", sp);
		}
	}
	if (vs && vh) {
		double sp = (double)vs->median_ns / (double)vh->median_ns;
		double want = target * (double)N;
		row_note(bench_row_for("W4", size, "heist", N), "target >= %.2fx: %s", want,
			 sp >= want ? "met" : "MISSED");
	}
	row_note(bench_row_for("W4", size, "heist", N),
		 "reps in one heist_run: caller is a worker, for_each forks in place");
	row_note(bench_row_for("W4", size, "heist-outside", N),
		 "main thread calls heist_for_each per rep: enters the pool each time");
	struct variant *vn = bench_find(v, nv, "heist-nested", N);
	if (vn) {
		struct row *r = bench_row_for("W4", size, "heist-nested", N);
		if (vh) {
			double x = (double)vn->median_ns / (double)vh->median_ns;
			row_metric(r, "ratio_to_flat", x, "t/flat %.2f (target <= 1.05: %s)", x,
				   x <= 1.05 ? "met" : "MISSED");
		}
		row_note(r, "per rep: for_each over %d blocks, each a for_each of %zu",
			 NEST_BLOCKS, n / NEST_BLOCKS);
	}
	row_note(bench_row_for("W4", size, "omp", N), "parallel for schedule(static) per rep");
	row_note(bench_row_for("W4", size, "tbb", N),
		 "parallel_for, auto partitioner; reps in one arena.execute");
	free(f.a);
	free(f.ref);
}

void
w4_for_each(const struct bench_opts *o)
{
	if (!bench_selected(o, "W4", "W4"))
		return;
	heist_pool *pool = NULL;
	if (bench_impl_enabled(o, "heist") || bench_impl_enabled(o, "heist-outside") ||
	    bench_impl_enabled(o, "heist-nested"))
		pool = bench_heist_pool(o->threads);
	one_size(o, pool, 10000, o->quick ? 1000 : 10000, 0.975, true);
	one_size(o, pool, o->quick ? 1000000 : 10000000, o->quick ? 3 : 10, 0.985, false);
	heist_pool_destroy(pool);
}
