/* SPDX-License-Identifier: MIT */
/* test-after.c - dependent tasks (heist_submit_after, src/then.c): a task runs once all
 * its inputs are done and never before, with 0, 2-3 (in its own record), 4 (a table in a
 * record) and many inputs (a table from malloc); an input's error or cancellation ends
 * it unrun with the first such result in array order, whatever order they end in,
 * unless HEIST_AFTER_ALWAYS; a waiter that reads its inputs (white-box, as wait.c does)
 * never reads one that ended and was let go, whether it ends during the read or on
 * another thread meanwhile; its own future, its
 * token and its group cancel it; a group's wait covers it and takes its error; a task
 * graph of dependent tasks (stencil_1d of W10) gives the serial answer, submitted from
 * outside and from a task; waits on one worker with no spare run the inputs; a pool
 * destroyed first gives ESHUTDOWN; one input without a group (kept as a continuation
 * keeps its input) under the same rules; bad input; allocation failures. Helpers:
 * common.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "faults.h"
#include "future.h"	/* white-box: heist__job_each_dep, heist__job_ref */

/* Inputs that end only when the test opens their hold. */
static struct hold gate;

struct seen {
	atomic_int inputs_done;	/* inputs that have returned */
	atomic_int early;	/* the dependent ran with inputs not done */
	atomic_int runs;
	int expect;		/* inputs */
};

static struct seen seen;

static int
gated_input(void *arg)
{
	hold_pass(&gate);
	atomic_fetch_add(&seen.inputs_done, 1);
	return (int)(intptr_t)arg;
}

static int
dependent(void *arg)
{
	if (atomic_load(&seen.inputs_done) != seen.expect)
		atomic_store(&seen.early, 1);
	atomic_fetch_add(&seen.runs, 1);
	return (int)(intptr_t)arg;
}

static void
reset(int inputs)
{
	memset(&gate, 0, sizeof gate);
	atomic_store(&seen.inputs_done, 0);
	atomic_store(&seen.early, 0);
	atomic_store(&seen.runs, 0);
	seen.expect = inputs;
}

/* n gated inputs returning results[i] (0 if results is NULL). */
static void
submit_inputs(heist_pool *pool, heist_future **fs, size_t n, const int *results)
{
	for (size_t i = 0; i < n; i++)
		assert_int_equal(heist_submit(pool, gated_input,
					      (void *)(intptr_t)(results ? results[i] : 0), &fs[i]),
				 0);
}

static void
release_all(heist_future **fs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		heist_future_release(fs[i]);
}

static void
runs_after_all_its_inputs_and_never_before(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	static const size_t sizes[] = {1, 2, 3, 4, 17};	/* record table, then malloc */
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		size_t n = sizes[k];
		heist_future *fs[17], *d;
		reset((int)n);
		submit_inputs(pool, fs, n, NULL);
		assert_int_equal(heist_submit_after(pool, fs, n, dependent, (void *)5, NULL, &d),
				 0);
		release_all(fs, n);	/* the dependent needs none of them */
		nap(2 * 1000 * 1000);
		assert_false(heist_future_done(d));
		assert_int_equal(atomic_load(&seen.runs), 0);
		atomic_store(&gate.open, 1);
		assert_int_equal(watched(d), 5);
		assert_int_equal(atomic_load(&seen.runs), 1);
		assert_int_equal(atomic_load(&seen.early), 0);
	}
	heist_pool_destroy(pool);
}

static void
with_no_inputs_or_done_inputs_runs_at_once(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_future *d, *f[2];
	reset(0);
	assert_int_equal(heist_submit_after(pool, NULL, 0, dependent, (void *)3, NULL, &d), 0);
	assert_int_equal(watched(d), 3);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(heist_submit(pool, ret_int, NULL, &f[i]), 0);
		assert_int_equal(heist_future_wait(f[i]), 0);
	}
	assert_int_equal(heist_submit_after(pool, f, 2, dependent, (void *)4, NULL, &d), 0);
	assert_int_equal(watched(d), 4);
	/* Fire-and-forget: counted by the pool's idle wait. */
	assert_int_equal(heist_submit_after(pool, f, 2, dependent, NULL, NULL, NULL), 0);
	assert_int_equal(heist_pool_wait_idle(pool), 0);
	assert_int_equal(atomic_load(&seen.runs), 3);
	release_all(f, 2);
	heist_pool_destroy(pool);
}

