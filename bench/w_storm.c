/* w_storm.c - W5 submit storm: one outside (non-worker) thread submits independent
 * tasks, then waits for all. Task k computes w5_body(k, iters) into out[k]; every
 * implementation's out[] must equal the serial result bit for bit. "W5" has 1000-iteration
 * bodies (~3 us), "W5-fine" 50-iteration ones (~150 ns), where the submission path is
 * most of the cost.
 *
 * heist: heist_submit(..., out = NULL) per task (fire-and-forget, from the main thread,
 * which is not a worker), then a countdown latch the tasks decrement. The pool lives
 * across repetitions. baseline: baseline_submit per task, then wait_all. OpenMP:
 * parallel + single + a task per k. oneTBB: task_arena + task_group run per k + wait.
 * OpenMP and oneTBB count the submitting thread among their `threads`; heist and the
 * baseline have `threads` workers besides it. */
#include "workloads.h"

#include "baseline_pool.h"
#include "kernels.h"
#include "latch.h"
#include "malloc_count.h"
#include "peers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct storm {
	size_t ntasks;
	unsigned iters;
	double *out;		/* shared by the implementations, zeroed before each run */
	double *ref;		/* the serial answer, computed before any clock */
	heist_pool *pool;
	struct baseline_pool *bpool;
	struct latch *latch;
	uint64_t heist_allocs, baseline_allocs;	/* counted during repetition 0 */
	bool counted_heist, counted_baseline;
};

struct storm_ctx {
	struct storm *s;
	unsigned threads;
};

/* The storm the running tasks belong to; set before the first submit of a run (the
 * submit publishes it to the workers). */
static struct storm *active;

static void
check(const struct storm *s, const char *impl, unsigned threads)
{
	if (memcmp(s->out, s->ref, s->ntasks * sizeof s->out[0]) == 0)
		return;
	for (size_t k = 0; k < s->ntasks; k++)
		if (memcmp(&s->out[k], &s->ref[k], sizeof s->out[k]) != 0)
			bench_fail("WRONG ANSWER: W5 storm (%u iterations), %s with %u threads: "
				   "out[%zu] = %.17g, expected %.17g (task lost, run twice or "
				   "its write not visible)",
				   s->iters, impl, threads, k, s->out[k], s->ref[k]);
}

static void
reset(struct storm *s)
{
	memset(s->out, 0, s->ntasks * sizeof s->out[0]);
	active = s;
}

static uint64_t
run_serial(void *ctx, int rep)
{
	struct storm_ctx *c = ctx;
	struct storm *s = c->s;
	(void)rep;
	reset(s);
	uint64_t t0 = bench_now_ns();
	for (size_t k = 0; k < s->ntasks; k++)
		s->out[k] = w5_body(k, s->iters);
	uint64_t ns = bench_now_ns() - t0;
	check(s, "serial", 1);
	return ns;
}

/* Task k's body, wherever it runs: its slot is out[k]. */
static void
storm_one(double *slot)
{
	size_t k = (size_t)(slot - active->out);
	*slot = w5_body(k, active->iters);
}

static int
heist_storm_task(void *arg)
{
	storm_one(arg);
	latch_count_down(active->latch);
	return 0;
}

static uint64_t
run_heist(void *ctx, int rep)
{
	struct storm_ctx *c = ctx;
	struct storm *s = c->s;
	reset(s);
	latch_reset(s->latch, (long)s->ntasks);
	if (rep == 0)
		malloc_count_start();
	uint64_t t0 = bench_now_ns();
	for (size_t k = 0; k < s->ntasks; k++) {
		int err = heist_submit(s->pool, heist_storm_task, &s->out[k], NULL);
		if (err)
			bench_fail("W5: heist_submit of task %zu returned %d", k, err);
	}
	latch_wait(s->latch);
	uint64_t ns = bench_now_ns() - t0;
	if (rep == 0) {
		s->heist_allocs = malloc_count_stop();
		s->counted_heist = true;
	}
	check(s, "heist", c->threads);
	return ns;
}

static void baseline_storm_task(void *arg) { storm_one(arg); }

static uint64_t
run_baseline(void *ctx, int rep)
{
	struct storm_ctx *c = ctx;
	struct storm *s = c->s;
	reset(s);
	if (rep == 0)
		malloc_count_start();
	uint64_t t0 = bench_now_ns();
	for (size_t k = 0; k < s->ntasks; k++)
		if (baseline_submit(s->bpool, baseline_storm_task, &s->out[k]) != 0)
			bench_fail("W5: baseline_submit: out of memory");
	baseline_wait_all(s->bpool);
	uint64_t ns = bench_now_ns() - t0;
	if (rep == 0) {
		s->baseline_allocs = malloc_count_stop();
		s->counted_baseline = true;
	}
	check(s, "baseline", c->threads);
	return ns;
}

