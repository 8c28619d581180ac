/* SPDX-License-Identifier: MIT */
/* cancel.h - cancellation (cancel.c): tokens shared by any number of jobs, the check a
 * worker makes when it takes a job, and the job a thread is running, which
 * heist_cancelled() answers for. A future's own cancel (heist_future_cancel) is in
 * cancel.c too; the job's states are future.h's. */
#ifndef HEIST_CANCEL_H
#define HEIST_CANCEL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "future.h"
#include "heist/heist.h"

/* A token, shared by the jobs submitted with it. */
struct heist_cancel {
	_Atomic uint32_t refs;
	/* Set once; read when a worker takes a job and by heist_cancelled. relaxed
	 * would do for the flag itself; release/acquire so that what the canceller
	 * wrote before cancelling is visible to a task that sees the flag. */
	_Atomic bool requested;
};

/* Take one more reference to a token the caller already holds. */
void heist__cancel_acquire(struct heist_cancel *c);

/* A worker takes job j, from a queue or by claiming it in a wait: QUEUED -> RUNNING.
 * Returns true if it won j (then j's belongings are its own); false if j was
 * cancelled (by its future) or another worker took it. Only the winner may read the
 * token (heist__job_token_cancelled): the loser may find it freed by the winner's
 * drop of the job's belongings. */
static inline bool
heist__job_take(struct heist_future *j)
{
	uint32_t s = atomic_load_explicit(&j->state, memory_order_relaxed);
	while ((s & FUT_MASK) == FUT_QUEUED) {	/* else cancelled, or taken by another */
		/* relaxed: the job's fields reached us through the queue's hand-off
		 * (deque publish or injector link, release/acquire) or, for a waiter
		 * that claims it, through the future its submitter handed it; nothing
		 * else is published through the state before RUNNING. A CAS because a
		 * cancel or a claim may race us: exactly one wins. */
		uint32_t keep = s & (FUT_WAITERS | FUT_WALKERS | FUT_CANCEL_ASKED);
		if (atomic_compare_exchange_weak_explicit(&j->state, &s, keep | FUT_RUNNING,
							  memory_order_relaxed,
							  memory_order_relaxed))
			return true;
	}
	return false;
}

/* After a won take (or inside the running job): whether j's token was cancelled.
 * acquire: pairs with the release store in heist_cancel_request. */
static inline bool
heist__job_token_cancelled(const struct heist_future *j)
{
	return j->token && atomic_load_explicit(&j->token->requested, memory_order_acquire);
}

/* Cancel j if it is still queued (QUEUED -> CANCELLED, waking its waiters and firing
 * its list). Returns whether this call cancelled it. */
bool heist__job_cancel_queued(struct heist_future *j);

/* A won job that will not run (its token was cancelled): RUNNING -> CANCELLED, and
 * wake its waiters. The caller drops its belongings first. */
void heist__job_cancel_taken(struct heist_future *j);

#if HEIST__TLS_EXPORTED
/* The job this thread is running, for heist_cancelled. initial-exec, as heist__self_v2. */
extern HEIST__TLS struct heist_future *heist__current_job;

static inline struct heist_future *
heist__job_current(void)
{
	return heist__current_job;
}

static inline void
heist__job_current_set(struct heist_future *j)
{
	heist__current_job = j;
}
#else
/* Windows: a slot of the platform's (platform.h), where MinGW's thread-locals are calls. */
static inline struct heist_future *
heist__job_current(void)
{
	return (struct heist_future *)heist__thread_slot_get(HEIST__SLOT_JOB);
}

static inline void
heist__job_current_set(struct heist_future *j)
{
	heist__thread_slot_set(HEIST__SLOT_JOB, j);
}
#endif

/* Make j the job heist_cancelled() answers for on this thread (NULL: none) and
 * return the previous one, to restore. A worker clears it around a spawned task it
 * stole or runs while helping: that task belongs to some other job. */
static inline struct heist_future *
heist__current_job_swap(struct heist_future *j)
{
	struct heist_future *old = heist__job_current();
	heist__job_current_set(j);
	return old;
}

#endif
