/* SPDX-License-Identifier: MIT */
/* cancel.c - cooperative cancellation, after .NET's CancellationToken: one token for
 * any number of jobs, reference counted so that it may be released while jobs holding
 * it are still queued; a future's own cancel; the check a worker makes when it takes a
 * job (a job cancelled while queued never runs); and heist_cancelled(), which a
 * running job polls. The job's state machine is future.h's: QUEUED -> RUNNING -> DONE,
 * or QUEUED -> CANCELLED (a future's cancel), or QUEUED -> RUNNING -> CANCELLED (a
 * token found cancelled by the worker that took the job); the cancellations are made
 * here, the take itself is inline in cancel.h. */
#include "cancel.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "platform/platform.h"
#include "future.h"
#include "internal.h"

#if HEIST__TLS_EXPORTED
HEIST__TLS struct heist_future *heist__current_job;
#endif

HEIST_EXPORT int
heist_cancel_create(heist_cancel **out)
{
	if (!out)
		return EINVAL;
	*out = NULL;
	struct heist_cancel *c = heist__malloc(sizeof(*c));
	if (!c)
		return ENOMEM;
	atomic_init(&c->refs, 1);
	atomic_init(&c->requested, false);
	*out = c;
	return 0;
}

void
heist__cancel_acquire(struct heist_cancel *c)
{
	/* relaxed: the caller already holds a reference, so the token is alive. */
	atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
}

HEIST_EXPORT void
heist_cancel_release(heist_cancel *c)
{
	/* acq_rel: the last holder frees the token after every other holder's use. */
	if (c && atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1)
		free(c);
}

HEIST_EXPORT void
heist_cancel_request(heist_cancel *c)
{
	/* release: pairs with the acquire load in heist__job_token_cancelled. */
	if (c)
		atomic_store_explicit(&c->requested, true, memory_order_release);
}

HEIST_EXPORT bool
heist_cancel_requested(const heist_cancel *c)
{
	return c && atomic_load_explicit((_Atomic bool *)&c->requested, memory_order_acquire);
}

/* One attempt to move a queued job, whose state was *s, to CANCELLED; on failure *s
 * is the state found instead. seq_cst: the final store of future.c's Dekker pair
 * with the list of what waits; it pairs with the waiters' acquire loads too
 * (nothing to publish but the state itself). */
static bool
cancel_queued(struct heist_future *j, uint32_t *s)
{
	if (!atomic_compare_exchange_weak_explicit(&j->state, s, FUT_CANCELLED,
						   memory_order_seq_cst, memory_order_relaxed))
		return false;
	if (*s & FUT_WAITERS)
		heist__futex_wake(&j->state, INT_MAX);
	heist__job_finalized(j);
	return true;
}

void
heist__job_cancel_taken(struct heist_future *j)
{
	/* seq_cst: as in future.c's finish (the Dekker pair; the waiters' acquire
	 * loads). An exchange to read the WAITERS bit. FUT_TAKEN tells the queue
	 * processor that the belongings are gone already. */
	uint32_t old = atomic_exchange_explicit(&j->state, FUT_CANCELLED | FUT_TAKEN,
						memory_order_seq_cst);
	if (old & FUT_WAITERS)
		heist__futex_wake(&j->state, INT_MAX);
	heist__job_finalized(j);
}

bool
heist__job_cancel_queued(struct heist_future *j)
{
	uint32_t s = atomic_load_explicit(&j->state, memory_order_relaxed);
	while ((s & FUT_MASK) == FUT_QUEUED)
		if (cancel_queued(j, &s))
			return true;
	return false;
}

HEIST_EXPORT void
heist_future_cancel(heist_future *f)
{
	if (!f)
		return;
	/* relaxed: a request for heist_cancelled inside the running job, not a
	 * publication (heist.h promises no ordering for a running job's view). It
	 * changes the futex word: sleepers wake or do not sleep, and look again. */
	uint32_t s = atomic_fetch_or_explicit(&f->state, FUT_CANCEL_ASKED,
					      memory_order_relaxed) | FUT_CANCEL_ASKED;
	/* Queued: it never runs. The worker that later takes it sees CANCELLED in
	 * heist__job_take and skips it. Running or done: nothing more to do. */
	while ((s & FUT_MASK) == FUT_QUEUED && !cancel_queued(f, &s))
		;
}

HEIST_EXPORT bool
heist_cancelled(void)
{
	struct heist_future *j = heist__job_current();
	/* relaxed: see heist_future_cancel. */
	return j && ((atomic_load_explicit(&j->state, memory_order_relaxed) &
		      FUT_CANCEL_ASKED) ||
		     heist__job_token_cancelled(j));
}
