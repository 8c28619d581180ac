/* test-then.c - what runs when futures are done (src/then.c): continuations run after
 * their antecedent (never before, not even by a waiter), on an antecedent done already,
 * not at all when it was cancelled, in chains; when_all of futures of two pools, n = 0,
 * the first nonzero result in array order, its own cancel; destroy while continuations
 * are pending (every future satisfied); bad input; allocation failures. Helpers:
 * common.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "common.h"
#include "faults.h"

enum { CHAIN = 1000 };

struct order {
	atomic_int antecedent_done;
	atomic_int ran_early;	/* the continuation ran before its antecedent ended */
	atomic_uint runs;
};

static int
antecedent(void *arg)
{
	struct order *o = arg;
	nap(2 * 1000 * 1000);	/* a chance for a waiter to run the continuation early */
	atomic_store(&o->antecedent_done, 1);
	return 3;
}

static int
continuation(void *arg)
{
	struct order *o = arg;
	if (!atomic_load(&o->antecedent_done))
		atomic_store(&o->ran_early, 1);
	atomic_fetch_add(&o->runs, 1);
	return 4;
}

/* A task that waits for a continuation whose antecedent is queued behind it: the
 * waiter may claim the antecedent, never the continuation. */
struct early {
	heist_pool *pool;
	struct order *o;
	int result;
};

static int
wait_for_continuation(void *arg)
{
	struct early *e = arg;
	heist_future *a, *c;
	if (heist_submit(e->pool, antecedent, e->o, &a) ||
	    heist_future_then(a, continuation, e->o, &c))
		return -1;
	e->result = heist_future_wait(c);
	heist_future_release(c);
	int r = heist_future_wait(a);
	heist_future_release(a);
	return r == 3 ? 0 : -2;
}

static void
continuation_runs_after_its_antecedent_and_never_before(void **state)
{
	(void)state;
	for (unsigned threads = 1; threads <= 2; threads++) {
		heist_pool *pool = make_pool(threads);
		struct order o = {0};
		struct early e = {pool, &o, -1};
		assert_int_equal(heist_run(pool, wait_for_continuation, &e), 0);
		assert_int_equal(e.result, 4);
		assert_int_equal(atomic_load(&o.ran_early), 0);
		assert_int_equal(atomic_load(&o.runs), 1);
		heist_pool_destroy(pool);
	}
}

static void
continuation_of_a_done_future_runs(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	struct order o = {0};
	heist_future *a, *c;
	assert_int_equal(heist_submit(pool, antecedent, &o, &a), 0);
	assert_int_equal(heist_future_wait(a), 3);
	assert_int_equal(heist_future_then(a, continuation, &o, &c), 0);
	assert_int_equal(heist_future_wait(c), 4);
	heist_future_release(c);
	/* Fire and forget: no future, it still runs. */
	assert_int_equal(heist_future_then(a, continuation, &o, NULL), 0);
	heist_future_release(a);
	bool ok;
	POLL(ok, atomic_load(&o.runs) == 2);
	assert_true(ok);
	heist_pool_destroy(pool);
}

static void
continuation_of_a_cancelled_future_never_runs(void **state)
{
	(void)state;
	static struct hold hold;
	hold = (struct hold){0};
	heist_pool *pool = make_pool(1);
	struct order o = {0};
	heist_future *h, *a, *c, *c2;
	hold_worker(pool, &hold, &h);
	assert_int_equal(heist_submit(pool, antecedent, &o, &a), 0);
	assert_int_equal(heist_future_then(a, continuation, &o, &c), 0);
	heist_future_cancel(a);	/* still queued: cancelled */
	assert_int_equal(heist_future_wait(c), ECANCELED);
	/* And linked after the cancel. */
	assert_int_equal(heist_future_then(a, continuation, &o, &c2), 0);
	assert_int_equal(heist_future_wait(c2), ECANCELED);
	atomic_store(&hold.open, 1);
	assert_int_equal(heist_future_wait(h), 0);
	assert_int_equal(atomic_load(&o.runs), 0);
	heist_future_release(c2);
	heist_future_release(c);
	heist_future_release(a);
	heist_future_release(h);
	heist_pool_destroy(pool);
}

