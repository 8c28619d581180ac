/* SPDX-License-Identifier: MIT */
/* posix/wait.c - platform.h's waits on a word for any POSIX system: a parking lot.
 * A word's bucket (a mutex and a queue of waiters) is chosen by its address. A waiter
 * checks the word under its bucket's lock, queues itself there and sleeps on its own
 * parker; a waker (which changed the word first: every caller's protocol) takes the
 * same lock, unqueues up to n waiters of that word whose bits share one with its own,
 * and posts their parkers after the unlock. So a wake cannot fall between a waiter's
 * check and its sleep, and it wakes exactly the sleepers a Linux futex would (n and the
 * bitset honoured), in the order they came.
 * A parker is a POSIX semaphore where the system has unnamed ones (Linux, the BSDs):
 * a post and a wait are one atomic each when nobody sleeps, one futex-class call each
 * when one does. Elsewhere (macOS has no unnamed semaphores) it is a mutex, a condition
 * variable and a flag. A parker lives in the waiter's frame for one wait: a timed-out
 * waiter that finds itself already unqueued waits for the post that is coming, so no
 * waker touches a parker after its owner has returned except inside sem_post, which
 * POSIX and the C libraries allow (a wait that returned owes nothing to the post).
 * Timed waits use CLOCK_MONOTONIC deadlines where the system lets them (semaphores:
 * POSIX.1-2024's sem_clockwait, which the build looks for; condition variables:
 * _POSIX_CLOCK_SELECTION), else CLOCK_REALTIME (sem_timedwait); a clock step then only
 * makes a wait return early or late, and every caller re-checks its own deadline. In
 * a forked child the table is made anew: a parent's thread may have held a bucket's
 * lock at the fork, and its waiters are gone. Design after WebKit's ParkingLot and the
 * Linux futex hash table. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "../platform.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#if defined(_POSIX_SEMAPHORES) && _POSIX_SEMAPHORES > 0 && !defined(__APPLE__) \
	&& !defined(HEIST_PARK_CONDVAR)
#define PARK_SEMAPHORE 1
#include <semaphore.h>
#else
#define PARK_SEMAPHORE 0
#endif

enum { BUCKETS = 256, LOCK_SPINS = 64 };

/* ---- parkers: one thread's sleep, posted once ----------------------------------- */

#if PARK_SEMAPHORE
struct parker {
	sem_t sem;
};

/* ThreadSanitizer (gcc 12's, clang 14's) knows sem_timedwait's order with sem_post but
 * not sem_clockwait's: it would report the parker's post and return as a race. */
#if defined(__SANITIZE_THREAD__)
#define PARK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PARK_TSAN 1
#endif
#endif

#if HEIST_HAVE_SEM_CLOCKWAIT && !defined(PARK_TSAN)
/* POSIX.1-2024's; glibc declares it only for _GNU_SOURCE, which this strict POSIX.1-2008
 * file does not ask for. */
int sem_clockwait(sem_t *restrict sem, clockid_t clock, const struct timespec *restrict at);
static const clockid_t park_clock = CLOCK_MONOTONIC;

static int
sem_wait_until(sem_t *sem, const struct timespec *deadline)
{
	return sem_clockwait(sem, park_clock, deadline);
}
#else
static const clockid_t park_clock = CLOCK_REALTIME;	/* sem_timedwait's */

static int
sem_wait_until(sem_t *sem, const struct timespec *deadline)
{
	return sem_timedwait(sem, deadline);
}
#endif

/* false: the parker cannot sleep (sem_init fails only for shared or oversized
 * semaphores, neither asked for here); the wait then returns as a spurious one. */
static bool
park_init(struct parker *p)
{
	return sem_init(&p->sem, 0, 0) == 0;
}

static void
park_destroy(struct parker *p)
{
	sem_destroy(&p->sem);
}

/* Sleep until posted or past *deadline (NULL: none); true when posted. */
static bool
park_wait(struct parker *p, const struct timespec *deadline)
{
	for (;;) {
		int r = deadline ? sem_wait_until(&p->sem, deadline) : sem_wait(&p->sem);
		if (r == 0)
			return true;
		if (errno != EINTR)
			return false;	/* ETIMEDOUT */
	}
}

static void
park_post(struct parker *p)
{
	sem_post(&p->sem);
}
#else
struct parker {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool posted;	/* guarded by lock */
};

static clockid_t park_clock = CLOCK_REALTIME;
static pthread_condattr_t park_attr;

static void
make_park_attr(void)
{
	pthread_condattr_init(&park_attr);
#if defined(_POSIX_CLOCK_SELECTION) && _POSIX_CLOCK_SELECTION >= 0
	if (pthread_condattr_setclock(&park_attr, CLOCK_MONOTONIC) == 0)
		park_clock = CLOCK_MONOTONIC;
#endif
}

static bool
park_init(struct parker *p)
{
	p->posted = false;
	if (pthread_mutex_init(&p->lock, NULL))
		return false;
	if (pthread_cond_init(&p->cond, &park_attr) == 0)
		return true;
	pthread_mutex_destroy(&p->lock);
	return false;
}

static void
park_destroy(struct parker *p)
{
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
}

static bool
park_wait(struct parker *p, const struct timespec *deadline)
{
	pthread_mutex_lock(&p->lock);
	int r = 0;
	while (!p->posted && r != ETIMEDOUT)
		r = deadline ? pthread_cond_timedwait(&p->cond, &p->lock, deadline)
			     : pthread_cond_wait(&p->cond, &p->lock);
	bool posted = p->posted;
	pthread_mutex_unlock(&p->lock);
	return posted;
}

