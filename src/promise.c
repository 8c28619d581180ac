/* SPDX-License-Identifier: MIT */
/* promise.c - futures the program completes (heist.h, heist_promise_*): a promise is
 * a job record that never runs, as a when_all future is, seen through another type;
 * the reference a queue would hold is the promise's. Setting it is future.c's
 * completion of a job that never runs (heist__job_complete), breaking it is the cancel
 * of a queued job (cancel.c). What a worker that waits on one does is wait.c's: a
 * promise ends its chain as stuck (heist__job_is_promise), so a stand-in may run the
 * pool's work meanwhile. After std::promise and Java's CompletableFuture.complete. */
#include "heist/heist.h"

#include <errno.h>

#include "cancel.h"
#include "future.h"
#include "internal.h"

struct heist_promise {
	struct heist_future job;
};

HEIST_EXPORT int
heist_promise_create(heist_pool *pool, heist_promise **out, heist_future **future)
{
	if (out)
		*out = NULL;
	if (future)
		*future = NULL;
	if (!pool || !out || !future)
		return EINVAL;
	struct heist_future *j = heist__job_new(NULL, NULL, true);
	if (!j)
		return ENOMEM;
	j->task.pool = pool;	/* where heist_future_then queues its continuations */
	heist__job_set_flag(j, REF_UNQUEUED, true);	/* never runs, never claimed */
	*out = (heist_promise *)j;
	*future = j;
	return 0;
}

HEIST_EXPORT int
heist_promise_set(heist_promise *p, int result)
{
	if (!p)
		return EINVAL;
	if (heist__job_complete(&p->job, result))
		return 0;
	/* relaxed: only which final state it has, which never changes again (a set
	 * racing ours may still be between its take and its final store: EINVAL too). */
	uint32_t s = atomic_load_explicit(&p->job.state, memory_order_relaxed);
	return (s & FUT_MASK) == FUT_CANCELLED ? ECANCELED : EINVAL;
}

HEIST_EXPORT void
heist_promise_release(heist_promise *p)
{
	if (!p)
		return;
	heist__job_cancel_queued(&p->job);	/* broken, unless it was set */
	heist__job_release(&p->job);
}
