/* SPDX-License-Identifier: MIT */
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
 * parallel region per repetition in which each thread runs its `schedule(static)`
 * share as one range, the team's threads persisting);
 * oneTBB (parallel_for on a blocked_range, auto partitioner, every repetition inside one
 * task_arena::execute). heist always uses the automatic grain (0). */
#include "workloads.h"

#include "kernels.h"
#include "peers.h"
#include "static_threads.h"

#include <stdio.h>
#include <string.h>

enum { NEST_BLOCKS = 10 };

/* The heist row's target speedup over serial, per size, as a fraction of linear
 * (0.975 of 2 workers = 1.95x). */
static const double target[2] = { 0.975, 0.985 };

struct fe {
	size_t n;
	unsigned reps;
	double *a;		/* the array every run works on, reset before its clock */
	double *ref;		/* the serial answer, computed before any clock */
};

static void
reset(struct bench_job *j)
{
	struct fe *f = j->in;
	for (size_t i = 0; i < f->n; i++)
		f->a[i] = (double)i;
}

static void
check(const struct bench_job *j)
{
	const struct fe *f = j->in;
	char what[64];
	snprintf(what, sizeof(what), "W4 for_each n=%zu x %u", f->n, f->reps);
	bench_check_array(what, j, f->a, f->ref, f->n,
			  "element skipped, done twice, or its write not visible");
}

/* One serial repetition, out of line so that each repetition stays one loop over the
 * array, as it is for the parallel versions. */
__attribute__((noinline)) static void
serial_pass(double *a, size_t n)
{
	w4_range(a, 0, n);
}

static void
run_serial(struct bench_job *j)
{
	struct fe *f = j->in;
	for (unsigned r = 0; r < f->reps; r++)
		serial_pass(f->a, f->n);
}

static int
body(void *arg, size_t begin, size_t end)
{
	w4_range(arg, begin, end);
	return 0;
}

/* The job's repetitions of one heist_for_each(0, n, fn, arg) each; the first error
 * ends them. */
static int
loops(struct bench_job *j, size_t n, heist_range_fn fn, void *arg)
{
	const struct fe *f = j->in;
	for (unsigned r = 0; r < f->reps; r++) {
		int err = heist_for_each(j->pool, 0, n, 0, fn, arg);
		if (err)
			return err;
	}
	return 0;
}

/* heist: every repetition inside one task (arg: the job), so heist_for_each forks in
 * place. */
static int
inside_task(void *arg)
{
	struct bench_job *j = arg;
	struct fe *f = j->in;
	return loops(j, f->n, body, f->a);
}

/* Run task(j) on the pool, entering it from the main thread. */
static void
enter(struct bench_job *j, heist_fn task, const char *what)
{
	int err = heist_run(j->pool, task, j);
	if (err)
		bench_fail("W4: heist_run of the %s returned %d", what, err);
}

static void run_heist(struct bench_job *j) { enter(j, inside_task, "loops"); }

/* heist-outside: the main thread (not a worker) calls heist_for_each each time. */
static void
run_heist_outside(struct bench_job *j)
{
	struct fe *f = j->in;
	int err = loops(j, f->n, body, f->a);
	if (err)
		bench_fail("W4: heist_for_each from outside returned %d", err);
}

/* heist-nested: the outer loop's index is a block of n / NEST_BLOCKS elements; its body
 * runs an inner heist_for_each over that block (the last block takes the remainder). */
static int
outer_body(void *arg, size_t begin, size_t end)
{
	struct bench_job *j = arg;
	struct fe *f = j->in;
	size_t block = f->n / NEST_BLOCKS;
	for (size_t k = begin; k < end; k++) {
		size_t lo = k * block, hi = k + 1 == NEST_BLOCKS ? f->n : lo + block;
		int err = heist_for_each(j->pool, lo, hi, 0, body, f->a);
		if (err)
			return err;
	}
	return 0;
}

static int nested_task(void *arg) { return loops(arg, NEST_BLOCKS, outer_body, arg); }

static void run_heist_nested(struct bench_job *j) { enter(j, nested_task, "nested loops"); }

