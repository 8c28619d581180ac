/* SPDX-License-Identifier: MIT */
/* test-promise.c - futures the program completes (heist_promise_*, src/promise.c): a
 * set from another thread wakes a waiting outside thread and publishes what the setter
 * wrote; a set before the wait; continuations, when_all and dependent tasks (in a
 * group) on a promise run once it is set, and not before; a task that waits on a
 * promise on a one-worker pool does not stall the pool: a stand-in runs the task that
 * sets it; a released unset promise cancels its future; a cancelled future makes set
 * ECANCELED; a second set is EINVAL; the future outlives the promise and the pool; bad
 * input; allocation failure. Helpers: common.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <errno.h>
#include <pthread.h>

#include "common.h"
#include "faults.h"

struct late_set {
	heist_promise *p;
	int payload;	/* written before the set, read by whoever sees the future done */
	int result;
	atomic_int set_returned;
};

static void *
set_later(void *arg)
{
	struct late_set *s = arg;
	nap(2 * NAP_NS);	/* most runs: the waiter is asleep by now (not needed) */
	s->payload = 42;
	atomic_store(&s->set_returned, heist_promise_set(s->p, s->result) + 1);
	return NULL;
}

static void
a_set_from_another_thread_wakes_the_waiter(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	static struct late_set s;
	heist_future *f;
	assert_int_equal(heist_promise_create(pool, &s.p, &f), 0);
	assert_false(heist_future_done(f));
	s.result = 7;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, set_later, &s), 0);
	assert_int_equal(heist_future_wait(f), 7);
	assert_int_equal(s.payload, 42);	/* the setter's write, published by the set */
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&s.set_returned), 0 + 1);
	heist_promise_release(s.p);
	heist_future_release(f);
	heist_pool_destroy(pool);
}

static void
a_set_before_the_wait_is_kept(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_promise *p;
	heist_future *f;
	assert_int_equal(heist_promise_create(pool, &p, &f), 0);
	assert_int_equal(heist_promise_set(p, 0), 0);
	heist_promise_release(p);	/* set: releasing it breaks nothing */
	assert_true(heist_future_done(f));
	assert_true(heist_future_wait_for(f, 0));
	assert_int_equal(heist_future_wait(f), 0);
	heist_future_release(f);
	heist_pool_destroy(pool);
}

static atomic_int after_runs;
static heist_future *seen_input;

static int
count_after(void *arg)
{
	(void)arg;
	atomic_fetch_add(&after_runs, 1);
	return 5;
}

static int
read_input(void *arg)
{
	(void)arg;
	atomic_fetch_add(&after_runs, 1);
	return heist_future_wait(seen_input) + 100;	/* done already: no wait */
}

/* A continuation, a when_all and a dependent task of a group wait for the promise;
 * none runs before the set, all after it. */
static void
what_waits_for_it_runs_after_the_set(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_promise *p;
	heist_future *f, *then, *all, *after;
	heist_group *g;
	atomic_store(&after_runs, 0);
	assert_int_equal(heist_promise_create(pool, &p, &f), 0);
	seen_input = f;
	assert_int_equal(heist_group_create(pool, &g), 0);
	assert_int_equal(heist_future_then(f, read_input, NULL, &then), 0);
	assert_int_equal(heist_when_all(pool, &f, 1, &all), 0);
	struct heist_after in_group = {.group = g, .flags = HEIST_AFTER_ALWAYS};
	assert_int_equal(heist_submit_after(pool, &f, 1, count_after, NULL, &in_group, &after),
			 0);
	nap(NAP_NS);
	assert_int_equal(atomic_load(&after_runs), 0);
	assert_false(heist_future_done(then));
	assert_false(heist_future_done(all));
	assert_int_equal(heist_promise_set(p, 3), 0);
	heist_promise_release(p);
	assert_int_equal(heist_group_wait(g), 5);	/* the dependent task's result */
	assert_int_equal(watched(then), 103);
	assert_int_equal(watched(all), 3);	/* an input's error, as when_all gives */
	assert_int_equal(watched(after), 5);
	assert_int_equal(atomic_load(&after_runs), 2);
	heist_group_destroy(g);
	heist_future_release(f);
	heist_pool_destroy(pool);
}

/* On a one-worker pool a task waits on a promise that only a later task sets: the
 * waiting worker has nothing it may run (the promise is the program's), so a stand-in
 * must run the setter, or the pool stalls forever. */
static heist_promise *lone_promise;
static heist_future *lone_future;

static int
wait_on_promise(void *arg)
{
	(void)arg;
	return heist_future_wait(lone_future);
}

static int
set_promise(void *arg)
{
	(void)arg;
	return heist_promise_set(lone_promise, 9);
}

