/* SPDX-License-Identifier: MIT */
/* test-futex.c - the platform layer's waits on a word (src/platform/platform.h,
 * heist__futex_*) on whichever backend this build has: the Linux futex, Windows'
 * WaitOnAddress, or the POSIX parking lot (-Dportable=true, either parker). A wait on a
 * word that changed returns; a timed wait ends and leaves nothing queued behind it, even
 * when wakes race its timeout; a ping-pong of many turns loses no wake; wakes of one
 * sleeper at a time, plain and by bits, reach every sleeper. The pool's own protocols
 * on top of these (sleep.c, wait.c) are tested by test-sleep.c and test-wait.c. Rules
 * and helpers: common.h; a lost wake-up shows as a POLL bound reached, not a hang.
 */
#include <limits.h>
#include <pthread.h>

#include "common.h"
#include "platform/platform.h"

#ifdef TEST_SANITIZED
enum { TURNS = 4000, RACES = 1000 };
#else
enum { TURNS = 40000, RACES = 10000 };
#endif
enum { SLEEPERS = 6 };

static void
a_changed_word_does_not_sleep(void **state)
{
	(void)state;
	_Atomic uint32_t word = 1;
	heist__futex_wait(&word, 0, 0);	/* no wake ever comes: it must not sleep */
	heist__futex_wait_bits(&word, 0, 0, 1);
	heist__futex_wait(&word, 0, LONG_WAIT_NS);
	assert_int_equal(atomic_load(&word), 1);
}

static void
a_timed_wait_ends(void **state)
{
	(void)state;
	_Atomic uint32_t word = 0;
	heist__futex_wait(&word, 0, 1000 * 1000);	/* 1 ms, nobody wakes it */
	heist__futex_wait_bits(&word, 0, 1000 * 1000, 2);
	/* A waiter left queued after its time would be a dead frame now. */
	heist__futex_wake(&word, INT32_MAX);
	heist__futex_wake_bits(&word, INT32_MAX, 2);
}

struct race {
	_Atomic uint32_t word;	/* never changes: every wait ends by a wake or its time */
	_Atomic int done;
};

static void *
short_waits(void *arg)
{
	struct race *r = arg;
	for (int i = 0; i < RACES; i++)
		heist__futex_wait(&r->word, 0, 1000 * (1 + i % 50));
	/* release: pairs with the test thread's acquire in POLL. */
	atomic_store_explicit(&r->done, 1, memory_order_release);
	return NULL;
}

/* Wakes race timeouts: a waiter chosen by a waker just as its time ran out must take
 * that wake before it returns (the parking lot's rule), or the waker would post to a
 * dead frame (ASan) or the waiter hang. */
static void
wakes_racing_timeouts_leave_nothing_behind(void **state)
{
	(void)state;
	static struct race r;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, short_waits, &r), 0);
	while (!atomic_load_explicit(&r.done, memory_order_acquire))
		heist__futex_wake(&r.word, 1);
	assert_int_equal(pthread_join(t, NULL), 0);
}

struct pingpong {
	_Atomic uint32_t turn;	/* even: the test thread plays; odd: the other */
	_Atomic int done;
};

/* Wait for the turn to have parity `side`, then pass it on and wake the other. */
static void
play(struct pingpong *p, uint32_t side)
{
	for (;;) {
		/* acquire: pairs with the other side's release increment. */
		uint32_t v = atomic_load_explicit(&p->turn, memory_order_acquire);
		if ((v & 1) == side)
			break;
		heist__futex_wait(&p->turn, v, 0);
	}
	/* release: our turn's reads and writes before the other side's. */
	atomic_fetch_add_explicit(&p->turn, 1, memory_order_release);
	heist__futex_wake(&p->turn, 1);
}

static void *
odd_side(void *arg)
{
	struct pingpong *p = arg;
	for (int i = 0; i < TURNS; i++)
		play(p, 1);
	atomic_store_explicit(&p->done, 1, memory_order_release);
	return NULL;
}

