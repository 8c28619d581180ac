/* SPDX-License-Identifier: MIT */
/* test-oversub.c - a pool of far more workers than cores (64 on the CI machine's 2):
 * fork-join, for_each from outside and from a task, submits with futures waited for
 * from outside and from tasks, and groups all complete with exact results, and once the
 * work is over the pool goes quiet (no steal attempts: every worker asleep). Nothing here is timed: a wait is bounded
 * only so that a hang fails (POLL, watched waits). Rules and helpers: common.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "common.h"

enum { WORKERS = 64 };

static heist_pool *
big_pool(void)
{
	return make_pool(WORKERS);
}

/* ---- fork-join -------------------------------------------------------------------- */

static void
fork_join_is_exact(void **state)
{
	(void)state;
	heist_pool *pool = big_pool();
	for (int round = 0; round < 5; round++) {
		struct fib f = {.n = 22};
		assert_int_equal(heist_run(pool, fib_spawn, &f), 0);
		assert_true(f.r == fib_serial(22));
	}
	heist_pool_destroy(pool);
}

/* ---- for_each --------------------------------------------------------------------- */

enum { N = 300007 };

struct visits {
	heist_pool *pool;
	atomic_uchar *hits;
	int result;
};

static int
visit(void *arg, size_t b, size_t e)
{
	struct visits *v = arg;
	for (size_t i = b; i < e; i++)
		atomic_fetch_add_explicit(&v->hits[i], 1, memory_order_relaxed);
	return 0;
}

static int
loop_in_task(void *arg)
{
	struct visits *v = arg;
	v->result = heist_for_each(v->pool, 0, N, 0, visit, v);
	return 0;
}

static void
check_once(struct visits *v)
{
	size_t wrong = 0;
	for (size_t i = 0; i < N; i++) {
		wrong += atomic_load_explicit(&v->hits[i], memory_order_relaxed) != 1;
		atomic_store_explicit(&v->hits[i], 0, memory_order_relaxed);
	}
	assert_int_equal(wrong, 0);
}

static void
for_each_visits_every_index_once(void **state)
{
	(void)state;
	heist_pool *pool = big_pool();
	struct visits v = {.pool = pool, .hits = calloc(N, sizeof(atomic_uchar))};
	assert_non_null(v.hits);
	for (int round = 0; round < 3; round++) {
		assert_int_equal(heist_for_each(pool, 0, N, 0, visit, &v), 0);	/* outside */
		check_once(&v);
		v.result = -1;
		heist_future *f;
		assert_int_equal(heist_submit(pool, loop_in_task, &v, &f), 0);	/* a task */
		assert_int_equal(watched(f), 0);
		assert_int_equal(v.result, 0);
		check_once(&v);
	}
	free(v.hits);
	heist_pool_destroy(pool);
}

/* ---- submits and futures ----------------------------------------------------------- */

enum { SUBMITS = 10000, FANOUT = 16, PARENTS = 200 };

static int
twice(void *arg)
{
	return (int)(intptr_t)arg * 2;
}

/* Submits FANOUT children and waits for each from the task. */
static int
parent(void *arg)
{
	heist_pool *pool = arg;
	heist_future *f[FANOUT];
	int sum = 0;
	for (int k = 0; k < FANOUT; k++)
		if (heist_submit(pool, twice, (void *)(intptr_t)k, &f[k]))
			return -1;
	for (int k = 0; k < FANOUT; k++) {
		sum += heist_future_wait(f[k]);
		heist_future_release(f[k]);
	}
	return sum;
}

static void
futures_are_satisfied_from_outside_and_from_tasks(void **state)
{
	(void)state;
	heist_pool *pool = big_pool();
	heist_future **f = calloc(SUBMITS, sizeof *f);
	assert_non_null(f);
	for (int i = 0; i < SUBMITS; i++)
		assert_int_equal(heist_submit(pool, twice, (void *)(intptr_t)i, &f[i]), 0);
	for (int i = 0; i < SUBMITS; i++)
		assert_int_equal(watched(f[i]), 2 * i);
	for (int i = 0; i < PARENTS; i++)
		assert_int_equal(heist_submit(pool, parent, pool, &f[i]), 0);
	for (int i = 0; i < PARENTS; i++)
		assert_int_equal(watched(f[i]), FANOUT * (FANOUT - 1));
	/* A group over the lot, waited once. */
	heist_group *g;
	assert_int_equal(heist_group_create(pool, &g), 0);
	for (int i = 0; i < PARENTS; i++)
		assert_int_equal(heist_group_submit(g, parent, pool), 0);
	assert_int_equal(heist_group_wait(g), FANOUT * (FANOUT - 1));
	heist_group_destroy(g);
	free(f);
	heist_pool_destroy(pool);
}

