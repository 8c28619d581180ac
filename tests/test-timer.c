/* SPDX-License-Identifier: MIT */
/* test-timer.c - timed and periodic tasks (heist_submit_timed, src/timer.c): a task
 * never starts before it is due, and every one runs once; an earlier timer submitted
 * while the pool sleeps for a later one (an hour later) still runs, so a sleeping
 * worker's deadline follows the earliest timer; timers fire while every worker is busy;
 * a periodic task runs on its grid until it returns nonzero, and stops for good when
 * its future or its token cancels it; a pending timer's future cancel ends it at once,
 * a token's when it comes due, and neither runs it; continuations and when_all on a
 * timed future; a task waiting for a timed future on a one-worker pool; destroy ends
 * pending timers with ESHUTDOWN, 100,000 of them too, and runs none of them; many
 * cancelled timers are let go before they are due (ASan's leak check); bad input;
 * allocation failure. No case depends on timing to pass: lateness is never an error,
 * and a missed wake-up shows as a wait bounded far beyond any delay here. */
#include <errno.h>
#include <stdlib.h>

#include "common.h"
#include "faults.h"
#include "pool.h"	/* a pool's timer heap: its earliest due time (next_due) */

#define MS (1000ull * 1000)
#define HOUR (3600ull * 1000 * MS)

struct stamp {
	uint64_t due_ns;	/* when it may start, at the earliest */
	uint64_t ran_ns;	/* when it did (heist_now_ns), 0 if never */
	atomic_uint runs;
};

static int
stamp_task(void *arg)
{
	struct stamp *s = arg;
	s->ran_ns = heist_now_ns();
	atomic_fetch_add(&s->runs, 1);
	return 0;
}

