/* SPDX-License-Identifier: MIT */
/* test-cancel.c - cancellation, from the public API: heist_future_cancel of a queued,
 * a running and a done task; cancellation tokens: basics and NULL safety; tasks
 * cancelled while queued never run and their futures give ECANCELED; one token cancels
 * its batch and nothing else; a task cancelled while it runs sees heist_cancelled() and
 * its own result is delivered; heist_cancelled() is false everywhere else; heist_future_
 * cancel of one future spares the rest; tokens may be released while their tasks are
 * queued; bad input is rejected; heist_submit_copy copies at the call, inline or on the
 * heap, and a cancelled copy is freed. Futures without cancellation are tested in
 * test-future.c, loops in test-foreach.c. Rules and helpers: common.h.
 *
 * Most tests occupy a one-worker pool's only worker with an occupant task, so that
 * what they submit stays queued until they let it go: "queued" is then a fact, not a
 * race. Leaks and use-after-free of tokens and argument copies are for
 * AddressSanitizer to find; the tests that count on its leak check submit from a
 * helper thread (see batch_submit).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* Sizes: the whole file takes well under a second in every build, ThreadSanitizer's
 * included, on two cores. */
enum { BATCH = 64, RACE_TASKS = 20000 };

/* ---------------------------------------------------------------------------------- */
/* The occupant: a task that holds a one-worker pool's worker until the test lets go. */

struct occupant {
	atomic_bool entered;
	atomic_bool open;
	heist_future *f;
};

/* Returns 0 once vacated; 99 if never vacated (the test failed before it let go). */
static int
occupant_task(void *p)
{
	struct occupant *occ = p;
	bool ok;

	atomic_store(&occ->entered, true);
	POLL(ok, atomic_load(&occ->open));
	return ok ? 0 : 99;
}

/* Occupy the only worker of a one-worker pool: from now on, submits stay queued. */
static void
occupy(heist_pool *pool, struct occupant *occ)
{
	bool ok;

	atomic_init(&occ->entered, false);
	atomic_init(&occ->open, false);
	assert_int_equal(heist_submit(pool, occupant_task, occ, &occ->f), 0);
	POLL(ok, atomic_load(&occ->entered));
	assert_true(ok);
}

static void
vacate(struct occupant *occ)
{
	atomic_store(&occ->open, true);
	assert_int_equal(heist_future_wait(occ->f), 0);
	heist_future_release(occ->f);
	occ->f = NULL;
}

/* A task that counts its runs and returns 3 (neither 0 nor ECANCELED). */
struct item {
	atomic_uint runs;
	atomic_int saw_cancelled;	/* heist_cancelled() inside it: 0, 1, or -1 unset */
};

enum { ITEM_RESULT = 3 };

static int
item_task(void *p)
{
	struct item *it = p;

	atomic_fetch_add(&it->runs, 1);
	atomic_store(&it->saw_cancelled, heist_cancelled());
	return ITEM_RESULT;
}

static void
items_init(struct item *items, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		atomic_init(&items[i].runs, 0);
		atomic_init(&items[i].saw_cancelled, -1);
	}
}

/* Wait for f and check it gave ECANCELED and its task never ran. */
static void
expect_cancelled(heist_future *f, struct item *it)
{
	assert_int_equal(heist_future_wait(f), ECANCELED);
	assert_true(heist_future_done(f));
	assert_int_equal(atomic_load(&it->runs), 0);
}

/* Wait for f and check it ran once, uncancelled, and gave its result. */
static void
expect_ran(heist_future *f, struct item *it)
{
	assert_int_equal(heist_future_wait(f), ITEM_RESULT);
	assert_true(heist_future_done(f));
	assert_int_equal(atomic_load(&it->runs), 1);
	assert_int_equal(atomic_load(&it->saw_cancelled), 0);
}

/* ---------------------------------------------------------------------------------- */
/* heist_future_cancel without a token                                                */

static void
cancel_of_a_queued_task_means_it_never_runs(void **state)
{
	heist_pool *pool = make_pool(1);
	static struct hold h;
	static atomic_uint runs, detached_runs, after_runs;
	heist_future *f = NULL, *d = NULL, *a = NULL;

	(void)state;
	h = (struct hold){ 0 };
	atomic_store(&runs, 0);
	atomic_store(&detached_runs, 0);
	atomic_store(&after_runs, 0);
	hold_worker(pool, &h, NULL);
	assert_int_equal(heist_submit(pool, count_task, &runs, &f), 0);
	assert_int_equal(heist_submit(pool, count_task, &detached_runs, &d), 0);
	assert_int_equal(heist_submit(pool, count_task, &after_runs, &a), 0);
	heist_future_cancel(f);
	heist_future_cancel(d);
	heist_future_release(d);	/* cancelled and detached: still never runs */
	atomic_store(&h.open, 1);
	assert_int_equal(heist_future_wait(f), ECANCELED);
	assert_int_equal(heist_future_wait(f), ECANCELED);
	assert_true(heist_future_done(f));
	assert_int_equal(heist_future_wait(a), 0);	/* its neighbour was not touched */
	heist_future_release(a);
	heist_pool_destroy(pool);
	assert_int_equal(atomic_load(&runs), 0);
	assert_int_equal(atomic_load(&detached_runs), 0);
	assert_int_equal(atomic_load(&after_runs), 1);
	assert_int_equal(heist_future_wait(f), ECANCELED);
	heist_future_release(f);
}

struct watcher {
	atomic_int started;
	atomic_int cancelled_at_start;
	atomic_int gave_up;
};

