/* submit.c - how a job gets into a pool and how the pool knows when all of them are
 * out: the public submit calls (plain, copied, with a token), routing (a worker's own
 * deque, or the injector from any other thread), and the `live` count that
 * heist_pool_destroy drains.
 *
 * The drain argument. `live` counts the jobs accepted and not yet finished, and the
 * guests inside the pool (an outside heist_for_each). Destroy sets `shutting`, then
 * waits for live to be 0; it frees the pool only after that.
 * (1) A thread that is not a worker enters (heist__pool_enter: an outside submit, a
 *     guest) by adding 1 to live and then loading shutting, both seq_cst, and leaves
 *     again at once if it is set.
 * (2) Destroy stores shutting and then loads live, both seq_cst.
 *     In the single total order of seq_cst operations, either (1)'s load follows
 *     (2)'s store, and the entrant sees shutting and backs out, or (1)'s add precedes
 *     (2)'s load, and destroy sees the entrant counted and waits for it. So destroy
 *     never frees a pool that a thread it did not wait for has entered.
 * (3) A worker's submit needs no handshake: it runs inside a job (or a guest's loop)
 *     that is itself counted and not yet finished, so live > 0 until after its add;
 *     the add may be relaxed because it is ordered before the later subtraction of the
 *     enclosing job on the same variable. Such submits are accepted during the drain,
 *     as heist.h promises, and drained too.
 * (4) A leave subtracts with seq_cst and then loads shutting (seq_cst). The leave that
 *     brings live to 0 either sees shutting and wakes destroy, or comes before
 *     destroy's store in the total order, and then destroy's load of live sees 0 and
 *     it never sleeps. Destroy reads drain_seq before live, so a wake between its load
 *     and its futex wait changes the word and the wait returns at once.
 * (5) The thread that brings live to 0 may be no worker, and it still touches the pool
 *     (the wake) after that: it announces itself in `finishing` before its
 *     subtraction and withdraws after its last access; destroy waits for finishing to
 *     be 0 as well.
 * A job leaves only once it has run or been skipped as cancelled (workers subtract
 * what they finished in batches, done_unflushed, before they idle), so live is never
 * below the truth, and when destroy sees 0 nothing accepted is still to run. */
#include "submit.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>

#include "cancel.h"
#include "futex.h"
#include "future.h"
#include "pool.h"
#include "probe.h"
#include "worker.h"

void
heist__pool_leave(struct heist_pool *pool, uint64_t n)
{
	/* seq_cst: announced before the decrement below, so a destroy that sees live
	 * reach 0 also sees us here (both seq_cst), and waits for our last access. (5) */
	atomic_fetch_add_explicit(&pool->finishing, 1, memory_order_seq_cst);
	/* seq_cst, and seq_cst on shutting: (4). */
	uint64_t old = atomic_fetch_sub_explicit(&pool->live, n, memory_order_seq_cst);
	if (old == n && atomic_load_explicit(&pool->shutting, memory_order_seq_cst)) {
		atomic_fetch_add_explicit(&pool->drain_seq, 1, memory_order_release);
		heist__futex_wake(&pool->drain_seq, INT_MAX);
	}
	/* release, our last touch of the pool: pairs with destroy's acquire loads. */
	atomic_fetch_sub_explicit(&pool->finishing, 1, memory_order_release);
}

int
heist__pool_enter(struct heist_pool *pool)
{
	/* Both seq_cst: (1). */
	atomic_fetch_add_explicit(&pool->live, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&pool->shutting, memory_order_seq_cst)) {
		heist__pool_leave(pool, 1);
		return ESHUTDOWN;
	}
	return 0;
}

void
heist__pool_drain(struct heist_pool *pool)
{
	/* seq_cst: (2). */
	atomic_store_explicit(&pool->shutting, true, memory_order_seq_cst);
	for (;;) {
		/* acquire: pairs with the leaver's release increment. (4) */
		uint32_t seq = atomic_load_explicit(&pool->drain_seq, memory_order_acquire);
		if (atomic_load_explicit(&pool->live, memory_order_seq_cst) == 0)
			break;
		heist__futex_wait(&pool->drain_seq, seq, 0);
	}
	/* (5): a few instructions and a futex wake. acquire: pairs with its release. */
	while (atomic_load_explicit(&pool->finishing, memory_order_acquire))
		sched_yield();
}

static int
submit_outside(struct heist_pool *pool, struct heist_future *j)
{
	int err = heist__pool_enter(pool);
	if (err)
		return err;
	heist__injector_reserve(&pool->injector);
	heist__injector_push(&pool->injector, &j->task);
	heist__sleep_notify(&pool->sleep);
	return 0;
}

static int
submit_local(struct worker *w, struct heist_future *j)
{
	/* relaxed: (3). */
	atomic_fetch_add_explicit(&w->pool->live, 1, memory_order_relaxed);
	if (heist__deque_push(&w->dq, &j->task)) {
		atomic_fetch_sub_explicit(&w->pool->live, 1, memory_order_relaxed);
		return ENOMEM;
	}
	heist__worker_publish(w, 0);
	return 0;
}

int
heist__submit_job(struct heist_pool *pool, struct heist_future *j, heist_future **out)
{
	struct worker *w = heist__self;
	j->task.pool = pool;
	if (HEIST_PROFILER && pool->profile)
		j->task.created_tsc = heist__tsc();
	int err = w && w->pool == pool ? submit_local(w, j) : submit_outside(pool, j);
	if (err) {
		heist__job_discard(j);
		return err;
	}
	if (out)
		*out = j;
	return 0;
}

/* A new job for fn(arg), holding a reference to token if there is one, queued. */
static int
submit_new(heist_pool *pool, heist_fn fn, void *arg, heist_cancel *token,
	   heist_future **out)
{
	struct heist_future *j = heist__job_new(fn, arg, out != NULL);
	if (!j)
		return ENOMEM;
	if (token) {
		heist__cancel_acquire(token);
		j->token = token;
	}
	return heist__submit_job(pool, j, out);
}

HEIST_EXPORT int
heist_submit(heist_pool *pool, heist_fn fn, void *arg, heist_future **out)
{
	if (out)
		*out = NULL;
	if (!pool || !fn)
		return EINVAL;
	return submit_new(pool, fn, arg, NULL, out);
}

HEIST_EXPORT int
heist_submit_cancellable(heist_pool *pool, heist_cancel *c, heist_fn fn, void *arg,
			 heist_future **out)
{
	if (out)
		*out = NULL;
	if (!pool || !fn || !c)
		return EINVAL;
	return submit_new(pool, fn, arg, c, out);
}

HEIST_EXPORT int
heist_submit_copy(heist_pool *pool, heist_fn fn, const void *arg, size_t size,
		  heist_future **out)
{
	if (out)
		*out = NULL;
	if (!pool || !fn || (!arg && size))
		return EINVAL;
	struct heist_future *j = heist__job_new(fn, NULL, out != NULL);
	if (!j)
		return ENOMEM;
	if (heist__job_copy_arg(j, arg, size)) {
		heist__job_discard(j);
		return ENOMEM;
	}
	return heist__submit_job(pool, j, out);
}
