/* SPDX-License-Identifier: MIT */
/* submit.c - how a job gets into a pool and how the pool knows when all of them are
 * out: the public submit calls (plain, copied, with a token), routing (a worker's own
 * deque, or the injector from any other thread), the `live` count that
 * heist_pool_destroy drains, and heist_pool_wait_idle.
 *
 * The drain argument. `live` counts the jobs accepted and not yet finished, and the
 * guests inside the pool (an outside heist_for_each): one 64-bit word holding a 32-bit
 * count per idle epoch (below), so that every change to either is a read-modify-write
 * of one atomic object, in one modification order. Destroy sets `shutting`, then waits
 * for the word to be 0; it frees the pool only after that.
 * (1) A thread that is not a worker enters (heist__pool_enter: an outside submit, a
 *     continuation queued by a thread of another pool, a guest) by taking a hold
 *     (5), adding 1 to live and then loading shutting, all seq_cst, and leaves again
 *     at once if it is set.
 * (2) Destroy stores shutting and then loads live, both seq_cst. In the single total
 *     order of seq_cst operations, either (1)'s load follows (2)'s store, and the
 *     entrant sees shutting and backs out, or (1)'s add precedes (2)'s load, and
 *     destroy sees the entrant counted and waits for it. So destroy never frees a
 *     pool that a thread it did not wait for has entered.
 * (3) A worker's submit needs no handshake: it runs inside a job (or a guest's loop)
 *     that is itself counted and not yet finished, and its add is sequenced before
 *     that job's subtraction, so it precedes it in live's modification order
 *     whichever half it adds to: live > 0 from the parent's add until after the
 *     child's subtraction. The add may be relaxed for that reason. Such submits are
 *     accepted during the drain, as heist.h promises, and drained too; so are
 *     continuations (heist_future_then), queued while the job whose end made them
 *     runnable, or the job of the thread that cancelled it, is still counted.
 * (4) A leave subtracts with seq_cst and then loads shutting (seq_cst). The leave
 *     that brings live to 0 either sees shutting and wakes destroy, or comes before
 *     destroy's store in the total order, and then destroy's load sees 0 and it never
 *     sleeps. Destroy reads drain_seq before live, so a wake between its load and its
 *     futex wait changes the word and the wait returns at once.
 * (5) Holds. A thread that is not one of the pool's touches it after the moment that
 *     may let destroy go on: an outside submitter wakes a sleeper (and, with a limit,
 *     counts the injector's depth) after its push, when the job may already have run
 *     and been waited for; the thread that brings live to 0 wakes destroy after its
 *     subtraction. Each takes a hold before the step that counts it in live (its
 *     enter's add, its leave's subtraction) and lets go (release) after its last
 *     access: an entrant names the pool in its thread's cell (hold.h: two plain
 *     stores on x86, release both), a leaver (and an entrant without a cell) adds to
 *     `holds` (seq_cst). Destroy, having seen live reach 0, waits for holds to be 0
 *     and then until no cell names the pool (acquire loads). Why no access follows
 *     the free: the hold is sequenced before the change to live; every change to
 *     live is a read-modify-write, so the value 0 that destroy reads (seq_cst, so
 *     acquire) comes later in a release sequence headed by that change, which
 *     therefore happens before destroy's looks at holds and at the cells: destroy
 *     sees the hold, or a later value of its word, which only a release store or
 *     read-modify-write of the holder's wrote after its last access; either way it
 *     frees only after that access. An entrant that destroy's drain did not count
 *     (its add came after destroy's load of live) began its call after destroy had
 *     drained the pool: that is the caller's use of a destroyed pool (heist.h), or,
 *     for continuations, prevented by the registry (heist__pool_enter_if_alive:
 *     destroy takes the pool off it first). heist_pool_wait_idle holds the pool
 *     too, for its whole wait, with shutting in place of live (it adds nothing).
 * A job leaves only once it has run or been skipped as cancelled (workers subtract
 * what they finished in batches, done_unflushed, before they idle), so live is never
 * below the truth, and when destroy sees 0 nothing accepted is still to run. Neither
 * half ever goes below 0 (a job's subtraction follows its add), so neither borrows
 * from the other; 2^32 jobs in flight would need terabytes of records.
 *
 * Idle epochs. heist_pool_wait_idle must wait for what was accepted before the call
 * and what that work submits, but not for what concurrent submitters add after it,
 * or it might never return. So outside admissions count in the half of live for
 * epoch & 1, and a job submitted from a task counts in its parent job's epoch
 * (REF_EPOCH), a continuation in the epoch of the job being finished (or run) by the
 * thread that queues it. A waiter (serialised by idle_lock) first waits for the older
 * epoch to drain, then moves `epoch` on, so that new outside work counts in the other
 * half, and waits for the epoch it left. A submit from a task whose job is unknown
 * (a stolen fork-join child) counts in the older epoch while a waiter is active, and
 * in the current one otherwise: never later than its parent's, so waiters may wait
 * for more than they must, never for less. */
