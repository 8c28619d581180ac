/* SPDX-License-Identifier: MIT */
/* submit.h - admission and the drain (submit.c): every job and every guest is counted
 * in the pool's `live` from the moment it is accepted until it has run or been
 * skipped; heist_pool_destroy waits for that count to drain, and heist_pool_wait_idle
 * for the part of it admitted before the call (live is split in two idle epochs). The
 * argument that nothing accepted is ever lost is in submit.c. */
#ifndef HEIST_SUBMIT_H
#define HEIST_SUBMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "heist/heist.h"

struct heist_pool;
struct heist_future;
struct worker;

/* A thread that is not one of the pool's workers enters: takes a hold on the pool and
 * counts itself in live, in the epoch it returns in *epoch (for the leave). Returns 0,
 * and then the caller lets go of the hold with heist__pool_unhold after its last touch
 * of the pool that the hold covers; or ESHUTDOWN once destroy has begun, and then it
 * has already left again, hold and all, and must not touch the pool. */
int heist__pool_enter(struct heist_pool *pool, unsigned *epoch);

/* Let go of the hold taken by heist__pool_enter: the caller's last touch of the pool
 * (unless it is still counted in live, as a guest is until its leave). */
void heist__pool_unhold(struct heist_pool *pool);

/* n jobs (or guests) of an epoch finished: subtract them from live; wakes destroy, or
 * an idle waiter, when that drains the epoch. The caller's last touch of the pool, if
 * it is no worker. */
void heist__pool_leave(struct heist_pool *pool, unsigned epoch, uint64_t n);

/* heist_pool_destroy's first half: refuse outside submits from now on, and return
 * once every accepted job has run and the last leaver is out of the pool. */
void heist__pool_drain(struct heist_pool *pool);

/* Queue a new job (heist__job_new) on the pool: on the worker's own deque from one
 * of its workers, else through the injector. On error the job is discarded. */
int heist__submit_job(struct heist_pool *pool, struct heist_future *j, heist_future **out);

/* The same, but on error (ESHUTDOWN, ENOMEM) the job is left to the caller. */
int heist__submit_queue(struct heist_pool *pool, struct heist_future *j);

/* Queue continuation c on its pool (c->task.pool, set when it was made), which may
 * hold its future already: admitted and made runnable in one read-modify-write
 * (heist__job_admit_shared). From a worker of the pool, as its own submit: counted in
 * the epoch of its current work, which is the job whose end made c runnable or the
 * job that cancelled it, and accepted during a drain; from any other thread, from
 * outside, if the pool is still alive. Returns 0, ESHUTDOWN or ENOMEM (c is then not
 * queued, and still REF_UNQUEUED). */
int heist__submit_continuation(struct heist_future *c);

/* Queue a timed job that came due (timer.c) on its pool, from whatever thread fires
 * it (a worker between its jobs, or asleep as the timer keeper: no job of the pool
 * counts it): as an outside submission, through the enter handshake, so that a pool
 * being destroyed refuses it (ESHUTDOWN) rather than drain without it. j may hold its
 * future already (heist__job_admit_shared). Returns 0 or ESHUTDOWN (j not queued). */
int heist__submit_fired(struct heist_future *j);

/* A new job for fn(arg) at priority (a valid heist_priority), holding a reference to
 * token if there is one, queued: heist_submit's work, with out as there. */
int heist__submit_new(heist_pool *pool, heist_fn fn, void *arg, heist_cancel *token,
		      int priority, heist_future **out);

/* Whether priority is one of enum heist_priority's. */
static inline bool
heist__priority_valid(int priority)
{
	return priority >= HEIST_PRIORITY_LOW && priority <= HEIST_PRIORITY_HIGH;
}

#endif
