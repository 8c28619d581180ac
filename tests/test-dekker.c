/* SPDX-License-Identifier: MIT */
/* test-dekker.c - the store of a Dekker pair (internal.h, dekker_store): two threads
 * each write their word with it and then load the other's with seq_cst, round after
 * round; in no round may both loads miss the other's write. The library's pairs (a
 * waiter's withdraw against a walker's read, the guard against destroy, a deque's
 * publish against a worker going to sleep, shutdown against a submit) stand on this.
 *
 * On x86 hardware either way passes; the test bites in .ci/run's aarch64 cell, under
 * qemu-user, whose translation lets a seq_cst load pass a seq_cst store: a plain
 * seq_cst store fails there in about one round in ten. No timing is involved: a
 * correct store fails no round, however the threads are scheduled. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "common.h"
#include "internal.h"

enum { ROUNDS = 50000 };

struct pair {
	_Atomic int x, y;	/* the two words of the pair */
	_Atomic int go;		/* round the second thread may play */
	_Atomic int played;	/* rounds the second thread has played */
	int seen_x[ROUNDS];	/* the second thread's loads, per round */
};

static void
spin_until(_Atomic int *word, int value)
{
	/* acquire: pairs with the release stores of the other thread, so that its
	 * round's plain writes (seen_x) and the words' reset are visible. */
	for (unsigned i = 0; atomic_load_explicit(word, memory_order_acquire) != value; i++)
		if (i > 64)
			sched_yield();	/* the other thread may share our core */
}

static void *
second(void *arg)
{
	struct pair *p = arg;
	for (int r = 0; r < ROUNDS; r++) {
		spin_until(&p->go, r + 1);
		dekker_store(&p->y, 1);
		p->seen_x[r] = atomic_load_explicit(&p->x, memory_order_seq_cst);
		/* release: seen_x[r] before the first thread reads it. */
		atomic_store_explicit(&p->played, r + 1, memory_order_release);
	}
	return NULL;
}

static void
no_round_misses_both_writes(void **state)
{
	(void)state;
	static struct pair p;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, second, &p), 0);
	int missed = 0, first_missed = -1;
	for (int r = 0; r < ROUNDS; r++) {
		atomic_store_explicit(&p.x, 0, memory_order_relaxed);
		atomic_store_explicit(&p.y, 0, memory_order_relaxed);
		/* release: the reset before the second thread's round. */
		atomic_store_explicit(&p.go, r + 1, memory_order_release);
		dekker_store(&p.x, 1);
		int seen_y = atomic_load_explicit(&p.y, memory_order_seq_cst);
		spin_until(&p.played, r + 1);
		if (!seen_y && !p.seen_x[r] && missed++ == 0)
			first_missed = r;
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	if (missed)
		fail_msg("%d of %d rounds saw neither write, the first round %d", missed, ROUNDS,
			 first_missed);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_round_misses_both_writes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