#include "submit.h"

#include <errno.h>
#include <limits.h>

#include "cancel.h"
#include "platform/platform.h"
#include "future.h"
#include "hold.h"
#include "pool.h"
#include "probe.h"
#include "worker.h"

/* Wake destroy or the idle waiters: a counter reached 0 while one of them waits. */
static void
wake_drainers(struct heist_pool *pool)
{
	atomic_fetch_add_explicit(&pool->drain_seq, 1, memory_order_release);
	heist__futex_wake(&pool->drain_seq, INT_MAX);
}

/* The amount to add to live for n jobs of epoch e. */
static inline uint64_t
live_units(unsigned e, uint64_t n)
{
	return n << (32 * (e & 1));
}

/* The count of epoch e in a value of live. */
static inline uint32_t
live_half(uint64_t v, unsigned e)
{
	return (uint32_t)(v >> (32 * (e & 1)));
}

/* Take a hold on pool (5) in the pool's count: destroy frees nothing until it is let
 * go. seq_cst: before the change to live that counts the holder (or, in
 * heist_pool_wait_idle, its load of shutting); destroy's load of holds pairs with it.
 * For a leave, an enter on a thread without a cell, and a wait for idle. */
static void
hold(struct heist_pool *pool)
{
	atomic_fetch_add_explicit(&pool->holds, 1, memory_order_seq_cst);
}

static void
unhold(struct heist_pool *pool)
{
	/* release, our last touch of the pool: pairs with the acquire loads of holds
	 * in heist__pool_drain. */
	atomic_fetch_sub_explicit(&pool->holds, 1, memory_order_release);
}

/* An enter's hold: this thread's cell (hold.h), else the count. */
static inline void
hold_entered(struct heist_pool *pool)
{
	if (!heist__hold_enter(pool))
		hold(pool);
}

void
heist__pool_unhold(struct heist_pool *pool)
{
	if (!heist__hold_leave())
		unhold(pool);
}

void
heist__pool_leave(struct heist_pool *pool, unsigned epoch, uint64_t n)
{
	uint64_t units = live_units(epoch, n);
	hold(pool);	/* the wake below may follow the moment live reaches 0 (5) */
	/* seq_cst, and seq_cst on shutting and idle_waiters: (4). */
	uint64_t old = atomic_fetch_sub_explicit(&pool->live, units, memory_order_seq_cst);
	if (live_half(old, epoch) == n &&
	    (atomic_load_explicit(&pool->idle_waiters, memory_order_seq_cst) ||
	     (old == units && atomic_load_explicit(&pool->shutting, memory_order_seq_cst))))
		wake_drainers(pool);
	unhold(pool);
}

int
heist__pool_enter(struct heist_pool *pool, unsigned *epoch)
{
	if (heist__pool_inherited(pool))
		return ESHUTDOWN;	/* its threads are in the parent (inherit.h) */
	hold_entered(pool);	/* (5), before the add below */
	/* seq_cst: a waiter that moved the epoch on since waits for this one too. */
	*epoch = atomic_load_explicit(&pool->epoch, memory_order_seq_cst) & 1;
	/* Both seq_cst: (1). */
	atomic_fetch_add_explicit(&pool->live, live_units(*epoch, 1), memory_order_seq_cst);
	if (atomic_load_explicit(&pool->shutting, memory_order_seq_cst)) {
		heist__pool_leave(pool, *epoch, 1);
		heist__pool_unhold(pool);
		return ESHUTDOWN;
	}
	return 0;
}

/* Whether epoch e's half of live is 0 (both: the whole word). seq_cst: the load of
 * (2), and of the idle waiter. */
