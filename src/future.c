/* SPDX-License-Identifier: MIT */
/* future.c - jobs and their futures: creation, argument copies, running a job a
 * worker took, completion, and the public future calls, which hand waiting to wait.c.
 * Submitting is submit.c's; cancellation (of a future or by a token) is cancel.c's. */
#include "future.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "platform/platform.h"
#include "internal.h"
#include "inherit.h"
#include "pool.h"
#include "probe.h"
#include "timer.h"
#include "wait.h"
#include "worker.h"

#if HEIST__TLS_EXPORTED
HEIST__TLS const struct heist__job_frame *heist__job_frames;
#endif

/* refs: its first count and flags. */
static inline struct heist_future *
job_init(struct heist_future *j, heist_fn fn, void *arg, uint32_t refs)
{
	if (!j)
		return NULL;
	j->task.fn = fn;
	j->task.arg = arg;
	atomic_init(&j->task.state, TASK_JOB);
	j->task.result = 0;
	j->task.pool = NULL;	/* set by the submit that queues it */
	j->task.created_tsc = 0;
	atomic_init(&j->task.next, NULL);
	atomic_init(&j->state, FUT_QUEUED);
	atomic_init(&j->refs, refs);
	atomic_init(&j->runner, NULL);
	j->token = NULL;
	atomic_init(&j->thens, NULL);
	return j;
}

struct heist_future *
heist__job_new(heist_fn fn, void *arg, bool with_future)
{
	return job_init(heist__record_alloc(), fn, arg, with_future ? 1 + REF_USER : 1);
}

struct heist_future *
heist__job_new_waiting(struct heist_pool *pool, heist_fn fn, void *arg, bool with_future)
{
	struct heist_future *j =
		job_init(heist__record_alloc_wide(), fn, arg,
			 (with_future ? 1 + REF_USER : 1) | REF_UNQUEUED | REF_DEPS);
	if (j)
		j->task.pool = pool;
	return j;
}

int
heist__job_copy_arg(struct heist_future *j, const void *arg, size_t size)
{
	void *dst = j->inline_copy;
	if (size > sizeof(j->inline_copy)) {
		if (!(dst = heist__malloc(size)))
			return ENOMEM;
		heist__job_set_flag(j, REF_HEAP, true);
	}
	if (size)
		memcpy(dst, arg, size);
	j->task.arg = dst;
	return 0;
}

/* What the job holds only while queued or running: its argument copy and token. */
static void
drop_belongings(struct heist_future *j)
{
	/* relaxed: the flags were set before the job was queued. */
	uint32_t refs = atomic_load_explicit(&j->refs, memory_order_relaxed);
	if (refs & REF_HEAP)
		free(j->task.arg);
	if (refs & REF_LENT)
		j->token = NULL;	/* not ours to release */
	if (j->token) {
		heist_cancel_release(j->token);
		j->token = NULL;
	}
}

void
heist__job_discard(struct heist_future *j)
{
	drop_belongings(j);
	heist__record_free(j);
}

static void
job_free(struct heist_future *j)
{
	/* relaxed: nobody else holds it. No REF_USER in a freed record: a second
	 * release of its future aborts with a message until the record is reused. */
	atomic_store_explicit(&j->refs, 0, memory_order_relaxed);
	heist__record_free(j);
}

void
heist__job_release(struct heist_future *j)
{
	/* acq_rel: the last owner frees the record after every other owner's use. */
	if ((atomic_fetch_sub_explicit(&j->refs, 1, memory_order_acq_rel) & ~REF_FLAGS) == 1)
		job_free(j);
}


/* The list of what waits for j's end, and final states: a Dekker pair. A finisher
 * stores the final state and then loads the list; a pusher links its node and then
 * loads the state; all four seq_cst, so at least one of them sees the other. A
 * finisher that sees an empty list leaves it (no write to the job's line on the path
 * of every job: its waiter reads that line); whoever sees the other takes the whole
 * list with an exchange, which hands each node to exactly one of them. */

