/* SPDX-License-Identifier: MIT */
/* fork.c - fork-join: spawn, sync, join and run. A spawned task is a record in its
 * parent's stack frame; spawn pushes a pointer to it on the worker's deque, privately
 * (deque.h), and sync pops it back and runs it inline unless a thief took it; then
 * sync waits for the thief (wait.c). The common case of both is inline in the
 * caller (heist/inline.h, whose macros this file's definitions escape with
 * parentheses); these out-of-line functions do the same and handle every case. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>

#include "fork.h"
#include "pool.h"
#include "probe.h"
#include "wait.h"
#include "worker.h"

/* Run t now, on this thread (outside a worker, or with no room in the deque). Its
 * owner is this thread, so nobody sleeps on it: a store, not an exchange. */
static void
run_at_once(struct task *t)
{
	t->result = t->fn(t->arg);
	/* release: pairs with the acquire load in sync_slow. */
	atomic_store_explicit(&t->state, TASK_DONE, memory_order_release);
}

/* After a push, with the profiler on or a thief's request: stamp the task for the
 * profiler (it is still private: nobody reads it before the publish below), and
 * answer the request. */
static noinline void
spawn_flagged(struct worker *w, struct task *t)
{
	if (HEIST_PROFILER && w->profile) {
		bool hit = true;	/* every task, unless the pool samples */
		if (w->sample_mask) {
			w->sample_tick = heist__sample_draw(w->sample_tick);
			hit = heist__sample_hit(w->sample_tick, w->sample_mask);
		}
		t->created_tsc = hit ? heist__tsc() : 0;
	}
	if (heist__deque_split_requested(&w->dq))
		heist__worker_publish(w, 0);
}

/* heist_spawn with no room: grow the array; without memory, run the child now (a
 * legal schedule of strict fork-join: sync then finds it done). */
