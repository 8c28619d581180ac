/* SPDX-License-Identifier: MIT */
/* test-errno.c - every public call leaves errno as it found it (heist.h): set before
 * each call, checked after, from an outside thread and from inside a task, on paths
 * that sleep on a futex, time out, allocate, read hwloc and /proc, fail with EINVAL,
 * and on a profiling pool. */
#include <errno.h>
#include <string.h>

#include "common.h"
#include "faults.h"
#include "heist/profile.h"

enum { MARK = 4242 };

/* The call, with errno at MARK before it; fails the test, naming the call, if errno
 * is not MARK after it. */
#define KEEPS(call)                                                                  \
	do {                                                                         \
		errno = MARK;                                                        \
		call;                                                                \
		int after_ = errno;                                                  \
		if (after_ != MARK)                                                  \
			fail_msg("%s set errno to %d (%s)", #call, after_,           \
				 strerror(after_));                                  \
	} while (0)

static int
slow_task(void *arg)
{
	(void)arg;
	nap(2 * 1000 * 1000);	/* so that an outside waiter goes to its futex */
	return 7;
}

static int
body(void *arg, size_t b, size_t e)
{
	(void)arg;
	(void)b;
	(void)e;
	return 0;
}

static int
sum_body(void *arg, void *acc, size_t b, size_t e)
{
	(void)arg;
	*(long *)acc += (long)(e - b);
	return 0;
}

static void
add(void *arg, void *into, const void *from)
{
	(void)arg;
	*(long *)into += *(const long *)from;
}

static void
sample(void *ctx, const struct heist_profile_sample *s)
{
	(void)s;
	(*(unsigned *)ctx)++;
}