/* Take j's list, closing it, and fire its nodes but `mine`; whether mine was in it. */
static bool
fire_list(struct heist_future *j, const struct heist__then *mine)
{
	/* acq_rel: acquire, to see the nodes the pushers released; release, so that a
	 * pusher that finds the list closed sees the final state stored before. */
	struct heist__then *n = atomic_exchange_explicit(&j->thens, THENS_CLOSED,
							 memory_order_acq_rel);
	bool found = false;
	for (; n && n != THENS_CLOSED;) {
		struct heist__then *next = n->next;	/* n may be gone once fired */
		if (n == mine)
			found = true;
		else
			n->fire(n, j);
		n = next;
	}
	return found;
}

bool
heist__job_then_final(struct heist_future *j, struct heist__then *node)
{
	return !fire_list(j, node);
}

/* Fire j's list for a job that the worker's loop ran (not nested): back in its loop,
 * the worker pops its deque next, so the first job this makes runnable stays private
 * there (worker.h, loop_job_ending). */
static noinline void
fire_in_loop(struct heist_future *j, struct worker *w)
{
	w->loop_job_ending = true;
	fire_list(j, NULL);
	w->loop_job_ending = false;
}

/* After j's final store: fire its list, if anything waits. loop: the worker whose
 * loop took j from a queue and ran it, or NULL. */
static inline void
finalized(struct heist_future *j, struct worker *loop)
{
	/* seq_cst: the finisher's load of the pair above, after its seq_cst final
	 * store. Empty: a pusher still to come sees the final state and fires its own. */
	struct heist__then *head = atomic_load_explicit(&j->thens, memory_order_seq_cst);
	if (head && head != THENS_CLOSED) {
		if (loop && loop->running == 1)
			fire_in_loop(j, loop);
		else
			fire_list(j, NULL);
	}
}

void
heist__job_finalized(struct heist_future *j)
{
	finalized(j, NULL);
}

/* RUNNING -> DONE, wake sleepers, and run what waits for the job. loop: as for
 * finalized. */
static void
finish(struct heist_future *j, struct worker *loop)
{
	/* seq_cst: the finisher's store of the Dekker pair above (a release would do
	 * for the waiters): publishes task.result and everything the task wrote; pairs
	 * with the acquire loads in heist__job_done and heist_future_wait. An exchange, not
	 * a store, only to read the WAITERS bit: the kernel's compare of the futex word
	 * orders a sleeper against it, so reading the bit needs no acquire. */
	uint32_t old = atomic_exchange_explicit(&j->state, FUT_DONE, memory_order_seq_cst);
	if (old & FUT_WAITERS)
		heist__futex_wake(&j->state, INT_MAX);
	finalized(j, loop);
}

bool
heist__job_complete(struct heist_future *j, int r)
{
	/* Win j first, as a worker would (its own cancel or a claim may race us), and
	 * write the result only then: a loser must not touch it. */
	if (!heist__job_take(j))
		return false;
	j->task.result = r;	/* read only by those who see DONE, after finish */
	finish(j, NULL);
	return true;
}

void
heist__job_forgo(struct heist_future *j, int r)
{
	/* Nobody else takes it (it was never queued, and REF_UNQUEUED kept waiters
	 * from claiming it), so its belongings are ours either way. */
	bool won = heist__job_take(j);
	drop_belongings(j);
	if (!won)
		return;	/* its own future cancelled it first */
	j->task.result = r;
	finish(j, NULL);
}

/* A periodic job's run returned 0 (timer.c): RUNNING -> QUEUED, and back in its pool's
 * timer heap for its next due time, unless it was cancelled meanwhile (by its future:
 * CANCEL_ASKED; or its token): then RUNNING -> CANCELLED. If the heap refuses it (the
 * pool is being destroyed, or no memory), it ends with that error, never run again.
 * Its waiters sleep on through the round trip: only a final state wakes them. */