/* Runs until heist_cancelled() turns true, then returns 7. */
static int
watch_task(void *arg)
{
	struct watcher *w = arg;
	bool ok;

	atomic_store(&w->cancelled_at_start, heist_cancelled());
	atomic_store(&w->started, 1);
	POLL(ok, heist_cancelled());
	if (!ok) {
		atomic_store(&w->gave_up, 1);
		return 99;
	}
	return 7;
}

static void
cancel_of_a_running_task_is_seen_inside_it(void **state)
{
	heist_pool *pool = make_pool(2);
	static struct watcher w;
	heist_future *f = NULL;
	bool ok;

	(void)state;
	w = (struct watcher){ 0 };
	assert_int_equal(heist_submit(pool, watch_task, &w, &f), 0);
	POLL(ok, atomic_load(&w.started));
	assert_true(ok);
	assert_false(heist_future_done(f));
	heist_future_cancel(f);
	/* The task's own value is delivered, not ECANCELED. */
	assert_int_equal(heist_future_wait(f), 7);
	assert_int_equal(atomic_load(&w.cancelled_at_start), 0);
	assert_int_equal(atomic_load(&w.gave_up), 0);
	heist_future_release(f);
	heist_pool_destroy(pool);
}

static void
cancel_of_a_done_task_changes_nothing(void **state)
{
	heist_pool *pool = make_pool(1);
	static atomic_uint runs;
	heist_future *f = NULL;

	(void)state;
	atomic_store(&runs, 0);
	assert_int_equal(heist_submit(pool, ret_int, (void *)5, &f), 0);
	assert_int_equal(heist_future_wait(f), 5);
	heist_future_cancel(f);
	assert_true(heist_future_done(f));
	assert_int_equal(heist_future_wait(f), 5);
	heist_future_release(f);
	/* heist_cancelled() is false in an ordinary task. */
	assert_int_equal(heist_submit(pool, count_task, &runs, &f), 0);
	assert_int_equal(heist_future_wait(f), 0);
	heist_future_release(f);
	heist_pool_destroy(pool);
	assert_int_equal(atomic_load(&runs), 1);
}

/* 1 where heist_cancelled() is true, else 2 (neither is 0 nor ECANCELED). */
static int
cancelled_as_1_or_2(void *arg)
{
	(void)arg;
	return heist_cancelled() ? 1 : 2;
}

static void
cancelled_is_false_in_uncancelled_tasks(void **state)
{
	heist_pool *pool = make_pool(1);
	heist_future *f = NULL;

	(void)state;
	assert_int_equal(heist_submit(pool, cancelled_as_1_or_2, NULL, &f), 0);
	assert_int_equal(heist_future_wait(f), 2);
	heist_future_release(f);
	assert_int_equal(heist_run(pool, cancelled_as_1_or_2, NULL), 2);
	heist_pool_destroy(pool);
}

/* ---------------------------------------------------------------------------------- */
/* Token basics                                                                       */

static void
token_create_rejects_null_out(void **state)
{
	(void)state;
	assert_int_equal(heist_cancel_create(NULL), EINVAL);
}

static void
token_request_is_seen_and_idempotent(void **state)
{
	(void)state;
	heist_cancel *c = SENTINEL;

	assert_int_equal(heist_cancel_create(&c), 0);
	assert_non_null(c);
	assert_ptr_not_equal(c, SENTINEL);
	assert_false(heist_cancel_requested(c));
	assert_false(heist_cancel_requested(c));	/* looking changes nothing */
	heist_cancel_request(c);
	assert_true(heist_cancel_requested(c));
	heist_cancel_request(c);
	assert_true(heist_cancel_requested(c));
	heist_cancel_release(c);

	/* tokens are independent */
	heist_cancel *a = NULL, *b = NULL;
	assert_int_equal(heist_cancel_create(&a), 0);
	assert_int_equal(heist_cancel_create(&b), 0);
	assert_ptr_not_equal(a, b);
	heist_cancel_request(a);
	assert_true(heist_cancel_requested(a));
	assert_false(heist_cancel_requested(b));
	heist_cancel_release(a);
	heist_cancel_release(b);
}

static void
token_functions_accept_null(void **state)
{
	(void)state;
	heist_cancel_request(NULL);
	assert_false(heist_cancel_requested(NULL));
	heist_cancel_release(NULL);
}

/* ---------------------------------------------------------------------------------- */
/* Cancelled while queued                                                             */

static void
token_cancelled_while_queued_never_runs(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	struct occupant occ;
	struct item items[BATCH];
	heist_future *f[BATCH];
	heist_cancel *c = NULL;

	items_init(items, BATCH);
	assert_int_equal(heist_cancel_create(&c), 0);
	occupy(pool, &occ);
	for (size_t i = 0; i < BATCH; i++) {
		assert_int_equal(heist_submit_cancellable(pool, c, item_task, &items[i], &f[i]), 0);
		assert_non_null(f[i]);
	}
	heist_cancel_request(c);
	vacate(&occ);
	for (size_t i = 0; i < BATCH; i++) {
		expect_cancelled(f[i], &items[i]);
		heist_future_release(f[i]);
	}
	heist_cancel_release(c);
	heist_pool_destroy(pool);
	for (size_t i = 0; i < BATCH; i++)
		assert_int_equal(atomic_load(&items[i].runs), 0);
}