/* The calls a task and an outside thread may both make. */
static void
calls_anywhere(heist_pool *pool)
{
	heist_future *f = NULL, *g = NULL, *all = NULL;
	KEEPS(heist_submit(pool, slow_task, NULL, &f));
	KEEPS(heist_future_wait_for(f, 1000));		/* times out */
	KEEPS(heist_future_wait_timeout(f, 1000));	/* ETIMEDOUT, returned only */
	KEEPS(heist_future_done(f));
	KEEPS(heist_future_then(f, ret_int, NULL, &g));
	heist_future *both[] = {f, g};
	KEEPS(heist_when_all(pool, both, 2, &all));
	KEEPS(heist_future_wait(f));			/* sleeps, or helps on a worker */
	KEEPS(heist_future_wait_for(all, LONG_WAIT_NS));
	KEEPS(heist_future_release(all));
	KEEPS(heist_future_release(g));
	KEEPS(heist_future_release(f));
	int v = 3;
	KEEPS(heist_submit_copy(pool, ret_int, &v, sizeof(v), &f));
	KEEPS(heist_future_cancel(f));
	KEEPS(heist_future_wait(f));
	KEEPS(heist_future_release(f));
	KEEPS(heist_submit(pool, ret_int, NULL, NULL));

	heist_promise *p = NULL;
	KEEPS(heist_promise_create(pool, &p, &f));
	KEEPS(heist_promise_set(p, 0));
	KEEPS(heist_promise_set(p, 0));			/* EINVAL, returned only */
	KEEPS(heist_future_wait(f));
	KEEPS(heist_promise_release(p));
	KEEPS(heist_future_release(f));

	KEEPS(heist_now_ns());
	KEEPS(heist_submit_delayed(pool, 100 * 1000, ret_int, NULL, &f));
	KEEPS(heist_future_wait(f));			/* the keeper's timed sleep */
	KEEPS(heist_future_release(f));
	struct heist_timing every = {.period_ns = 50 * 1000};
	KEEPS(heist_submit_timed(pool, &every, ret_int, (void *)1, &f));	/* ends at once */
	KEEPS(heist_future_wait(f));
	KEEPS(heist_future_release(f));
	struct heist_timing bad = {.delay_ns = 1, .at_ns = 1};
	KEEPS(heist_submit_timed(pool, &bad, ret_int, NULL, NULL));	/* EINVAL */
	KEEPS(heist_submit_delayed(pool, 3600ull * 1000 * 1000 * 1000, ret_int, NULL, &f));
	KEEPS(heist_future_cancel(f));
	KEEPS(heist_future_release(f));

	KEEPS(heist_submit_priority(pool, HEIST_PRIORITY_HIGH, ret_int, NULL, &f));
	KEEPS(heist_future_wait(f));
	KEEPS(heist_future_release(f));
	KEEPS(heist_submit_priority(pool, 7, ret_int, NULL, NULL));	/* EINVAL */
	KEEPS(heist_submit_bulk_priority(pool, HEIST_PRIORITY_LOW, 0, 100, 0, body, NULL,
					 &f));
	KEEPS(heist_future_wait(f));
	KEEPS(heist_future_release(f));

	heist_cancel *c = NULL;
	KEEPS(heist_cancel_create(&c));
	KEEPS(heist_submit_cancellable(pool, c, slow_task, NULL, &f));
	KEEPS(heist_cancel_request(c));
	KEEPS(heist_cancel_requested(c));
	KEEPS(heist_future_wait(f));
	KEEPS(heist_future_release(f));
	KEEPS(heist_cancel_release(c));
	KEEPS(heist_cancelled());

	heist_group *grp = NULL;
	KEEPS(heist_group_create(pool, &grp));
	KEEPS(heist_group_set_priority(grp, HEIST_PRIORITY_LOW));
	for (int i = 0; i < 4; i++)
		KEEPS(heist_group_submit(grp, slow_task, NULL));
	KEEPS(heist_group_wait(grp));
	KEEPS(heist_group_cancel(grp));
	KEEPS(heist_group_destroy(grp));

	KEEPS(heist_for_each(pool, 0, 100000, 0, body, NULL));
	KEEPS(heist_submit_bulk(pool, 0, 100000, 0, body, NULL, &f));
	KEEPS(heist_future_wait(f));
	KEEPS(heist_future_release(f));
	long sum = 0, zero = 0;
	KEEPS(heist_reduce(pool, 0, 100000, 0, &sum, sizeof(sum), &zero, sum_body, add,
			   NULL));
	KEEPS(heist_reduce_deterministic(pool, 0, 100000, 0, &sum, sizeof(sum), &zero,
					 sum_body, add, NULL));
	struct fib fb = {.n = 15};
	KEEPS(heist_run(pool, fib_spawn, &fb));
	assert_int_equal(fb.r, 610);
	KEEPS(heist_join(ret_int, NULL, ret_int, NULL));
	heist_task t;
	KEEPS(heist_spawn(&t, slow_task, NULL));
	KEEPS(heist_sync(&t));

	struct heist_stats st;
	struct heist_worker_stats ws;
	struct heist_placement pl;
	KEEPS(heist_pool_stats(pool, &st));
	KEEPS(heist_pool_worker_stats(pool, 0, &ws));
	KEEPS(heist_pool_placement(pool, 0, &pl, NULL, NULL, 0));
	KEEPS(heist_pool_size(pool));
	KEEPS(heist_pool_pending(pool));
	KEEPS(heist_pool_threads(pool));
	KEEPS(heist_worker_index());
	KEEPS(heist_thread_index());
	KEEPS(heist_version());
	KEEPS(heist_version_number());

	/* Failures: errno is not how heist reports them. */
	KEEPS(heist_submit(NULL, ret_int, NULL, NULL));
	KEEPS(heist_future_wait(NULL));
	KEEPS(heist_future_wait_for(NULL, 1));
	KEEPS(heist_future_wait_timeout(NULL, 1));
	KEEPS(heist_for_each(pool, 2, 1, 0, body, NULL));
	KEEPS(heist_group_create(NULL, &grp));
	KEEPS(heist_cancel_create(NULL));
}

static int
calls_in_task(void *arg)
{
	calls_anywhere(arg);
	return 0;
}