static void
run_again(struct heist_future *j)
{
	uint32_t s = atomic_load_explicit(&j->state, memory_order_relaxed);
	if (!(s & FUT_CANCEL_ASKED) && !heist__job_token_cancelled(j)) {
		/* relaxed: read only by a runner, which the next run's take and the
		 * queue's hand-off order after this. */
		atomic_store_explicit(&j->runner, NULL, memory_order_relaxed);
		atomic_fetch_or_explicit(&j->refs, REF_UNQUEUED, memory_order_relaxed);
		/* release: the fields above before the state that lets the heap's
		 * firer queue it; a cancel racing us sets CANCEL_ASKED: the CAS sees it. */
		while (!(s & FUT_CANCEL_ASKED))
			if (atomic_compare_exchange_weak_explicit(&j->state, &s,
								  (s & ~(uint32_t)FUT_MASK) | FUT_QUEUED,
								  memory_order_release,
								  memory_order_relaxed)) {
				int err = heist__timer_repeat(j);
				if (err)
					heist__job_forgo(j, err);	/* not if cancelled */
				return;
			}
	}
	drop_belongings(j);
	heist__job_cancel_taken(j);
}

/* Run a job that heist__job_take gave us. Its belongings go before it is marked
 * done: once it is, the last reference may go at any moment. The job names its
 * runner, so that its waiters may help it and follow what it waits for (wait.c): a
 * job taken from a queue with the floor of its work in our deque; a claimed one with
 * RUNNER_CLAIMED, for it still sits in its queue, where task.floor is the injector's
 * link. */
static void
run_taken(struct heist_future *j, struct worker *w, bool from_queue)
{
	counter_add(&w->stats.executed, 1);	/* before it can be waited for */
	if (from_queue) {
		/* release: floor before runner, as in worker.c for a stolen task. */
		j->task.floor = heist__deque_bottom(&w->dq);
		atomic_store_explicit(&j->runner, w, memory_order_release);
	} else {
		/* release: what heist__job_runner's readers rely on (future.h). */
		atomic_store_explicit(&j->runner,
				      (struct worker *)((uintptr_t)w | RUNNER_CLAIMED),
				      memory_order_release);
	}
	/* A job not sampled (created_tsc 0) is neither timed nor recorded. How it came
	 * (heist__worker_took) is read before it runs, which may take other tasks. */
	bool timed = HEIST_PROFILER && unlikely(w->profile) && j->task.created_tsc;
	struct heist__run_from from = w->run_from;
	if (heist__worker_is_guest(w) && from.path != HEIST_PATH_INLINE)
		from.path = HEIST_PATH_GUEST;
	uint64_t started = timed ? heist__tsc() : 0;
	/* On the thread's stack of jobs while its function runs (future.h), not once
	 * it is final: then it is no job a wait needs. */
	struct heist__job_frame frame = {j, heist__job_frames_get()};
	heist__job_frames_set(&frame);
	j->task.result = j->task.fn(j->task.arg);
	heist__returned();	/* not in a child forked inside it (inherit.h) */
	heist__job_frames_set(frame.outer);
	if (timed)
		heist__profile_record(w->prof, w->index, HEIST_TASK_SUBMITTED,
				      j->task.created_tsc, started, heist__tsc_end(), &from);
	/* relaxed: the flags were set before the job was queued. */
	if (unlikely(atomic_load_explicit(&j->refs, memory_order_relaxed) & REF_PERIODIC) &&
	    !j->task.result) {
		run_again(j);
		return;
	}
	drop_belongings(j);
	finish(j, from_queue ? w : NULL);
}

/* A job we won: run it, unless its token was cancelled before it could start. It is
 * the thread's job (for heist_cancelled, and its idle epoch for what it submits) until
 * it is final, so that the continuations its end queues count in its epoch too: it is
 * still counted in live meanwhile (submit.c). */
static void
run_won(struct heist_future *j, struct worker *w, bool from_queue)
{
	struct heist_future *outer = heist__current_job_swap(j);
	unsigned outer_epoch = w->cur_epoch;
	w->cur_epoch = heist__job_epoch(j);
	if (heist__job_token_cancelled(j)) {
		drop_belongings(j);
		heist__job_cancel_taken(j);
	} else {
		run_taken(j, w, from_queue);
	}
	w->cur_epoch = outer_epoch;
	heist__current_job_swap(outer);
}