static void
continuation_cancelled_before_its_antecedent_never_runs(void **state)
{
	(void)state;
	static struct hold hold;
	hold = (struct hold){0};
	heist_pool *pool = make_pool(1);
	struct order o = {0};
	heist_future *h, *a, *c;
	hold_worker(pool, &hold, &h);
	assert_int_equal(heist_submit(pool, antecedent, &o, &a), 0);
	assert_int_equal(heist_future_then(a, continuation, &o, &c), 0);
	heist_future_cancel(c);
	assert_int_equal(heist_future_wait(c), ECANCELED);
	atomic_store(&hold.open, 1);
	assert_int_equal(heist_future_wait(a), 3);
	assert_int_equal(atomic_load(&o.runs), 0);
	heist_future_release(c);
	heist_future_release(a);
	assert_int_equal(heist_future_wait(h), 0);
	heist_future_release(h);
	heist_pool_destroy(pool);
}

/* A chain: each link adds one to a counter and checks it is the next. */
struct link {
	atomic_uint *counter;
	unsigned index;
	atomic_uint *bad;
};

static int
link_task(void *arg)
{
	struct link *l = arg;
	if (atomic_fetch_add(l->counter, 1) != l->index)
		atomic_fetch_add(l->bad, 1);
	return 0;
}

static void
chain_of_continuations_runs_in_order(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	static atomic_uint counter, bad;
	atomic_store(&counter, 0);
	atomic_store(&bad, 0);
	struct link *links = calloc(CHAIN, sizeof(*links));
	assert_non_null(links);
	heist_future *prev, *next;
	links[0] = (struct link){&counter, 0, &bad};
	assert_int_equal(heist_submit(pool, link_task, &links[0], &prev), 0);
	for (unsigned i = 1; i < CHAIN; i++) {
		links[i] = (struct link){&counter, i, &bad};
		assert_int_equal(heist_future_then(prev, link_task, &links[i], &next), 0);
		heist_future_release(prev);	/* the chain holds what it needs */
		prev = next;
	}
	assert_int_equal(heist_future_wait(prev), 0);
	heist_future_release(prev);
	assert_int_equal(atomic_load(&counter), CHAIN);
	assert_int_equal(atomic_load(&bad), 0);
	free(links);
	heist_pool_destroy(pool);
}

static int
ret_after_nap(void *arg)
{
	nap(1000 * 1000);
	return ret_int(arg);
}

static void
when_all_of_two_pools_gives_the_first_nonzero_in_array_order(void **state)
{
	(void)state;
	heist_pool *a = make_pool(1), *b = make_pool(2);
	heist_future *fs[6], *all;
	/* Results 0, 0, 5, 0, 6, 0: the answer is 5, whichever ends first. */
	static const intptr_t results[6] = {0, 0, 5, 0, 6, 0};
	for (int i = 0; i < 6; i++)
		assert_int_equal(heist_submit(i % 2 ? a : b, i == 2 ? ret_after_nap : ret_int,
					      (void *)results[i], &fs[i]), 0);
	assert_int_equal(heist_when_all(a, fs, 6, &all), 0);
	for (int i = 0; i < 6; i++)
		heist_future_release(fs[i]);	/* when_all holds its own references */
	assert_int_equal(heist_future_wait(all), 5);
	/* A continuation of the when_all runs on its pool. */
	heist_future *c;
	assert_int_equal(heist_future_then(all, ret_int, (void *)9, &c), 0);
	assert_int_equal(heist_future_wait(c), 9);
	heist_future_release(c);
	heist_future_release(all);
	heist_pool_destroy(b);
	heist_pool_destroy(a);
}

static void
when_all_of_nothing_is_done_at_once(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_future *all;
	assert_int_equal(heist_when_all(pool, NULL, 0, &all), 0);
	assert_true(heist_future_done(all));
	assert_int_equal(heist_future_wait(all), 0);
	heist_future_release(all);
	heist_pool_destroy(pool);
}

static void
when_all_counts_cancelled_inputs_and_can_itself_be_cancelled(void **state)
{
	(void)state;
	static struct hold hold;
	hold = (struct hold){0};
	heist_pool *pool = make_pool(1);
	heist_future *h, *fs[3], *all, *all2;
	hold_worker(pool, &hold, &h);
	for (int i = 0; i < 3; i++)
		assert_int_equal(heist_submit(pool, ret_int, NULL, &fs[i]), 0);
	assert_int_equal(heist_when_all(pool, fs, 3, &all), 0);
	assert_int_equal(heist_when_all(pool, fs, 3, &all2), 0);
	heist_future_cancel(fs[1]);
	heist_future_cancel(all2);	/* its own cancel: at once, inputs go on */
	assert_int_equal(heist_future_wait(all2), ECANCELED);
	atomic_store(&hold.open, 1);
	assert_int_equal(heist_future_wait(all), ECANCELED);	/* input 1's */
	assert_int_equal(heist_future_wait(fs[0]), 0);
	assert_int_equal(heist_future_wait(fs[2]), 0);
	for (int i = 0; i < 3; i++)
		heist_future_release(fs[i]);
	heist_future_release(all);
	heist_future_release(all2);
	assert_int_equal(heist_future_wait(h), 0);
	heist_future_release(h);
	heist_pool_destroy(pool);
}