static void
a_failed_or_cancelled_input_ends_it_unrun(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	/* The first nonzero result in array order, whatever order they end in. */
	const int results[4] = {0, 5, 9, 0};
	heist_future *fs[4], *d, *always;
	reset(4);
	submit_inputs(pool, fs, 4, results);
	assert_int_equal(heist_submit_after(pool, fs, 4, dependent, NULL, NULL, &d), 0);
	struct heist_after run_anyway = {.flags = HEIST_AFTER_ALWAYS};
	assert_int_equal(heist_submit_after(pool, fs, 4, dependent, (void *)6, &run_anyway,
					    &always),
			 0);
	atomic_store(&gate.open, 1);
	assert_int_equal(watched(d), 5);
	assert_int_equal(watched(always), 6);	/* it ran, and its result is its own */
	assert_int_equal(atomic_load(&seen.runs), 1);
	release_all(fs, 4);

	/* A cancelled input: ECANCELED, and the dependent never runs. */
	static struct hold busy;
	heist_future *held, *in[2];
	heist_pool *one = make_pool(1);
	hold_worker(one, &busy, &held);
	assert_int_equal(heist_submit(one, ret_int, NULL, &in[0]), 0);
	assert_int_equal(heist_submit(one, ret_int, (void *)8, &in[1]), 0);
	heist_future_cancel(in[0]);
	reset(2);
	assert_int_equal(heist_submit_after(pool, in, 2, dependent, NULL, NULL, &d), 0);
	atomic_store(&busy.open, 1);
	assert_int_equal(watched(d), ECANCELED);
	assert_int_equal(atomic_load(&seen.runs), 0);
	assert_int_equal(watched(held), 0);
	release_all(in, 2);
	heist_pool_destroy(one);
	heist_pool_destroy(pool);
}

/* Inputs that are promises, set in an order other than the array's: n of them. */
static void
make_promises(heist_pool *pool, heist_promise **ps, heist_future **fs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		assert_int_equal(heist_promise_create(pool, &ps[i], &fs[i]), 0);
}

static void
set_promise(heist_promise *p, int result)
{
	assert_int_equal(heist_promise_set(p, result), 0);
	heist_promise_release(p);
}

/* The order inputs end in does not change which failure wins: with 2 and 3 inputs (in
 * the dependent's own record) and 4 (a table). Each case: the results in array order,
 * the order they end in, the winner. A later failure with a smaller (or larger)
 * result, a negative one, one in the middle, each ending first or last. */
struct failing {
	size_t n;
	int results[4];
	size_t order[4];
	int first;
};

static const struct failing failings[] = {
	{2, {9, 5}, {1, 0}, 9},		/* the later, smaller, first */
	{2, {5, 9}, {0, 1}, 5},		/* the later, larger, last */
	{2, {-9, 5}, {1, 0}, -9},	/* negative */
	{3, {0, 7, 5}, {2, 0, 1}, 7},	/* the middle, after the last */
	{3, {9, 0, 5}, {2, 1, 0}, 9},
	{3, {0, 0, -4}, {0, 2, 1}, -4},
	{4, {0, 7, 0, 5}, {3, 0, 2, 1}, 7},
	{4, {8, 0, 0, 9}, {3, 2, 1, 0}, 8},
};

static void
the_first_failure_in_array_order_wins_whatever_order_they_end_in(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	for (size_t k = 0; k < sizeof failings / sizeof failings[0]; k++) {
		const struct failing *c = &failings[k];
		heist_promise *ps[4];
		heist_future *fs[4], *d, *always, *w;
		make_promises(pool, ps, fs, c->n);
		reset(0);
		assert_int_equal(heist_submit_after(pool, fs, c->n, dependent, NULL, NULL, &d), 0);
		struct heist_after run_anyway = {.flags = HEIST_AFTER_ALWAYS};
		assert_int_equal(heist_submit_after(pool, fs, c->n, dependent, (void *)6,
						    &run_anyway, &always),
				 0);
		assert_int_equal(heist_when_all(pool, fs, c->n, &w), 0);
		for (size_t i = 0; i < c->n; i++) {
			assert_false(heist_future_done(w));
			set_promise(ps[c->order[i]], c->results[c->order[i]]);
		}
		assert_int_equal(watched(d), c->first);
		assert_int_equal(watched(w), c->first);
		assert_int_equal(watched(always), 6);	/* ran, its result its own */
		assert_int_equal(atomic_load(&seen.runs), 1);
		release_all(fs, c->n);
	}
	heist_pool_destroy(pool);
}