/* The signal is under the lock: the owner sees posted only after our unlock, so it
 * cannot destroy the parker while we still use it. */
static void
park_post(struct parker *p)
{
	pthread_mutex_lock(&p->lock);
	p->posted = true;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}
#endif

/* ---- the table ------------------------------------------------------------------- */

struct waiter {
	struct waiter *next;		/* in the bucket's queue; guarded by its lock */
	const _Atomic uint32_t *word;
	uint32_t bits;
	bool queued;			/* guarded by the bucket's lock */
	struct parker park;
};

static struct bucket {
	pthread_mutex_t lock;
	struct waiter *head, *tail;	/* guarded by lock; oldest first */
} table[BUCKETS];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void
make_table(void)
{
	for (int i = 0; i < BUCKETS; i++) {
		pthread_mutex_init(&table[i].lock, NULL);
		table[i].head = table[i].tail = NULL;
	}
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
#if !PARK_SEMAPHORE
	make_park_attr();
#endif
	make_table();
	(void)pthread_atfork(NULL, NULL, remake_in_child);
}

static struct bucket *
bucket_of(const void *word)
{
	pthread_once(&table_once, init_once);
	uintptr_t a = (uintptr_t)word >> 2;
	return &table[(a ^ (a >> 8) ^ (a >> 16)) % BUCKETS];
}

/* A bucket is held for a few loads and stores: try a few times before sleeping on
 * its mutex, which would cost the holder a wake call at its unlock too. */
static void
lock_bucket(struct bucket *b)
{
	for (int i = 0; i < LOCK_SPINS; i++)
		if (pthread_mutex_trylock(&b->lock) == 0)
			return;
	pthread_mutex_lock(&b->lock);
}

static void
deadline_after(struct timespec *ts, uint64_t timeout_ns)
{
	clock_gettime(park_clock, ts);
	uint64_t ns = (uint64_t)ts->tv_nsec + timeout_ns % 1000000000u;
	ts->tv_sec += (time_t)(timeout_ns / 1000000000u + ns / 1000000000u);
	ts->tv_nsec = (long)(ns % 1000000000u);
}

/* Under b's lock. */
static void
enqueue(struct bucket *b, struct waiter *w)
{
	w->next = NULL;
	w->queued = true;
	if (b->tail)
		b->tail->next = w;
	else
		b->head = w;
	b->tail = w;
}

/* Under b's lock: take w out of the queue, where it is. */
static void
unqueue(struct bucket *b, struct waiter *w)
{
	struct waiter *prev = NULL;
	for (struct waiter *q = b->head; q != w; q = q->next)
		prev = q;
	if (prev)
		prev->next = w->next;
	else
		b->head = w->next;
	if (b->tail == w)
		b->tail = prev;
	w->queued = false;
}

void
heist__futex_wait_bits(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns,
		       uint32_t bits)
{
	int saved = errno;
	struct bucket *b = bucket_of(word);
	struct waiter me = {.word = word, .bits = bits};
	struct timespec ts;
	if (timeout_ns)
		deadline_after(&ts, timeout_ns);
	if (!park_init(&me.park))
		goto out;
	lock_bucket(b);
	/* relaxed: the lock orders this look against the waker's, which follows its
	 * change of the word; the caller's own loads after the wait order its data. */
	bool sleep = atomic_load_explicit(word, memory_order_relaxed) == expected;
	if (sleep)
		enqueue(b, &me);
	pthread_mutex_unlock(&b->lock);
	if (sleep && !park_wait(&me.park, timeout_ns ? &ts : NULL)) {
		lock_bucket(b);
		bool mine = me.queued;	/* still queued: no waker chose us */
		if (mine)
			unqueue(b, &me);
		pthread_mutex_unlock(&b->lock);
		if (!mine)	/* a waker chose us: its post is coming, and is ours */
			park_wait(&me.park, NULL);
	}
	park_destroy(&me.park);
out:
	errno = saved;
}

void
heist__futex_wake_bits(_Atomic uint32_t *word, int n, uint32_t bits)
{
	int saved = errno;
	struct bucket *b = bucket_of(word);
	struct waiter *chosen = NULL, **last = &chosen;
	lock_bucket(b);
	struct waiter *prev = NULL, *q = b->head;
	while (q && n > 0) {
		struct waiter *next = q->next;
		if (q->word == word && (q->bits & bits)) {
			if (prev)
				prev->next = next;
			else
				b->head = next;
			if (b->tail == q)
				b->tail = prev;
			q->queued = false;
			q->next = NULL;
			*last = q;
			last = &q->next;
			n--;
		} else {
			prev = q;
		}
		q = next;
	}
	pthread_mutex_unlock(&b->lock);
	/* After the unlock, so that the woken do not wake into a lock we hold. Read
	 * next before the post: the woken may return and its parker with it. */
	while (chosen) {
		struct waiter *next = chosen->next;
		park_post(&chosen->park);
		chosen = next;
	}
	errno = saved;
}

void
heist__futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
	heist__futex_wait_bits(word, expected, timeout_ns, UINT32_MAX);
}

void
heist__futex_wake(_Atomic uint32_t *word, int n)
{
	heist__futex_wake_bits(word, n, UINT32_MAX);
}