static void
a_waiting_worker_does_not_stall_its_pool(void **state)
{
	(void)state;
	struct heist_config cfg = {.threads = 1};
	heist_pool *pool = make_pool_cfg(&cfg);
	assert_int_equal(heist_promise_create(pool, &lone_promise, &lone_future), 0);
	heist_future *waiter, *setter;
	assert_int_equal(heist_submit(pool, wait_on_promise, NULL, &waiter), 0);
	assert_int_equal(heist_submit(pool, set_promise, NULL, &setter), 0);
	assert_int_equal(watched(waiter), 9);
	assert_int_equal(watched(setter), 0);
	heist_promise_release(lone_promise);
	heist_future_release(lone_future);
	heist_pool_destroy(pool);
}

static void
a_released_unset_promise_cancels_its_future(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_promise *p;
	heist_future *f, *then;
	atomic_store(&after_runs, 0);
	assert_int_equal(heist_promise_create(pool, &p, &f), 0);
	assert_int_equal(heist_future_then(f, count_after, NULL, &then), 0);
	heist_promise_release(p);
	assert_int_equal(heist_future_wait(f), ECANCELED);
	assert_int_equal(watched(then), ECANCELED);
	assert_int_equal(atomic_load(&after_runs), 0);
	heist_future_release(f);
	heist_pool_destroy(pool);
}

static void
a_cancelled_future_or_a_second_set_is_refused(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_promise *p;
	heist_future *f;
	assert_int_equal(heist_promise_create(pool, &p, &f), 0);
	heist_future_cancel(f);
	assert_int_equal(heist_promise_set(p, 1), ECANCELED);
	assert_int_equal(heist_future_wait(f), ECANCELED);
	heist_promise_release(p);
	heist_future_release(f);

	assert_int_equal(heist_promise_create(pool, &p, &f), 0);
	assert_int_equal(heist_promise_set(p, 1), 0);
	assert_int_equal(heist_promise_set(p, 2), EINVAL);
	heist_future_cancel(f);	/* done: changes nothing */
	assert_int_equal(heist_future_wait(f), 1);
	heist_promise_release(p);
	heist_future_release(f);
	heist_pool_destroy(pool);
}

/* The future may be released first, and may outlive the pool and the promise. */
static void
the_future_and_the_promise_outlive_each_other(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_promise *p;
	heist_future *f;
	assert_int_equal(heist_promise_create(pool, &p, &f), 0);
	heist_future_release(f);	/* nobody waits: setting it is still fine */
	assert_int_equal(heist_promise_set(p, 4), 0);
	heist_promise_release(p);

	assert_int_equal(heist_promise_create(pool, &p, &f), 0);
	heist_pool_destroy(pool);	/* does not wait for the program's promise */
	assert_int_equal(heist_promise_set(p, 6), 0);
	heist_promise_release(p);
	assert_int_equal(heist_future_wait(f), 6);
	heist_future_release(f);
}

static void
bad_input_is_rejected(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_promise *p = SENTINEL;
	heist_future *f = SENTINEL;
	assert_int_equal(heist_promise_create(NULL, &p, &f), EINVAL);
	assert_null(p);
	assert_null(f);
	f = SENTINEL;
	assert_int_equal(heist_promise_create(pool, NULL, &f), EINVAL);
	assert_null(f);
	p = SENTINEL;
	assert_int_equal(heist_promise_create(pool, &p, NULL), EINVAL);
	assert_null(p);
	assert_int_equal(heist_promise_set(NULL, 0), EINVAL);
	heist_promise_release(NULL);
	heist_pool_destroy(pool);
}

static void
allocation_failure_is_enomem(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_promise *p = SENTINEL;
	heist_future *f = SENTINEL;
	/* The first case of the run: this thread's record cache is empty, so the
	 * record must come from the allocator. */
	fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	assert_int_equal(heist_promise_create(pool, &p, &f), ENOMEM);
	fault_disarm(FAULT_ALLOC);
	assert_null(p);
	assert_null(f);
	assert_int_equal(heist_promise_create(pool, &p, &f), 0);
	heist_promise_release(p);
	heist_future_release(f);
	heist_pool_destroy(pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(allocation_failure_is_enomem),
		cmocka_unit_test(a_set_from_another_thread_wakes_the_waiter),
		cmocka_unit_test(a_set_before_the_wait_is_kept),
		cmocka_unit_test(what_waits_for_it_runs_after_the_set),
		cmocka_unit_test(a_waiting_worker_does_not_stall_its_pool),
		cmocka_unit_test(a_released_unset_promise_cancels_its_future),
		cmocka_unit_test(a_cancelled_future_or_a_second_set_is_refused),
		cmocka_unit_test(the_future_and_the_promise_outlive_each_other),
		cmocka_unit_test(bad_input_is_rejected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
