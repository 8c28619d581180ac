/* SPDX-License-Identifier: MIT */
/* futex.c - the one place heist sleeps in the kernel. Callers keep their own state
 * word and re-check it after every return, so spurious wake-ups are harmless. The
 * calls keep errno: a futex wait that finds the word changed sets EAGAIN, a timed one
 * ETIMEDOUT, and the caller's errno is none of heist's business (heist.h). */
#include "futex.h"

#include <errno.h>
#include <limits.h>
#include <time.h>

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

void
heist__futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
	struct timespec ts, *tsp = NULL;
	if (timeout_ns) {
		ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
		ts.tv_nsec = (long)(timeout_ns % 1000000000u);
		tsp = &ts;
	}
	/* The kernel compares *word with expected under its own lock, so a wake that
	 * follows a change of the word cannot slip between our check and our sleep. */
	int saved = errno;
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, tsp, NULL, 0);
	errno = saved;
}

void
heist__futex_wake(_Atomic uint32_t *word, int n)
{
	int saved = errno;
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
	errno = saved;
}

void
heist__futex_wait_bits(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns,
		       uint32_t bits)
{
	/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline. */
	struct timespec ts, *tsp = NULL;
	int saved = errno;
	if (timeout_ns) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t ns = (uint64_t)ts.tv_nsec + timeout_ns;
		ts.tv_sec += (time_t)(ns / 1000000000u);
		ts.tv_nsec = (long)(ns % 1000000000u);
		tsp = &ts;
	}
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_BITSET_PRIVATE, expected, tsp, NULL,
		bits);
	errno = saved;
}

void
heist__futex_wake_bits(_Atomic uint32_t *word, int n, uint32_t bits)
{
	int saved = errno;
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_BITSET_PRIVATE, n, NULL, NULL, bits);
	errno = saved;
}

#else /* a portable stand-in: striped mutex + condvar, wake means broadcast */
#include <pthread.h>

enum { STRIPES = 64 };
static struct stripe {
	pthread_mutex_t lock;
	pthread_cond_t cond;
} stripes[STRIPES];
static pthread_once_t stripes_once = PTHREAD_ONCE_INIT;

static void
stripes_init(void)
{
	for (int i = 0; i < STRIPES; i++) {
		pthread_mutex_init(&stripes[i].lock, NULL);
		pthread_cond_init(&stripes[i].cond, NULL);
	}
}

static struct stripe *
stripe_of(const void *p)
{
	pthread_once(&stripes_once, stripes_init);
	return &stripes[((uintptr_t)p >> 4) % STRIPES];
}

void
heist__futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
	struct stripe *s = stripe_of(word);
	pthread_mutex_lock(&s->lock);
	/* Wakers change the word before they take this lock, so the check under the
	 * lock cannot miss a wake. */
	if (atomic_load_explicit(word, memory_order_acquire) == expected) {
		if (timeout_ns) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			uint64_t ns = (uint64_t)ts.tv_nsec + timeout_ns;
			ts.tv_sec += (time_t)(ns / 1000000000u);
			ts.tv_nsec = (long)(ns % 1000000000u);
			pthread_cond_timedwait(&s->cond, &s->lock, &ts);
		} else {
			pthread_cond_wait(&s->cond, &s->lock);
		}
	}
	pthread_mutex_unlock(&s->lock);
}

void
heist__futex_wake(_Atomic uint32_t *word, int n)
{
	struct stripe *s = stripe_of(word);
	(void)n;
	pthread_mutex_lock(&s->lock);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
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
#endif