static noinline void
spawn_full(struct worker *w, struct task *t)
{
	if (heist__deque_push_slow(&w->dq, t) != 0) {
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

/* The out-of-line spawn (heist/inline.h calls it when its fast path does not apply:
 * no room, a ring, the profiler, no worker). Its own fast path makes no call but
 * tail calls, so it saves no registers. */
HEIST_EXPORT void
(heist_spawn)(heist_task *ht, heist_fn fn, void *arg)
{
	assert(ht && fn && "heist_spawn: t and fn must not be NULL");
	struct task *t = (struct task *)ht;
	struct worker *w = heist__current();
	t->fn = fn;
	t->arg = arg;
	/* relaxed: a thief can only reach t through the deque's release publication,
	 * which orders these stores before its own. */
	atomic_store_explicit(&t->state, TASK_PENDING, memory_order_relaxed);
	if (unlikely(!w)) {
		spawn_outside(t);
		return;
	}
	/* No thief yet: the idle epoch of the work this task belongs to, for the one
	 * that steals it (worker.c). */
	atomic_store_explicit(&t->thief, task_epoch_mark(w->cur_epoch), memory_order_relaxed);
	if (unlikely(!heist__deque_try_push(&w->dq, t))) {
		spawn_full(w, t);
		return;
	}
	if (unlikely((HEIST_PROFILER && w->profile) || heist__deque_split_requested(&w->dq)))
		spawn_flagged(w, t);
	else
		heist__deque_reopen(&w->dq);	/* so that the next spawns stay inline */
}

static noreturn void
misuse(const char *what)
{
	fprintf(stderr, "heist: heist_sync: %s\n", what);
	abort();
}

/* Debug builds mark a synced record, so that a second sync of it aborts. */
static inline void
mark_synced(struct task *t)
{
#ifndef NDEBUG
	atomic_store_explicit(&t->state, TASK_SYNCED, memory_order_relaxed);
#else
	(void)t;
#endif
}

/* heist_sync when t was not at the bottom of the deque, a thief asks for work, or the
 * profiler times t. */
static noinline int
sync_slow(struct worker *w, struct task *t)
{
	/* A spawn counts when it is synced (heist/inline.h counts its fast pairs so,
	 * with one counter): a snapshot misses the spawns still outstanding. */
	counter_add(&w->stats.spawned, 1);
	for (;;) {
		/* acquire: pairs with the release of TASK_DONE (by a thief, or by
		 * heist_spawn when it had to run t at once). */
		uint32_t s = atomic_load_explicit(&t->state, memory_order_acquire);
		if (s == TASK_DONE) {
			mark_synced(t);
			return t->result;
		}
		if (s != TASK_PENDING)
			misuse(s == TASK_SYNCED ? "the task was synced already"
						: "the record holds no spawned task");
		bool public = heist__deque_private_count(&w->dq) == 0;
		struct task *x = heist__worker_pop(w);
		if (x == t) {
			if (public)
				w->untaken++;	/* we published it, and nobody took it */
			counter_add(&w->stats.executed, 1);
			mark_synced(t);
			if (HEIST_PROFILER && unlikely(w->profile)) {
				const struct heist__run_from inline_sync = {HEIST_PATH_INLINE, -1,
									    0};
				return heist__worker_run_profiled(w, t, &inline_sync);
			}
			return t->fn(t->arg);
		}
		if (!x) {
			w->untaken = 0;	/* a thief wants what we publish */
			int r = heist__wait_stolen(w, t);
			mark_synced(t);
			return r;
		}
		/* relaxed: the kind never changes once queued. */
		if (atomic_load_explicit(&x->state, memory_order_relaxed) == TASK_JOB) {
			/* Above t: a job this task submitted to its own deque. It is no
			 * part of this frame's work (a job is detached, and may itself
			 * wait for the job we run in), so it may not run on top of it:
			 * any worker takes it from the injector. */
			heist__injector_requeue(&w->pool->injector, x);
			heist__sleep_notify(&w->pool->sleep);
			continue;
		}
		/* A spawned task above t: syncs came out of order. Running it is still a
		 * legal schedule (it is this frame's own child). */
		assert(0 && "heist_sync: syncs must come in the reverse order of their spawns");
		heist__worker_took(w, HEIST_PATH_INLINE, x, false);
		heist__worker_run(w, x);
	}
}

HEIST_EXPORT int
(heist_sync)(heist_task *ht)
{
	assert(ht && "heist_sync: t must not be NULL");
	struct task *t = (struct task *)ht;
	struct worker *w = heist__current();
	if (unlikely(!w)) {
		/* relaxed: spawn ran it already on this thread, and set DONE; only a
		 * worker that forked since its spawn finds it otherwise (inherit.h). */
		if (atomic_load_explicit(&t->state, memory_order_relaxed) != TASK_DONE)
			misuse("a task spawned before fork() is synced in the child, "
			       "where the thread that might run it does not exist");
		return t->result;
	}
	/* So that the next syncs stay inline. */
	heist__deque_reopen(&w->dq);
	/* With a request, or the profiler on and t to be timed, the slow path. */
	if (likely(heist__deque_peek_private(&w->dq) == t) &&
	    likely(!heist__deque_split_requested(&w->dq)) &&
	    !(HEIST_PROFILER && w->profile && t->created_tsc)) {
		heist__deque_drop_private(&w->dq);
		counter_add(&w->stats.pairs, 1);
		mark_synced(t);
		return t->fn(t->arg);
	}
	return sync_slow(w, t);
}

bool
heist__spawn_take_back(heist_task *ht)
{
	struct task *t = (struct task *)ht;
	struct worker *w = heist__current();
	if (!w)
		return false;	/* spawn ran it at once */
	heist__deque_reopen(&w->dq);
	for (;;) {
		/* relaxed: only our own spawn_full, on this thread, stores DONE before
		 * the task is ever queued; a thief's DONE is heist_sync's to acquire. */
		if (atomic_load_explicit(&t->state, memory_order_relaxed) != TASK_PENDING)
			return false;
		struct task *x = heist__worker_pop(w);
		if (x == t) {
			counter_add(&w->stats.pairs, 1);
			mark_synced(t);
			return true;
		}
		if (!x)
			return false;	/* stolen: heist_sync waits for its thief */
		/* relaxed: the kind never changes once queued. A job above t, as in
		 * sync_slow: to the injector. */
		if (atomic_load_explicit(&x->state, memory_order_relaxed) == TASK_JOB) {
			heist__injector_requeue(&w->pool->injector, x);
			heist__sleep_notify(&w->pool->sleep);
			continue;
		}
		assert(0 && "heist__spawn_take_back: take-backs come in the reverse order of spawns");
		heist__worker_took(w, HEIST_PATH_INLINE, x, false);
		heist__worker_run(w, x);
	}
}

/* The worker itself, or heist__nobody: the worker-passing tasks' fast paths read the
 * same bounds from it as heist_spawn's and heist_sync's read through the thread's. */
HEIST_EXPORT heist_worker *
(heist_worker_self)(void)
{
	return (heist_worker *)heist__self_view();
}

HEIST_EXPORT int
heist_join(heist_fn a, void *arg_a, heist_fn b, void *arg_b)
{
	if (!a || !b)
		return EINVAL;	/* neither runs */
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
	struct worker *w = heist__current();
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