/* Destroy with continuations pending on held tasks: they run during the drain, and
 * every future is satisfied afterwards. */
static void
destroy_runs_the_pending_continuations(void **state)
{
	(void)state;
	static struct hold hold;
	hold = (struct hold){0};
	hold.ret = 1;
	heist_pool *pool = make_pool(2);
	heist_future *h, *c[10], *all;
	hold_worker(pool, &hold, &h);
	for (int i = 0; i < 10; i++)
		assert_int_equal(heist_future_then(h, ret_int, (void *)(intptr_t)i, &c[i]), 0);
	assert_int_equal(heist_when_all(pool, c, 10, &all), 0);
	atomic_store(&hold.open, 1);
	heist_pool_destroy(pool);
	for (int i = 0; i < 10; i++) {
		assert_true(heist_future_done(c[i]));
		assert_int_equal(heist_future_wait(c[i]), i);
		heist_future_release(c[i]);
	}
	assert_int_equal(heist_future_wait(all), 1);	/* c[1] */
	heist_future_release(all);
	assert_int_equal(heist_future_wait(h), 1);
	/* The pool is gone: a continuation of a done future cannot be queued. */
	heist_future *late = SENTINEL;
	assert_int_equal(heist_future_then(h, ret_int, NULL, &late), ESHUTDOWN);
	assert_null(late);
	heist_future_release(h);
}

static void
bad_input_is_rejected(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_future *f, *out = SENTINEL;
	assert_int_equal(heist_submit(pool, ret_int, NULL, &f), 0);
	assert_int_equal(heist_future_then(NULL, ret_int, NULL, &out), EINVAL);
	assert_null(out);
	out = SENTINEL;
	assert_int_equal(heist_future_then(f, NULL, NULL, &out), EINVAL);
	assert_null(out);
	out = SENTINEL;
	assert_int_equal(heist_when_all(NULL, &f, 1, &out), EINVAL);
	assert_null(out);
	assert_int_equal(heist_when_all(pool, &f, 1, NULL), EINVAL);
	assert_int_equal(heist_when_all(pool, NULL, 1, &out), EINVAL);
	heist_future *with_null[2] = {f, NULL};
	assert_int_equal(heist_when_all(pool, with_null, 2, &out), EINVAL);
	assert_null(out);
	assert_int_equal(heist_future_wait(f), 0);
	heist_future_release(f);
	heist_pool_destroy(pool);
}

static void
allocation_failures_are_enomem(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_future *f, *out = SENTINEL, *fs[1];
	assert_int_equal(heist_submit(pool, ret_int, NULL, &f), 0);
	fs[0] = f;
	fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	/* when_all's array always allocates. */
	assert_int_equal(heist_when_all(pool, fs, 1, &out), ENOMEM);
	fault_disarm(FAULT_ALLOC);
	assert_null(out);
	assert_int_equal(heist_future_wait(f), 0);
	heist_future_release(f);
	heist_pool_destroy(pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(continuation_runs_after_its_antecedent_and_never_before),
		cmocka_unit_test(continuation_of_a_done_future_runs),
		cmocka_unit_test(continuation_of_a_cancelled_future_never_runs),
		cmocka_unit_test(continuation_cancelled_before_its_antecedent_never_runs),
		cmocka_unit_test(chain_of_continuations_runs_in_order),
		cmocka_unit_test(when_all_of_two_pools_gives_the_first_nonzero_in_array_order),
		cmocka_unit_test(when_all_of_nothing_is_done_at_once),
		cmocka_unit_test(when_all_counts_cancelled_inputs_and_can_itself_be_cancelled),
		cmocka_unit_test(destroy_runs_the_pending_continuations),
		cmocka_unit_test(bad_input_is_rejected),
		cmocka_unit_test(allocation_failures_are_enomem),
	};
	return RUN_TESTS(tests);
}