/* White-box: what a worker waiting for a dependent task does (wait.c): look at its
 * inputs with heist__job_each_dep, which hands over each input not yet done, alive for
 * the call. Here each input ends inside the look, and its promise and future are let
 * go there, so that only what the dependent's record keeps for a reader holds it;
 * the look reads it again after (ASan: a read after free). */
struct look {
	heist_promise *ps[3];
	heist_future *fs[3];
	heist_future *kept[3];	/* the test's own reference, or NULL */
	int results[3];
	int handed;
	int counted;		/* the references an input had, summed, once let go */
};

/* A job's counted references (its flags and the caller's REF_USER aside). */
static uint32_t
counted_refs(struct heist_future *f)
{
	return atomic_load(&f->refs) & ~(REF_FLAGS | REF_USER);
}

static void
end_it_while_looked_at(void *ctx, struct heist_future *f)
{
	struct look *l = ctx;
	for (int i = 0; i < 3; i++) {
		if (l->fs[i] != f)
			continue;
		heist_promise_set(l->ps[i], l->results[i]);
		heist_promise_release(l->ps[i]);
		heist_future_release(l->fs[i]);
		l->fs[i] = NULL;
		l->handed += heist__job_done(f);	/* read after its owners let it go */
		l->counted += (int)counted_refs(f);	/* the reader's, + the test's */
	}
}

/* With kept, the test holds a reference to each input of its own, so that each can be
 * read once the dependent settled: what the look had taken for it was let go (only
 * the test's is left). Without, ASan sees a read of an input let go too early. */
static void
an_input_that_ends_while_a_waiter_reads_it_stays_readable(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	for (int kept = 0; kept < 2; kept++) {
		for (int failing = -1; failing < 3; failing++) {
			struct look l = {.handed = 0};
			heist_future *d, *w;
			make_promises(pool, l.ps, l.fs, 3);
			for (int i = 0; i < 3; i++) {
				l.results[i] = i == failing ? 7 : 0;
				l.kept[i] = kept ? l.fs[i] : NULL;
				if (kept)
					heist__job_ref(l.fs[i]);
			}
			reset(0);
			assert_int_equal(heist_submit_after(pool, l.fs, 3, dependent, (void *)4,
							    NULL, &d),
					 0);
			assert_int_equal(heist_when_all(pool, l.fs + 1, 2, &w), 0);
			heist__job_each_dep(d, end_it_while_looked_at, &l);
			assert_int_equal(l.handed, 3);	/* each handed over, and done after */
			assert_int_equal(l.counted, 3 * (1 + kept));
			assert_int_equal(watched(d), failing < 0 ? 4 : 7);
			assert_int_equal(watched(w), failing > 0 ? 7 : 0);
			assert_int_equal(atomic_load(&seen.runs), failing < 0);
			for (int i = 0; kept && i < 3; i++) {
				assert_int_equal(counted_refs(l.kept[i]), 1);	/* ours alone */
				heist__job_release(l.kept[i]);
			}
		}
	}
	heist_pool_destroy(pool);
}

/* The same look on another thread, again and again, while the test thread ends the
 * inputs and lets them go: every input handed over is alive (ASan), and the reader
 * and the inputs' ends are ordered (TSan). How often the two meet is the machine's:
 * a stress for the sanitizers, with nothing timed to check. */
struct reader {
	_Atomic(heist_future *) d;	/* what to look at, or NULL */
	atomic_int busy;		/* the reader may hold d */
	atomic_int quit;
	atomic_long handed;
};

static void
touch(void *ctx, struct heist_future *f)
{
	struct reader *r = ctx;
	heist__job_ref(f);	/* as wait.c keeps one longer */
	if (!heist__job_done(f))
		atomic_fetch_add(&r->handed, 1);
	heist__job_release(f);
}

static void *
read_inputs(void *arg)
{
	struct reader *r = arg;
	while (!atomic_load(&r->quit)) {
		/* seq_cst: a Dekker pair with the test thread's store of d and load of
		 * busy, so that it never releases a d we are about to read. */
		atomic_store(&r->busy, 1);
		heist_future *d = atomic_load(&r->d);
		if (d)
			heist__job_each_dep(d, touch, r);
		atomic_store(&r->busy, 0);
	}
	return NULL;
}