/* A token requested before the submit: the task is checked when a worker takes it. */
static void
token_requested_before_submit_never_runs(void **state)
{
	(void)state;
	for (unsigned threads = 1; threads <= 2; threads++) {
		heist_pool *pool = make_pool(threads);
		struct item items[BATCH];
		heist_future *f[BATCH];
		heist_cancel *c = NULL;

		items_init(items, BATCH);
		assert_int_equal(heist_cancel_create(&c), 0);
		heist_cancel_request(c);
		for (size_t i = 0; i < BATCH; i++)
			assert_int_equal(heist_submit_cancellable(pool, c, item_task, &items[i],
								  i % 2 ? &f[i] : NULL), 0);
		heist_cancel_release(c);
		for (size_t i = 1; i < BATCH; i += 2) {
			expect_cancelled(f[i], &items[i]);
			heist_future_release(f[i]);
		}
		heist_pool_destroy(pool);	/* the fire-and-forget ones are gone too */
		for (size_t i = 0; i < BATCH; i++)
			assert_int_equal(atomic_load(&items[i].runs), 0);
	}
}

/* The same with the tasks queued on a worker's own deque (submitted from a task),
 * cancelled there, and found by the submitting task's helping wait. */
struct local_batch {
	heist_pool *pool;
	heist_cancel *c;
	struct item items[BATCH];
	atomic_int results[BATCH];
	atomic_uint bad;
};

static int
submit_cancel_and_wait(void *p)
{
	struct local_batch *lb = p;
	heist_future *f[BATCH];

	for (size_t i = 0; i < BATCH; i++)
		if (heist_submit_cancellable(lb->pool, lb->c, item_task, &lb->items[i], &f[i]))
			return -1;
	heist_cancel_request(lb->c);
	for (size_t i = 0; i < BATCH; i++) {
		atomic_store(&lb->results[i], heist_future_wait(f[i]));
		if (!heist_future_done(f[i]))
			atomic_fetch_add(&lb->bad, 1);
		heist_future_release(f[i]);
	}
	return 0;
}

static void
token_cancelled_while_queued_on_a_workers_deque_never_runs(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);	/* nobody else can take them */
	struct local_batch *lb = calloc(1, sizeof(*lb));

	assert_non_null(lb);
	lb->pool = pool;
	items_init(lb->items, BATCH);
	assert_int_equal(heist_cancel_create(&lb->c), 0);
	assert_int_equal(heist_run(pool, submit_cancel_and_wait, lb), 0);
	for (size_t i = 0; i < BATCH; i++) {
		assert_int_equal(atomic_load(&lb->results[i]), ECANCELED);
		assert_int_equal(atomic_load(&lb->items[i].runs), 0);
	}
	assert_int_equal(atomic_load(&lb->bad), 0);
	heist_cancel_release(lb->c);
	heist_pool_destroy(pool);
	free(lb);
}

/* Three batches interleaved: token A (requested), token B, no token. */
static void
token_cancels_only_its_own_tasks(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	struct occupant occ;
	struct item items[3 * BATCH];
	heist_future *f[3 * BATCH];
	heist_cancel *a = NULL, *b = NULL;

	items_init(items, 3 * BATCH);
	assert_int_equal(heist_cancel_create(&a), 0);
	assert_int_equal(heist_cancel_create(&b), 0);
	occupy(pool, &occ);
	for (size_t i = 0; i < 3 * BATCH; i++) {
		int err = i % 3 == 0 ? heist_submit_cancellable(pool, a, item_task, &items[i], &f[i])
			: i % 3 == 1 ? heist_submit_cancellable(pool, b, item_task, &items[i], &f[i])
			: heist_submit(pool, item_task, &items[i], &f[i]);
		assert_int_equal(err, 0);
	}
	heist_cancel_request(a);
	vacate(&occ);
	for (size_t i = 0; i < 3 * BATCH; i++) {
		if (i % 3 == 0)
			expect_cancelled(f[i], &items[i]);
		else
			expect_ran(f[i], &items[i]);
		heist_future_release(f[i]);
	}
	assert_false(heist_cancel_requested(b));
	heist_cancel_release(a);
	heist_cancel_release(b);
	heist_pool_destroy(pool);
}

/* One future of a queued batch is cancelled; the others, same token or none, run. */
static void
future_cancel_leaves_the_rest_of_the_batch(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	struct occupant occ;
	struct item items[BATCH];
	heist_future *f[BATCH];
	heist_cancel *c = NULL;
	const size_t victim = BATCH / 3, victim2 = BATCH - 1;

	items_init(items, BATCH);
	assert_int_equal(heist_cancel_create(&c), 0);
	occupy(pool, &occ);
	for (size_t i = 0; i < BATCH; i++) {
		int err = i % 2 ? heist_submit_cancellable(pool, c, item_task, &items[i], &f[i])
				: heist_submit(pool, item_task, &items[i], &f[i]);
		assert_int_equal(err, 0);
	}
	heist_future_cancel(f[victim]);
	heist_future_cancel(f[victim2]);
	/* cancelled before it started: done at once, before any worker looks at it */
	assert_true(heist_future_done(f[victim]));
	assert_true(heist_future_done(f[victim2]));
	assert_int_equal(heist_future_wait(f[victim]), ECANCELED);
	heist_future_cancel(f[victim]);	/* again: nothing changes */
	assert_false(heist_cancel_requested(c));	/* the token is not the future's */
	vacate(&occ);
	for (size_t i = 0; i < BATCH; i++) {
		if (i == victim || i == victim2)
			expect_cancelled(f[i], &items[i]);
		else
			expect_ran(f[i], &items[i]);
		heist_future_release(f[i]);
	}
	heist_cancel_release(c);
	heist_pool_destroy(pool);
}

/* ---------------------------------------------------------------------------------- */
/* Cancelled while running                                                            */

