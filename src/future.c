/* future.c - jobs and futures: creation, running, cancellation, completion, waiting
 * and release. The worker-side wait (helping) lives in worker.c. */
#include "future.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "futex.h"
#include "internal.h"
#include "profile.h"
#include "worker.h"

enum {
	SPIN_PAUSES = 128,	/* an outside waiter's spin, about 3 us */
	QUEUED_PAUSES = 32,	/* of which, while no worker has taken the task */
};

/* The job this thread is running, for heist_cancelled. */
static __thread struct heist_future *current_job __attribute__((tls_model("initial-exec")));

struct heist_future *
heist__job_swap_current(struct heist_future *j)
{
	struct heist_future *old = current_job;
	current_job = j;
	return old;
}

struct heist_future *
heist__job_new(heist_fn fn, void *arg, bool with_future)
{
	struct heist_future *j = heist__record_alloc();
	if (!j)
		return NULL;
	j->task.fn = fn;
	j->task.arg = arg;
	atomic_init(&j->task.state, TASK_JOB);
	j->task.result = 0;
	atomic_init(&j->task.thief, NULL);
	j->task.created_tsc = 0;
	atomic_init(&j->task.next, NULL);
	atomic_init(&j->state, FUT_QUEUED);
	atomic_init(&j->refs, with_future ? 2 : 1);
	atomic_init(&j->cancel_requested, false);
	j->token = NULL;
	j->heap_copy = NULL;
	return j;
}