static void
inputs_that_end_while_another_thread_reads_them_stay_readable(void **state)
{
	(void)state;
	enum { ROUNDS = 2000 };
	heist_pool *pool = make_pool(1);
	struct reader r = {.handed = 0};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, read_inputs, &r), 0);
	for (int k = 0; k < ROUNDS; k++) {
		size_t n = 2 + (size_t)(k & 1);
		heist_promise *ps[3];
		heist_future *fs[3], *d;
		make_promises(pool, ps, fs, n);
		if (k & 2)
			assert_int_equal(heist_when_all(pool, fs, n, &d), 0);
		else
			assert_int_equal(heist_submit_after(pool, fs, n, ret_int, NULL, NULL, &d), 0);
		release_all(fs, n);	/* the promises hold them until set */
		atomic_store(&r.d, d);
		for (size_t i = 0; i < n; i++)
			set_promise(ps[(i + (size_t)k) % n], 0);
		assert_int_equal(heist_future_wait(d), 0);
		atomic_store(&r.d, NULL);
		while (atomic_load(&r.busy))
			;
		heist_future_release(d);
	}
	atomic_store(&r.quit, 1);
	assert_int_equal(pthread_join(t, NULL), 0);
	heist_pool_destroy(pool);
}

static void
its_future_or_token_cancels_it(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_future *fs[2], *by_future, *by_token;
	heist_cancel *token;
	assert_int_equal(heist_cancel_create(&token), 0);
	reset(2);
	submit_inputs(pool, fs, 2, NULL);
	struct heist_after opt = {.cancel = token};
	assert_int_equal(heist_submit_after(pool, fs, 2, dependent, NULL, NULL, &by_future), 0);
	assert_int_equal(heist_submit_after(pool, fs, 2, dependent, NULL, &opt, &by_token), 0);
	heist_cancel_release(token);	/* the task holds its own reference */
	heist_future_cancel(by_future);
	assert_int_equal(watched(by_future), ECANCELED);	/* at once: inputs still held */
	heist_cancel_request(token);
	atomic_store(&gate.open, 1);
	assert_int_equal(watched(by_token), ECANCELED);
	for (int i = 0; i < 2; i++)
		assert_int_equal(heist_future_wait(fs[i]), 0);	/* the inputs went on */
	assert_int_equal(atomic_load(&seen.runs), 0);
	release_all(fs, 2);
	heist_pool_destroy(pool);
}

static void
a_group_waits_for_it_and_takes_its_error(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_group *g;
	assert_int_equal(heist_group_create(pool, &g), 0);
	heist_future *fs[3], *d1, *d2;
	reset(3);
	submit_inputs(pool, fs, 3, NULL);
	struct heist_after in_group = {.group = g};
	/* d2 after d1, both in the group, both with futures; pool from the group. */
	assert_int_equal(heist_submit_after(NULL, fs, 3, dependent, NULL, &in_group, &d1), 0);
	assert_int_equal(heist_submit_after(pool, &d1, 1, ret_int, (void *)7, &in_group, &d2), 0);
	atomic_store(&gate.open, 1);
	assert_int_equal(heist_group_wait(g), 7);	/* covers both: d2's 7 is its error */
	assert_true(heist_future_done(d1) && heist_future_done(d2));
	assert_int_equal(heist_future_wait(d1), 0);
	assert_int_equal(heist_future_wait(d2), 7);
	assert_int_equal(atomic_load(&seen.runs), 1);
	heist_future_release(d1);
	heist_future_release(d2);
	release_all(fs, 3);
	heist_group_destroy(g);

	/* An input's error ends the dependent unrun, and is the group's error. */
	assert_int_equal(heist_group_create(pool, &g), 0);
	in_group.group = g;
	const int results[1] = {4};
	heist_future *bad, *after_bad;
	reset(1);
	submit_inputs(pool, &bad, 1, results);
	assert_int_equal(heist_submit_after(NULL, &bad, 1, dependent, NULL, &in_group,
					    &after_bad), 0);
	atomic_store(&gate.open, 1);
	assert_int_equal(heist_group_wait(g), 4);
	assert_int_equal(heist_future_wait(after_bad), 4);
	heist_future_release(after_bad);
	heist_future_release(bad);
	heist_group_destroy(g);

	/* The group's cancel reaches a dependent task still waiting for its inputs. */
	assert_int_equal(heist_group_create(pool, &g), 0);
	in_group.group = g;
	heist_future *in, *pending;
	reset(1);
	submit_inputs(pool, &in, 1, NULL);
	assert_int_equal(heist_submit_after(NULL, &in, 1, dependent, NULL, &in_group, &pending),
			 0);
	heist_group_cancel(g);
	atomic_store(&gate.open, 1);
	assert_int_equal(heist_group_wait(g), ECANCELED);
	assert_int_equal(heist_future_wait(pending), ECANCELED);
	assert_int_equal(heist_future_wait(in), 0);
	assert_int_equal(atomic_load(&seen.runs), 0);
	heist_future_release(pending);
	heist_future_release(in);
	heist_group_destroy(g);
	heist_pool_destroy(pool);
}

