/* wait.c - waiting for a task to finish. A worker never blocks its thread while it
 * waits: it runs other work (help_pick says which) until the task is done, stealing
 * back from the thief first when the task is a stolen child (leapfrogging, Wagner and
 * Calder), and when there is nothing to run it backs off (idle_step says how). Any
 * other thread spins briefly, then sleeps on the future's futex. */
#include "wait.h"

#include <sched.h>

#include "clock.h"
#include "futex.h"
#include "future.h"
#include "steal.h"
#include "worker.h"

enum {
	/* An outside waiter's spin, about 3 us, of which QUEUED_PAUSES while no
	 * worker has taken the task. */
	SPIN_PAUSES = 128,
	QUEUED_PAUSES = 32,
	/* A worker waiting for a stolen child: rounds of short pauses before it
	 * starts yielding its core (the thief runs; it may be preempted here). */
	STOLEN_PATIENCE = 256,
	/* A worker waiting for a future: empty rounds before it naps on the future's
	 * futex, and the longest nap before it looks for work again. */
	NAP_AFTER = 64,
	NAP_NS = 100000,
};

/* What a worker waits for: a spawned task (stolen) or a job. */
struct awaited {
	struct task *task;
	struct heist_future *job;
};

static bool
awaited_done(const struct awaited *a)
{
	if (a->job)
		return heist__job_done(a->job);
	/* acquire: pairs with the thief's release store of TASK_DONE. */
	return atomic_load_explicit(&a->task->state, memory_order_acquire) == TASK_DONE;
}

/* The rule of what a waiting worker may run next, or NULL: for a stolen child, a task
 * of its thief's first (its deque holds the child's own children), then anything. */
static struct task *
help_pick(struct worker *w, const struct awaited *a)
{
	struct task *x = NULL;
	if (a->task) {
		/* relaxed: a hint (task.h). */
		struct worker *thief = atomic_load_explicit(&a->task->thief,
							    memory_order_relaxed);
		if (thief && thief != w)
			x = heist__steal_from(w, thief);
	}
	return x ? x : heist__worker_find_work(w);
}

/* Sleep on a job's futex for at most timeout_ns unless it is done. */
static void
nap(struct heist_future *j, uint64_t timeout_ns)
{
	uint32_t s = atomic_load_explicit(&j->state, memory_order_relaxed);
	if ((s & FUT_MASK) >= FUT_DONE)
		return;
	/* relaxed: the bit only asks the finisher for a wake; the futex's own compare
	 * orders our sleep against its exchange. */
	if (!(s & FUT_WAITERS) &&
	    !atomic_compare_exchange_strong_explicit(&j->state, &s, s | FUT_WAITERS,
						     memory_order_relaxed, memory_order_relaxed))
		return;
	heist__futex_wait(&j->state, s | FUT_WAITERS, timeout_ns);
}

/* Nothing to run this round. Returns false when the deadline passed. A stolen
 * child's wait never sleeps (its thief is running it); a future's wait naps on the
 * future after NAP_AFTER rounds, and wakes every NAP_NS to look for work again. */
static bool
idle_step(struct worker *w, const struct awaited *a, unsigned *idle, uint64_t deadline_ns)
{
	if (a->task) {
		urcu_qsbr_quiescent_state();
		heist__backoff_long(*idle, STOLEN_PATIENCE);
		*idle += *idle < STOLEN_PATIENCE;
		return true;
	}
	uint64_t timeout = NAP_NS;
	if (deadline_ns) {
		uint64_t now = heist__now_ns();
		if (now >= deadline_ns)
			return false;
		if (deadline_ns - now < timeout)
			timeout = deadline_ns - now;
	}
	urcu_qsbr_quiescent_state();
	if (*idle < NAP_AFTER) {
		heist__backoff((*idle)++);
		return true;
	}
	heist__worker_flush_done(w);
	urcu_qsbr_thread_offline();
	nap(a->job, timeout);
	urcu_qsbr_thread_online();
	return true;
}

/* The one helping wait: run what help_pick allows until a is done. */
static bool
help_until(struct worker *w, const struct awaited *a, uint64_t deadline_ns)
{
	unsigned idle = 0;
	while (!awaited_done(a)) {
		struct task *x = help_pick(w, a);
		if (x) {
			heist__worker_run(w, x);
			idle = 0;
		} else if (!idle_step(w, a, &idle, deadline_ns)) {
			return false;
		}
	}
	return true;
}

int
heist__wait_stolen(struct worker *w, struct task *t)
{
	struct awaited a = {t, NULL};
	help_until(w, &a, 0);
	return t->result;
}

/* An outside thread's wait: spin a few microseconds (a result from a hot worker
 * arrives in well under one), then sleep: spinning longer can keep a worker that the
 * kernel woke on this CPU from running the very task we wait for. */
static bool
block(struct heist_future *j, uint64_t deadline_ns)
{
	for (int i = 0; i < SPIN_PAUSES; i++) {
		uint32_t s = atomic_load_explicit(&j->state, memory_order_acquire);
		if ((s & FUT_MASK) >= FUT_DONE)
			return true;
		if ((s & FUT_MASK) == FUT_QUEUED && i >= QUEUED_PAUSES)
			break;	/* no worker has it yet: it may need this CPU */
		cpu_relax();
	}
	for (;;) {
		/* acquire: pairs with the final release store (finish, cancel). */
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
		/* relaxed: as in nap. */
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

bool
heist__wait_job(struct heist_future *j, uint64_t deadline_ns)
{
	struct worker *w = heist__self;
	if (!w)
		return block(j, deadline_ns);
	struct awaited a = {NULL, j};
	return help_until(w, &a, deadline_ns);
}
