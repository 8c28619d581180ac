/* SPDX-License-Identifier: MIT */
/* latch.c - countdown latch: an atomic counter plus a three-state word the waiter sleeps
 * on (0 closed, 1 open, 2 closed with a sleeper). See latch.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "latch.h"

#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#if defined(_WIN32)
#include <malloc.h>
#endif

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

enum { CLOSED = 0, OPEN = 1, SLEEPER = 2, SPINS = 2000 };

struct latch {
	/* Written by every counting task: its own cache line, away from state, which the
	 * waiter polls. */
	alignas(64) atomic_long count;
	alignas(64) atomic_uint state;
};

struct latch *
latch_create(long count)
{
#if defined(_WIN32)
	struct latch *l = _aligned_malloc(sizeof *l, 64);	/* no aligned_alloc there */
#else
	struct latch *l = aligned_alloc(64, sizeof *l);
#endif
	if (!l) {
		fputs("heist-bench: out of memory\n", stderr);
		exit(1);
	}
	latch_reset(l, count);
	return l;
}

void
latch_destroy(struct latch *l)
{
#if defined(_WIN32)
	_aligned_free(l);
#else
	free(l);
#endif
}

void
latch_reset(struct latch *l, long count)
{
	/* Relaxed: the caller publishes the latch to the tasks by submitting them, which
	 * is a release/acquire pair of its own. */
	atomic_store_explicit(&l->count, count, memory_order_relaxed);
	atomic_store_explicit(&l->state, count > 0 ? CLOSED : OPEN, memory_order_relaxed);
}

static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

void
latch_count_down(struct latch *l)
{
	/* acq_rel: the release half orders this task's writes before the count-down; the
	 * acquire half lets the last one see every earlier task's writes (the RMW chain),
	 * which its release store of OPEN then passes on to the waiter. */
	if (atomic_fetch_sub_explicit(&l->count, 1, memory_order_acq_rel) != 1)
		return;
	/* Pairs with the acquire loads in latch_wait. */
	unsigned prev = atomic_exchange_explicit(&l->state, OPEN, memory_order_acq_rel);
#ifdef __linux__
	if (prev == SLEEPER)
		syscall(SYS_futex, &l->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#else
	(void)prev;
#endif
}

void
latch_wait(struct latch *l)
{
	for (int i = 0; i < SPINS; i++) {
		/* acquire: pairs with the exchange in latch_count_down. */
		if (atomic_load_explicit(&l->state, memory_order_acquire) == OPEN)
			return;
		cpu_relax();
	}
	for (;;) {
		unsigned s = CLOSED;
		/* Announce the sleeper; fails if already OPEN (or already announced). */
		atomic_compare_exchange_strong_explicit(&l->state, &s, SLEEPER,
							memory_order_acquire, memory_order_acquire);
		if (s == OPEN)
			return;
#ifdef __linux__
		/* Sleeps only while the word is still SLEEPER: no lost wake-up. */
		syscall(SYS_futex, &l->state, FUTEX_WAIT_PRIVATE, SLEEPER, NULL, NULL, 0);
#else
		sched_yield();
#endif
		if (atomic_load_explicit(&l->state, memory_order_acquire) == OPEN)
			return;
	}
}
