/* SPDX-License-Identifier: MIT */
/* pool.h - the pool object: its lifetime, statistics and placement are pool.c's; the
 * admission fields (live, shutting, drain_seq, holds) are submit.c's; the spares
 * spare.c's; the loops that run on it are worker.c's. */
#ifndef HEIST_POOL_H
#define HEIST_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inherit.h"
#include "injector.h"
#include "internal.h"
#include "sleep.h"
#include "spare.h"
#include "timer.h"
#include "worker.h"

enum { DEQUE_CAPACITY = 1024 };	/* a new deque's slots; it grows by doubling */

struct heist_pool {
	/* n workers, then one guest slot (a worker record without a thread, which an
	 * outside thread occupies while it takes part in a heist_for_each), then
	 * spares.max spare slots (spare.h), set up when first used. */
	struct worker *workers;
	unsigned n;
	unsigned slots;			/* n + 1: the workers and the guest slot */
	unsigned slots_max;		/* slots + spares.max: every slot there can be */
	struct hazard *hazards;		/* one per slot: what its thief reads (deque.h) */
	unsigned spin;			/* steal rounds before sleeping */
	size_t stack_size;
	char name[16];
	bool profile;			/* every worker has a profile buffer */
	uint32_t profile_mask;		/* record one task in profile_mask + 1 */
	size_t profile_samples;		/* each thread's sample buffer */
	void (*on_start)(void *ctx, unsigned index);	/* heist_config's hooks */
	void (*on_stop)(void *ctx, unsigned index);
	void *hook_ctx;
	struct report *report;		/* HEIST_PROFILE/HEIST_TRACE files, or NULL */

	struct topology *topo;
	_Atomic uint32_t started;	/* workers past their start-up; create waits */
	unsigned gen;			/* the fork generation it was made in (inherit.h) */

	struct injector injector;	/* normal priority, from outside the pool */
	/* High and low priority, from any thread (heist_priority): a worker takes one
	 * task at a time from them, high before anything, low after a steal. */
	struct injector high, low;
	struct sleep sleep;
	struct timers timers;		/* tasks due later (timer.h) */
	struct spares spares;
	struct heist_pool *next_live;	/* the registry of live pools (pool.c) */
	struct heist_pool *next_all;	/* every pool not yet freed (pool.c, wait.c) */

	/* Jobs (and guests) accepted and not yet finished: submit.c, whose comment
	 * argues the drain. Submitters add at once; workers subtract in batches
	 * (done_unflushed) when they run out of work, so the count is never below the
	 * truth and reaches 0 only when everything has run. */
	/* One word, a 32-bit count per idle epoch (submit.c): one modification order
	 * for both, so that destroy's one load sees a job counted in either. */
	CACHE_ALIGNED _Atomic uint64_t live;
	_Atomic uint32_t drain_seq;	/* destroy and idle waiters sleep on it */
	/* Threads inside heist__pool_leave, and outside entrants that have no hold
	 * cell of their own (hold.h; the others name the pool in their cell): such a
	 * thread may bring live to 0, or make the job it queued runnable, and still
	 * touch the pool after that (a wake). Destroy waits until this is 0, and no
	 * cell names the pool, before it frees anything (submit.c, (5)). */
	_Atomic uint32_t holds;
	/* heist_pool_wait_idle (submit.c): outside admissions count in epoch & 1's
	 * half of live; waiters move it on, one at a time, under idle_lock. */
	_Atomic uint32_t epoch;
	_Atomic uint32_t idle_drained;	/* the epochs below it are drained */
	heist__mutex idle_lock;

	/* Read by submitters and workers, written once each by destroy. */
	CACHE_ALIGNED _Atomic bool shutting;	/* outside submits get ESHUTDOWN */
	_Atomic bool stop;			/* drained: workers exit */
	/* Threads in heist_pool_wait_idle. Read by every worker around every job
	 * (worker.c, flush_if_awaited), written only by waiters: here, not beside
	 * live, which every submit changes. */
	_Atomic uint32_t idle_waiters;

	/* The idle searches' view of the load (worker.c, search_over): when work last
	 * came to a pool whose workers were all idle, the running average of the time
	 * between such arrivals, and whether idle searches are short. Written by a
	 * worker that finds such work, at most once per arrival; relaxed: hints, a
	 * lost update only blurs the average. */
	CACHE_ALIGNED _Atomic uint64_t idle_arrival_ns;
	_Atomic int64_t idle_gap_ns;
	_Atomic bool light_load;

	/* The guest slot is taken: CAS false -> true with acquire by the thread that
	 * enters, store false with release when it leaves, so the next guest sees the
	 * slot's deque as the last one left it. */
	CACHE_ALIGNED _Atomic bool guest_busy;
};

/* Every slot that may hold tasks now: the workers, the guest, the spares so far. */
static inline unsigned
heist__pool_slots_used(struct heist_pool *pool)
{
	return pool->slots + heist__spares_slots(&pool->spares);
}

/* Slot kinds: 0..n-1 workers, n the guest, above n spares. */
static inline bool
heist__worker_is_guest(const struct worker *w)
{
	return w->index == w->pool->n;
}

static inline bool
heist__worker_is_spare(const struct worker *w)
{
	return w->index > w->pool->n;
}

/* Whether pool was made before a fork() that made this process (inherit.h): its
 * threads are not here. The caller knows pool is not freed. */
static inline bool
heist__pool_inherited(const struct heist_pool *pool)
{
	return pool->gen != heist__generation();
}

/* The same, for a pool that may have been destroyed: false unless it is in the
 * registry of live pools (under its lock). */
bool heist__pool_inherited_if_alive(const struct heist_pool *pool);

/* Enter pool from outside (heist__pool_enter) if it is still alive: in the registry
 * of live pools (not destroyed, nor being destroyed). For threads that hold nothing
 * that keeps the pool alive. A pool is known by its address: a new pool at the
 * address of a destroyed one is taken for it. 0 or ESHUTDOWN. */
int heist__pool_enter_if_alive(struct heist_pool *pool, unsigned *epoch);

/* Set up slot i's record: its deque, its profile buffer, its victims. 0 or ENOMEM. */
int heist__pool_slot_init(struct heist_pool *pool, unsigned i);


/* Tasks queued in the pool's three queues. seq_cst: the sleep protocol's last look
 * (sleep.c), as heist__injector_depth; elsewhere a hint. */
static inline size_t
heist__pool_queued(struct heist_pool *pool)
{
	return heist__injector_depth(&pool->injector) + heist__injector_depth(&pool->high) +
	       heist__injector_depth(&pool->low);
}

#endif