/* ---------------------------------------------------------------------------------- */
/* A task graph: W10's stencil_1d (docs/workloads.md)                                 */

enum { WIDTH = 8, STEPS = 200 };

struct point {
	uint64_t value;
	heist_future *f;
	const struct point *in[3];
	int nin;
	int t, i;
};

static struct point grid[STEPS][WIDTH];

static int
point_run(void *arg)
{
	struct point *p = arg;
	uint64_t sum = (uint64_t)p->t + (uint64_t)p->i;
	for (int k = 0; k < p->nin; k++)
		sum += p->in[k]->value;
	p->value = sum;
	return 0;
}

static uint64_t
serial_answer(int t, int i, uint64_t prev[WIDTH])
{
	uint64_t sum = (uint64_t)t + (uint64_t)i;
	if (t > 0)
		for (int j = i - 1; j <= i + 1; j++)
			if (j >= 0 && j < WIDTH)
				sum += prev[j];
	return sum;
}

/* Submits the whole graph; returns 0 or the first error. */
static int
submit_graph(heist_pool *pool)
{
	for (int t = 0; t < STEPS; t++)
		for (int i = 0; i < WIDTH; i++) {
			struct point *p = &grid[t][i];
			heist_future *in[3];
			*p = (struct point){.t = t, .i = i};
			for (int j = i - 1; t > 0 && j <= i + 1; j++)
				if (j >= 0 && j < WIDTH) {
					in[p->nin] = grid[t - 1][j].f;
					p->in[p->nin++] = &grid[t - 1][j];
				}
			int err = heist_submit_after(pool, in, (size_t)p->nin, point_run, p, NULL,
						     &p->f);
			if (err)
				return err;
		}
	return 0;
}

static int
check_graph(void)
{
	uint64_t prev[WIDTH] = {0}, cur[WIDTH];
	int bad = 0;
	for (int t = 0; t < STEPS; t++) {
		for (int i = 0; i < WIDTH; i++) {
			cur[i] = serial_answer(t, i, prev);
			if (heist_future_wait(grid[t][i].f) || grid[t][i].value != cur[i])
				bad++;
		}
		memcpy(prev, cur, sizeof prev);
	}
	for (int t = 0; t < STEPS; t++)
		for (int i = 0; i < WIDTH; i++)
			heist_future_release(grid[t][i].f);
	return bad;
}

static int
graph_from_a_task(void *arg)
{
	return submit_graph(arg) ? -1 : heist_future_wait(grid[STEPS - 1][WIDTH / 2].f);
}

static void
a_stencil_graph_gives_the_serial_answer(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	for (int round = 0; round < 3; round++) {
		assert_int_equal(submit_graph(pool), 0);
		assert_int_equal(check_graph(), 0);
	}
	/* From a task, which waits for a point of the last step on its worker. */
	heist_future *z;
	assert_int_equal(heist_submit(pool, graph_from_a_task, pool, &z), 0);
	assert_int_equal(watched(z), 0);
	assert_int_equal(check_graph(), 0);
	heist_pool_destroy(pool);
}

/* One worker and no spare thread: a task that waits for a dependent task of its own
 * finishes only if the wait runs the dependent's inputs. */
static int
wait_for_own_dependent(void *arg)
{
	heist_pool *pool = arg;
	heist_future *in[5], *d;
	for (int i = 0; i < 5; i++)
		if (heist_submit(pool, ret_int, NULL, &in[i]))
			return -1;
	if (heist_submit_after(pool, in, 5, ret_int, (void *)2, NULL, &d))
		return -1;
	int r = heist_future_wait(d);
	heist_future_release(d);
	release_all(in, 5);
	return r == 2 ? 0 : -2;
}

/* Run waiter(pool) as the only task of a one-worker pool with no spare; it returns 0
 * once its wait finished, which only running the dependent's inputs can do. */