static void
a_ping_pong_loses_no_wake(void **state)
{
	(void)state;
	static struct pingpong p;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, odd_side, &p), 0);
	for (int i = 0; i < TURNS; i++)
		play(&p, 0);
	bool ok;
	POLL(ok, atomic_load_explicit(&p.done, memory_order_acquire));
	assert_true(ok);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&p.turn), 2u * TURNS);
}

struct crowd {
	_Atomic uint32_t word;
	_Atomic int asleep;	/* sleepers about to wait */
	_Atomic int woken;
	bool by_bits;
};

struct sleeper {
	struct crowd *c;
	uint32_t bits;
};

static void *
sleep_on_word(void *arg)
{
	struct sleeper *s = arg;
	struct crowd *c = s->c;
	atomic_fetch_add_explicit(&c->asleep, 1, memory_order_relaxed);
	/* acquire: pairs with the test thread's release store of 1. */
	while (atomic_load_explicit(&c->word, memory_order_acquire) == 0) {
		if (c->by_bits)
			heist__futex_wait_bits(&c->word, 0, 0, s->bits);
		else
			heist__futex_wait(&c->word, 0, 0);
	}
	atomic_fetch_add_explicit(&c->woken, 1, memory_order_relaxed);
	return NULL;
}

/* SLEEPERS threads sleep on one word (by_bits: half of them with bits 1|2, half with
 * bit 2); the word changes, then exactly SLEEPERS wakes of one sleeper each follow
 * (by_bits: half for bit 1, which only the 1|2 sleepers share, then half for bit 2). Each
 * wake must reach a sleeper whose bits share one with it while one is asleep, so these
 * wakes reach them all: a wake that reached nobody leaves one asleep. */
static void
wake_one_at_a_time(bool by_bits)
{
	static struct crowd c;
	static struct sleeper s[SLEEPERS];
	atomic_store(&c.word, 0);
	atomic_store(&c.asleep, 0);
	atomic_store(&c.woken, 0);
	c.by_bits = by_bits;
	pthread_t t[SLEEPERS];
	for (int i = 0; i < SLEEPERS; i++) {
		s[i] = (struct sleeper){&c, i % 2 ? 2u : 3u};
		assert_int_equal(pthread_create(&t[i], NULL, sleep_on_word, &s[i]), 0);
	}
	bool ok;
	POLL(ok, atomic_load(&c.asleep) == SLEEPERS);
	assert_true(ok);
	nap(NAP_NS);	/* most of them asleep, not needed for the check */
	/* release: pairs with the sleepers' acquire loads. */
	atomic_store_explicit(&c.word, 1, memory_order_release);
	/* by_bits: bit 1 first, or a bit-2 wake could take a 1|2 sleeper that only a
	 * bit-1 wake can reach, and leave a bit-2 one that no wake reaches. */
	for (int i = 0; i < SLEEPERS; i++) {
		if (by_bits)
			heist__futex_wake_bits(&c.word, 1, i < SLEEPERS / 2 ? 1u : 2u);
		else
			heist__futex_wake(&c.word, 1);
	}
	POLL(ok, atomic_load(&c.woken) == SLEEPERS);
	assert_true(ok);
	for (int i = 0; i < SLEEPERS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
}

static void
wakes_of_one_reach_every_sleeper(void **state)
{
	(void)state;
	wake_one_at_a_time(false);
}

static void
wakes_of_one_by_bits_reach_every_sleeper(void **state)
{
	(void)state;
	wake_one_at_a_time(true);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_changed_word_does_not_sleep),
		cmocka_unit_test(a_timed_wait_ends),
		cmocka_unit_test(wakes_racing_timeouts_leave_nothing_behind),
		cmocka_unit_test(a_ping_pong_loses_no_wake),
		cmocka_unit_test(wakes_of_one_reach_every_sleeper),
		cmocka_unit_test(wakes_of_one_by_bits_reach_every_sleeper),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
