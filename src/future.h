/* future.h - a submitted job: its task record and its future in one record from the
 * per-thread caches (record.h). The pool holds one reference until the job has run
 * or been dropped as cancelled; the caller holds one if it asked for a future.
 * Submitting is submit.c's, cancelling cancel.c's, waiting wait.c's. */
#ifndef HEIST_FUTURE_H
#define HEIST_FUTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"
#include "task.h"

enum { JOB_INLINE_COPY = 48 };	/* heist_submit_copy arguments up to this size */

/* heist_future.state: one of these, plus FUT_WAITERS while a thread sleeps on it and
 * FUT_CANCEL_ASKED once heist_future_cancel was called (for heist_cancelled). */
enum {
	FUT_QUEUED = 0,
	FUT_RUNNING = 1,
	FUT_DONE = 2,
	FUT_CANCELLED = 3,
	FUT_MASK = 3,
	FUT_WAITERS = 4,
	FUT_CANCEL_ASKED = 8,
	FUT_TAKEN = 16,	/* with CANCELLED: a worker took it, then found its token cancelled */
};

/* refs: the queue's reference (1) plus REF_USER while the caller holds its future;
 * the record is freed when both are gone. */
#define REF_USER ((uint32_t)1 << 31)

struct heist_future {
	/* task.state == TASK_JOB; result in task.result; task.pool is the pool it was
	 * submitted to; task.floor is set with runner. */
	struct task task;
	/* The job's life: QUEUED -> RUNNING -> DONE, or QUEUED -> CANCELLED. The
	 * final store is a release that publishes task.result and the task's writes;
	 * waiters load it with acquire. Also the futex word waiters sleep on. */
	_Atomic uint32_t state;
	_Atomic uint32_t refs;
	/* The worker running it, when it took it from a queue (not when a waiter
	 * claimed it): stored with release after task.floor, like a stolen task's
	 * thief, so that the job's waiters may help it (wait.c). NULL until then. */
	_Atomic(struct worker *) runner;
	struct heist_cancel *token;	/* a reference, or NULL (cancel.c) */
	void *heap_copy;		/* heist_submit_copy's argument when it did not fit */
	_Alignas(16) unsigned char inline_copy[JOB_INLINE_COPY];
};

static_assert(sizeof(struct heist_future) <= RECORD_BYTES, "a job fits its record");

/* A queued job with refs = 1 (the pool's) + 1 if with_future. NULL: out of memory. */
struct heist_future *heist__job_new(heist_fn fn, void *arg, bool with_future);

/* Copy size bytes of arg into the job (inline or in one allocation) and point its
 * argument at the copy. Returns 0 or ENOMEM. */
int heist__job_copy_arg(struct heist_future *j, const void *arg, size_t size);

/* Run a job taken from a queue (or skip it if it was cancelled, or a waiter claimed
 * it), then drop the queue's reference. Worker w only; when it profiles, the sample
 * is recorded before the future is satisfied, so a waiter's report includes it;
 * counts it in w's executed only if it ran here. */
void heist__job_run(struct heist_future *j, struct worker *w);

/* A waiter on worker w runs j itself if it is still queued (wait.c): the queue entry
 * stays where it is, and heist__job_run skips it later. Returns whether it won j (j
 * is done now: it ran, or its token had cancelled it); false if j was no longer
 * queued. */
bool heist__job_claim(struct heist_future *j, struct worker *w);

/* Free a job that was never queued, with what it holds. */
void heist__job_discard(struct heist_future *j);

/* Drop the queue's reference; the last reference returns the record to its cache. */
void heist__job_release(struct heist_future *j);

static inline bool
heist__job_done(const struct heist_future *j)
{
	/* acquire: pairs with the final release store in future.c (finish) and
	 * cancel.c, so the task's result and writes are visible once this is true. */
	uint32_t s = atomic_load_explicit((_Atomic uint32_t *)&j->state, memory_order_acquire);
	return (s & FUT_MASK) >= FUT_DONE;
}

#endif