void
heist__job_run(struct heist_future *j, struct worker *w)
{
	if (heist__job_take(j)) {
		run_won(j, w, true);
	} else if ((atomic_load_explicit(&j->state, memory_order_relaxed) &
		    (FUT_MASK | FUT_TAKEN)) == FUT_CANCELLED) {
		/* relaxed: CANCELLED is final, and we hold the queue's reference.
		 * Cancelled by its future while queued, it never ran: what it holds is
		 * ours to drop. A job that a waiter won (RUNNING, DONE, or CANCELLED with
		 * FUT_TAKEN) had its belongings dropped by that waiter. */
		drop_belongings(j);
	}
	heist__job_release(j);
}

bool
heist__job_claim(struct heist_future *j, struct worker *w)
{
	if (!heist__job_take(j))
		return false;
	heist__worker_took(w, HEIST_PATH_INLINE, &j->task, false);
	run_won(j, w, false);
	return true;
}

/* Whether j, not final, could still be made final by a thread of an inherited pool
 * only, or depends on one that could (a continuation, a when_all): then, in a child
 * process, no thread will ever finish it (inherit.h). Chains are followed DEP_HOPS
 * deep; past that a wait waits. */
enum { DEP_HOPS = 64 };

struct orphan_look {
	unsigned hops;
	bool found;
};

static bool orphaned(struct heist_future *j, unsigned hops);

static void
dep_orphaned(void *ctx, struct heist_future *d)
{
	struct orphan_look *o = ctx;
	if (!o->found && orphaned(d, o->hops))
		o->found = true;
}

static bool
orphaned(struct heist_future *j, unsigned hops)
{
	if (heist__job_done(j) || hops > DEP_HOPS)
		return false;
	/* The pool may be gone (a when_all or continuation whose pool was destroyed
	 * before it was runnable): looked up, not read. A promise is the program's to
	 * set, in the child as anywhere: its pool does not decide. relaxed: the flags
	 * were set before the caller had the future. */
	uint32_t refs = atomic_load_explicit(&j->refs, memory_order_relaxed);
	if (j->task.pool && !heist__job_is_promise(refs) &&
	    heist__pool_inherited_if_alive(j->task.pool))
		return true;
	struct orphan_look o = {hops + 1, false};
	heist__job_each_dep(j, dep_orphaned, &o);
	return o.found;
}

static bool
job_orphaned(struct heist_future *j)
{
	return heist__generation() != 0 && orphaned(j, 0);
}

HEIST_EXPORT int
heist_future_wait(heist_future *f)
{
	if (!f)
		return EINVAL;
	if (!heist__job_done(f)) {
		if (job_orphaned(f))
			return ESHUTDOWN;
		heist__wait_job(f, HEIST_NEVER);
	}
	/* acquire: see heist__job_done. */
	uint32_t s = atomic_load_explicit(&f->state, memory_order_acquire);
	return (s & FUT_MASK) == FUT_CANCELLED ? ECANCELED : f->task.result;
}

HEIST_EXPORT bool
heist_future_wait_for(heist_future *f, uint64_t timeout_ns)
{
	if (!f)
		return false;
	if (heist__job_done(f))
		return true;
	if (timeout_ns == 0 || job_orphaned(f))
		return false;
	return heist__wait_job(f, heist__deadline_after(timeout_ns));
}

HEIST_EXPORT bool
heist_future_done(const heist_future *f)
{
	return f && heist__job_done(f);
}

HEIST_EXPORT void
heist_future_release(heist_future *f)
{
	if (!f)
		return;
	/* acq_rel: as in heist__job_release. */
	uint32_t old = atomic_fetch_and_explicit(&f->refs, ~(uint32_t)REF_USER,
						 memory_order_acq_rel);
	if (!(old & REF_USER)) {
		fputs("heist: heist_future_release of a future that was already released\n",
		      stderr);
		abort();
	}
	if ((old & ~REF_FLAGS) == REF_USER)
		job_free(f);
}