struct runner {
	atomic_bool started;
	atomic_int cancelled_at_start;
	atomic_uint runs;
	int payload;		/* plain: written by the test before it requests */
};

/* Polls heist_cancelled() until it turns true, then returns 5 (6 if what the test
 * wrote before requesting is not visible; 9 if it never turned true). */
static int
poll_until_cancelled(void *p)
{
	struct runner *r = p;
	bool ok;

	atomic_fetch_add(&r->runs, 1);
	atomic_store(&r->cancelled_at_start, heist_cancelled());
	atomic_store(&r->started, true);
	POLL(ok, heist_cancelled());
	if (!ok)
		return 9;
	return r->payload == 42 ? 5 : 6;
}

static void
token_request_while_running_delivers_the_tasks_result(void **state)
{
	(void)state;
	for (unsigned threads = 1; threads <= 2; threads++) {
		heist_pool *pool = make_pool(threads);
		struct runner r = { .payload = 0 };
		heist_cancel *c = NULL;
		heist_future *f = NULL;
		bool ok;

		assert_int_equal(heist_cancel_create(&c), 0);
		assert_int_equal(heist_submit_cancellable(pool, c, poll_until_cancelled, &r, &f), 0);
		POLL(ok, atomic_load(&r.started));
		assert_true(ok);
		assert_false(heist_future_done(f));	/* it polls until we request */
		r.payload = 42;		/* published by the request (release/acquire) */
		heist_cancel_request(c);
		assert_int_equal(heist_future_wait(f), 5);
		assert_true(heist_future_done(f));
		assert_int_equal(atomic_load(&r.cancelled_at_start), 0);
		assert_int_equal(atomic_load(&r.runs), 1);
		heist_future_release(f);
		heist_cancel_release(c);
		heist_pool_destroy(pool);
	}
}

static void
future_cancel_while_running_delivers_the_tasks_result(void **state)
{
	(void)state;
	for (unsigned threads = 1; threads <= 2; threads++) {
		heist_pool *pool = make_pool(threads);
		for (int with_token = 0; with_token < 2; with_token++) {
			struct runner r = { .payload = 42 };
			heist_cancel *c = NULL;
			heist_future *f = NULL;
			bool ok;

			assert_int_equal(heist_cancel_create(&c), 0);
			int err = with_token
				? heist_submit_cancellable(pool, c, poll_until_cancelled, &r, &f)
				: heist_submit(pool, poll_until_cancelled, &r, &f);
			assert_int_equal(err, 0);
			POLL(ok, atomic_load(&r.started));
			assert_true(ok);
			assert_false(heist_future_done(f));
			heist_future_cancel(f);
			assert_int_equal(heist_future_wait(f), 5);
			assert_int_equal(atomic_load(&r.cancelled_at_start), 0);
			assert_int_equal(atomic_load(&r.runs), 1);
			assert_false(heist_cancel_requested(c));	/* only the future */
			heist_future_release(f);
			heist_cancel_release(c);
		}
		heist_pool_destroy(pool);
	}
}

/* A cancel that races the task's start: either it never ran and gives ECANCELED, or
 * it ran exactly once and gives its own result. Never both, never neither. The batch
 * is submitted first and cancelled afterwards, in order, so that the two workers are
 * starting tasks while the cancels arrive (which way each race goes is not checked). */
static void
cancel_racing_the_start_runs_once_or_gives_ecanceled(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	struct item *items = calloc(RACE_TASKS, sizeof(*items));
	heist_future **f = calloc(RACE_TASKS, sizeof(*f));
	heist_cancel **c = calloc(RACE_TASKS, sizeof(*c));

	assert_non_null(items);
	assert_non_null(f);
	assert_non_null(c);
	items_init(items, RACE_TASKS);
	for (size_t i = 0; i < RACE_TASKS; i++) {
		assert_int_equal(heist_cancel_create(&c[i]), 0);
		assert_int_equal(heist_submit_cancellable(pool, c[i], item_task, &items[i], &f[i]),
				 0);
		if (i % 3 == 0)
			heist_cancel_release(c[i]);	/* while it may still be queued */
	}
	for (size_t i = 0; i < RACE_TASKS; i++) {
		if (i % 2)
			heist_future_cancel(f[i]);
		else if (i % 3)
			heist_cancel_request(c[i]);
		else
			heist_future_cancel(f[i]);	/* its token is released */
	}
	size_t cancelled = 0;
	for (size_t i = 0; i < RACE_TASKS; i++) {
		int r = heist_future_wait(f[i]);
		assert_true(heist_future_done(f[i]));
		if (r == ECANCELED) {
			cancelled++;
			assert_int_equal(atomic_load(&items[i].runs), 0);
		} else {
			assert_int_equal(r, ITEM_RESULT);
			assert_int_equal(atomic_load(&items[i].runs), 1);
		}
		heist_future_release(f[i]);
		if (i % 3)
			heist_cancel_release(c[i]);
	}
	heist_pool_destroy(pool);
	for (size_t i = 0; i < RACE_TASKS; i++)
		assert_true(atomic_load(&items[i].runs) <= 1);
	print_message("%zu of %d cancelled before they started\n", cancelled, RACE_TASKS);
	free(items);
	free(f);
	free(c);
}

/* ---------------------------------------------------------------------------------- */
/* heist_cancelled() where nothing was cancelled                                      */

static int
report_cancelled(void *p)
{
	atomic_int *out = p;

	atomic_store(out, heist_cancelled());
	return 0;
}

struct child_report {
	atomic_int child;	/* heist_cancelled() in a spawned child, run inline */
	atomic_int self;
};

