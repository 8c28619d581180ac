/* SPDX-License-Identifier: MIT */
/* sleep.c - parking and waking idle workers (the protocol is in sleep.h). The state
 * word is read lock-free on every notification; the mutex is taken only to change the
 * idle stack, which happens on the way to a futex sleep or a wake, both of them
 * system calls that cost far more than the lock. */
#include "sleep.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "clock.h"
#include "platform/platform.h"

enum { AWAKE = 0, SLEEPING = 1 };
#define ONE_SEARCHER ((uint64_t)1 << 32)
#define ONE_SLEEPER ((uint64_t)1)

int
heist__sleep_init(struct sleep *s, unsigned n)
{
	s->idle = heist__calloc(n, sizeof(*s->idle));
	s->sleepers = heist__aligned_alloc(CACHE_LINE, sizeof(*s->sleepers) * n);
	if (!s->idle || !s->sleepers) {
		free(s->idle);
		heist__aligned_free(s->sleepers);
		return ENOMEM;
	}
	int err = heist__mutex_init(&s->lock);
	if (err) {
		free(s->idle);
		heist__aligned_free(s->sleepers);
		return err;
	}
	for (unsigned i = 0; i < n; i++) {
		atomic_init(&s->sleepers[i].word, AWAKE);
		s->sleepers[i].woken_ns = 0;
	}
	atomic_init(&s->state, 0);
	s->nidle = 0;
	s->lent = -1;
	s->owed = false;
	s->given = false;
	atomic_init(&s->lent_out, false);
	s->n = n;
	return 0;
}

void
heist__sleep_fini(struct sleep *s)
{
	heist__mutex_destroy(&s->lock);
	free(s->idle);
	heist__aligned_free(s->sleepers);
}

void
heist__sleep_start_search(struct sleep *s)
{
	/* relaxed: a searcher only suppresses wakes; it then looks at every queue
	 * itself, and before it sleeps the seq_cst steps of sleep.h run. */
	atomic_fetch_add_explicit(&s->state, ONE_SEARCHER, memory_order_relaxed);
}

bool
heist__sleep_stop_search(struct sleep *s)
{
	/* seq_cst: if we were the last searcher, the work we found may have company,
	 * and a notifier that saw us searching did not wake anyone; so the caller
	 * looks for more and wakes the next one itself (Go's "wakep"). The caller's
	 * look comes after this RMW, so work published by a notifier that saw us
	 * searching is visible to it. */
	uint64_t old = atomic_fetch_sub_explicit(&s->state, ONE_SEARCHER, memory_order_seq_cst);
	return (old >> 32) == 1 && (uint32_t)old != 0;
}

/* Under the lock: worker i gives the guest the place it is owed, and sleeps as the
 * lent one (SLEEPING, off the stack, not counted). */
static bool
give_place(struct sleep *s, unsigned i)
{
	if (!s->owed || s->lent >= 0)
		return false;
	s->owed = false;
	s->given = true;
	s->lent = (int)i;
	atomic_store_explicit(&s->lent_out, true, memory_order_relaxed);
	atomic_store_explicit(&s->sleepers[i].word, SLEEPING, memory_order_relaxed);
	return true;
}

void
heist__sleep_prepare(struct sleep *s, unsigned i)
{
	heist__mutex_lock(&s->lock);
	/* A worker sleeps once at a time, and only after searching. */
	assert(atomic_load_explicit(&s->sleepers[i].word, memory_order_relaxed) == AWAKE);
	assert((atomic_load_explicit(&s->state, memory_order_relaxed) >> 32) > 0);
	uint64_t change = ONE_SLEEPER - ONE_SEARCHER;
	if (give_place(s, i)) {
		change = -ONE_SEARCHER;	/* lent: neither searcher nor sleeper */
	} else {
		atomic_store_explicit(&s->sleepers[i].word, SLEEPING, memory_order_relaxed);
		s->idle[s->nidle++] = i;
	}
	/* seq_cst: step (1) of sleep.h; the fence is step (2)'s, before the caller's
	 * last look at the queues. */
	atomic_fetch_add_explicit(&s->state, change, memory_order_seq_cst);
	heist__mutex_unlock(&s->lock);
	atomic_thread_fence(memory_order_seq_cst);
}

