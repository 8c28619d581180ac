/* SPDX-License-Identifier: MIT */
/* group.c - task groups (a scope, as oneTBB's task_group or Rayon's scope): a count of
 * the group's jobs not yet final, the first nonzero result, and a cancellation token
 * the group's jobs share, so that the first error cancels the rest. Each job carries a
 * struct heist__then in its own inline_copy (no allocation per task), fired when it is
 * final (future.h): it records the result and counts the job out. Waiting is wait.c's
 * (heist__wait_group): a waiting worker runs the group's jobs it finds at the bottom of
 * its own deque, which its frame requires, and nothing else. */
#include "group.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "cancel.h"
#include "futex.h"
#include "future.h"
#include "submit.h"
#include "wait.h"

/* A group job's node, in its inline_copy. */
struct group_node {
	struct heist__then then;
	struct heist_group *g;
};

static_assert(sizeof(struct group_node) <= JOB_INLINE_COPY, "a group node fits a job");

static void
group_fire(struct heist__then *n, struct heist_future *j)
{
	struct heist_group *g = ((struct group_node *)(void *)n)->g;
	/* acquire: pairs with the final release store; the job is final. */
	uint32_t s = atomic_load_explicit(&j->state, memory_order_acquire);
	int r = (s & FUT_MASK) == FUT_CANCELLED ? ECANCELED : j->task.result;
	if (r) {
		int none = 0;
		/* relaxed: the waiter reads it after its acquire of pending == 0, which
		 * our release decrement below orders after this. First error wins. */
		atomic_compare_exchange_strong_explicit(&g->error, &none, r,
							memory_order_relaxed,
							memory_order_relaxed);
		heist_cancel_request(g->token);	/* the rest never run, or see cancelled */
	}
	heist__group_count_out(g);
}

void
heist__group_count_out(struct heist_group *g)
{
	/* release: the results and writes of the group's jobs reach a waiter that sees
	 * 0 (its acquire). Once pending is 0 the group may be freed at any moment
	 * (heist_group_destroy): the wake names its address only, which is harmless
	 * even then. A waiter asleep on an older value wakes only for the last one;
	 * one that compared before the decrement finds a new value and looks again. */
	if (atomic_fetch_sub_explicit(&g->pending, 1, memory_order_release) == 1)
		heist__futex_wake(&g->pending, INT_MAX);
}

bool
heist__group_owns(const struct heist_group *g, struct heist_future *j)
{
	/* A group job's list is its own node until it is final (nobody else can hang
	 * anything on it: group_submit returns no future). relaxed: the node was
	 * written before the job was queued, which we took it from. */
	struct heist__then *head = atomic_load_explicit(&j->thens, memory_order_relaxed);
	return head == (struct heist__then *)(void *)j->inline_copy &&
	       head->fire == group_fire && ((struct group_node *)(void *)head)->g == g;
}

HEIST_EXPORT int
heist_group_create(heist_pool *pool, heist_group **out)
{
	if (out)
		*out = NULL;
	if (!pool || !out)
		return EINVAL;
	/* aligned: pending has a cache line of its own (sizeof is a multiple of it). */
	struct heist_group *g = heist__aligned_alloc(CACHE_LINE, sizeof(*g));
	if (!g)
		return ENOMEM;
	int err = heist_cancel_create(&g->token);
	if (err) {
		free(g);
		return err;
	}
	g->pool = pool;
	atomic_init(&g->pending, 0);
	atomic_init(&g->error, 0);
	*out = g;
	return 0;
}

HEIST_EXPORT int
heist_group_submit(heist_group *g, heist_fn fn, void *arg)
{
	if (!g || !fn)
		return EINVAL;
	struct heist_future *j = heist__job_new(fn, arg, false);
	if (!j)
		return ENOMEM;
	/* The group's token, lent: the group outlives its jobs (destroy waits for
	 * them), so they need not count references to it, on a shared line. */
	j->token = g->token;
	heist__job_set_flag(j, REF_LENT, true);
	struct group_node *n = (struct group_node *)(void *)j->inline_copy;
	*n = (struct group_node){{NULL, group_fire}, g};
	heist__job_then(j, &n->then);	/* a new job: it cannot be final yet */
	/* relaxed: before the job is queued, whose hand-off orders it before the job's
	 * own count out; a waiter cannot see 0 in between, for the submitter is either
	 * the waiting thread itself or a group job (counted) or a thread the waiter
	 * synchronised with. */
	atomic_fetch_add_explicit(&g->pending, 1, memory_order_relaxed);
	int err = heist__submit_job(g->pool, j, NULL);
	if (err)
		heist__group_count_out(g);	/* the job was discarded, never fired */
	return err;
}

HEIST_EXPORT int
heist_group_wait(heist_group *g)
{
	if (!g)
		return EINVAL;
	heist__wait_group(g);
	/* relaxed: ordered by the acquire that saw pending == 0 (see group_fire). */
	return atomic_load_explicit(&g->error, memory_order_relaxed);
}

HEIST_EXPORT void
heist_group_cancel(heist_group *g)
{
	if (g)
		heist_cancel_request(g->token);
}

HEIST_EXPORT void
heist_group_destroy(heist_group *g)
{
	if (!g)
		return;
	heist__wait_group(g);	/* after it, no fire touches g (heist__group_count_out) */
	heist_cancel_release(g->token);
	free(g);
}