static bool
drained(struct heist_pool *pool, bool both, unsigned e)
{
	uint64_t v = atomic_load_explicit(&pool->live, memory_order_seq_cst);
	return both ? v == 0 : live_half(v, e) == 0;
}

/* Whether idle epoch e is drained: every job admitted in it, and what they submitted,
 * has finished. Either its counter is 0 now (after e was closed it only shrinks until
 * a waiter, having seen it 0, reuses it for e + 2), or some waiter saw that and said so
 * in idle_drained (the epochs below it are drained), which a waiter that slept through
 * the moment needs. acquire: pairs with the release in mark_drained. */
static bool
epoch_drained(struct heist_pool *pool, unsigned e)
{
	return (int32_t)(atomic_load_explicit(&pool->idle_drained, memory_order_acquire) - e) >
		       0 ||
	       drained(pool, false, e);
}

/* Epochs below `upto` are drained: raise idle_drained (monotone) and wake sleepers. */
static void
mark_drained(struct heist_pool *pool, unsigned upto)
{
	/* relaxed: only waiters raise it, under idle_lock. release: pairs with the
	 * acquire in epoch_drained. */
	unsigned d = atomic_load_explicit(&pool->idle_drained, memory_order_relaxed);
	if ((int32_t)(upto - d) > 0) {
		atomic_store_explicit(&pool->idle_drained, upto, memory_order_release);
		wake_drainers(pool);
	}
}

/* Sleep until live is 0 (both) or epoch e is drained; leavers and mark_drained wake
 * drain_seq. */
static void
wait_drained(struct heist_pool *pool, bool both, unsigned e)
{
	for (;;) {
		/* acquire: pairs with the leaver's release increment. (4) */
		uint32_t seq = atomic_load_explicit(&pool->drain_seq, memory_order_acquire);
		if (both ? drained(pool, true, 0) : epoch_drained(pool, e))
			return;
		heist__futex_wait(&pool->drain_seq, seq, 0);
	}
}

void
heist__pool_drain(struct heist_pool *pool)
{
	/* seq_cst: (2); an exchange, the store of a Dekker pair (internal.h). */
	dekker_store(&pool->shutting, true);
	wait_drained(pool, true, 0);
	/* (5): a hold lasts a push and a wake, or a leave, or the end of a wait for
	 * idle, which the drain has let go on. The first load seq_cst (the argument's
	 * order); all acquire: pair with heist__pool_unhold's release. */
	if (atomic_load_explicit(&pool->holds, memory_order_seq_cst))
		while (atomic_load_explicit(&pool->holds, memory_order_acquire))
			heist__thread_yield();
	heist__hold_wait(pool);
}

HEIST_EXPORT int
heist_pool_wait_idle(heist_pool *pool)
{
	if (!pool)
		return EINVAL;
	struct worker *self = heist__current();
	if (self && self->pool == pool)
		return EDEADLK;	/* it would wait for the task that waits */
	if (heist__pool_inherited(pool))
		return ESHUTDOWN;	/* nothing would drain it here (inherit.h) */
	/* A hold for as long as we touch the pool, lest a destroy that another thread
	 * begins meanwhile free it under us (it frees the idle_lock we unlock, and
	 * idle_waiters). Our hold and then our load of shutting, against destroy's
	 * store of shutting and then its load of holds, all seq_cst (as (2), with
	 * holds for live): we see shutting and back out, or destroy sees our hold and
	 * waits for its release. */
	hold(pool);
	if (atomic_load_explicit(&pool->shutting, memory_order_seq_cst)) {
		unhold(pool);
		return ESHUTDOWN;	/* destroy drains it, and frees it soon after */
	}
	heist__mutex_lock(&pool->idle_lock);
	/* seq_cst: against a leaver's decrement and its load of idle_waiters (4). */
	atomic_fetch_add_explicit(&pool->idle_waiters, 1, memory_order_seq_cst);
	/* relaxed: only waiters change the epoch, and we hold their lock. */
	unsigned e = atomic_load_explicit(&pool->epoch, memory_order_relaxed);
	wait_drained(pool, false, e - 1);	/* the older epoch, before we reuse it */
	mark_drained(pool, e);	/* for a waiter of e - 1 that slept through it */
	/* seq_cst: an outside submit that reads the old epoch after this is counted in
	 * it, and so waited for (enter's seq_cst load). */
	atomic_store_explicit(&pool->epoch, e + 1, memory_order_seq_cst);
	heist__mutex_unlock(&pool->idle_lock);
	wait_drained(pool, false, e);
	atomic_fetch_sub_explicit(&pool->idle_waiters, 1, memory_order_relaxed);
	unhold(pool);	/* our last touch of the pool */
	heist__record_trim();	/* a burst drained: give back its records (record.h) */
	return 0;
}