static int
spawn_and_report(void *p)
{
	struct child_report *cr = p;
	heist_task t;

	atomic_store(&cr->self, heist_cancelled());
	heist_spawn(&t, report_cancelled, &cr->child);
	return heist_sync(&t);
}

static void
cancelled_is_false_where_nothing_was_cancelled(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_cancel *c = NULL;
	heist_future *f = NULL;
	atomic_int with_token = -1, without = -1, in_run = -1;
	struct child_report cr = { -1, -1 };

	assert_false(heist_cancelled());	/* outside any task */
	assert_int_equal(heist_cancel_create(&c), 0);
	assert_int_equal(heist_submit_cancellable(pool, c, report_cancelled, &with_token, &f), 0);
	assert_int_equal(heist_future_wait(f), 0);
	heist_future_release(f);
	assert_int_equal(heist_submit(pool, report_cancelled, &without, &f), 0);
	assert_int_equal(heist_future_wait(f), 0);
	heist_future_release(f);
	assert_int_equal(heist_run(pool, report_cancelled, &in_run), 0);
	assert_int_equal(heist_submit_cancellable(pool, c, spawn_and_report, &cr, &f), 0);
	assert_int_equal(heist_future_wait(f), 0);
	heist_future_release(f);
	assert_int_equal(atomic_load(&with_token), 0);
	assert_int_equal(atomic_load(&without), 0);
	assert_int_equal(atomic_load(&in_run), 0);
	assert_int_equal(atomic_load(&cr.self), 0);
	assert_int_equal(atomic_load(&cr.child), 0);
	/* requesting another token later changes nothing for this one's tasks */
	heist_cancel *other = NULL;
	assert_int_equal(heist_cancel_create(&other), 0);
	heist_cancel_request(other);
	atomic_store(&with_token, -1);
	assert_int_equal(heist_submit_cancellable(pool, c, report_cancelled, &with_token, &f), 0);
	assert_int_equal(heist_future_wait(f), 0);
	heist_future_release(f);
	assert_int_equal(atomic_load(&with_token), 0);
	assert_false(heist_cancelled());
	heist_cancel_release(other);
	heist_cancel_release(c);
	heist_pool_destroy(pool);
}

/* A task whose token is cancelled waits for a task it submitted (no token): the wait
 * runs it on the same worker, and inside it heist_cancelled() is that task's, false. */
struct nested_report {
	heist_pool *pool;
	atomic_bool started;
	atomic_int inner;	/* heist_cancelled() in the task run by the wait */
	atomic_int outer_after;	/* heist_cancelled() in the cancelled task, after */
};

static int
wait_for_an_uncancelled_task(void *p)
{
	struct nested_report *nr = p;
	heist_future *f = NULL;

	bool ok;

	atomic_store(&nr->started, true);
	POLL(ok, heist_cancelled());
	if (!ok)
		return -3;
	if (heist_submit(nr->pool, report_cancelled, &nr->inner, &f))
		return -1;
	int r = heist_future_wait(f);
	heist_future_release(f);
	atomic_store(&nr->outer_after, heist_cancelled());
	return r;
}

static void
cancelled_is_false_in_a_task_run_by_a_cancelled_tasks_wait(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);	/* the wait must run it itself */
	struct nested_report nr = { .pool = pool, .inner = -1, .outer_after = -1 };
	heist_cancel *c = NULL;
	heist_future *f = NULL;
	bool ok;

	assert_int_equal(heist_cancel_create(&c), 0);
	assert_int_equal(heist_submit_cancellable(pool, c, wait_for_an_uncancelled_task, &nr,
						  &f), 0);
	POLL(ok, atomic_load(&nr.started));
	assert_true(ok);
	heist_cancel_request(c);
	assert_int_equal(heist_future_wait(f), 0);
	heist_future_release(f);
	assert_int_equal(atomic_load(&nr.inner), 0);
	assert_int_equal(atomic_load(&nr.outer_after), 1);
	heist_cancel_release(c);
	heist_pool_destroy(pool);
}

/* Two workers. Task X (its token cancelled while it runs) waits for task Y, which runs
 * on the other worker and spawns a fork-join child; X's helping wait steals that child.
 * The child belongs to Y, whose nothing was cancelled: heist_cancelled() must be false
 * inside it ("false elsewhere, also inside fork-join children that another worker
 * stole"). */
struct steal_probe {
	heist_pool *pool;
	atomic_bool x_started;
	atomic_int x_worker;
	heist_future *_Atomic y_future;	/* set by the test once Y is submitted */
	atomic_bool y_published;	/* Y's child is on Y's deque, public */
	atomic_bool child_started;
	atomic_int child_worker;
	atomic_int child_cancelled;
	atomic_int y_cancelled;
	atomic_int x_cancelled_after;
};

static int
probe_child(void *p)
{
	struct steal_probe *sp = p;

	atomic_store(&sp->child_cancelled, heist_cancelled());
	atomic_store(&sp->child_worker, heist_worker_index());
	atomic_store(&sp->child_started, true);
	return 0;
}

static int
probe_y(void *p)
{
	struct steal_probe *sp = p;
	heist_task t;

	atomic_store(&sp->y_cancelled, heist_cancelled());
	heist_spawn(&t, probe_child, sp);
	/* A submit from a worker publishes its deque, the child included (oldest, so
	 * the first a thief takes). */
	if (heist_submit(sp->pool, ret_int, NULL, NULL))
		return -1;
	atomic_store(&sp->y_published, true);
	/* Only X's worker can run the child now: this one is busy here. */
	bool ok;
	POLL(ok, atomic_load(&sp->child_started));
	int r = heist_sync(&t);
	return ok ? r : -3;
}

