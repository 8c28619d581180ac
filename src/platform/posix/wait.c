/* SPDX-License-Identifier: MIT */
/* posix/wait.c - platform.h's waits on a word for any POSIX system: a table of
 * mutex + condition variable pairs, a word's entry chosen by its address. A waiter
 * checks the word under its entry's lock and sleeps on the condition variable; a waker
 * (which changed the word first: every caller's protocol) takes the same lock and
 * broadcasts. So a wake cannot fall between a waiter's check and its sleep, and it
 * reaches every sleeper of the entry: a superset of the n a futex would wake, and the
 * bits (Linux's FUTEX_*_BITSET) are ignored. Sleepers woken for a word that did not
 * change (another word of their entry, or a bits wake meant for others) re-check and
 * sleep again. A count of sleepers per entry spares the broadcast when there are none.
 * Timed waits use CLOCK_MONOTONIC where the system lets a condition variable use it
 * (_POSIX_CLOCK_SELECTION), else CLOCK_REALTIME. In a forked child the table is made
 * anew: a parent's thread may have held an entry's lock at the fork. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "../platform.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

enum { ENTRIES = 256 };

static struct entry {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned sleepers;	/* guarded by lock */
} table[ENTRIES];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static clockid_t wait_clock = CLOCK_REALTIME;

static void
make_table(void)
{
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
#if defined(_POSIX_CLOCK_SELECTION) && _POSIX_CLOCK_SELECTION >= 0
	if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0)
		wait_clock = CLOCK_MONOTONIC;
#endif
	for (int i = 0; i < ENTRIES; i++) {
		pthread_mutex_init(&table[i].lock, NULL);
		pthread_cond_init(&table[i].cond, &attr);
		table[i].sleepers = 0;
	}
	pthread_condattr_destroy(&attr);
}

/* The child of a fork is the only thread: what the parent's threads held is gone. */
static void
remake_in_child(void)
{
	make_table();
}

static void
init_once(void)
{
	make_table();
	(void)pthread_atfork(NULL, NULL, remake_in_child);
}

static struct entry *
entry_of(const void *word)
{
	pthread_once(&table_once, init_once);
	uintptr_t a = (uintptr_t)word >> 2;
	return &table[(a ^ (a >> 8) ^ (a >> 16)) % ENTRIES];
}

static void
deadline_after(struct timespec *ts, uint64_t timeout_ns)
{
	clock_gettime(wait_clock, ts);
	uint64_t ns = (uint64_t)ts->tv_nsec + timeout_ns % 1000000000u;
	ts->tv_sec += (time_t)(timeout_ns / 1000000000u + ns / 1000000000u);
	ts->tv_nsec = (long)(ns % 1000000000u);
}

void
heist__futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
	int saved = errno;
	struct entry *e = entry_of(word);
	struct timespec ts;
	if (timeout_ns)
		deadline_after(&ts, timeout_ns);
	pthread_mutex_lock(&e->lock);
	/* relaxed: the lock orders this look against the waker's, which follows its
	 * change of the word; the caller's own loads after the wait order its data. */
	if (atomic_load_explicit(word, memory_order_relaxed) == expected) {
		e->sleepers++;
		if (timeout_ns)
			pthread_cond_timedwait(&e->cond, &e->lock, &ts);
		else
			pthread_cond_wait(&e->cond, &e->lock);
		e->sleepers--;
	}
	pthread_mutex_unlock(&e->lock);
	errno = saved;
}

void
heist__futex_wake(_Atomic uint32_t *word, int n)
{
	(void)n;	/* all of the entry's sleepers: see above */
	int saved = errno;
	struct entry *e = entry_of(word);
	pthread_mutex_lock(&e->lock);
	unsigned sleepers = e->sleepers;
	pthread_mutex_unlock(&e->lock);
	/* After the unlock, so that the woken do not wake into a lock we still hold.
	 * A sleeper counted above is inside pthread_cond_wait (it counted itself and
	 * slept under the lock we then took), so the broadcast reaches it; one that
	 * comes after our unlock sees the word as the waker changed it. */
	if (sleepers)
		pthread_cond_broadcast(&e->cond);
	errno = saved;
}

void
heist__futex_wait_bits(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns,
		       uint32_t bits)
{
	(void)bits;
	heist__futex_wait(word, expected, timeout_ns);
}

void
heist__futex_wake_bits(_Atomic uint32_t *word, int n, uint32_t bits)
{
	(void)bits;
	heist__futex_wake(word, n);
}
