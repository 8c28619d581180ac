/* SPDX-License-Identifier: MIT */
/* test-sleep.c - the idle protocol alone (src/sleep.c), white-box, with test threads
 * playing the workers: prepare then cancel returns a worker to the searchers; a notify
 * with nobody asleep changes nothing; with sleepers and no searcher it wakes exactly
 * one; while a worker searches it wakes nobody, unless a job waits behind another (a
 * backlog), and the last searcher to stop is told to wake the next; wake_all wakes every sleeper; and no wake-up is lost between a
 * worker's last look for work and a producer's notify (sleep.h's argument), over many
 * rounds. Sleeping and waking inside a pool is tested by test-submit.c's bursts. Rules
 * and helpers: common.h; a lost wake-up shows as a POLL bound reached, not a hang.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <pthread.h>
#include <stdlib.h>

#include "common.h"
#include "sleep.h"

/* The halves of the state word (sleep.c): searchers high, sleepers low. */
#define SEARCHERS(n) ((uint64_t)(n) << 32)
#define SLEEPERS(n) ((uint64_t)(n))

enum { MAX_WORKERS = 4 };

/* Rounds of the lost-wake-up test: ThreadSanitizer runs them about 10x slower. */
#ifdef TEST_SANITIZED
enum { HANDOFFS = 2000 };
#else
enum { HANDOFFS = 20000 };
#endif

static uint64_t
state_of(struct sleep *s)
{
	return atomic_load(&s->state);
}

/* Each test gets it freshly initialised; static storage keeps its cache alignment. */
static struct sleep the_sleep;

static int
setup(void **state)
{
	*state = &the_sleep;
	return heist__sleep_init(&the_sleep, MAX_WORKERS);
}

static int
teardown(void **state)
{
	heist__sleep_fini(*state);
	return 0;
}

/* Word values of sleep.c: the worker is on the idle stack while its word is nonzero. */
static unsigned
asleep(struct sleep *s)
{
	unsigned n = 0;

	for (unsigned i = 0; i < MAX_WORKERS; i++)
		n += atomic_load(&s->sleepers[i].word) != 0;
	return n;
}

/* ---------------------------------------------------------------------------------- */
/* One thread                                                                         */

static void
prepare_then_cancel_returns_the_worker_to_searching(void **state)
{
	struct sleep *s = *state;

	heist__sleep_start_search(s);
	assert_int_equal(state_of(s), SEARCHERS(1));
	heist__sleep_prepare(s, 2);
	assert_int_equal(state_of(s), SLEEPERS(1));
	assert_int_equal(s->nidle, 1);
	assert_int_equal(s->idle[0], 2);
	assert_int_equal(asleep(s), 1);
	heist__sleep_cancel(s, 2);
	assert_int_equal(state_of(s), SEARCHERS(1));
	assert_int_equal(s->nidle, 0);
	assert_int_equal(asleep(s), 0);
	/* The last searcher stops with nobody asleep: nobody to wake. */
	assert_false(heist__sleep_stop_search(s));
	assert_int_equal(state_of(s), 0);
}

static void
notify_with_nobody_asleep_changes_nothing(void **state)
{
	struct sleep *s = *state;

	heist__sleep_notify(s);
	heist__sleep_notify_slow(s);
	heist__sleep_wake_all(s);
	assert_int_equal(state_of(s), 0);
	assert_int_equal(s->nidle, 0);
	heist__sleep_start_search(s);
	heist__sleep_notify(s);
	heist__sleep_notify_slow(s);
	assert_int_equal(state_of(s), SEARCHERS(1));
	assert_int_equal(s->nidle, 0);
	assert_false(heist__sleep_stop_search(s));
	assert_int_equal(state_of(s), 0);
}

/* ---------------------------------------------------------------------------------- */
/* Sleepers on their own threads                                                      */

struct sleeper_thread {
	struct sleep *s;
	unsigned i;
	pthread_t t;
	atomic_int woke;	/* heist__sleep_wait returned */
};

/* A worker that finds nothing: search, prepare, (its last look finds nothing), wait.
 * It returns from the wait as a searcher and stays one. */
static void *
sleeper_main(void *arg)
{
	struct sleeper_thread *st = arg;

	heist__sleep_start_search(st->s);
	heist__sleep_prepare(st->s, st->i);
	heist__sleep_wait(st->s, st->i);
	atomic_store(&st->woke, 1);
	return NULL;
}

/* Start n sleepers (workers 0 .. n-1) and wait until all are on the idle stack. */
static void
put_to_sleep(struct sleep *s, struct sleeper_thread *st, unsigned n)
{
	bool ok;

	for (unsigned i = 0; i < n; i++) {
		st[i] = (struct sleeper_thread){ .s = s, .i = i };
		assert_int_equal(pthread_create(&st[i].t, NULL, sleeper_main, &st[i]), 0);
	}
	POLL(ok, state_of(s) == SLEEPERS(n));
	assert_true(ok);
	assert_int_equal(s->nidle, n);
}

