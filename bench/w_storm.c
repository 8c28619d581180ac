/* SPDX-License-Identifier: MIT */
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
 * baseline have `threads` workers besides it. With a C++ compiler (cxx.h): heist-cxx,
 * a pool.post lambda per task and the same latch, beside heist; heist-cxx-futures, a
 * pool.submit lambda per task and get() on every future, beside heist-futures (issue
 * 15: at most 1.1x). */
#include "workloads.h"

#include "baseline_pool.h"
#include "cxx.h"
#include "kernels.h"
#include "latch.h"
#include "malloc_count.h"
#include "peers.h"

#include <stdio.h>
#include <string.h>

struct storm {
	size_t ntasks;
	unsigned iters;
	double *out;		/* shared by the implementations, zeroed before each run */
	double *ref;		/* the serial answer, computed before any clock */
	struct latch *latch;	/* heist's tasks count it down */
	heist_future **futures;	/* heist-futures: one per task */
};

/* The storm the running tasks belong to; set before the first submit of a run (the
 * submit publishes it to the workers). */
static struct storm *active;

static void
check(const struct bench_job *j)
{
	const struct storm *s = j->in;
	char what[64];
	snprintf(what, sizeof(what), "W5 storm (%u iterations)", s->iters);
	bench_check_array(what, j, s->out, s->ref, s->ntasks,
			  "task lost, run twice or its write not visible");
}

static void
reset(struct bench_job *j)
{
	struct storm *s = j->in;
	memset(s->out, 0, s->ntasks * sizeof s->out[0]);
	latch_reset(s->latch, (long)s->ntasks);
	active = s;
}