/* The queue of j's priority (heist_priority) if it has one, else NULL: normal. Its
 * flags were set before anyone else could see it (relaxed, as they were stored). */
static struct injector *
prio_queue(struct heist_pool *pool, const struct heist_future *j)
{
	uint32_t r = atomic_load_explicit((_Atomic uint32_t *)&j->refs, memory_order_relaxed);
	if (r & REF_HIGH)
		return &pool->high;
	return r & REF_LOW ? &pool->low : NULL;
}

/* Queue j, admitted in epoch e (by the caller's enter), in the injector of its
 * priority. shared: j is a continuation or dependent task, whose future others may
 * hold already. The limit holds up threads of other pools and outside ones submitting
 * plain jobs, never one of the pool's (a worker between tasks, counted_worker), which
 * must not wait for room that only its pool's threads make, nor a continuation: it was
 * accepted at its heist_future_then or heist_submit_after, and is queued by whichever
 * thread made it runnable (one that set a promise, cancelled a job, or called with
 * every input done), which may hold a lock the workers need (heist_dataflow_submit
 * holds its dataflow's), as a timer's is (heist__submit_fired). */
static void
push_outside(struct heist_pool *pool, struct heist_future *j, unsigned e, bool shared)
{
	if (shared)
		heist__job_admit_shared(j, e);
	else
		heist__job_set_epoch(j, e);
	struct injector *q = prio_queue(pool, j);
	if (!q)
		q = &pool->injector;
	struct worker *self = heist__current();
	size_t backlog;
	if (shared || (self && self->pool == pool)) {
		backlog = heist__injector_requeue(q, &j->task);
	} else {
		backlog = heist__injector_reserve(q);
		heist__injector_push(q, &j->task);
	}
	heist__sleep_notify_job(&pool->sleep, backlog);
	/* j may have run and been waited for since the push, and the pool be in
	 * destroy: it waited for this hold, taken at our enter (5). */
	heist__pool_unhold(pool);
}

/* The worker of pool on this thread whose submits are counted inside its work (3),
 * or NULL: submit from outside. A worker in a hook runs no counted work; nor does one
 * between its tasks (w->running 0), which fires timers there and may end one (a token
 * cancelled it, destroy refused it) and so queue its continuation: that thread enters
 * as an outside one, or its add could come after destroy saw live at 0. The guest
 * slot is counted in live for as long as it is taken. */
static struct worker *
counted_worker(struct heist_pool *pool)
{
	struct worker *w = heist__current();
	return w && w->pool == pool && !w->in_hook &&
			       (w->running || heist__worker_is_guest(w))
		       ? w
		       : NULL;
}

/* Push j, counted in the epoch of w's current work (w->cur_epoch), on w's deque (or,
 * from the guest slot, the injector: the guest's deque is nobody's once it leaves; or
 * the queue of j's priority, if it has one, which every worker looks at first or
 * last; or the injector when the deque cannot grow). shared: as for push_outside.
 * Queues other than the deque are filled without their limit: a worker must not wait
 * for room that only workers make. Returns 0: a queue's link needs no memory, so a
 * job that the deque has no room for goes there rather than fail, which a continuation
 * must not: admitted, it may be claimed by a waiter already, and run (its token, its
 * argument used) while the failed queuing would end it (heist__job_forgo). */