static unsigned
woken(struct sleeper_thread *st, unsigned n)
{
	unsigned w = 0;

	for (unsigned i = 0; i < n; i++)
		w += atomic_load(&st[i].woke);
	return w;
}

static void
join_all(struct sleeper_thread *st, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		pthread_join(st[i].t, NULL);
}

static void
notify_wakes_exactly_one_sleeper_when_nobody_searches(void **state)
{
	enum { N = 3 };
	struct sleep *s = *state;
	static struct sleeper_thread st[N];
	bool ok;

	put_to_sleep(s, st, N);
	heist__sleep_notify(s);
	/* One worker left the idle stack and became a searcher; the others still sleep. */
	assert_int_equal(state_of(s), SEARCHERS(1) | SLEEPERS(N - 1));
	assert_int_equal(s->nidle, N - 1);
	assert_int_equal(asleep(s), N - 1);
	POLL(ok, woken(st, N) == 1);
	assert_true(ok);
	/* A second notify finds a searcher: nobody else is woken. */
	heist__sleep_notify(s);
	assert_int_equal(s->nidle, N - 1);
	assert_int_equal(asleep(s), N - 1);
	assert_int_equal(woken(st, N), 1);
	heist__sleep_wake_all(s);
	join_all(st, N);
	assert_int_equal(state_of(s), SEARCHERS(N));
}

static void
notify_wakes_nobody_while_a_worker_searches(void **state)
{
	struct sleep *s = *state;
	static struct sleeper_thread st[1];
	bool ok;

	put_to_sleep(s, st, 1);
	heist__sleep_start_search(s);	/* the test thread is worker 1, searching */
	heist__sleep_notify(s);
	assert_int_equal(state_of(s), SEARCHERS(1) | SLEEPERS(1));
	assert_int_equal(s->nidle, 1);
	assert_int_equal(asleep(s), 1);
	/* The searcher found work; as the last searcher with a sleeper, it is told so,
	 * and the next notify wakes the sleeper. */
	assert_true(heist__sleep_stop_search(s));
	assert_int_equal(state_of(s), SLEEPERS(1));
	heist__sleep_notify(s);
	POLL(ok, woken(st, 1) == 1);
	assert_true(ok);
	join_all(st, 1);
	assert_int_equal(state_of(s), SEARCHERS(1));
	assert_int_equal(s->nidle, 0);
}

static void
wake_all_wakes_every_sleeper(void **state)
{
	struct sleep *s = *state;
	static struct sleeper_thread st[MAX_WORKERS];
	bool ok;

	put_to_sleep(s, st, MAX_WORKERS);
	heist__sleep_wake_all(s);
	assert_int_equal(s->nidle, 0);
	assert_int_equal(asleep(s), 0);
	assert_int_equal(state_of(s), SEARCHERS(MAX_WORKERS));
	POLL(ok, woken(st, MAX_WORKERS) == MAX_WORKERS);
	assert_true(ok);
	join_all(st, MAX_WORKERS);
}

/* ---------------------------------------------------------------------------------- */
/* No lost wake-up                                                                    */

/* A producer hands one piece of work at a time to a consumer (worker 0), which
 * searches, prepares, takes its last look at the work flag and sleeps, exactly as a
 * worker does; the producer stores the work (seq_cst) and notifies. Each piece is
 * taken before the next is made, so the consumer sleeps often, and the two race at
 * every hand-off. A lost wake-up leaves a piece untaken: the producer's bounded wait
 * for it runs out, and the test fails (wake_all then frees the consumer). */
struct handoff {
	struct sleep *s;
	atomic_uint work;	/* 0: none; else the number of the piece, 1-based */
	atomic_int stop;	/* the test failed: the consumer returns */
	atomic_uchar *taken;	/* per piece: times taken */
	atomic_uint sleeps;	/* waits the consumer entered */
};

