/* then.c - what runs when jobs are done: continuations (heist_future_then) and
 * when_all futures. Both hang a struct heist__then (future.h) on the jobs they wait
 * for, fired by whichever thread makes such a job final; nothing blocks a thread or
 * polls in between.
 *
 * A continuation C of job F is a job record like any other, made at the call and
 * queued only once F is done: its node lives in C's own inline_copy, and the list of
 * F holds C's queue reference meanwhile. F done: the worker that ran F queues C, as
 * its own submit (submit.c: counted in F's epoch, accepted during a drain). F
 * cancelled: C is cancelled too, without running. C cancelled first (its own future):
 * it is simply dropped when F fires. If F is final before C is linked, the caller
 * does what firing would do, which for a DONE F means entering F's pool from outside:
 * through the registry of live pools (pool.c), so that a pool already destroyed is
 * refused (ESHUTDOWN), not touched.
 *
 * A when_all future W is a job record that never runs: one allocation holds a node per
 * input and a count of inputs not yet final (and one for the setup itself, so that W
 * cannot complete while inputs are still being linked). The last input to end computes
 * W's result, the first nonzero in array order, and makes W final; W holds a reference
 * to each input until then. W cancelled by its own future: it ends at once, with
 * ECANCELED; the inputs go on. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "cancel.h"
#include "futex.h"
#include "future.h"
#include "pool.h"
#include "submit.h"
#include "worker.h"

/* The result a waiter of a final job sees. acquire: pairs with the final release. */
static int
final_result(const struct heist_future *j)
{
	uint32_t s = atomic_load_explicit((_Atomic uint32_t *)&j->state, memory_order_acquire);
	return (s & FUT_MASK) == FUT_CANCELLED ? ECANCELED : j->task.result;
}

/* A job that will never run makes itself final with ECANCELED, if nobody did yet. */
static void
abandon(struct heist_future *j)
{
	heist__job_cancel_queued(j);
	heist__job_release(j);	/* the reference the list (or the caller) held */
}

/* ---- continuations ---- */

/* C may run now: waiters may claim it. relaxed: an RMW, since C's future may already
 * be in its caller's hands; what C's fields hold reached any waiter with that future. */
static void
runnable(struct heist_future *c)
{
	atomic_fetch_and_explicit(&c->refs, ~(uint32_t)REF_UNQUEUED, memory_order_relaxed);
}

static struct heist__then *
cont_node(struct heist_future *c)
{
	return (struct heist__then *)(void *)c->inline_copy;
}

static struct heist_future *
cont_job(struct heist__then *n)
{
	return (struct heist_future *)(void *)((unsigned char *)n -
					       offsetof(struct heist_future, inline_copy));
}

/* C may run: queue it on its pool, from wherever we are. The worker that ran F counts
 * it as its own submit (in F's epoch, accepted during a drain); any other thread (one
 * that cancelled a when_all's input, a worker of another pool) enters the pool from
 * outside, if it is still alive. If it cannot be queued, C ends with the error, never
 * run. Consumes the caller's reference (it becomes the queue's). */
static void
queue_continuation(struct heist_future *c, const struct heist_future *f)
{
	struct worker *w = heist__self;
	runnable(c);
	int err = w && w->pool == c->task.pool
			  ? heist__submit_continuation(w, c, f)
			  : heist__pool_submit_if_alive(c->task.pool, c);
	if (err) {
		heist__job_complete(c, err);	/* unless claimed or cancelled meanwhile */
		heist__job_release(c);
	}
}

/* F is final, on the thread that made it so. */
static void
cont_fire(struct heist__then *n, struct heist_future *f)
{
	struct heist_future *c = cont_job(n);
	/* relaxed: a peek; C's own cancel or the queue's take decides later. */
	bool queued = (atomic_load_explicit(&c->state, memory_order_relaxed) & FUT_MASK) ==
		      FUT_QUEUED;
	if (queued && final_result(f) != ECANCELED)
		queue_continuation(c, f);
	else
		abandon(c);	/* F cancelled (or C itself): C never runs */
}