int
heist__job_copy_arg(struct heist_future *j, const void *arg, size_t size)
{
	void *dst = j->inline_copy;
	if (size > sizeof(j->inline_copy)) {
		dst = j->heap_copy = malloc(size);
		if (!dst)
			return ENOMEM;
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
	free(j->heap_copy);
	j->heap_copy = NULL;
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

void
heist__job_release(struct heist_future *j)
{
	/* acq_rel: the last owner frees the record after every other owner's use. */
	if (atomic_fetch_sub_explicit(&j->refs, 1, memory_order_acq_rel) == 1)
		heist__record_free(j);
}

/* Move to a final state (DONE or CANCELLED) and wake sleepers. */
static void
finish(struct heist_future *j, uint32_t final)
{
	/* release: publishes task.result and everything the task wrote; pairs with
	 * the acquire loads in heist__job_done and heist_future_wait. */
	uint32_t old = atomic_exchange_explicit(&j->state, final, memory_order_acq_rel);
	if (old & FUT_WAITERS)
		heist__futex_wake(&j->state, INT_MAX);
}

static bool
token_cancelled(const struct heist_future *j)
{
	/* acquire: pairs with the release store in heist_cancel_request. */
	return j->token && atomic_load_explicit(&j->token->requested, memory_order_acquire);
}

void
heist__job_run(struct heist_future *j, struct worker *w)
{
	uint32_t s = atomic_load_explicit(&j->state, memory_order_relaxed);
	while ((s & FUT_MASK) == FUT_QUEUED) {	/* else cancelled while queued */
		if (token_cancelled(j)) {
			/* The token was cancelled before a worker took the job: it
			 * never runs. release: pairs with the waiters' acquire. */
			if (atomic_compare_exchange_weak_explicit(&j->state, &s, FUT_CANCELLED,
								  memory_order_release,
								  memory_order_relaxed)) {
				if (s & FUT_WAITERS)
					heist__futex_wake(&j->state, INT_MAX);
				break;
			}
			continue;
		}
		/* acquire on success: pairs with nothing new (the queue's hand-off
		 * already published the job); a CAS because cancel races us. */
		if (atomic_compare_exchange_weak_explicit(&j->state, &s,
							  (s & FUT_WAITERS) | FUT_RUNNING,
							  memory_order_acquire,
							  memory_order_relaxed)) {
			struct heist_future *outer = current_job;
			counter_add(&w->stats.executed, 1);	/* before it can be waited for */
			uint64_t started = HEIST_PROFILER && w->profile ? heist__tsc() : 0;
			current_job = j;
			j->task.result = j->task.fn(j->task.arg);
			current_job = outer;
			if (HEIST_PROFILER && unlikely(w->profile))
				heist__profile_record(w->prof, w->index, j->task.created_tsc,
						      started, heist__tsc_end());
			finish(j, FUT_DONE);
			break;
		}
	}
	drop_belongings(j);
	heist__job_release(j);
}

bool
heist__job_block(struct heist_future *j, uint64_t deadline_ns)
{
	/* Spin a few microseconds (a result from a hot worker arrives in well under
	 * one), then sleep: spinning longer can keep a worker that the kernel woke on
	 * this CPU from running the very task we wait for. */
	for (int i = 0; i < SPIN_PAUSES; i++) {
		uint32_t s = atomic_load_explicit(&j->state, memory_order_acquire);
		if ((s & FUT_MASK) >= FUT_DONE)
			return true;
		if ((s & FUT_MASK) == FUT_QUEUED && i >= QUEUED_PAUSES)
			break;	/* no worker has it yet: it may need this CPU */
		cpu_relax();
	}

	for (;;) {
		uint32_t s = atomic_load_explicit(&j->state, memory_order_acquire);
		if ((s & FUT_MASK) >= FUT_DONE)
			return true;
		uint64_t timeout = 0;
		if (deadline_ns) {
			uint64_t now = heist__now_ns();
			if (now >= deadline_ns)
				return false;
			timeout = deadline_ns - now;
		}
		if (!(s & FUT_WAITERS) &&
		    !atomic_compare_exchange_weak_explicit(&j->state, &s, s | FUT_WAITERS,
							   memory_order_relaxed,
							   memory_order_relaxed))
			continue;	/* it changed: look again */
		/* The kernel sleeps only while the word still reads s | WAITERS; the
		 * finishing exchange changes it and then sees WAITERS and wakes us. */
		heist__futex_wait(&j->state, s | FUT_WAITERS, timeout);
	}
}

void
heist__job_nap(struct heist_future *j, uint64_t timeout_ns)
{
	uint32_t s = atomic_load_explicit(&j->state, memory_order_relaxed);
	if ((s & FUT_MASK) >= FUT_DONE)
		return;
	if (!(s & FUT_WAITERS) &&
	    !atomic_compare_exchange_strong_explicit(&j->state, &s, s | FUT_WAITERS,
						     memory_order_relaxed, memory_order_relaxed))
		return;
	heist__futex_wait(&j->state, s | FUT_WAITERS, timeout_ns);
}

HEIST_EXPORT int
heist_future_wait(heist_future *f)
{
	if (!f)
		return EINVAL;
	if (!heist__job_done(f)) {
		struct worker *w = heist__self;
		if (w)
			heist__worker_wait_job(w, f);
		else
			heist__job_block(f, 0);
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
	if (timeout_ns == 0)
		return false;
	uint64_t deadline = heist__now_ns() + timeout_ns;
	struct worker *w = heist__self;
	if (w)
		return heist__worker_wait_job_until(w, f, deadline);
	return heist__job_block(f, deadline);
}

HEIST_EXPORT bool
heist_future_done(const heist_future *f)
{
	return f && heist__job_done(f);
}

HEIST_EXPORT void
heist_future_cancel(heist_future *f)
{
	if (!f)
		return;
	atomic_store_explicit(&f->cancel_requested, true, memory_order_relaxed);
	uint32_t s = atomic_load_explicit(&f->state, memory_order_relaxed);
	while ((s & FUT_MASK) == FUT_QUEUED) {
		/* release: pairs with the waiters' acquire loads (nothing to publish but
		 * the state itself). The worker that later takes the job sees CANCELLED
		 * through its own CAS loop in heist__job_run and skips it. */
		if (atomic_compare_exchange_weak_explicit(&f->state, &s, FUT_CANCELLED,
							  memory_order_release,
							  memory_order_relaxed)) {
			if (s & FUT_WAITERS)
				heist__futex_wake(&f->state, INT_MAX);
			return;
		}
	}
}

HEIST_EXPORT void
heist_future_release(heist_future *f)
{
	if (f)
		heist__job_release(f);
}

HEIST_EXPORT bool
heist_cancelled(void)
{
	struct heist_future *j = current_job;
	return j && (atomic_load_explicit(&j->cancel_requested, memory_order_relaxed) ||
		     token_cancelled(j));
}