static void
timers_never_start_early_and_each_runs_once(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	enum { N = 200 };
	static struct stamp s[N];
	heist_future *f[N];
	srand(7);
	uint64_t now = heist_now_ns();
	for (int i = 0; i < N; i++) {
		/* Both forms, in no order of due time, some due at once. */
		uint64_t delay = (uint64_t)(rand() % 30) * MS / 2;
		struct heist_timing when = {0};
		if (i % 2)
			when.delay_ns = delay;
		else
			when.at_ns = now + delay;
		s[i].due_ns = now + delay;
		s[i].ran_ns = 0;
		atomic_store(&s[i].runs, 0);
		assert_int_equal(heist_submit_timed(pool, &when, stamp_task, &s[i], &f[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		assert_int_equal(watched(f[i]), 0);
		assert_int_equal(atomic_load(&s[i].runs), 1);
		assert_true(s[i].ran_ns >= s[i].due_ns);
	}
	heist_pool_destroy(pool);
	for (int i = 0; i < N; i++)
		assert_int_equal(atomic_load(&s[i].runs), 1);
}

/* The pool's workers all sleep, one of them until an hour from now (the earliest
 * timer); a timer due in 1 ms must still wake one. */
static void
an_earlier_timer_wakes_a_pool_asleep_for_a_later_one(void **state)
{
	(void)state;
	for (unsigned threads = 1; threads <= 2; threads++) {
		heist_pool *pool = make_pool(threads);
		static struct stamp late, soon;
		heist_future *fl, *fs;
		atomic_store(&late.runs, 0);
		atomic_store(&soon.runs, 0);
		assert_int_equal(heist_submit_delayed(pool, HOUR, stamp_task, &late, &fl), 0);
		wait_until_parked(pool);
		assert_int_equal(heist_submit_delayed(pool, 1 * MS, stamp_task, &soon, &fs), 0);
		assert_int_equal(watched(fs), 0);
		assert_int_equal(atomic_load(&soon.runs), 1);
		assert_false(heist_future_done(fl));
		heist_pool_destroy(pool);
		assert_int_equal(heist_future_wait(fl), ESHUTDOWN);
		assert_int_equal(atomic_load(&late.runs), 0);
		heist_future_release(fl);
	}
}

/* Every worker is held in a task; a timer comes due; once one worker is let go, it
 * runs it (the busy workers look between tasks; the keeper sleeps only when idle). */
static void
a_timer_due_while_every_worker_is_busy_runs_when_one_is_free(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	static struct hold h1, h2;
	heist_future *b1, *b2, *f;
	hold_worker(pool, &h1, &b1);
	hold_worker(pool, &h2, &b2);
	static struct stamp s;
	atomic_store(&s.runs, 0);
	assert_int_equal(heist_submit_delayed(pool, 1 * MS, stamp_task, &s, &f), 0);
	nap(3 * MS);
	assert_int_equal(atomic_load(&s.runs), 0);	/* nobody free to run it */
	atomic_store(&h1.open, 1);
	assert_int_equal(watched(f), 0);
	assert_int_equal(atomic_load(&s.runs), 1);
	atomic_store(&h2.open, 1);
	assert_int_equal(watched(b1), 0);
	assert_int_equal(watched(b2), 0);
	heist_pool_destroy(pool);
}

struct ticker {
	uint64_t first_ns;	/* the first due time */
	uint64_t period_ns;
	unsigned stop_at;	/* return 42 on this run (0: never) */
	atomic_uint runs;
	atomic_int overlap;	/* a run started while another was running */
	atomic_int inside;
	atomic_int early;	/* a run started before its grid time */
};

static int
tick(void *arg)
{
	struct ticker *t = arg;
	if (atomic_fetch_add(&t->inside, 1))
		atomic_store(&t->overlap, 1);
	unsigned k = atomic_load(&t->runs);	/* runs before this one */
	if (heist_now_ns() < t->first_ns + k * t->period_ns)
		atomic_store(&t->early, 1);	/* run k is due at first + k * period at the earliest */
	unsigned n = atomic_fetch_add(&t->runs, 1) + 1;
	atomic_fetch_sub(&t->inside, 1);
	return t->stop_at && n == t->stop_at ? 42 : 0;
}

static void
ticker_init(struct ticker *t, uint64_t first, uint64_t period, unsigned stop_at)
{
	t->first_ns = first;
	t->period_ns = period;
	t->stop_at = stop_at;
	atomic_store(&t->runs, 0);
	atomic_store(&t->overlap, 0);
	atomic_store(&t->inside, 0);
	atomic_store(&t->early, 0);
}

static void
a_periodic_task_runs_until_it_returns_nonzero(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	static struct ticker t;
	uint64_t at = heist_now_ns() + 2 * MS;
	ticker_init(&t, at, 1 * MS, 5);
	struct heist_timing when = {.at_ns = at, .period_ns = 1 * MS};
	heist_future *f;
	assert_int_equal(heist_submit_timed(pool, &when, tick, &t, &f), 0);
	assert_int_equal(watched(f), 42);
	assert_int_equal(atomic_load(&t.runs), 5);
	assert_int_equal(atomic_load(&t.overlap), 0);
	/* Skipped runs keep the grid: every run starts at or after a grid time, and
	 * run k no earlier than the k-th one. */
	assert_int_equal(atomic_load(&t.early), 0);
	heist_pool_destroy(pool);
	assert_int_equal(atomic_load(&t.runs), 5);
}

static void
a_periodic_task_stops_for_good_when_cancelled(void **state)
{
	(void)state;
	for (int by_token = 0; by_token <= 1; by_token++) {
		heist_pool *pool = make_pool(2);
		static struct ticker t;
		ticker_init(&t, heist_now_ns(), 200 * 1000, 0);
		heist_cancel *c = NULL;
		assert_int_equal(heist_cancel_create(&c), 0);
		struct heist_timing when = {.period_ns = 200 * 1000, .cancel = by_token ? c : NULL};
		heist_future *f;
		assert_int_equal(heist_submit_timed(pool, &when, tick, &t, &f), 0);
		bool ok;
		POLL(ok, atomic_load(&t.runs) >= 3);
		assert_true(ok);
		if (by_token)
			heist_cancel_request(c);
		else
			heist_future_cancel(f);
		assert_true(heist_future_wait_for(f, LONG_WAIT_NS));
		assert_int_equal(heist_future_wait(f), ECANCELED);
		unsigned runs = atomic_load(&t.runs);
		nap(2 * MS);	/* ten periods: a run that still came would show */
		assert_int_equal(atomic_load(&t.runs), runs);
		assert_int_equal(atomic_load(&t.overlap), 0);
		heist_future_release(f);
		heist_cancel_release(c);
		heist_pool_destroy(pool);
		assert_int_equal(atomic_load(&t.runs), runs);
	}
}

static void
a_pending_timer_cancelled_never_runs(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	static struct stamp s1, s2;
	atomic_store(&s1.runs, 0);
	atomic_store(&s2.runs, 0);
	/* By its future: at once, though it is due in an hour. */
	heist_future *f1, *f2;
	assert_int_equal(heist_submit_delayed(pool, HOUR, stamp_task, &s1, &f1), 0);
	heist_future_cancel(f1);
	assert_true(heist_future_done(f1));
	assert_int_equal(heist_future_wait(f1), ECANCELED);
	heist_future_release(f1);
	/* By its token: when it comes due. */
	heist_cancel *c;
	assert_int_equal(heist_cancel_create(&c), 0);
	struct heist_timing when = {.delay_ns = 2 * MS, .cancel = c};
	assert_int_equal(heist_submit_timed(pool, &when, stamp_task, &s2, &f2), 0);
	heist_cancel_request(c);
	heist_cancel_release(c);	/* the timer holds its own reference */
	assert_int_equal(watched(f2), ECANCELED);
	heist_pool_destroy(pool);
	assert_int_equal(atomic_load(&s1.runs), 0);
	assert_int_equal(atomic_load(&s2.runs), 0);
}

static void
continuations_and_when_all_wait_for_timers(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	static struct stamp a, b;
	atomic_store(&a.runs, 0);
	atomic_store(&b.runs, 0);
	heist_future *fa, *fb, *then, *all;
	assert_int_equal(heist_submit_delayed(pool, 2 * MS, stamp_task, &a, &fa), 0);
	assert_int_equal(heist_submit_delayed(pool, 4 * MS, stamp_task, &b, &fb), 0);
	static atomic_uint after;
	atomic_store(&after, 0);
	assert_int_equal(heist_future_then(fa, count_task, &after, &then), 0);
	heist_future *both[2] = {fa, fb};
	assert_int_equal(heist_when_all(pool, both, 2, &all), 0);
	assert_int_equal(watched(all), 0);
	assert_int_equal(atomic_load(&a.runs), 1);
	assert_int_equal(atomic_load(&b.runs), 1);
	assert_int_equal(watched(then), 0);
	assert_int_equal(atomic_load(&after), 1);
	heist_future_release(fa);
	heist_future_release(fb);
	heist_pool_destroy(pool);
}

static int
wait_for_a_timer(void *arg)
{
	heist_pool *pool = arg;
	static struct stamp s;
	atomic_store(&s.runs, 0);
	heist_future *f;
	if (heist_submit_delayed(pool, 2 * MS, stamp_task, &s, &f))
		return -1;
	int r = heist_future_wait(f);
	heist_future_release(f);
	return r == 0 && atomic_load(&s.runs) == 1 ? 7 : -2;
}

static void
a_task_waiting_for_a_timer_on_a_one_worker_pool_finishes(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_future *f;
	assert_int_equal(heist_submit(pool, wait_for_a_timer, pool, &f), 0);
	assert_int_equal(watched(f), 7);
	heist_pool_destroy(pool);
}

static void
destroy_ends_pending_timers_with_eshutdown(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	enum { N = 100000, KEPT = 64 };
	static struct stamp s;
	atomic_store(&s.runs, 0);
	static heist_future *f[KEPT];
	static struct ticker t;
	ticker_init(&t, heist_now_ns() + HOUR, HOUR, 0);
	for (int i = 0; i < N; i++) {
		/* Spread over the hour, so the heap is really ordered. */
		uint64_t delay = HOUR / 2 + (uint64_t)(i * 7919 % N) * (HOUR / 2 / N);
		assert_int_equal(heist_submit_delayed(pool, delay, stamp_task, &s,
						      i < KEPT ? &f[i] : NULL), 0);
	}
	heist_future *pf;
	struct heist_timing when = {.delay_ns = HOUR, .period_ns = HOUR};
	assert_int_equal(heist_submit_timed(pool, &when, tick, &t, &pf), 0);
	check_pool_works(pool);	/* they hold up nothing */
	heist_pool_destroy(pool);
	for (int i = 0; i < KEPT; i++) {
		assert_int_equal(heist_future_wait(f[i]), ESHUTDOWN);
		heist_future_release(f[i]);
	}
	assert_int_equal(heist_future_wait(pf), ESHUTDOWN);
	heist_future_release(pf);
	assert_int_equal(atomic_load(&s.runs), 0);
	assert_int_equal(atomic_load(&t.runs), 0);
}

/* 20,000 timers due in an hour, cancelled by their futures, are let go as more come
 * (the heap sweeps them): the pool's memory stays bounded, and ASan finds no leak. */
static void
cancelled_timers_are_let_go_before_they_are_due(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	static struct stamp s;
	atomic_store(&s.runs, 0);
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 1000; i++) {
			heist_future *f;
			assert_int_equal(heist_submit_delayed(pool, HOUR, stamp_task, &s, &f), 0);
			heist_future_cancel(f);
			heist_future_release(f);
		}
	}
	heist_pool_destroy(pool);
	assert_int_equal(atomic_load(&s.runs), 0);
}

/* A sweep of cancelled entries (once the heap has 1,024) that drops the earliest one
 * publishes the next due time: left at the dropped one's, it would tell every idle
 * worker that a timer is due, over and over, until the next one is (timer.c, insert). */
static void
a_sweep_that_drops_the_earliest_timer_publishes_the_next_due_time(void **state)
{
	(void)state;
	enum { LATER = 1100 };	/* past timer.c's SWEEP_MIN */
	heist_pool *pool = make_pool(1);
	uint64_t now = heist_now_ns();
	struct heist_timing first = {.at_ns = now + HOUR};
	heist_future *f;
	assert_int_equal(heist_submit_timed(pool, &first, ret_int, NULL, &f), 0);
	heist_future_cancel(f);	/* its entry stays until a sweep */
	heist_future_release(f);
	struct heist_timing later = {.at_ns = now + 2 * HOUR};
	for (int i = 0; i < LATER; i++)
		assert_int_equal(heist_submit_timed(pool, &later, ret_int, NULL, NULL), 0);
	assert_int_equal(atomic_load(&pool->timers.next_due), later.at_ns);
	heist_pool_destroy(pool);
}

/* A timer added while a worker searches: the adder wakes nobody (somebody searches),
 * and the searcher finds a task instead of sleeping; it must wake the sleeping worker
 * to keep the timer (timer.h), or a task that waits for the timer by polling, as
 * this one does, holds its worker for good while the other sleeps. Rounds, each with
 * the other worker asleep first, so that the adder's call lands in a search often. */
struct polled {
	atomic_int fired;
};

static int
fire_task(void *arg)
{
	atomic_store(&((struct polled *)arg)->fired, 1);
	return 0;
}

static int
poll_task(void *arg)
{
	struct polled *p = arg;
	bool ok;
	POLL(ok, atomic_load(&p->fired));
	return ok ? 0 : ETIMEDOUT;
}

static void
a_timer_added_while_a_worker_searches_gets_a_keeper(void **state)
{
	(void)state;
	enum { ROUNDS = 200 };
	heist_pool *pool = make_pool(2);
	static struct polled p;
	for (int round = 0; round < ROUNDS; round++) {
		wait_until_parked(pool);
		atomic_store(&p.fired, 0);
		heist_future *poller, *timed;
		/* The submit wakes a worker as a searcher; the timer comes at once. */
		assert_int_equal(heist_submit(pool, poll_task, &p, &poller), 0);
		assert_int_equal(heist_submit_delayed(pool, 50 * 1000, fire_task, &p, &timed), 0);
		assert_int_equal(watched(timed), 0);
		assert_int_equal(watched(poller), 0);
	}
	heist_pool_destroy(pool);
}

/* A timer added while the pool's only worker is lent to an outside loop (its caller
 * runs in the worker's place, heist_for_each) fires: the worker, given back asleep when
 * the loop ends, is woken to keep it. It was lost: the adder found neither a keeper nor
 * a sleeper (a lent worker is neither), and the loop's end woke nobody, so the wait
 * below never returned (the torture test hung so, seed 68188881335). */
struct lent_timer {
	heist_pool *pool;
	heist_future *f;
	atomic_uint ran;
};

static int
submit_timer_body(void *arg, size_t begin, size_t end)
{
	struct lent_timer *lt = arg;
	(void)begin, (void)end;
	return heist_submit_delayed(lt->pool, 1000 * 1000, count_task, &lt->ran, &lt->f);
}

static void
a_timer_added_while_the_worker_is_lent_fires(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	for (int round = 0; round < 5; round++) {
		static struct lent_timer lt;
		lt.pool = pool;
		lt.f = NULL;
		atomic_store(&lt.ran, 0);
		wait_until_parked(pool);	/* asleep: the loop's guest takes its place */
		assert_int_equal(heist_for_each(pool, 0, 1, 1, submit_timer_body, &lt), 0);
		assert_int_equal(heist_future_wait(lt.f), 0);
		heist_future_release(lt.f);
		assert_int_equal(atomic_load(&lt.ran), 1);
	}
	heist_pool_destroy(pool);
}

static void
bad_input_is_rejected(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_future *f = SENTINEL;
	struct heist_timing when = {.delay_ns = MS};
	assert_int_equal(heist_submit_timed(NULL, &when, ret_int, NULL, &f), EINVAL);
	assert_null(f);
	f = SENTINEL;
	assert_int_equal(heist_submit_timed(pool, NULL, ret_int, NULL, &f), EINVAL);
	assert_null(f);
	f = SENTINEL;
	assert_int_equal(heist_submit_timed(pool, &when, NULL, NULL, &f), EINVAL);
	assert_null(f);
	f = SENTINEL;
	struct heist_timing both = {.delay_ns = MS, .at_ns = heist_now_ns() + MS};
	assert_int_equal(heist_submit_timed(pool, &both, ret_int, NULL, &f), EINVAL);
	assert_null(f);
	assert_int_equal(heist_submit_delayed(NULL, MS, ret_int, NULL, NULL), EINVAL);
	/* Due already: a plain submit. */
	struct heist_timing past = {.at_ns = 1};
	assert_int_equal(heist_submit_timed(pool, &past, ret_int, (void *)5, &f), 0);
	assert_int_equal(watched(f), 5);
	heist_pool_destroy(pool);
}

static void
allocation_failure_is_enomem(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_future *f = SENTINEL;
	/* The first case of the run: this thread's record cache is empty, so the
	 * record must come from the allocator. */
	fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	assert_int_equal(heist_submit_delayed(pool, HOUR, ret_int, NULL, &f), ENOMEM);
	fault_disarm(FAULT_ALLOC);
	assert_null(f);
	assert_int_equal(heist_submit_delayed(pool, 1 * MS, ret_int, (void *)3, &f), 0);
	assert_int_equal(watched(f), 3);
	heist_pool_destroy(pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(allocation_failure_is_enomem),
		cmocka_unit_test(timers_never_start_early_and_each_runs_once),
		cmocka_unit_test(an_earlier_timer_wakes_a_pool_asleep_for_a_later_one),
		cmocka_unit_test(a_timer_due_while_every_worker_is_busy_runs_when_one_is_free),
		cmocka_unit_test(a_periodic_task_runs_until_it_returns_nonzero),
		cmocka_unit_test(a_periodic_task_stops_for_good_when_cancelled),
		cmocka_unit_test(a_pending_timer_cancelled_never_runs),
		cmocka_unit_test(continuations_and_when_all_wait_for_timers),
		cmocka_unit_test(a_task_waiting_for_a_timer_on_a_one_worker_pool_finishes),
		cmocka_unit_test(destroy_ends_pending_timers_with_eshutdown),
		cmocka_unit_test(cancelled_timers_are_let_go_before_they_are_due),
		cmocka_unit_test(a_sweep_that_drops_the_earliest_timer_publishes_the_next_due_time),
		cmocka_unit_test(a_timer_added_while_a_worker_searches_gets_a_keeper),
		cmocka_unit_test(a_timer_added_while_the_worker_is_lent_fires),
		cmocka_unit_test(bad_input_is_rejected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