static int
queue_local(struct worker *w, struct heist_future *j, bool shared)
{
	struct heist_pool *pool = w->pool;
	unsigned e = w->cur_epoch;
	if (shared)
		heist__job_admit_shared(j, e);
	else
		heist__job_set_epoch(j, e);
	/* relaxed: (3). */
	atomic_fetch_add_explicit(&pool->live, live_units(e, 1), memory_order_relaxed);
	struct injector *q = prio_queue(pool, j);
	if (q || heist__worker_is_guest(w) || heist__deque_push(&w->dq, &j->task) != 0) {
		size_t backlog = heist__injector_requeue(q ? q : &pool->injector, &j->task);
		heist__sleep_notify_job(&pool->sleep, backlog);
		return 0;
	}
	if (w->loop_job_ending) {
		/* A job the end of the loop's job made runnable (a continuation, a
		 * dependent task): our loop pops it next, as a sync pops its spawn, so
		 * the first one stays private: no publish, no wake for a task we run
		 * ourselves (a thief that asks gets the rest: heist__worker_pop). Those
		 * after it are published but the newest (a burst of dependents). */
		if (heist__deque_private_count(&w->dq) == 1)
			return 0;
		heist__worker_publish(w, 1);
	} else {
		heist__worker_publish(w, 0);
	}
	heist__sleep_notify_job(&pool->sleep, 0);	/* a worker lent to a guest, too */
	return 0;
}

/* Stamp j for the profiler, before anyone may run it. */
static void
stamp(struct heist_pool *pool, struct heist_future *j)
{
	if (HEIST_PROFILER && pool->profile)
		j->task.created_tsc = heist__profile_stamp(pool->profile_mask);
}

int
heist__submit_continuation(struct heist_future *c)
{
	struct heist_pool *pool = c->task.pool;
	struct worker *w = counted_worker(pool);
	if (w) {
		stamp(pool, c);
		return queue_local(w, c, true);
	}
	unsigned e;
	int err = heist__pool_enter_if_alive(pool, &e);
	if (err)
		return err;
	stamp(pool, c);
	push_outside(pool, c, e, true);
	return 0;
}

int
heist__submit_fired(struct heist_future *j)
{
	struct heist_pool *pool = j->task.pool;
	unsigned e;
	int err = heist__pool_enter(pool, &e);
	if (err)
		return err;
	stamp(pool, j);
	/* As push_outside, but never held up by the injector's limit: the firer may
	 * be a worker, which must not wait for room that only workers make. */
	heist__job_admit_shared(j, e);
	struct injector *q = prio_queue(pool, j);
	size_t backlog = heist__injector_requeue(q ? q : &pool->injector, &j->task);
	heist__sleep_notify_job(&pool->sleep, backlog);
	heist__pool_unhold(pool);
	return 0;
}

int
heist__submit_queue(struct heist_pool *pool, struct heist_future *j)
{
	j->task.pool = pool;
	stamp(pool, j);
	struct worker *w = counted_worker(pool);
	if (w)
		return queue_local(w, j, false);
	unsigned e;
	int err = heist__pool_enter(pool, &e);
	if (err)
		return err;
	push_outside(pool, j, e, false);
	return 0;
}

int
heist__submit_job(struct heist_pool *pool, struct heist_future *j, heist_future **out)
{
	int err = heist__submit_queue(pool, j);
	if (err) {
		heist__job_discard(j);
		return err;
	}
	if (out)
		*out = j;
	return 0;
}

int
heist__submit_new(heist_pool *pool, heist_fn fn, void *arg, heist_cancel *token,
		  int priority, heist_future **out)
{
	struct heist_future *j = heist__job_new(fn, arg, out != NULL);
	if (!j)
		return ENOMEM;
	if (token) {
		heist__cancel_acquire(token);
		j->token = token;
	}
	heist__job_set_priority(j, priority);
	return heist__submit_job(pool, j, out);
}

HEIST_EXPORT int
heist_submit(heist_pool *pool, heist_fn fn, void *arg, heist_future **out)
{
	if (out)
		*out = NULL;
	if (!pool || !fn)
		return EINVAL;
	return heist__submit_new(pool, fn, arg, NULL, HEIST_PRIORITY_NORMAL, out);
}

HEIST_EXPORT int
heist_submit_priority(heist_pool *pool, int priority, heist_fn fn, void *arg,
		      heist_future **out)
{
	if (out)
		*out = NULL;
	if (!pool || !fn || !heist__priority_valid(priority))
		return EINVAL;
	return heist__submit_new(pool, fn, arg, NULL, priority, out);
}

HEIST_EXPORT int
heist_submit_cancellable(heist_pool *pool, heist_cancel *c, heist_fn fn, void *arg,
			 heist_future **out)
{
	if (out)
		*out = NULL;
	if (!pool || !fn || !c)
		return EINVAL;
	return heist__submit_new(pool, fn, arg, c, HEIST_PRIORITY_NORMAL, out);
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