HEIST_EXPORT int
heist_future_then(heist_future *f, heist_fn fn, void *arg, heist_future **out)
{
	if (out)
		*out = NULL;
	if (!f || !fn)
		return EINVAL;
	struct heist_future *c = heist__job_new(fn, arg, out != NULL);
	if (!c)
		return ENOMEM;
	c->task.pool = f->task.pool;
	heist__job_set_flag(c, REF_UNQUEUED, true);	/* not before F is done */
	struct heist__then *n = cont_node(c);
	n->fire = cont_fire;
	if (out)
		*out = c;
	if (heist__job_then(f, n))
		return 0;
	/* F is final already: do what firing would. The pool may be gone: nothing is
	 * queued then, and the call fails rather than hand out a future that will
	 * never run. */
	if (final_result(f) == ECANCELED) {
		abandon(c);
		return 0;
	}
	runnable(c);
	struct worker *w = heist__self;
	int err = w && w->pool == c->task.pool ? heist__submit_queue(c->task.pool, c)
					       : heist__pool_submit_if_alive(c->task.pool, c);
	if (err) {
		if (out)
			*out = NULL;
		heist__job_discard(c);	/* nobody else has seen it */
	}
	return err;
}

/* ---- when_all ---- */

struct all;

struct all_input {
	struct heist__then node;
	struct heist_future *f;
	struct all *all;
};

struct all {
	struct heist_future *w;
	size_t n;
	_Atomic size_t left;	/* inputs not final, + 1 while the setup runs */
	struct all_input in[];
};

/* Every input is final: W's result, W final, and the inputs let go. */
static void
all_complete(struct all *a)
{
	struct heist_future *w = a->w;
	int r = 0;
	for (size_t i = 0; i < a->n && !r; i++)
		r = final_result(a->in[i].f);
	for (size_t i = 0; i < a->n; i++)
		heist__job_release(a->in[i].f);
	heist__job_complete(w, r);	/* unless W's own future cancelled it */
	heist__job_release(w);
	free(a);
}

static void
all_count_down(struct all *a)
{
	/* acq_rel: the last to count down sees every input's final state, which each
	 * firer saw (or stored) before its own count down. */
	if (atomic_fetch_sub_explicit(&a->left, 1, memory_order_acq_rel) == 1)
		all_complete(a);
}

static void
all_fire(struct heist__then *n, struct heist_future *f)
{
	(void)f;
	all_count_down(((struct all_input *)(void *)n)->all);
}

HEIST_EXPORT int
heist_when_all(heist_pool *pool, heist_future *const *fs, size_t n, heist_future **out)
{
	if (out)
		*out = NULL;
	if (!pool || !out || (n && !fs))
		return EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!fs[i])
			return EINVAL;
	struct heist_future *w = heist__job_new(NULL, NULL, true);
	struct all *a = n <= (SIZE_MAX - sizeof(*a)) / sizeof(a->in[0])
				? malloc(sizeof(*a) + n * sizeof(a->in[0]))
				: NULL;
	if (!w || !a) {
		free(a);
		if (w)
			heist__job_discard(w);
		return ENOMEM;
	}
	w->task.pool = pool;
	heist__job_set_flag(w, REF_UNQUEUED, true);	/* W never runs */
	a->w = w;	/* holds w's counted reference until it completes */
	a->n = n;
	atomic_init(&a->left, n + 1);
	*out = w;
	for (size_t i = 0; i < n; i++) {
		a->in[i] = (struct all_input){{NULL, all_fire}, fs[i], a};
		heist__job_ref(fs[i]);
		if (!heist__job_then(fs[i], &a->in[i].node))
			all_count_down(a);	/* final already */
	}
	all_count_down(a);	/* the setup's own count */
	return 0;
}