static void
on_a_lone_worker(heist_fn waiter)
{
	struct heist_config cfg = {.threads = 1, .max_spares = HEIST_SPARES_NONE};
	heist_pool *pool = make_pool_cfg(&cfg);
	heist_future *z;
	assert_int_equal(heist_submit(pool, waiter, pool, &z), 0);
	assert_int_equal(watched(z), 0);
	heist_pool_destroy(pool);
}

static void
waiting_for_it_on_a_lone_worker_runs_its_inputs(void **state)
{
	(void)state;
	on_a_lone_worker(wait_for_own_dependent);
}

static void
a_pool_destroyed_first_ends_it_with_eshutdown(void **state)
{
	(void)state;
	heist_pool *inputs_pool = make_pool(1), *pool = make_pool(1);
	heist_future *fs[2], *d;
	reset(2);
	submit_inputs(inputs_pool, fs, 2, NULL);
	assert_int_equal(heist_submit_after(pool, fs, 2, dependent, NULL, NULL, &d), 0);
	heist_pool_destroy(pool);	/* does not wait for a task not yet runnable */
	atomic_store(&gate.open, 1);
	assert_int_equal(watched(d), ESHUTDOWN);
	assert_int_equal(atomic_load(&seen.runs), 0);
	/* Inputs done and the pool gone: nothing queued, the call fails. */
	heist_future *late = SENTINEL;
	assert_int_equal(heist_submit_after(pool, fs, 2, dependent, NULL, NULL, &late), ESHUTDOWN);
	assert_null(late);
	release_all(fs, 2);
	heist_pool_destroy(inputs_pool);
}

/* A lone worker waits for a dependent of one input (no table: then.c, after1_link),
 * which it can only finish by running that input. */
static int
wait_for_own_one_input_dependent(void *arg)
{
	heist_pool *pool = arg;
	heist_future *in, *d;
	if (heist_submit(pool, ret_int, NULL, &in) ||
	    heist_submit_after(pool, &in, 1, ret_int, (void *)3, NULL, &d))
		return -1;
	int r = heist_future_wait(d);
	heist_future_release(d);
	heist_future_release(in);
	return r == 3 ? 0 : -2;
}

/* One input and no group: the task keeps its input in its own record, as a
 * continuation does, but under the dependent task's rules: an input's error or
 * cancellation ends it unrun with that result unless HEIST_AFTER_ALWAYS; an input
 * final at the call; its future and its token cancel it; a pool destroyed first; a
 * lone worker's wait runs its input. */
