/* SPDX-License-Identifier: MIT */
/* timer.h - a pool's timed jobs (heist_submit_timed): one binary heap per pool, by due
 * time, under one lock, served by the pool's own threads with no timer thread. A job
 * that comes due is queued as an outside submission is (submit.c, heist__submit_fired).
 *
 * Who fires. A worker that runs out of its own work (worker.c, next_task) and every
 * round of an idle search fire what is due: a relaxed load of next_due, and a clock
 * read only while some timer is pending. A worker going to sleep with timers pending
 * becomes the keeper, if there is none, and sleeps until the earliest due time
 * (heist__sleep_wait_until) instead of until woken; at that time it leaves its sleep,
 * fires, and runs what it fired. A worker woken before then hands the role back.
 *
 * The keeper's deadline is never later than the earliest timer. A Dekker pair, all
 * seq_cst: the keeper stores keeper_due = the next_due it read and then loads next_due
 * again (sleeping only if it is unchanged); an adder stores next_due and then loads
 * keeper and keeper_due. Either the keeper's second load sees the new time, or the
 * adder sees the keeper's deadline and, if the new time is earlier, wakes it
 * (heist__sleep_wake_worker), which then sleeps again with the earlier one. An adder
 * that sees no keeper wakes one sleeper if nobody searches (heist__sleep_notify): a
 * worker that went to sleep before the first timer came (the sleep protocol's pair of
 * steps (1) and (2), sleep.h, with next_due as the place looked at) is woken, and
 * claims the role when it sleeps again. If somebody searches, that searcher claims the
 * role when it sleeps, or, if it finds work instead, wakes a sleeper to claim it
 * (heist__timers_unkept): so a pool with a sleeping worker always has a keeper. A
 * worker lent to an outside loop's guest (sleep.h) is neither: the guest, giving its
 * place back, wakes it if timers are unkept (worker.c, heist__worker_guest_leave). A
 * keeper woken for work (its wake from the adder, if any, lost on a worker already
 * awake) gives the role back and searches: the same rule then holds for it. */
#ifndef HEIST_TIMER_H
#define HEIST_TIMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "internal.h"
#include "platform/platform.h"

struct heist_pool;
struct heist_future;

struct timer_entry {
	uint64_t due_ns;
	uint64_t seq;			/* FIFO among equal due times */
	struct heist_future *job;	/* the heap holds the queue's reference */
};

struct timers {
	/* The earliest due time, HEIST_NEVER when the heap is empty: stored under the
	 * lock (seq_cst, the adder's store of the pair above), read by every worker
	 * that runs out of work (relaxed: a hint; the fire decides under the lock). */
	CACHE_ALIGNED _Atomic uint64_t next_due;
	_Atomic int keeper;		/* the worker index keeping the timers, or -1 */
	_Atomic uint64_t keeper_due;	/* when the keeper wakes, HEIST_NEVER if none */

	CACHE_ALIGNED heist__mutex lock;	/* the rest */
	struct timer_entry *heap;
	size_t n, cap;
	size_t swept_at;	/* n after the last sweep of cancelled entries */
	uint64_t seq;
	bool closed;		/* the pool is being destroyed: no more timers */
};

int heist__timers_init(struct timers *t);
/* After heist__timers_close, with no thread of the pool left. */
void heist__timers_fini(struct timers *t);

/* heist_pool_destroy's first step: refuse new timers, and end every pending one with
 * ESHUTDOWN, never run (destroy does not wait for timers that are not yet due). */
void heist__timers_close(struct heist_pool *pool);

/* Whether a timer is due now. relaxed: see next_due. */
static inline bool
heist__timers_due(struct timers *t)
{
	uint64_t d = atomic_load_explicit(&t->next_due, memory_order_relaxed);
	return unlikely(d != HEIST_NEVER) && d <= heist__now_ns();
}

/* Whether any timer is pending. seq_cst: the sleeper's look of the pair in the file
 * comment (after its step (1)). */
static inline bool
heist__timers_pending(struct timers *t)
{
	return atomic_load_explicit(&t->next_due, memory_order_seq_cst) != HEIST_NEVER;
}

/* Whether timers are pending and no worker keeps them. A searcher that stops to run
 * work it found calls this after its stop (worker.c, stop_searching): an adder that saw
 * it searching woke nobody (heist__sleep_notify), counting on it to sleep and claim
 * the role; running work instead, it wakes a sleeper, which claims it. seq_cst, both:
 * against the adder's store of next_due and load of keeper (the file comment's pair),
 * after the searcher's seq_cst stop (sleep.h), as the adder's notify is after its
 * store: one of the two sees the other. */
static inline bool
heist__timers_unkept(struct timers *t)
{
	return heist__timers_pending(t) && atomic_load_explicit(&t->keeper, memory_order_seq_cst) < 0;
}

/* Queue every timed job that is due (a worker of the pool, outside any job). */
void heist__timers_fire(struct heist_pool *pool);

/* Worker i, on its way to sleep (step (1) done), becomes the keeper if timers are
 * pending and there is none. */
bool heist__timers_claim(struct timers *t, unsigned i);
/* The keeper's deadline for its next sleep: the earliest due time, published as
 * keeper_due (the pair above). HEIST_NEVER: no timer is left; the keeper then gives
 * the role up (heist__timers_unclaim) and sleeps as any worker. */
uint64_t heist__timers_keeper_due(struct timers *t);
void heist__timers_unclaim(struct timers *t);

/* A periodic job j, whose run just returned 0 and which future.c has put back to
 * QUEUED, goes back in the heap for its next due time (the grid of its first due time
 * and period, skipping times already past). Returns 0, or ESHUTDOWN (the pool is being
 * destroyed) or ENOMEM: then j is not in the heap. */
int heist__timer_repeat(struct heist_future *j);

#endif