static int
probe_x(void *p)
{
	struct steal_probe *sp = p;

	atomic_store(&sp->x_worker, heist_worker_index());
	bool ok;

	atomic_store(&sp->x_started, true);
	POLL(ok, atomic_load(&sp->y_published) && atomic_load(&sp->y_future));
	if (!ok)
		return -3;
	int r = heist_future_wait(atomic_load(&sp->y_future));
	atomic_store(&sp->x_cancelled_after, heist_cancelled());
	return r;
}

static void
cancelled_is_false_in_a_stolen_child_run_by_a_cancelled_tasks_wait(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	struct steal_probe sp = {
		.pool = pool, .x_worker = -1, .child_worker = -1, .child_cancelled = -1,
		.y_cancelled = -1, .x_cancelled_after = -1,
	};
	heist_cancel *c = NULL;
	heist_future *fx = NULL, *fy = NULL;
	bool ok;

	assert_int_equal(heist_cancel_create(&c), 0);
	assert_int_equal(heist_submit_cancellable(pool, c, probe_x, &sp, &fx), 0);
	POLL(ok, atomic_load(&sp.x_started));
	assert_true(ok);
	heist_cancel_request(c);
	/* X's worker is busy in X's poll: the other worker takes Y. */
	assert_int_equal(heist_submit(pool, probe_y, &sp, &fy), 0);
	atomic_store(&sp.y_future, fy);
	assert_int_equal(heist_future_wait(fx), 0);
	assert_int_equal(heist_future_wait(fy), 0);
	heist_future_release(fx);
	heist_future_release(fy);
	heist_cancel_release(c);
	heist_pool_destroy(pool);

	assert_int_equal(atomic_load(&sp.y_cancelled), 0);
	assert_int_equal(atomic_load(&sp.x_cancelled_after), 1);
	/* the scenario happened: the child ran on X's worker, inside X's wait */
	assert_int_equal(atomic_load(&sp.child_worker), atomic_load(&sp.x_worker));
	assert_int_equal(atomic_load(&sp.child_cancelled), 0);
}

/* ---------------------------------------------------------------------------------- */
/* Tokens released while their tasks are queued                                       */

/* The submits of these tests come from a helper thread that exits before the pool is
 * destroyed: job records live in the submitting thread's cache, and one still pointing
 * at a token would keep a leaked token reachable for ASan's leak check at exit. */
struct batch_submit {
	heist_pool *pool;
	heist_cancel *c;
	bool request;		/* request the token before releasing it */
	struct item *items;
	heist_future **f;	/* f[i] NULL: fire-and-forget */
	size_t n;
	int errs;
};

static void *
submit_batch_and_release_token(void *p)
{
	struct batch_submit *bs = p;

	for (size_t i = 0; i < bs->n; i++)
		bs->errs += heist_submit_cancellable(bs->pool, bs->c, item_task, &bs->items[i],
						     i % 4 ? &bs->f[i] : NULL) != 0;
	if (bs->request)
		heist_cancel_request(bs->c);
	heist_cancel_release(bs->c);	/* the queued tasks hold their own references */
	return NULL;
}

