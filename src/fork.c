/* fork.c - fork-join: spawn, sync, join and run. A spawned task is a record in its
 * parent's stack frame; spawn pushes a pointer to it on the worker's deque, privately
 * (deque.h), and sync pops it back and runs it inline unless a thief took it. The
 * slow paths (publishing, waiting for a thief) are in worker.c. */
#include <errno.h>

#include "future.h"
#include "pool.h"
#include "tsc.h"
#include "worker.h"

/* Run t now, on this thread (outside a worker, or with no room in the deque). */
static void
run_at_once(struct task *t)
{
	t->result = t->fn(t->arg);
	/* release: pairs with the acquire load in heist__worker_sync_slow. */
	atomic_store_explicit(&t->state, TASK_DONE, memory_order_release);
}

/* After a push, with a flag up: stamp the task for the profiler (it is still private:
 * nobody reads it before the publish below), and answer a thief's request. */
static noinline void
spawn_flagged(struct worker *w, struct task *t)
{
	if (HEIST_PROFILER && w->profile)
		t->created_tsc = heist__tsc();
	if (heist__deque_split_requested(&w->dq))
		heist__worker_publish(w, 0);
}

/* heist_spawn with a full array: grow it; without memory, run the child now (a legal
 * schedule of strict fork-join: sync then finds it done). */
static noinline void
spawn_full(struct worker *w, struct task *t)
{
	if (heist__deque_push(&w->dq, t) != 0) {
		counter_add(&w->stats.executed, 1);
		run_at_once(t);
		return;
	}
	spawn_flagged(w, t);
}

static noinline void
spawn_outside(struct task *t)
{
	run_at_once(t);
}

/* The fast path makes no call but tail calls, so it saves no registers, and it tests
 * one flag byte for both a thief's request and the profiler. */
HEIST_EXPORT void
heist_spawn(heist_task *ht, heist_fn fn, void *arg)
{
	struct task *t = (struct task *)ht;
	struct worker *w = heist__self;
	t->fn = fn;
	t->arg = arg;
	/* relaxed: a thief can only reach t through the deque's release publication,
	 * which orders these stores before its own. */
	atomic_store_explicit(&t->state, TASK_PENDING, memory_order_relaxed);
	atomic_store_explicit(&t->thief, NULL, memory_order_relaxed);
	if (unlikely(!w)) {
		spawn_outside(t);
		return;
	}
	struct deque *dq = &w->dq;
	counter_add(&w->stats.spawned, 1);
	int64_t b = atomic_load_explicit(&dq->bottom, memory_order_relaxed);
	struct deque_array *a = dq->array;
	if (unlikely(b - dq->top_cache > a->mask)) {
		spawn_full(w, t);
		return;
	}
	/* relaxed: the slot is private until a publish (deque.h). */
	atomic_store_explicit(&a->slot[b & a->mask], t, memory_order_relaxed);
	atomic_store_explicit(&dq->bottom, b + 1, memory_order_relaxed);
	if (unlikely(heist__deque_flags(dq)))
		spawn_flagged(w, t);
}

HEIST_EXPORT int
heist_sync(heist_task *ht)
{
	struct task *t = (struct task *)ht;
	struct worker *w = heist__self;
	if (unlikely(!w))
		return t->result;	/* spawn ran it already */
	/* One flag test: with a request or the profiler on, take the slow path. */
	if (likely(heist__deque_peek_private(&w->dq) == t) &&
	    likely(!heist__deque_flags(&w->dq))) {
		heist__deque_drop_private(&w->dq);
		counter_add(&w->stats.executed, 1);
		return t->fn(t->arg);
	}
	return heist__worker_sync_slow(w, t);
}

HEIST_EXPORT int
heist_join(heist_fn a, void *arg_a, heist_fn b, void *arg_b)
{
	heist_task t;
	heist_spawn(&t, b, arg_b);
	int ra = a(arg_a);
	int rb = heist_sync(&t);
	return ra ? ra : rb;
}

HEIST_EXPORT int
heist_run(heist_pool *pool, heist_fn fn, void *arg)
{
	if (!pool || !fn)
		return EINVAL;
	struct worker *w = heist__self;
	if (w && w->pool == pool)
		return fn(arg);
	heist_future *f;
	int err = heist_submit(pool, fn, arg, &f);
	if (err)
		return err;
	int r = heist_future_wait(f);
	heist_future_release(f);
	return r;
}
