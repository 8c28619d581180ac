/* future.c - jobs and their futures: creation, argument copies, running a job a
 * worker took, completion, and the public future calls, which hand waiting to wait.c.
 * Submitting is submit.c's; cancellation (of a future or by a token) is cancel.c's. */
#include "future.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "futex.h"
#include "internal.h"
#include "probe.h"
#include "wait.h"
#include "worker.h"

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

/* RUNNING -> DONE, and wake sleepers. */
static void
finish(struct heist_future *j)
{
	/* release: publishes task.result and everything the task wrote; pairs with
	 * the acquire loads in heist__job_done and heist_future_wait. An exchange, not
	 * a store, only to read the WAITERS bit: the kernel's compare of the futex word
	 * orders a sleeper against it, so reading the bit needs no acquire. */
	uint32_t old = atomic_exchange_explicit(&j->state, FUT_DONE, memory_order_release);
	if (old & FUT_WAITERS)
		heist__futex_wake(&j->state, INT_MAX);
}

void
heist__job_run(struct heist_future *j, struct worker *w)
{
	if (heist__job_take(j)) {
		counter_add(&w->stats.executed, 1);	/* before it can be waited for */
		uint64_t started = HEIST_PROFILER && w->profile ? heist__tsc() : 0;
		struct heist_future *outer = heist__current_job_swap(j);
		j->task.result = j->task.fn(j->task.arg);
		heist__current_job_swap(outer);
		if (HEIST_PROFILER && unlikely(w->profile))
			heist__profile_record(w->prof, w->index, j->task.created_tsc, started,
					      heist__tsc_end());
		finish(j);
	}
	drop_belongings(j);
	heist__job_release(j);
}

HEIST_EXPORT int
heist_future_wait(heist_future *f)
{
	if (!f)
		return EINVAL;
	if (!heist__job_done(f))
		heist__wait_job(f, 0);
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
	return heist__wait_job(f, heist__now_ns() + timeout_ns);
}

HEIST_EXPORT bool
heist_future_done(const heist_future *f)
{
	return f && heist__job_done(f);
}

HEIST_EXPORT void
heist_future_release(heist_future *f)
{
	if (f)
		heist__job_release(f);
}
