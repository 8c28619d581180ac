/* cancel.c - cancellation tokens, after .NET's CancellationToken: cooperative, one
 * token for any number of jobs, reference counted so that it may be released while
 * jobs holding it are still queued. A job checks its token when a worker takes it
 * (future.c, heist__job_run); a running job polls heist_cancelled(). */
#include <errno.h>
#include <stdlib.h>

#include "future.h"
#include "pool.h"

HEIST_EXPORT int
heist_cancel_create(heist_cancel **out)
{
	if (!out)
		return EINVAL;
	*out = NULL;
	struct heist_cancel *c = malloc(sizeof(*c));
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
	/* release: pairs with the acquire loads in future.c (token_cancelled). */
	if (c)
		atomic_store_explicit(&c->requested, true, memory_order_release);
}

HEIST_EXPORT bool
heist_cancel_requested(const heist_cancel *c)
{
	return c && atomic_load_explicit((_Atomic bool *)&c->requested, memory_order_acquire);
}

HEIST_EXPORT int
heist_submit_cancellable(heist_pool *pool, heist_cancel *c, heist_fn fn, void *arg,
			 heist_future **out)
{
	if (out)
		*out = NULL;
	if (!pool || !fn || !c)
		return EINVAL;
	struct heist_future *j = heist__job_new(fn, arg, out != NULL);
	if (!j)
		return ENOMEM;
	heist__cancel_acquire(c);
	j->token = c;
	return heist__pool_submit_job(pool, j, out);
}
