/* cancel.h - cancellation (cancel.c): tokens shared by any number of jobs, the check a
 * worker makes when it takes a job, and the job a thread is running, which
 * heist_cancelled() answers for. A future's own cancel (heist_future_cancel) is in
 * cancel.c too; the job's states are future.h's. */
#ifndef HEIST_CANCEL_H
#define HEIST_CANCEL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

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
 * cancelled (by its future) or another worker took it. */
bool heist__job_take(struct heist_future *j);

/* After a won take: whether j's token was cancelled, so that j must not run. */
bool heist__job_token_cancelled(const struct heist_future *j);

/* A won job that will not run (its token was cancelled): RUNNING -> CANCELLED, and
 * wake its waiters. The caller drops its belongings first. */
void heist__job_cancel_taken(struct heist_future *j);

/* Make j the job heist_cancelled() answers for on this thread (NULL: none) and
 * return the previous one, to restore. A worker clears it around a spawned task it
 * stole or runs while helping: that task belongs to some other job. */
struct heist_future *heist__current_job_swap(struct heist_future *j);

#endif