static void
release_token_while_queued(bool request)
{
	heist_pool *pool = make_pool(1);
	struct occupant occ;
	struct item items[BATCH];
	heist_future *f[BATCH] = {NULL};
	struct batch_submit bs = {
		.pool = pool, .request = request, .items = items, .f = f, .n = BATCH,
	};
	pthread_t t;

	items_init(items, BATCH);
	assert_int_equal(heist_cancel_create(&bs.c), 0);
	occupy(pool, &occ);
	assert_int_equal(pthread_create(&t, NULL, submit_batch_and_release_token, &bs), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(bs.errs, 0);
	vacate(&occ);
	for (size_t i = 0; i < BATCH; i++)
		if (i % 4) {
			if (request)
				expect_cancelled(f[i], &items[i]);
			else
				expect_ran(f[i], &items[i]);
			heist_future_release(f[i]);
		}
	heist_pool_destroy(pool);
	for (size_t i = 0; i < BATCH; i++)
		assert_int_equal(atomic_load(&items[i].runs), request ? 0 : 1);
}

static void
token_released_while_queued_tasks_still_run(void **state)
{
	(void)state;
	release_token_while_queued(false);
}

static void
token_requested_then_released_while_queued_tasks_are_cancelled(void **state)
{
	(void)state;
	release_token_while_queued(true);
}

/* ---------------------------------------------------------------------------------- */
/* Bad input                                                                          */

static void
submit_cancellable_rejects_null_arguments(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	struct item it;
	heist_cancel *c = NULL;
	heist_future *f;

	items_init(&it, 1);
	assert_int_equal(heist_cancel_create(&c), 0);
	f = SENTINEL;
	assert_int_equal(heist_submit_cancellable(pool, NULL, item_task, &it, &f), EINVAL);
	assert_null(f);
	f = SENTINEL;
	assert_int_equal(heist_submit_cancellable(NULL, c, item_task, &it, &f), EINVAL);
	assert_null(f);
	f = SENTINEL;
	assert_int_equal(heist_submit_cancellable(pool, c, NULL, &it, &f), EINVAL);
	assert_null(f);
	assert_int_equal(heist_submit_cancellable(pool, NULL, item_task, &it, NULL), EINVAL);
	assert_int_equal(heist_submit_cancellable(NULL, c, item_task, &it, NULL), EINVAL);
	assert_int_equal(heist_submit_cancellable(pool, c, NULL, &it, NULL), EINVAL);
	/* the token is still the caller's alone: one release frees it (ASan's leak
	 * check sees a reference taken by a rejected submit) */
	heist_cancel_release(c);
	heist_pool_destroy(pool);
	assert_int_equal(atomic_load(&it.runs), 0);
}

/* ---------------------------------------------------------------------------------- */
/* heist_submit_copy                                                                  */

/* What the copy task must see: set by the test before each submit. */
struct copy_expect {
	size_t size;
	unsigned seed;
	atomic_uint runs;
	atomic_size_t wrong_bytes;
	atomic_bool null_arg;
};

static struct copy_expect expect;

static unsigned char
pattern(unsigned seed, size_t k)
{
	return (unsigned char)((k * 131 + seed * 7 + (k >> 8)) ^ 0x5a);
}

static int
check_copy(void *arg)
{
	const unsigned char *p = arg;
	size_t wrong = 0;

	atomic_fetch_add(&expect.runs, 1);
	if (!p) {
		atomic_store(&expect.null_arg, true);
		return 1;
	}
	for (size_t k = 0; k < expect.size; k++)
		wrong += p[k] != pattern(expect.seed, k);
	atomic_store(&expect.wrong_bytes, wrong);
	return wrong ? 1 : 0;
}

static void
expect_reset(size_t size, unsigned seed)
{
	expect.size = size;
	expect.seed = seed;
	atomic_store(&expect.runs, 0);
	atomic_store(&expect.wrong_bytes, 0);
	atomic_store(&expect.null_arg, false);
}

/* The task runs only after the caller has overwritten and freed its bytes (the occupant
 * holds the worker): it must see the bytes as they were at the submit. */
static void
submit_copy_takes_the_copy_at_submit(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	const size_t sizes[] = {1, 2, 47, 48, 49, 64, 4096};

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t size = sizes[s];
		struct occupant occ;
		heist_future *f = NULL;
		unsigned char *buf = malloc(size);

		assert_non_null(buf);
		expect_reset(size, (unsigned)s + 1);
		for (size_t k = 0; k < size; k++)
			buf[k] = pattern(expect.seed, k);
		occupy(pool, &occ);
		assert_int_equal(heist_submit_copy(pool, check_copy, buf, size, &f), 0);
		assert_non_null(f);
		memset(buf, 0xA5 ^ (int)s, size);
		free(buf);	/* the library must not read it again (ASan) */
		vacate(&occ);
		assert_int_equal(heist_future_wait(f), 0);
		heist_future_release(f);
		assert_int_equal(atomic_load(&expect.runs), 1);
		assert_false(atomic_load(&expect.null_arg));
		assert_int_equal(atomic_load(&expect.wrong_bytes), 0);
	}
	heist_pool_destroy(pool);
}

/* The same from a task: the copy goes on the worker's own deque. */
struct copy_from_task {
	heist_pool *pool;
	size_t size;
	int result;
};

static int
submit_copy_then_scribble(void *p)
{
	struct copy_from_task *ct = p;
	unsigned char *buf = malloc(ct->size);
	heist_future *f = NULL;

	if (!buf)
		return -1;
	for (size_t k = 0; k < ct->size; k++)
		buf[k] = pattern(expect.seed, k);
	int err = heist_submit_copy(ct->pool, check_copy, buf, ct->size, &f);
	memset(buf, 0, ct->size);
	free(buf);
	if (err)
		return err;
	/* on one worker, the copy task runs only now, inside this wait */
	ct->result = heist_future_wait(f);
	heist_future_release(f);
	return 0;
}

static void
submit_copy_from_a_task_takes_the_copy_at_submit(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	const size_t sizes[] = {1, 48, 49, 4096};

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct copy_from_task ct = { .pool = pool, .size = sizes[s], .result = -1 };
		expect_reset(sizes[s], 100 + (unsigned)s);
		assert_int_equal(heist_run(pool, submit_copy_then_scribble, &ct), 0);
		assert_int_equal(ct.result, 0);
		assert_int_equal(atomic_load(&expect.runs), 1);
		assert_int_equal(atomic_load(&expect.wrong_bytes), 0);
	}
	heist_pool_destroy(pool);
}

static void
submit_copy_of_zero_bytes_accepts_a_null_arg(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_future *f = NULL;
	char byte = 1;

	expect_reset(0, 0);
	assert_int_equal(heist_submit_copy(pool, check_copy, NULL, 0, &f), 0);
	assert_non_null(f);
	assert_int_equal(heist_future_wait(f), 0);
	heist_future_release(f);
	assert_int_equal(atomic_load(&expect.runs), 1);
	/* "size 0 passes a valid pointer to no bytes" */
	assert_false(atomic_load(&expect.null_arg));

	expect_reset(0, 0);
	assert_int_equal(heist_submit_copy(pool, check_copy, &byte, 0, &f), 0);
	assert_int_equal(heist_future_wait(f), 0);
	heist_future_release(f);
	assert_int_equal(atomic_load(&expect.runs), 1);
	assert_false(atomic_load(&expect.null_arg));
	heist_pool_destroy(pool);
}