static int recall_lent(struct sleep *s);

void
heist__sleep_cancel(struct sleep *s, unsigned i)
{
	heist__mutex_lock(&s->lock);
	if (s->lent == (int)i) {
		/* Lent to the guest: we gave it our place in prepare, or it took us
		 * from the idle stack after our step (1). Either way the work we saw
		 * may be nobody else's to run (a notifier that saw us searching woke no
		 * one, and the guest does not take from the queues): we search again,
		 * as recalled, and the guest is owed its place (sleep.h). */
		recall_lent(s);
		heist__mutex_unlock(&s->lock);
		return;
	}
	/* relaxed under the lock: wakers change the word only while holding it. */
	if (atomic_load_explicit(&s->sleepers[i].word, memory_order_relaxed) == SLEEPING) {
		for (unsigned k = 0; k < s->nidle; k++) {
			if (s->idle[k] == i) {
				s->idle[k] = s->idle[--s->nidle];
				break;
			}
		}
		atomic_store_explicit(&s->sleepers[i].word, AWAKE, memory_order_relaxed);
		atomic_fetch_add_explicit(&s->state, ONE_SEARCHER - ONE_SLEEPER,
					  memory_order_seq_cst);
	}
	/* else a waker already took us off the stack and counted us as a searcher. */
	heist__mutex_unlock(&s->lock);
}

bool
heist__sleep_lend(struct sleep *s)
{
	heist__mutex_lock(&s->lock);
	assert(s->lent < 0 && !s->owed);
	bool ok = s->nidle != 0;
	if (ok) {
		s->lent = (int)s->idle[--s->nidle];
		atomic_store_explicit(&s->lent_out, true, memory_order_relaxed);
		/* seq_cst: from now on no notifier counts it as a sleeper to wake (it
		 * stays SLEEPING in its word, so heist__sleep_wait keeps it asleep). */
		atomic_fetch_sub_explicit(&s->state, ONE_SLEEPER, memory_order_seq_cst);
	} else {
		s->owed = true;
	}
	heist__mutex_unlock(&s->lock);
	return ok;
}

void
heist__sleep_return(struct sleep *s)
{
	heist__mutex_lock(&s->lock);
	s->owed = false;	/* never given */
	if (s->lent >= 0) {
		s->idle[s->nidle++] = (unsigned)s->lent;
		s->lent = -1;
		s->given = false;
		atomic_store_explicit(&s->lent_out, false, memory_order_relaxed);
		/* seq_cst: step (1) of sleep.h on the sleeper's behalf; the caller's look
		 * for work (a seq_cst fence, then the queues) is its step (2). */
		atomic_fetch_add_explicit(&s->state, ONE_SLEEPER, memory_order_seq_cst);
	}
	heist__mutex_unlock(&s->lock);
}

uint64_t
heist__sleep_wait(struct sleep *s, unsigned i)
{
	/* acquire: pairs with the waker's release store of AWAKE, after woken_ns. */
	while (atomic_load_explicit(&s->sleepers[i].word, memory_order_acquire) == SLEEPING)
		heist__futex_wait(&s->sleepers[i].word, SLEEPING, 0);
	return s->sleepers[i].woken_ns;
}

bool
heist__sleep_wait_until(struct sleep *s, unsigned i, uint64_t deadline, uint64_t *woken)
{
	/* acquire: as in heist__sleep_wait. */
	while (atomic_load_explicit(&s->sleepers[i].word, memory_order_acquire) == SLEEPING) {
		uint64_t now = heist__now_ns();
		if (now >= deadline)
			return false;
		heist__futex_wait(&s->sleepers[i].word, SLEEPING,
				  deadline == HEIST_NEVER ? 0 : deadline - now);
	}
	*woken = s->sleepers[i].woken_ns;
	return true;
}