static void
one_input_follows_the_same_rules(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	struct heist_after run_anyway = {.flags = HEIST_AFTER_ALWAYS};
	heist_future *in, *d, *always;

	/* Still running when linked: an error, then 0. */
	for (int r = 7; r >= 0; r -= 7) {
		reset(1);
		submit_inputs(pool, &in, 1, (const int[]){r});
		assert_int_equal(heist_submit_after(pool, &in, 1, dependent, (void *)4, NULL, &d), 0);
		assert_int_equal(heist_submit_after(pool, &in, 1, dependent, (void *)6, &run_anyway,
						    &always), 0);
		heist_future_release(in);	/* the dependents hold their own references */
		nap(1000 * 1000);
		assert_false(heist_future_done(d));
		atomic_store(&gate.open, 1);
		assert_int_equal(watched(d), r ? r : 4);
		assert_int_equal(watched(always), 6);
		assert_int_equal(atomic_load(&seen.runs), r ? 1 : 2);
		assert_int_equal(atomic_load(&seen.early), 0);
	}

	/* Final at the call: 0, an error, cancelled. */
	reset(0);
	assert_int_equal(heist_submit(pool, ret_int, NULL, &in), 0);
	assert_int_equal(heist_future_wait(in), 0);
	assert_int_equal(heist_submit_after(pool, &in, 1, dependent, (void *)2, NULL, &d), 0);
	assert_int_equal(watched(d), 2);
	heist_future_release(in);
	assert_int_equal(heist_submit(pool, ret_int, (void *)9, &in), 0);
	assert_int_equal(heist_future_wait(in), 9);
	assert_int_equal(heist_submit_after(pool, &in, 1, dependent, (void *)2, NULL, &d), 0);
	assert_int_equal(watched(d), 9);
	assert_int_equal(heist_submit_after(pool, &in, 1, dependent, (void *)2, &run_anyway, &d),
			 0);
	assert_int_equal(watched(d), 2);
	heist_future_release(in);
	assert_int_equal(atomic_load(&seen.runs), 2);

	static struct hold busy;
	heist_pool *one = make_pool(1);
	heist_future *held;
	hold_worker(one, &busy, &held);
	assert_int_equal(heist_submit(one, ret_int, NULL, &in), 0);
	reset(1);
	assert_int_equal(heist_submit_after(pool, &in, 1, dependent, NULL, NULL, &d), 0);
	heist_future_cancel(in);	/* queued: never runs */
	assert_int_equal(watched(d), ECANCELED);
	assert_int_equal(heist_submit_after(pool, &in, 1, dependent, NULL, NULL, &d), 0);
	assert_int_equal(watched(d), ECANCELED);	/* cancelled already */
	atomic_store(&busy.open, 1);
	assert_int_equal(watched(held), 0);
	heist_future_release(in);
	heist_pool_destroy(one);
	assert_int_equal(atomic_load(&seen.runs), 0);

	/* Its own future and its token. */
	heist_cancel *token;
	assert_int_equal(heist_cancel_create(&token), 0);
	struct heist_after with_token = {.cancel = token};
	reset(1);
	submit_inputs(pool, &in, 1, NULL);
	heist_future *by_token;
	assert_int_equal(heist_submit_after(pool, &in, 1, dependent, NULL, NULL, &d), 0);
	assert_int_equal(heist_submit_after(pool, &in, 1, dependent, NULL, &with_token, &by_token),
			 0);
	heist_cancel_release(token);
	heist_future_cancel(d);
	assert_int_equal(watched(d), ECANCELED);
	heist_cancel_request(token);
	atomic_store(&gate.open, 1);
	assert_int_equal(watched(by_token), ECANCELED);
	assert_int_equal(heist_future_wait(in), 0);
	heist_future_release(in);
	assert_int_equal(atomic_load(&seen.runs), 0);

	/* Its pool destroyed before the input ends; then a call on it fails. */
	heist_pool *inputs_pool = make_pool(1), *gone = make_pool(1);
	reset(1);
	submit_inputs(inputs_pool, &in, 1, NULL);
	assert_int_equal(heist_submit_after(gone, &in, 1, dependent, NULL, NULL, &d), 0);
	heist_pool_destroy(gone);
	atomic_store(&gate.open, 1);
	assert_int_equal(watched(d), ESHUTDOWN);
	heist_future *late = SENTINEL;
	assert_int_equal(heist_submit_after(gone, &in, 1, dependent, NULL, NULL, &late), ESHUTDOWN);
	assert_null(late);
	heist_future_release(in);
	heist_pool_destroy(inputs_pool);
	assert_int_equal(atomic_load(&seen.runs), 0);
	heist_pool_destroy(pool);

	on_a_lone_worker(wait_for_own_one_input_dependent);
}

static void
bad_input_is_rejected(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1), *other = make_pool(1);
	heist_group *g;
	heist_cancel *token;
	assert_int_equal(heist_group_create(other, &g), 0);
	assert_int_equal(heist_cancel_create(&token), 0);
	heist_future *f, *out = SENTINEL;
	assert_int_equal(heist_submit(pool, ret_int, NULL, &f), 0);
	heist_future *with_null[2] = {f, NULL};
	struct heist_after other_group = {.group = g}, both = {.group = g, .cancel = token},
			   unknown = {.flags = 2};
	assert_int_equal(heist_submit_after(NULL, &f, 1, ret_int, NULL, NULL, &out), EINVAL);
	assert_null(out);
	out = SENTINEL;
	assert_int_equal(heist_submit_after(pool, &f, 1, NULL, NULL, NULL, &out), EINVAL);
	assert_null(out);
	assert_int_equal(heist_submit_after(pool, NULL, 1, ret_int, NULL, NULL, NULL), EINVAL);
	assert_int_equal(heist_submit_after(pool, with_null, 2, ret_int, NULL, NULL, NULL),
			 EINVAL);
	assert_int_equal(heist_submit_after(pool, &f, 1, ret_int, NULL, &other_group, NULL),
			 EINVAL);
	assert_int_equal(heist_submit_after(NULL, &f, 1, ret_int, NULL, &both, NULL), EINVAL);
	assert_int_equal(heist_submit_after(pool, &f, 1, ret_int, NULL, &unknown, NULL), EINVAL);
	/* out among the inputs: it is a NULL input by the time they are read, never a task
	 * that waits for itself; with 1, 2 and 4 inputs (each way of keeping them). */
	for (size_t n = 1; n <= 4; n *= 2) {
		heist_future *in[4] = {f, f, f, f};
		assert_int_equal(heist_submit_after(pool, in, n, ret_int, NULL, NULL, &in[n - 1]),
				 EINVAL);
		assert_null(in[n - 1]);
	}
	assert_int_equal(heist_group_wait(g), 0);	/* nothing was counted in */
	assert_int_equal(heist_future_wait(f), 0);
	heist_future_release(f);
	heist_cancel_release(token);
	heist_group_destroy(g);
	heist_pool_destroy(other);
	heist_pool_destroy(pool);
}

