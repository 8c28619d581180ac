/* SPDX-License-Identifier: MIT */
/* static_threads.c - see static_threads.h. */
#include "static_threads.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

enum { MAX_THREADS = 64 };

static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

struct team {
	unsigned threads, reps;
	size_t n;
	void (*share)(void *arg, size_t begin, size_t end);
	void *arg;
	/* The barrier: arrivals in the current round, and the round number. acq_rel on
	 * the count and release on the round: every share of a round happens before
	 * any thread leaves it (the last arrival's acquire sees all the others'
	 * releases; the waiters' acquire of the round pairs with its release). */
	atomic_uint arrived;
	atomic_uint round;
};

struct member {
	struct team *team;
	unsigned k;
};

static void
barrier(struct team *t, unsigned round)
{
	if (atomic_fetch_add_explicit(&t->arrived, 1, memory_order_acq_rel) + 1 == t->threads) {
		atomic_store_explicit(&t->arrived, 0, memory_order_relaxed);
		atomic_store_explicit(&t->round, round + 1, memory_order_release);
		return;
	}
	while (atomic_load_explicit(&t->round, memory_order_acquire) == round)
		cpu_relax();
}

static void *
member_main(void *p)
{
	struct member *m = p;
	struct team *t = m->team;
	size_t q = t->n / t->threads, rem = t->n % t->threads;
	size_t b = q * m->k + rem * m->k / t->threads;
	size_t e = q * (m->k + 1) + rem * (m->k + 1) / t->threads;
	for (unsigned r = 0; r < t->reps; r++) {
		t->share(t->arg, b, e);
		barrier(t, r);
	}
	return NULL;
}

void
static_threads_run(unsigned threads, size_t n, unsigned reps,
		   void (*share)(void *arg, size_t begin, size_t end), void *arg)
{
	if (threads < 1 || threads > MAX_THREADS) {
		fprintf(stderr, "heist-bench: static_threads: %u threads\n", threads);
		exit(1);
	}
	struct team t = {threads, reps, n, share, arg, 0, 0};
	pthread_t id[MAX_THREADS];
	struct member m[MAX_THREADS];
	for (unsigned k = 0; k < threads; k++)
		m[k] = (struct member){&t, k};
	for (unsigned k = 1; k < threads; k++)
		if (pthread_create(&id[k], NULL, member_main, &m[k])) {
			fprintf(stderr, "heist-bench: static_threads: pthread_create failed\n");
			exit(1);
		}
	member_main(&m[0]);
	for (unsigned k = 1; k < threads; k++)
		pthread_join(id[k], NULL);
}