/* Under the lock: take one sleeper off the stack and make it a searcher. */
static int
pop_sleeper(struct sleep *s)
{
	if (!s->nidle)
		return -1;
	unsigned j = s->idle[--s->nidle];
	/* seq_cst: it is a searcher from now on, so no other notifier wakes a second
	 * worker for the same work. */
	atomic_fetch_add_explicit(&s->state, ONE_SEARCHER - ONE_SLEEPER, memory_order_seq_cst);
	s->sleepers[j].woken_ns = heist__now_ns();
	/* release: pairs with the acquire load in heist__sleep_wait (woken_ns too). */
	atomic_store_explicit(&s->sleepers[j].word, AWAKE, memory_order_release);
	return (int)j;
}

void
heist__sleep_notify_slow(struct sleep *s)
{
	heist__mutex_lock(&s->lock);
	/* Look again under the lock: another notifier may have woken someone. */
	uint64_t st = atomic_load_explicit(&s->state, memory_order_seq_cst);
	int j = (st >> 32) == 0 ? pop_sleeper(s) : -1;
	heist__mutex_unlock(&s->lock);
	if (j >= 0)
		heist__futex_wake(&s->sleepers[j].word, 1);
}

/* Under the lock: wake the lent worker as a searcher, or -1 if none is lent. The
 * guest is owed its place again. */
static int
recall_lent(struct sleep *s)
{
	int j = s->lent;
	if (j < 0)
		return -1;
	s->lent = -1;
	s->given = false;
	atomic_store_explicit(&s->lent_out, false, memory_order_relaxed);
	s->owed = true;
	/* seq_cst: a searcher from now on, as in pop_sleeper. */
	atomic_fetch_add_explicit(&s->state, ONE_SEARCHER, memory_order_seq_cst);
	s->sleepers[j].woken_ns = heist__now_ns();
	/* release: pairs with the acquire load in heist__sleep_wait (woken_ns too). */
	atomic_store_explicit(&s->sleepers[j].word, AWAKE, memory_order_release);
	return j;
}

void
heist__sleep_recall(struct sleep *s)
{
	heist__mutex_lock(&s->lock);
	int j = recall_lent(s);
	heist__mutex_unlock(&s->lock);
	if (j >= 0)
		heist__futex_wake(&s->sleepers[j].word, 1);
}

void
heist__sleep_notify_job_slow(struct sleep *s, size_t backlog)
{
	heist__mutex_lock(&s->lock);
	uint64_t st = atomic_load_explicit(&s->state, memory_order_seq_cst);
	int j = -1;
	if ((st >> 32) == 0) {
		if ((j = pop_sleeper(s)) < 0)
			j = recall_lent(s);
	} else if (backlog) {
		j = pop_sleeper(s);	/* (a) of sleep.h */
	}
	heist__mutex_unlock(&s->lock);
	if (j >= 0)
		heist__futex_wake(&s->sleepers[j].word, 1);
}

void
heist__sleep_wake_worker(struct sleep *s, unsigned i)
{
	heist__mutex_lock(&s->lock);
	int j = -1;
	if (s->lent == (int)i) {
		j = recall_lent(s);
	} else {
		for (unsigned k = 0; k < s->nidle; k++) {
			if (s->idle[k] == i) {
				/* To the top of the stack, and popped as any sleeper. */
				s->idle[k] = s->idle[s->nidle - 1];
				s->idle[s->nidle - 1] = i;
				j = pop_sleeper(s);
				break;
			}
		}
	}
	heist__mutex_unlock(&s->lock);
	if (j >= 0)
		heist__futex_wake(&s->sleepers[j].word, 1);
}

void
heist__sleep_wake_all(struct sleep *s)
{
	for (;;) {
		heist__mutex_lock(&s->lock);
		int j = pop_sleeper(s);
		heist__mutex_unlock(&s->lock);
		if (j < 0)
			return;
		heist__futex_wake(&s->sleepers[j].word, 1);
	}
}