static void *
consumer_main(void *arg)
{
	struct handoff *h = arg;

	for (unsigned r = 0; r < HANDOFFS && !atomic_load(&h->stop); r++) {
		heist__sleep_start_search(h->s);
		for (;;) {
			/* seq_cst: the searcher's look; the last look below is the one
			 * the protocol rests on. */
			if (atomic_load_explicit(&h->work, memory_order_seq_cst))
				break;
			heist__sleep_prepare(h->s, 0);
			/* seq_cst: step (2)'s last look, after prepare's RMW and fence;
			 * pairs with the producer's store and notify (steps 3 and 4). */
			if (atomic_load_explicit(&h->work, memory_order_seq_cst)) {
				heist__sleep_cancel(h->s, 0);
				break;
			}
			atomic_fetch_add(&h->sleeps, 1);
			heist__sleep_wait(h->s, 0);	/* returns a searcher */
			if (atomic_load(&h->stop))
				break;
		}
		heist__sleep_stop_search(h->s);
		unsigned piece = atomic_exchange(&h->work, 0);
		if (piece >= 1 && piece <= HANDOFFS)
			atomic_fetch_add(&h->taken[piece - 1], 1);
	}
	return NULL;
}

static bool
work_taken(struct handoff *h)
{
	/* Most hand-offs are done within a few microseconds: spin before napping. */
	for (int i = 0; i < 10000; i++) {
		if (!atomic_load(&h->work))
			return true;
		cpu_relax();
	}
	return false;
}

static void
no_wake_up_is_lost_between_the_last_look_and_notify(void **state)
{
	struct sleep *s = *state;
	static struct handoff h;
	pthread_t t;
	unsigned r;
	bool ok = true;

	h = (struct handoff){ .s = s };
	h.taken = calloc(HANDOFFS, sizeof *h.taken);
	assert_non_null(h.taken);
	assert_int_equal(pthread_create(&t, NULL, consumer_main, &h), 0);
	for (r = 0; r < HANDOFFS; r++) {
		/* seq_cst: step (3), the work made visible; then step (4). */
		atomic_store_explicit(&h.work, r + 1, memory_order_seq_cst);
		heist__sleep_notify(s);
		if (!work_taken(&h)) {
			POLL(ok, !atomic_load(&h.work));
			if (!ok)
				break;
		}
	}
	if (!ok) {
		atomic_store(&h.stop, 1);
		heist__sleep_wake_all(s);
	}
	pthread_join(t, NULL);
	if (!ok)
		fail_msg("piece %u of %d never taken: the consumer slept through its notify",
			 r + 1, HANDOFFS);
	print_message("the consumer slept %u times in %d hand-offs\n", atomic_load(&h.sleeps),
		      HANDOFFS);
	for (unsigned i = 0; i < HANDOFFS; i++)
		if (atomic_load(&h.taken[i]) != 1)
			fail_msg("piece %u taken %u times", i + 1, atomic_load(&h.taken[i]));
	assert_int_equal(state_of(s), 0);
	free(h.taken);
}

/* A job queued behind another (a backlog) while a worker counts as searching: that
 * searcher is not taking jobs (it waits for a CPU, or was preempted), so the notify
 * wakes a sleeper anyway (sleep.h, notify_job's (a)); without a backlog it wakes
 * nobody, as before. */
static void
a_backlog_wakes_a_sleeper_while_a_worker_searches(void **state)
{
	enum { N = 2 };
	struct sleep *s = *state;
	static struct sleeper_thread st[N];
	bool ok;

	put_to_sleep(s, st, N);
	heist__sleep_start_search(s);	/* the test thread is worker 2, searching */
	heist__sleep_notify_job(s, 0);
	assert_int_equal(state_of(s), SEARCHERS(1) | SLEEPERS(N));
	assert_int_equal(asleep(s), N);
	heist__sleep_notify_job(s, 1);
	assert_int_equal(state_of(s), SEARCHERS(2) | SLEEPERS(N - 1));
	POLL(ok, woken(st, N) == 1);
	assert_true(ok);
	assert_int_equal(asleep(s), N - 1);
	/* Another job behind a longer backlog wakes the last sleeper; one more finds
	 * none to wake. */
	heist__sleep_notify_job(s, 5);
	POLL(ok, woken(st, N) == N);
	assert_true(ok);
	heist__sleep_notify_job(s, 6);
	assert_int_equal(state_of(s), SEARCHERS(N + 1));
	join_all(st, N);
	assert_int_equal(s->nidle, 0);
	heist__sleep_stop_search(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(prepare_then_cancel_returns_the_worker_to_searching,
						setup, teardown),
		cmocka_unit_test_setup_teardown(notify_with_nobody_asleep_changes_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(notify_wakes_exactly_one_sleeper_when_nobody_searches,
						setup, teardown),
		cmocka_unit_test_setup_teardown(notify_wakes_nobody_while_a_worker_searches, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_backlog_wakes_a_sleeper_while_a_worker_searches,
						setup, teardown),
		cmocka_unit_test_setup_teardown(wake_all_wakes_every_sleeper, setup, teardown),
		cmocka_unit_test_setup_teardown(no_wake_up_is_lost_between_the_last_look_and_notify,
						setup, teardown),
	};
	return RUN_TESTS(tests);
}
