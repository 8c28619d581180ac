/* SPDX-License-Identifier: MIT */
/* test-future.c - futures seen from the public API: a task's result or error, the same
 * on every wait; heist_future_wait_for, heist_future_wait_timeout and heist_future_done
 * before and after the task finished; a wait on a worker that runs other tasks instead
 * of deadlocking (submits from tasks, waited for on a one-worker pool). Cancelling
 * through a future is tested in test-cancel.c, futures that outlive their pool in
 * test-pool.c, futures mixed with spawns in test-fork.c. Rules and helpers: common.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <stdint.h>

#include "common.h"

/* ---------------------------------------------------------------------------------- */
/* Results                                                                            */

static void
results_and_errors_are_delivered(void **state)
{
	heist_pool *pool = make_pool(2);
	heist_future *f0 = NULL, *f42 = NULL;

	(void)state;
	assert_int_equal(heist_submit(pool, ret_int, (void *)0, &f0), 0);
	assert_int_equal(heist_submit(pool, ret_int, (void *)42, &f42), 0);
	assert_non_null(f0);
	assert_non_null(f42);
	assert_true(f0 != f42);
	assert_int_equal(heist_future_wait(f0), 0);
	assert_int_equal(heist_future_wait(f42), 42);
	/* Waiting again gives the same value, and the future now says done. */
	assert_int_equal(heist_future_wait(f42), 42);
	assert_int_equal(heist_future_wait(f0), 0);
	assert_true(heist_future_done(f0));
	assert_true(heist_future_done(f42));
	assert_true(heist_future_wait_for(f42, 0));
	heist_future_release(f0);
	heist_future_release(f42);
	heist_pool_destroy(pool);
}

static void
wait_for_is_false_until_the_task_is_done(void **state)
{
	heist_pool *pool = make_pool(1);
	static struct hold h;	/* static: a failed test leaves tasks that use it */
	heist_future *f = NULL;

	(void)state;
	h = (struct hold){ .ret = 5 };
	hold_worker(pool, &h, &f);
	/* The hold is closed: the task cannot be done, whatever the timeout. */
	assert_false(heist_future_wait_for(f, 0));
	assert_false(heist_future_wait_for(f, 2 * 1000 * 1000));
	assert_false(heist_future_done(f));
	atomic_store(&h.open, 1);
	assert_true(heist_future_wait_for(f, LONG_WAIT_NS));
	assert_true(heist_future_done(f));
	assert_int_equal(atomic_load(&h.left), 1);	/* its writes are visible */
	assert_int_equal(heist_future_wait(f), 5);
	heist_future_release(f);
	heist_pool_destroy(pool);
}

/* The int-returning timed wait tells apart what the bool one cannot: NULL, a timeout,
 * done; and a task whose own result is ETIMEDOUT is done, not timed out. */
static void
wait_timeout_tells_null_timeout_and_done_apart(void **state)
{
	heist_pool *pool = make_pool(1);
	static struct hold h;	/* static: a failed test leaves tasks that use it */
	heist_future *f = NULL;

	(void)state;
	assert_int_equal(heist_future_wait_timeout(NULL, 0), EINVAL);
	assert_int_equal(heist_future_wait_timeout(NULL, LONG_WAIT_NS), EINVAL);
	h = (struct hold){ .ret = ETIMEDOUT };
	hold_worker(pool, &h, &f);
	assert_int_equal(heist_future_wait_timeout(f, 0), ETIMEDOUT);
	assert_int_equal(heist_future_wait_timeout(f, 2 * 1000 * 1000), ETIMEDOUT);
	assert_false(heist_future_done(f));
	atomic_store(&h.open, 1);
	assert_int_equal(heist_future_wait_timeout(f, LONG_WAIT_NS), 0);
	assert_int_equal(atomic_load(&h.left), 1);	/* its writes are visible */
	assert_int_equal(heist_future_wait_timeout(f, 0), 0);
	assert_int_equal(heist_future_wait(f), ETIMEDOUT);	/* the task's own result */
	heist_future_release(f);
	heist_pool_destroy(pool);
}

/* ---------------------------------------------------------------------------------- */
/* Helping waits                                                                      */

/* Submits two children with futures and waits for both: on a one-worker pool this
 * only finishes if waiting on a worker runs other tasks. Returns its subtree's size. */
static heist_pool *nest_pool;
static atomic_uint nest_errors;

static int
nest_task(void *arg)
{
	uintptr_t level = (uintptr_t)arg;
	heist_future *a = NULL, *b = NULL;
	int na, nb;

	if (heist_worker_index() != 0)
		atomic_fetch_add(&nest_errors, 1);
	if (level == 0)
		return 1;
	if (heist_submit(nest_pool, nest_task, (void *)(level - 1), &a) != 0 ||
	    heist_submit(nest_pool, nest_task, (void *)(level - 1), &b) != 0) {
		atomic_fetch_add(&nest_errors, 1);
		heist_future_release(a);
		return 0;
	}
	na = heist_future_wait(a);
	nb = heist_future_wait(b);
	if (!heist_future_done(a) || !heist_future_done(b))
		atomic_fetch_add(&nest_errors, 1);
	heist_future_release(a);
	heist_future_release(b);
	return 1 + na + nb;
}

static void
waiting_on_a_worker_helps_instead_of_deadlocking(void **state)
{
	enum { LEVELS = 8 };
	heist_future *f = NULL;

	(void)state;
	nest_pool = make_pool(1);
	atomic_store(&nest_errors, 0);
	assert_int_equal(heist_submit(nest_pool, nest_task, (void *)LEVELS, &f), 0);
	assert_int_equal(heist_future_wait(f), (1 << (LEVELS + 1)) - 1);
	heist_future_release(f);
	assert_int_equal(atomic_load(&nest_errors), 0);
	heist_pool_destroy(nest_pool);
	nest_pool = NULL;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(results_and_errors_are_delivered),
		cmocka_unit_test(wait_for_is_false_until_the_task_is_done),
		cmocka_unit_test(wait_timeout_tells_null_timeout_and_done_apart),
		cmocka_unit_test(waiting_on_a_worker_helps_instead_of_deadlocking),
	};
	return RUN_TESTS(tests);
}