static void
run_serial(struct bench_job *j)
{
	struct storm *s = j->in;
	for (size_t k = 0; k < s->ntasks; k++)
		s->out[k] = w5_body(k, s->iters);
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

static void
run_heist(struct bench_job *j)
{
	struct storm *s = j->in;
	for (size_t k = 0; k < s->ntasks; k++) {
		int err = heist_submit(j->pool, heist_storm_task, &s->out[k], NULL);
		if (err)
			bench_fail("W5: heist_submit of task %zu returned %d", k, err);
	}
	latch_wait(s->latch);
}

static int
heist_plain_task(void *arg)
{
	storm_one(arg);
	return 0;
}

/* heist-futures: a future per task, then every one waited for and released. */
static void
run_heist_futures(struct bench_job *j)
{
	struct storm *s = j->in;
	heist_future **f = s->futures;
	for (size_t k = 0; k < s->ntasks; k++) {
		int err = heist_submit(j->pool, heist_plain_task, &s->out[k], &f[k]);
		if (err)
			bench_fail("W5: heist_submit of task %zu returned %d", k, err);
	}
	for (size_t k = 0; k < s->ntasks; k++) {
		heist_future_wait(f[k]);
		heist_future_release(f[k]);
	}
}

/* heist-group: every task in one group, then one wait. */
static void
run_heist_group(struct bench_job *j)
{
	struct storm *s = j->in;
	heist_group *g;
	if (heist_group_create(j->pool, &g))
		bench_fail("W5: heist_group_create failed");
	for (size_t k = 0; k < s->ntasks; k++) {
		int err = heist_group_submit(g, heist_plain_task, &s->out[k]);
		if (err)
			bench_fail("W5: heist_group_submit of task %zu returned %d", k, err);
	}
	if (heist_group_wait(g))
		bench_fail("W5: heist_group_wait failed");
	heist_group_destroy(g);
}

static void baseline_storm_task(void *arg) { storm_one(arg); }

#ifdef HEIST_BENCH_CXX
static void
run_cxx_post(struct bench_job *j)
{
	struct storm *s = j->in;
	cxx_storm_post(j->pool, s->out, s->ntasks, s->iters, s->latch);
}

static void
run_cxx_futures(struct bench_job *j)
{
	struct storm *s = j->in;
	cxx_storm_futures(j->pool, s->out, s->ntasks, s->iters);
}
#endif

static void
run_baseline(struct bench_job *j)
{
	struct storm *s = j->in;
	for (size_t k = 0; k < s->ntasks; k++)
		if (baseline_submit(j->bpool, baseline_storm_task, &s->out[k]) != 0)
			bench_fail("W5: baseline_submit: out of memory");
	baseline_wait_all(j->bpool);
}

static void
run_peer(struct bench_job *j)
{
	struct storm *s = j->in;
	j->peer->storm(j->threads, s->out, s->ntasks, s->iters);
}

/* heist and baseline count their heap allocations in the first timed repetition. */
static const struct bench_impl impls[] = {
	{ "serial", 1, POOL_NONE, .run = run_serial },
	{ "baseline", THREADS, POOL_BASELINE, .run = run_baseline, .count_allocs = true },
	{ "heist", THREADS, POOL_HEIST, .run = run_heist, .count_allocs = true },
	{ "heist-futures", THREADS, POOL_HEIST, .run = run_heist_futures },
	{ "heist-group", THREADS, POOL_HEIST, .run = run_heist_group, .count_allocs = true },
#ifdef HEIST_BENCH_CXX
	{ "heist-cxx", THREADS, POOL_HEIST, .run = run_cxx_post, .count_allocs = true },
	{ "heist-cxx-futures", THREADS, POOL_HEIST, .run = run_cxx_futures, .count_allocs = true },
#endif
	{ "omp", THREADS, POOL_PEER, .run = run_peer },
	{ "tbb", THREADS, POOL_PEER, .run = run_peer },
};

/* The size's p.a is the task count, p.b the iterations per task. */
static void *
setup(struct bench_set *s)
{
	struct storm *st = bench_alloc(s, 1, sizeof *st);
	st->ntasks = (size_t)s->p.a;
	st->iters = (unsigned)s->p.b;
	st->out = bench_alloc(s, st->ntasks, sizeof *st->out);
	st->ref = bench_alloc(s, st->ntasks, sizeof *st->ref);
	for (size_t k = 0; k < st->ntasks; k++)
		st->ref[k] = w5_body(k, st->iters);
	st->latch = latch_create((long)st->ntasks);
	st->futures = bench_alloc(s, st->ntasks, sizeof *st->futures);
	return st;
}

static void
teardown(void *in)
{
	struct storm *st = in;
	latch_destroy(st->latch);
}

static void
figures(struct bench_set *s)
{
	const struct storm *st = s->in;
	unsigned N = s->o->threads;
	struct variant *vb = bench_find(s, "baseline", N), *vh = bench_find(s, "heist", N);
	bench_figure_rate(s, "tasks_per_s", (double)st->ntasks, 2, "tasks");
	for (unsigned i = 0; vb && i < s->n; i++) {
		double x = (double)s->v[i].median_ns / (double)vb->median_ns;
		row_metric(s->v[i].row, "ratio_to_baseline", x, "t/baseline %.2f", x);
	}
	if (vh && vh->counted) {
		double per = (double)vh->allocs / (double)st->ntasks;
		row_metric(vh->row, "heap_allocs_per_task", per, "allocs/task %.4f%s", per,
			   per > 0.001 ? " (target <= 0.001: MISSED)" : "");
	}
	if (vb && vb->counted) {
		double per = (double)vb->allocs / (double)st->ntasks;
		row_metric(vb->row, "heap_allocs_per_task", per, "allocs/task %.4f", per);
	}
	struct variant *vf = bench_find(s, "heist-futures", N), *vg = bench_find(s, "heist-group", N);
	if (vf && vg) {
		double x = (double)vg->median_ns / (double)vf->median_ns;
		row_metric(vg->row, "ratio_to_futures", x, "t/futures %.2f%s", x,
			   x > 1.05 ? " (target <= 1.05: MISSED)" : " (target <= 1.05: met)");
	}
	if (vg && vg->counted) {
		double per = (double)vg->allocs / (double)st->ntasks;
		row_metric(vg->row, "heap_allocs_per_task", per, "allocs/task %.4f", per);
	}
	/* The C++ rows over their C rows: post over heist, submit over heist-futures. */
	const char *cxx[2][2] = { { "heist-cxx", "heist" }, { "heist-cxx-futures", "heist-futures" } };
	for (unsigned k = 0; k < 2; k++) {
		struct variant *vx = bench_find(s, cxx[k][0], N), *vc = bench_find(s, cxx[k][1], N);
		if (vx && vc) {
			double x = (double)vx->median_ns / (double)vc->median_ns;
			row_metric(vx->row, "ratio_to_c", x, "t/%s %.2f%s", cxx[k][1], x,
				   x > 1.10 ? " (target <= 1.10: MISSED)" : " (target <= 1.10: met)");
		}
		if (vx && vx->counted) {
			double per = (double)vx->allocs / (double)st->ntasks;
			row_metric(vx->row, "heap_allocs_per_task", per, "allocs/task %.4f", per);
		}
	}
	row_note(bench_set_row(s, "heist-cxx", N), "pool.post lambdas, latch");
	row_note(bench_set_row(s, "heist-cxx-futures", N), "pool.submit lambdas, each get()");
	row_note(vf ? vf->row : NULL, "a future per task, each waited for");
	row_note(vg ? vg->row : NULL, "one heist_group, one wait");
	row_note(bench_set_row(s, "omp", N), "submitter is one of the %u", N);
	row_note(bench_set_row(s, "tbb", N), "submitter is one of the %u", N);
	row_note(vh ? vh->row : NULL, "%u workers + submitter", N);
	row_note(vb ? vb->row : NULL, "%u workers + submitter", N);
}

const struct bench_workload w5_storm = {
	.group = "W5", .title = "storm",
	.nsizes = 2,
	.sizes = {	/* tasks, iterations per task */
		{ "W5", { "1M x 1000", 1000000, 1000 }, { "20k x 1000", 20000, 1000 } },
		{ "W5-fine", { "1M x 50", 1000000, 50 }, { "100k x 50", 100000, 50 } },
	},
	.setup = setup, .teardown = teardown, .reset = reset, .check = check,
	.figures = figures,
	BENCH_IMPLS(impls),
};