static void
every_call_keeps_errno_outside_and_in_tasks(void **state)
{
	(void)state;
	heist_pool *pool = NULL;
	struct heist_config cfg = {.threads = 2};
	KEEPS(heist_pool_create(&pool, &cfg));
	assert_non_null(pool);
	calls_anywhere(pool);
	heist_future *f = NULL;
	KEEPS(heist_submit(pool, calls_in_task, pool, &f));
	KEEPS(assert_int_equal(heist_future_wait(f), 0));
	KEEPS(heist_future_release(f));
	KEEPS(heist_pool_wait_idle(pool));
	KEEPS(heist_pool_destroy(pool));
	KEEPS(heist_pool_destroy(NULL));
	/* The default pool reads hwloc's topology and /proc; a bad config fails. */
	KEEPS(heist_pool_create(&pool, NULL));
	KEEPS(heist_pool_destroy(pool));
	struct heist_config bad = {.threads = HEIST_MAX_THREADS + 1};
	KEEPS(heist_pool_create(&pool, &bad));
	KEEPS(heist_pool_create(NULL, NULL));
}

static void
profiler_calls_keep_errno(void **state)
{
	(void)state;
	struct heist_config cfg = {.threads = 2, .profile = true};
	heist_pool *pool = NULL;
	KEEPS(heist_pool_create(&pool, &cfg));
	calls_anywhere(pool);
	KEEPS(heist_pool_wait_idle(pool));
	struct heist_profile_clock clk;
	struct heist_latency_report rep;
	double q[] = {0.5, 0.99};
	uint64_t out[2];
	unsigned n = 0;
	KEEPS(heist_profile_clock(&clk));
	KEEPS(heist_profile_now());
	KEEPS(heist_profile_report(pool, &rep));
	KEEPS(heist_profile_worker_report(pool, 0, &rep));
	KEEPS(heist_profile_path_report(pool, HEIST_PATH_INLINE, &rep));
	KEEPS(heist_profile_percentiles(pool, HEIST_LATENCY_DISPATCH, q, out, 2));
	KEEPS(heist_profile_samples(pool, sample, &n));
	KEEPS(heist_profile_reset(pool));
	KEEPS(heist_profile_report(NULL, &rep));
	KEEPS(heist_pool_destroy(pool));
}

/* Out of memory: malloc sets ENOMEM, heist returns it and puts errno back. */
static void
failed_allocations_keep_errno(void **state)
{
	(void)state;
	heist_pool *pool = NULL;
	fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	KEEPS(assert_int_equal(heist_pool_create(&pool, NULL), ENOMEM));
	heist_cancel *c = NULL;
	KEEPS(assert_int_equal(heist_cancel_create(&c), ENOMEM));
	fault_disarm(FAULT_ALLOC);
	struct heist_config cfg = {.threads = 1};
	pool = make_pool_cfg(&cfg);
	heist_group *g = NULL;
	fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	KEEPS(assert_int_equal(heist_group_create(pool, &g), ENOMEM));
	heist_future *f = NULL;
	char big[4096] = {0};
	KEEPS(assert_int_equal(heist_submit_copy(pool, ret_int, big, sizeof(big), &f),
			       ENOMEM));
	fault_disarm(FAULT_ALLOC);
	assert_true(fault_failed(FAULT_ALLOC) > 0);
	/* pthread_create failing: no worker, no pool, and errno as it was. */
	fault_fail_all(FAULT_THREAD, FAULT_THIS_THREAD);
	heist_pool *none = NULL;
	KEEPS(assert_int_not_equal(heist_pool_create(&none, &cfg), 0));
	fault_disarm(FAULT_THREAD);
	heist_pool_destroy(pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_call_keeps_errno_outside_and_in_tasks),
		cmocka_unit_test(profiler_calls_keep_errno),
		cmocka_unit_test(failed_allocations_keep_errno),
	};
	return RUN_TESTS(tests);
}