static void
run_peer(struct bench_job *j)
{
	struct fe *f = j->in;
	j->peer->for_each(j->threads, f->a, f->n, f->reps);
}

/* threads: the ceiling, plain threads with static shares (static_threads.h). */
static void
share(void *arg, size_t begin, size_t end)
{
	w4_range(arg, begin, end);
}

static void
run_threads(struct bench_job *j)
{
	struct fe *f = j->in;
	static_threads_run(j->threads, f->n, f->reps, share, f->a);
}

static bool first_size(const struct bench_set *s) { return s->index == 0; }

static const struct bench_impl impls[] = {
	{ "serial", 1, POOL_NONE, .run = run_serial },
	{ "heist", THREADS, POOL_HEIST, .run = run_heist,
	  .note = "reps in one heist_run: caller is a worker, for_each forks in place" },
	{ "heist-outside", THREADS, POOL_HEIST, .run = run_heist_outside,
	  .note = "main thread calls heist_for_each per rep: enters the pool each time" },
	{ "heist-pin", THREADS, POOL_HEIST_PIN, .run = run_heist_outside },
	{ "heist-nested", THREADS, POOL_HEIST, .run = run_heist_nested, .when = first_size },
	{ "omp", THREADS, POOL_PEER, .run = run_peer,
	  .note = "a parallel region per rep, each thread its static share" },
	{ "tbb", THREADS, POOL_PEER, .run = run_peer,
	  .note = "parallel_for, auto partitioner; reps in one arena.execute" },
	{ "threads", THREADS, POOL_NONE, .run = run_threads,
	  .note = "the ceiling: plain threads, static shares, a spinning barrier per rep" },
};

/* The size's p.a is the array's length, p.b the loops per run. */
static void *
setup(struct bench_set *s)
{
	struct fe *f = bench_alloc(s, 1, sizeof *f);
	f->n = (size_t)s->p.a;
	f->reps = (unsigned)s->p.b;
	f->a = bench_alloc(s, f->n, sizeof *f->a);
	f->ref = bench_alloc(s, f->n, sizeof *f->ref);
	for (size_t i = 0; i < f->n; i++)
		f->ref[i] = (double)i;
	for (unsigned r = 0; r < f->reps; r++)
		w4_range(f->ref, 0, f->n);
	return f;
}

static void
figures(struct bench_set *s)
{
	const struct fe *f = s->in;
	unsigned N = s->o->threads;
	struct variant *vs = bench_find(s, "serial", 1), *vh = bench_find(s, "heist", N);
	bench_figure_rate(s, "items_per_s", (double)f->n * (double)f->reps, 0, "items");
	for (unsigned i = 0; vs && i < s->n; i++) {
		if (&s->v[i] == vs)
			continue;
		double sp = (double)vs->median_ns / (double)s->v[i].median_ns;
		row_metric(s->v[i].row, "speedup", sp, "x%.2f vs serial", sp);
	}
	if (vs && vh) {
		double sp = (double)vs->median_ns / (double)vh->median_ns;
		double want = target[s->index] * (double)N;
		row_note(vh->row, "target >= %.2fx: %s", want, sp >= want ? "met" : "MISSED");
	}
	struct variant *vn = bench_find(s, "heist-nested", N);
	if (vn) {
		if (vh) {
			double x = (double)vn->median_ns / (double)vh->median_ns;
			row_metric(vn->row, "ratio_to_flat", x, "t/flat %.2f (target <= 1.05: %s)",
				   x, x <= 1.05 ? "met" : "MISSED");
		}
		row_note(vn->row, "per rep: for_each over %d blocks, each a for_each of %zu",
			 NEST_BLOCKS, f->n / NEST_BLOCKS);
	}
	bench_pin_note(s);
}

const struct bench_workload w4_for_each = {
	.group = "W4", .title = "for_each",
	.nsizes = 2,
	.sizes = {	/* array length, loops */
		{ "W4", { "10k x 10k", 10000, 10000 }, { "10k x 1k", 10000, 1000 } },
		{ "W4", { "10M x 10", 10000000, 10 }, { "1M x 3", 1000000, 3 } },
	},
	.setup = setup, .reset = reset, .check = check, .figures = figures,
	BENCH_IMPLS(impls),
};