/* ---- the idle pool sleeps ---------------------------------------------------------- */

/* Quiet: no thread of the pool tried a steal over a nap of 1 ms. A searching worker
 * tries steals without pause, so a pool that is quiet is asleep. */
static bool
quiet(heist_pool *pool)
{
	struct heist_stats a, b;
	assert_int_equal(heist_pool_stats(pool, &a), 0);
	nap(1000 * 1000);
	assert_int_equal(heist_pool_stats(pool, &b), 0);
	return a.steal_attempts == b.steal_attempts;
}

/* Every worker has slept at least once. */
static bool
all_slept(heist_pool *pool)
{
	for (unsigned w = 0; w < WORKERS; w++) {
		struct heist_worker_stats ws;
		assert_int_equal(heist_pool_worker_stats(pool, w, &ws), 0);
		if (ws.sleeps < 1)
			return false;
	}
	return true;
}

/* After the work every worker sleeps: polled, not asserted once quiet() holds, since
 * with 64 workers on 2 cores a searcher that yields can miss a whole 1 ms nap (CI saw
 * a pool quiet with one worker not yet asleep). */
static void
after_the_work_the_pool_goes_quiet(void **state)
{
	(void)state;
	heist_pool *pool = big_pool();
	for (int round = 0; round < 3; round++) {
		struct fib f = {.n = 20};
		assert_int_equal(heist_run(pool, fib_spawn, &f), 0);
		assert_true(f.r == fib_serial(20));
		bool ok;
		POLL(ok, quiet(pool));	/* a worker that never stops searching fails here */
		assert_true(ok);
	}
	bool ok;
	POLL(ok, all_slept(pool));	/* ... or here */
	assert_true(ok);
	heist_pool_destroy(pool);
}

/* A pool of HEIST_MAX_THREADS / 4 workers (fewer under a sanitizer): created, given
 * 10,000 tasks and destroyed, and quiet in between. An idle search used to visit every
 * other worker spin times, so such a pool spent seconds searching before it slept; a
 * hang or an endless search fails here (the test's timeout bounds the rest). */
static void
a_thousand_workers_start_run_and_go_quiet(void **state)
{
	(void)state;
#ifdef TEST_SANITIZED
	enum { MANY = 256 };
#else
	enum { MANY = HEIST_MAX_THREADS / 4 };
#endif
	enum { TASKS = 10000 };
	/* A 32-bit process has room for a thousand stacks of 1 MiB, not of the default
	 * 8 MiB (these tasks need a few KiB). */
	struct heist_config cfg = {.threads = MANY,
				   .stack_size = sizeof(void *) < 8 ? (size_t)1 << 20 : 0};
	heist_pool *pool = make_pool_cfg(&cfg);
	heist_future *last = NULL;
	for (int i = 0; i < TASKS; i++)
		assert_int_equal(heist_submit(pool, twice, (void *)(intptr_t)i,
					      i == TASKS - 1 ? &last : NULL), 0);
	assert_int_equal(watched(last), 2 * (TASKS - 1));
	assert_int_equal(heist_pool_wait_idle(pool), 0);
	struct heist_stats st;
	assert_int_equal(heist_pool_stats(pool, &st), 0);
	assert_true(st.executed >= TASKS);
	bool ok;
	POLL(ok, quiet(pool));
	assert_true(ok);
	heist_pool_destroy(pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fork_join_is_exact),
		cmocka_unit_test(for_each_visits_every_index_once),
		cmocka_unit_test(futures_are_satisfied_from_outside_and_from_tasks),
		cmocka_unit_test(after_the_work_the_pool_goes_quiet),
		cmocka_unit_test(a_thousand_workers_start_run_and_go_quiet),
	};
	return RUN_TESTS(tests);
}