static void
allocation_failures_are_enomem(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_future *fs[16], *out = SENTINEL;
	for (int i = 0; i < 16; i++)
		assert_int_equal(heist_submit(pool, ret_int, NULL, &fs[i]), 0);
	fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	/* 16 inputs: the table comes from malloc (a record holds up to 3 with 64-bit
	 * pointers, 7 with 32-bit ones). */
	assert_int_equal(heist_submit_after(pool, fs, 16, ret_int, NULL, NULL, &out), ENOMEM);
	fault_disarm(FAULT_ALLOC);
	assert_null(out);
	for (int i = 0; i < 16; i++)
		assert_int_equal(heist_future_wait(fs[i]), 0);
	release_all(fs, 16);
	heist_pool_destroy(pool);
}

/* A thread's first waiting job of 2 or 3 inputs takes its cache of wide records, made
 * then (record.c): on a fresh thread that has its cache of records, and whose every
 * allocation fails from then on, ENOMEM from
 * heist_submit_after and heist_when_all, nothing linked, and both work once memory is
 * back. */
struct fresh {
	heist_pool *pool;
	heist_future *in[3];
	int after, when_all, after_again;
	heist_future *d, *w;
};

static void *
first_wide_jobs_main(void *arg)
{
	struct fresh *f = arg;
	heist_future *d = SENTINEL, *w = SENTINEL, *plain;
	/* The thread's cache of (narrow) records first, so that the wide one fails. */
	if (heist_submit(f->pool, ret_int, NULL, &plain) || heist_future_wait(plain)) {
		f->after = -1;
		return NULL;
	}
	heist_future_release(plain);
	fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	f->after = heist_submit_after(f->pool, f->in, 3, ret_int, (void *)2, NULL, &d);
	f->when_all = heist_when_all(f->pool, f->in, 2, &w);
	fault_disarm(FAULT_ALLOC);
	f->after += d != NULL;	/* NULL on failure */
	f->when_all += w != NULL;
	f->after_again = heist_submit_after(f->pool, f->in, 3, ret_int, (void *)2, NULL, &f->d);
	f->after_again += heist_when_all(f->pool, f->in, 2, &f->w);
	return NULL;
}

static void
a_first_wide_record_that_cannot_be_had_is_enomem(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	struct fresh f = {.pool = pool};
	for (int i = 0; i < 3; i++)
		assert_int_equal(heist_submit(pool, ret_int, NULL, &f.in[i]), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, first_wide_jobs_main, &f), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(f.after, ENOMEM);
	assert_int_equal(f.when_all, ENOMEM);
	assert_int_equal(f.after_again, 0);
	assert_int_equal(watched(f.d), 2);
	assert_int_equal(watched(f.w), 0);
	release_all(f.in, 3);
	heist_pool_destroy(pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(runs_after_all_its_inputs_and_never_before),
		cmocka_unit_test(with_no_inputs_or_done_inputs_runs_at_once),
		cmocka_unit_test(a_failed_or_cancelled_input_ends_it_unrun),
		cmocka_unit_test(the_first_failure_in_array_order_wins_whatever_order_they_end_in),
		cmocka_unit_test(an_input_that_ends_while_a_waiter_reads_it_stays_readable),
		cmocka_unit_test(inputs_that_end_while_another_thread_reads_them_stay_readable),
		cmocka_unit_test(its_future_or_token_cancels_it),
		cmocka_unit_test(a_group_waits_for_it_and_takes_its_error),
		cmocka_unit_test(a_stencil_graph_gives_the_serial_answer),
		cmocka_unit_test(waiting_for_it_on_a_lone_worker_runs_its_inputs),
		cmocka_unit_test(a_pool_destroyed_first_ends_it_with_eshutdown),
		cmocka_unit_test(one_input_follows_the_same_rules),
		cmocka_unit_test(bad_input_is_rejected),
		cmocka_unit_test(allocation_failures_are_enomem),
		cmocka_unit_test(a_first_wide_record_that_cannot_be_had_is_enomem),
	};
	return RUN_TESTS(tests);
}