#ifdef HEIST_BENCH_OMP
static uint64_t
run_omp(void *ctx, int rep)
{
	struct storm_ctx *c = ctx;
	struct storm *s = c->s;
	(void)rep;
	reset(s);
	uint64_t t0 = bench_now_ns();
	peer_omp_storm(c->threads, s->out, s->ntasks, s->iters);
	uint64_t ns = bench_now_ns() - t0;
	check(s, "omp", c->threads);
	return ns;
}
#endif

#ifdef HEIST_BENCH_TBB
static uint64_t
run_tbb(void *ctx, int rep)
{
	struct storm_ctx *c = ctx;
	struct storm *s = c->s;
	(void)rep;
	reset(s);
	uint64_t t0 = bench_now_ns();
	peer_tbb_storm(s->out, s->ntasks, s->iters);
	uint64_t ns = bench_now_ns() - t0;
	check(s, "tbb", c->threads);
	return ns;
}
#endif

static void
one_storm(const struct bench_opts *o, const char *name, size_t ntasks, unsigned iters,
	  heist_pool *pool, struct baseline_pool *bpool)
{
	unsigned N = o->threads;
	char size[24];
	if (ntasks % 1000000 == 0)
		snprintf(size, sizeof size, "%zuM x %u", ntasks / 1000000, iters);
	else
		snprintf(size, sizeof size, "%zuk x %u", ntasks / 1000, iters);
	bench_progress("%s storm %s:", name, size);

	struct storm s = { .ntasks = ntasks, .iters = iters, .pool = pool, .bpool = bpool };
	s.out = malloc(ntasks * sizeof *s.out);
	s.ref = malloc(ntasks * sizeof *s.ref);
	if (!s.out || !s.ref)
		bench_fail("W5: out of memory");
	for (size_t k = 0; k < ntasks; k++)
		s.ref[k] = w5_body(k, iters);
	s.latch = latch_create((long)ntasks);

	struct storm_ctx serial = { &s, 1 }, par = { &s, N };
	struct variant v[6];
	unsigned nv = 0;
	bench_add(o, v, &nv, "serial", 1, run_serial, &serial);
	if (bpool)
		bench_add(o, v, &nv, "baseline", N, run_baseline, &par);
	if (pool)
		bench_add(o, v, &nv, "heist", N, run_heist, &par);
#ifdef HEIST_BENCH_OMP
	bench_add(o, v, &nv, "omp", N, run_omp, &par);
#endif
#ifdef HEIST_BENCH_TBB
	bench_add(o, v, &nv, "tbb", N, run_tbb, &par);
#endif
	bench_measure(o, v, nv);
	bench_rows_from(name, size, v, nv);

	struct variant *vb = bench_find(v, nv, "baseline", N);
	for (unsigned i = 0; i < nv; i++) {
		struct row *r = bench_row_for(name, size, v[i].impl, v[i].threads);
		double rate = (double)ntasks / ((double)v[i].median_ns / 1e9);
		row_metric(r, "tasks_per_s", rate, "%.2f Mtasks/s", rate / 1e6);
		if (vb) {
			double x = (double)v[i].median_ns / (double)vb->median_ns;
			row_metric(r, "ratio_to_baseline", x, "t/baseline %.2f", x);
		}
	}
	if (malloc_count_available()) {
		if (s.counted_heist) {
			double per = (double)s.heist_allocs / (double)ntasks;
			row_metric(bench_row_for(name, size, "heist", N), "heap_allocs_per_task", per,
				   "allocs/task %.4f%s", per,
				   per > 0.001 ? " (target <= 0.001: MISSED)" : "");
		}
		if (s.counted_baseline) {
			double per = (double)s.baseline_allocs / (double)ntasks;
			row_metric(bench_row_for(name, size, "baseline", N), "heap_allocs_per_task",
				   per, "allocs/task %.4f", per);
		}
	}
	row_note(bench_row_for(name, size, "omp", N), "submitter is one of the %u", N);
	row_note(bench_row_for(name, size, "tbb", N), "submitter is one of the %u", N);
	row_note(bench_row_for(name, size, "heist", N), "%u workers + submitter", N);
	row_note(bench_row_for(name, size, "baseline", N), "%u workers + submitter", N);

	latch_destroy(s.latch);
	free(s.out);
	free(s.ref);
}

void
w5_storm(const struct bench_opts *o)
{
	bool coarse = bench_selected(o, "W5", "W5"), fine = bench_selected(o, "W5", "W5-fine");
	if (!coarse && !fine)
		return;
	heist_pool *pool = NULL;
	struct baseline_pool *bpool = NULL;
	if (bench_impl_enabled(o, "heist"))
		pool = bench_heist_pool(o->threads);
	if (bench_impl_enabled(o, "baseline")) {
		int err = baseline_pool_create(&bpool, o->threads);
		if (err)
			bench_fail("baseline_pool_create: %s", strerror(err));
	}
	if (coarse)
		one_storm(o, "W5", o->quick ? 20000 : 1000000, 1000, pool, bpool);
	if (fine)
		one_storm(o, "W5-fine", o->quick ? 100000 : 1000000, 50, pool, bpool);
	baseline_pool_destroy(bpool);
	heist_pool_destroy(pool);
}