static void
submit_copy_rejects_bad_input(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	char buf[8] = {0};
	heist_future *f;

	expect_reset(0, 0);
	f = SENTINEL;
	assert_int_equal(heist_submit_copy(pool, check_copy, NULL, 1, &f), EINVAL);
	assert_null(f);
	f = SENTINEL;
	assert_int_equal(heist_submit_copy(pool, check_copy, NULL, 4096, &f), EINVAL);
	assert_null(f);
	f = SENTINEL;
	assert_int_equal(heist_submit_copy(NULL, check_copy, buf, sizeof(buf), &f), EINVAL);
	assert_null(f);
	f = SENTINEL;
	assert_int_equal(heist_submit_copy(pool, NULL, buf, sizeof(buf), &f), EINVAL);
	assert_null(f);
	assert_int_equal(heist_submit_copy(pool, check_copy, NULL, 1, NULL), EINVAL);
	heist_pool_destroy(pool);
	assert_int_equal(atomic_load(&expect.runs), 0);
}

/* A copy whose task is cancelled while queued never runs, and its heap copy is freed.
 * ASan's leak check at exit is the judge. The submits come from a helper thread that
 * exits, so that the job records (which live in per-thread caches and could still
 * point at a copy nobody freed) are gone by then and a leaked copy shows as a leak. */
struct copy_cancel {
	heist_pool *pool;
	struct occupant occ;
	int submit_err[3];
	bool done_at_once[3];
	int results[3];
	bool occupant_seen, occupant_result_ok;
};

static const size_t CANCEL_SIZES[3] = {48, 4096, 100000};

static void *
submit_copies_and_cancel(void *p)
{
	struct copy_cancel *cc = p;
	heist_future *f[3] = {NULL, NULL, NULL};
	bool ok;

	atomic_init(&cc->occ.entered, false);
	atomic_init(&cc->occ.open, false);
	if (heist_submit(cc->pool, occupant_task, &cc->occ, &cc->occ.f))
		return NULL;
	POLL(ok, atomic_load(&cc->occ.entered));
	cc->occupant_seen = ok;
	for (size_t s = 0; s < 3; s++) {
		unsigned char *buf = calloc(1, CANCEL_SIZES[s]);
		if (!buf)
			break;
		cc->submit_err[s] = heist_submit_copy(cc->pool, check_copy, buf, CANCEL_SIZES[s],
						      &f[s]);
		free(buf);
		heist_future_cancel(f[s]);
		cc->done_at_once[s] = heist_future_done(f[s]);
	}
	/* released before the worker even looked at it: the pool's reference remains */
	heist_future_release(f[1]);
	f[1] = NULL;
	cc->results[1] = ECANCELED;
	atomic_store(&cc->occ.open, true);
	cc->occupant_result_ok = heist_future_wait(cc->occ.f) == 0;
	heist_future_release(cc->occ.f);
	for (size_t s = 0; s < 3; s += 2) {
		cc->results[s] = heist_future_wait(f[s]);
		heist_future_release(f[s]);
	}
	return NULL;
}

static void
cancelled_queued_submit_copy_frees_its_copy(void **state)
{
	(void)state;
	struct copy_cancel cc = { .pool = make_pool(1), .submit_err = {-1, -1, -1},
				  .results = {-1, -1, -1} };
	pthread_t t;

	expect_reset(1, 0);
	assert_int_equal(pthread_create(&t, NULL, submit_copies_and_cancel, &cc), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	heist_pool_destroy(cc.pool);
	assert_true(cc.occupant_seen);
	assert_true(cc.occupant_result_ok);
	for (size_t s = 0; s < 3; s++) {
		assert_int_equal(cc.submit_err[s], 0);
		assert_true(cc.done_at_once[s]);
		assert_int_equal(cc.results[s], ECANCELED);
	}
	assert_int_equal(atomic_load(&expect.runs), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cancel_of_a_queued_task_means_it_never_runs),
		cmocka_unit_test(cancel_of_a_running_task_is_seen_inside_it),
		cmocka_unit_test(cancel_of_a_done_task_changes_nothing),
		cmocka_unit_test(cancelled_is_false_in_uncancelled_tasks),
		cmocka_unit_test(token_create_rejects_null_out),
		cmocka_unit_test(token_request_is_seen_and_idempotent),
		cmocka_unit_test(token_functions_accept_null),
		cmocka_unit_test(token_cancelled_while_queued_never_runs),
		cmocka_unit_test(token_requested_before_submit_never_runs),
		cmocka_unit_test(token_cancelled_while_queued_on_a_workers_deque_never_runs),
		cmocka_unit_test(token_cancels_only_its_own_tasks),
		cmocka_unit_test(future_cancel_leaves_the_rest_of_the_batch),
		cmocka_unit_test(token_request_while_running_delivers_the_tasks_result),
		cmocka_unit_test(future_cancel_while_running_delivers_the_tasks_result),
		cmocka_unit_test(cancel_racing_the_start_runs_once_or_gives_ecanceled),
		cmocka_unit_test(cancelled_is_false_where_nothing_was_cancelled),
		cmocka_unit_test(cancelled_is_false_in_a_task_run_by_a_cancelled_tasks_wait),
		cmocka_unit_test(cancelled_is_false_in_a_stolen_child_run_by_a_cancelled_tasks_wait),
		cmocka_unit_test(token_released_while_queued_tasks_still_run),
		cmocka_unit_test(token_requested_then_released_while_queued_tasks_are_cancelled),
		cmocka_unit_test(submit_cancellable_rejects_null_arguments),
		cmocka_unit_test(submit_copy_takes_the_copy_at_submit),
		cmocka_unit_test(submit_copy_from_a_task_takes_the_copy_at_submit),
		cmocka_unit_test(submit_copy_of_zero_bytes_accepts_a_null_arg),
		cmocka_unit_test(submit_copy_rejects_bad_input),
		cmocka_unit_test(cancelled_queued_submit_copy_frees_its_copy),
	};
	return RUN_TESTS(tests);
}
