/* wait.c - waiting for a task to finish: a sync whose child was stolen, a future on a
 * worker, a future on any other thread.
 *
 * The waiting rule (docs/architecture.md has the argument). A worker that waits for X
 * runs, on top of the frame that waits, only work that X itself needs, so that nothing
 * it runs can in turn wait for that frame:
 *  - X itself, if X is a job still queued in the worker's own pool (it claims it);
 *  - if X runs on another worker of the pool (a thief of the spawned child X, or the
 *    worker that took job X from a queue): a spawned task from the top of that
 *    worker's deque at or above the floor it recorded when it started X. Everything
 *    pushed there since is X's own or its descendants' (strict fork-join: each is
 *    synced by a frame of X before X returns), as long as X runs, which is checked
 *    between reading the slot and taking it (deque.c). This is leapfrogging (Wagner
 *    and Calder). A job found there is no part of X (jobs are detached): it goes back
 *    to the injector, for any worker.
 *  - if X is a job that may not run yet (a continuation, a when_all future): by the
 *    same rule, what X waits for (its antecedent, its inputs), and so on, which X
 *    needs as much: running it can wait for the waiting frame only if X itself does,
 *    a cycle that no scheduler can finish.
 * Nothing else: not the injector, not other deques, not the worker's own older tasks.
 * When it can help with nothing for a while it parks on X's word, looking again every
 * PARK_NS, and a spare thread stands in for it while other work waits (spare.h). A
 * timed wait runs nothing at all, not even X (whose completion may depend on what the
 * waiting frame does after its deadline): it parks, and returns by its deadline.
 *
 * Any other thread spins briefly, then sleeps on the future's futex. */
#include "wait.h"

#include <sched.h>

#include "clock.h"
#include "futex.h"
#include "future.h"
#include "group.h"
#include "pool.h"
#include "worker.h"

enum {
	/* An outside waiter's spin, about 3 us, of which QUEUED_PAUSES while no
	 * worker has taken the task. */
	SPIN_PAUSES = 128,
	QUEUED_PAUSES = 32,
	/* A worker with nothing to help with: rounds of short pauses, then rounds
	 * yielding its core (the thread it waits for may be preempted here), then it
	 * parks. */
	PATIENCE_SPINS = 256,
	PATIENCE_YIELDS = 64,
	HELP_RETRIES = 4,	/* tries on a thief that keeps winning races */
	DEPS_DEPTH = 8,		/* how far a wait follows what its job waits for */
};
/* A parked worker looks again this often: for work it may help with, and for work
 * that needs a stand-in. */
#define PARK_NS ((uint64_t)200000)

/* What a worker waits for: a spawned task (stolen) or a job. */
struct awaited {
	struct task *task;
	struct heist_future *job;
	struct heist_group *group;
};

static bool
awaited_done(const struct awaited *a)
{
	if (a->job)
		return heist__job_done(a->job);
	if (a->group)
		return heist__group_done(a->group);
	/* acquire: pairs with the thief's release exchange of TASK_DONE (worker.c). */
	return atomic_load_explicit(&a->task->state, memory_order_acquire) == TASK_DONE;
}

static bool
still_awaited(const void *a)
{
	return !awaited_done(a);
}

/* A job X may not run on top of the frame that found it: give it to any worker. */
static void
requeue(struct worker *w, struct task *x)
{
	heist__injector_requeue(&w->pool->injector, x);
	heist__sleep_notify(&w->pool->sleep);
}

/* The worker running the awaited task, whose deque holds the task's own work at and
 * above *floor; NULL if none is known (not started yet, or a waiter claimed it).
 * acquire: pairs with the runner's release store, made after it set the floor. */
static struct worker *
runner_of(const struct awaited *a, int64_t *floor)
{
	struct worker *r;
	if (a->job) {
		r = atomic_load_explicit(&a->job->runner, memory_order_acquire);
		if (r)
			*floor = a->job->task.floor;
	} else {
		r = task_thief(atomic_load_explicit(&a->task->thief, memory_order_acquire));
		if (r)
			*floor = a->task->floor;
	}
	return r;
}

/* Claim the awaited job if it is still queued (and may run: not a continuation
 * waiting for its antecedent, nor a when_all). relaxed: peeks; heist__job_claim's CAS
 * decides, and REF_UNQUEUED is cleared before such a job can be queued. */
static bool
claim(struct worker *w, struct heist_future *j)
{
	return (atomic_load_explicit(&j->state, memory_order_relaxed) & FUT_MASK) ==
		       FUT_QUEUED &&
	       !(atomic_load_explicit(&j->refs, memory_order_relaxed) & REF_UNQUEUED) &&
	       heist__job_claim(j, w);
}

/* A group's wait: the group's jobs at the bottom of our own deque (submitted by this
 * frame, say), which the frame requires. Anything else there is left alone: put back
 * where it was (taken first, so that we read no record a thief may have run and
 * freed meanwhile; there is room, since we just took it), and public again. */
static bool
help_group(struct worker *w, struct heist_group *g)
{
	struct task *x = heist__deque_pop(&w->dq);
	if (!x)
		return false;
	/* relaxed: the kind never changes once queued (worker.c). */
	if (atomic_load_explicit(&x->state, memory_order_relaxed) == TASK_JOB &&
	    heist__group_owns(g, (struct heist_future *)x)) {
		heist__worker_took(w, HEIST_PATH_HELPING, x, false);
		heist__worker_run(w, x);
		return true;
	}
	heist__deque_try_push(&w->dq, x);	/* cannot fail: its slot is free */
	heist__worker_publish(w, 0);
	return false;
}

/* A spawned task from the top of the deque of the worker that runs a's task, at or
 * above the floor it recorded, while a's task runs. */
static bool
help_runner(struct worker *w, const struct awaited *a)
{
	int64_t floor = 0;
	struct worker *runner = runner_of(a, &floor);
	if (!runner || runner == w)
		return false;
	for (int i = 0; i < HELP_RETRIES; i++) {
		struct task *x;
		counter_add(&w->stats.steal_attempts, 1);
		switch (heist__deque_steal_above(&runner->dq, floor, still_awaited, a, &x,
						 w->hazard)) {
		case STEAL_OK:
			counter_add(&w->stats.stolen, 1);
			/* relaxed: the kind never changes once queued (worker.c). */
			if (atomic_load_explicit(&x->state, memory_order_relaxed) == TASK_JOB) {
				requeue(w, x);
			} else {
				w->stolen_from = runner->index;
				heist__worker_took(w, HEIST_PATH_HELPING, x, true);
				heist__worker_run(w, x);
			}
			return true;
		case STEAL_EMPTY:
			return false;
		case STEAL_ABORT:
			cpu_relax();
			break;
		}
	}
	return false;
}

static bool help_job(struct worker *w, struct heist_future *j, unsigned depth);

struct dep_help {
	struct worker *w;
	unsigned depth;
};

static bool
help_dep(void *ctx, struct heist_future *d)
{
	struct dep_help *h = ctx;
	return help_job(h->w, d, h->depth);
}

/* The rule for a job j that we wait for, or that what we wait for waits for: j
 * itself, the work of j's runner, or, for a job that may not run yet (a continuation,
 * a when_all future), what it waits for in turn, DEPS_DEPTH deep at most. A job of
 * another pool runs on that pool's workers, and its runner may belong to a pool that
 * is gone once the job is done: we touch nothing but its state (its pool was set
 * before it was queued, and we, or the lease we read it through, hold it). */
static bool
help_job(struct worker *w, struct heist_future *j, unsigned depth)
{
	if (j->task.pool != w->pool)
		return false;
	if (claim(w, j))
		return true;
	struct awaited a = {NULL, j, NULL};
	if (help_runner(w, &a))
		return true;
	struct dep_help h = {w, depth + 1};
	return depth < DEPS_DEPTH && heist__job_help_deps(j, help_dep, &h);
}

/* One step of the rule above. Returns whether it ran (or moved) something. A timed
 * wait runs nothing: even the awaited job may need the waiting frame to go on after
 * its deadline (to cancel it, say), so it may not be buried under that frame. */
static bool
help(struct worker *w, const struct awaited *a, bool timed)
{
	if (timed)
		return false;
	if (a->group)
		return help_group(w, a->group);
	if (a->job)
		return help_job(w, a->job, 0);
	return help_runner(w, a);
}

/* The value of job j's state word to sleep on, with FUT_WAITERS set so that the
 * finisher wakes us; 0 if j is done, or the word changed under us (look again).
 * relaxed: the bit only asks for a wake; the kernel's compare of the word orders the
 * sleep against the finisher's exchange, which reads the bit. */
static uint32_t
sleep_word(struct heist_future *j, uint32_t s)
{
	if ((s & FUT_MASK) >= FUT_DONE)
		return 0;
	if (!(s & FUT_WAITERS) &&
	    !atomic_compare_exchange_strong_explicit(&j->state, &s, s | FUT_WAITERS,
						     memory_order_relaxed, memory_order_relaxed))
		return 0;
	return s | FUT_WAITERS;
}

/* Sleep on g's pending count for at most timeout_ns (0: no limit) unless it is 0.
 * acquire: see heist__group_done. */
static void
group_sleep(struct heist_group *g, uint64_t timeout_ns)
{
	uint32_t p = atomic_load_explicit(&g->pending, memory_order_acquire);
	if (p)
		heist__futex_wait(&g->pending, p, timeout_ns);
}

/* Sleep on the awaited task's word for at most timeout_ns unless it is done. For a
 * spawned task the mark is TASK_SLEEPER, which the thief's exchange reads (relaxed
 * CAS, for the reason given at sleep_word). */
static void
nap(const struct awaited *a, uint64_t timeout_ns)
{
	if (a->group) {
		group_sleep(a->group, timeout_ns);
		return;
	}
	if (a->job) {
		uint32_t v = sleep_word(a->job, atomic_load_explicit(&a->job->state,
								     memory_order_relaxed));
		if (v)
			heist__futex_wait(&a->job->state, v, timeout_ns);
		return;
	}
	uint32_t s = TASK_PENDING;
	if (!atomic_compare_exchange_strong_explicit(&a->task->state, &s, TASK_SLEEPER,
						     memory_order_relaxed, memory_order_relaxed) &&
	    s != TASK_SLEEPER)
		return;	/* done */
	heist__futex_wait(&a->task->state, TASK_SLEEPER, timeout_ns);
}

/* Whether a parked worker should have a spare stand in for it: only when there is
 * work it leaves undone (queued in the injector or public in some deque) and no other
 * worker is idle to take it (searching or asleep: the sleep protocol wakes those). A
 * spare is no help to a lone fork-join computation: its work is the waiter's to
 * help with, by the rule. The guest slot is no worker of the pool's count. */
static bool
needs_stand_in(struct worker *w)
{
	struct heist_pool *pool = w->pool;
	return !heist__worker_is_guest(w) && !heist__sleep_has_idle(&pool->sleep) &&
	       heist__pool_work_visible(pool);
}

struct park {
	bool parked;		/* in the parked phase of this wait */
	bool stand_in;		/* a spare was asked to stand in for us */
};

/* One nap of the parked phase; asks for a stand-in when needs_stand_in says so. */
static void
park(struct worker *w, const struct awaited *a, struct park *p, uint64_t timeout_ns)
{
	if (!p->parked) {
		heist__worker_flush_done(w);
		counter_add(&w->stats.parks, 1);
		p->parked = true;
	}
	if (!p->stand_in && needs_stand_in(w)) {
		heist__spare_park(w->pool);
		p->stand_in = true;
	}
	nap(a, timeout_ns);
}

static void
unpark(struct worker *w, struct park *p)
{
	if (p->stand_in)
		heist__spare_unpark(w->pool);
	*p = (struct park){false, false};
}

/* The one helping wait: apply the rule until a is done or the deadline passes. */
static bool
help_until(struct worker *w, const struct awaited *a, uint64_t deadline_ns)
{
	/* What we hold below this frame is not ours to run now: let others have it. */
	if (heist__deque_private_count(&w->dq))
		heist__worker_publish(w, 0);
	bool timed = deadline_ns != HEIST_NEVER;
	unsigned idle = 0;
	struct park p = {false, false};
	while (!awaited_done(a)) {
		if (help(w, a, timed)) {
			unpark(w, &p);
			idle = 0;
			continue;
		}
		uint64_t left = PARK_NS;
		if (timed) {
			uint64_t now = heist__now_ns();
			if (now >= deadline_ns)
				break;
			if (deadline_ns - now < left)
				left = deadline_ns - now;
		}
		if (idle < PATIENCE_SPINS) {
			heist__backoff(idle++);
		} else if (idle < PATIENCE_SPINS + PATIENCE_YIELDS) {
			sched_yield();
			idle++;
		} else {
			park(w, a, &p, left);
		}
	}
	unpark(w, &p);
	return awaited_done(a);
}

void
heist__wait_group(struct heist_group *g)
{
	struct worker *w = heist__current();
	if (w) {	/* a worker of another pool finds none of g's jobs, and parks */
		struct awaited a = {NULL, NULL, g};
		help_until(w, &a, HEIST_NEVER);
		return;
	}
	while (!heist__group_done(g))
		group_sleep(g, 0);
}

int
heist__wait_stolen(struct worker *w, struct task *t)
{
	struct awaited a = {t, NULL, NULL};
	help_until(w, &a, HEIST_NEVER);
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
		uint64_t timeout = 0;	/* none */
		if (deadline_ns != HEIST_NEVER) {
			uint64_t now = heist__now_ns();
			if (now >= deadline_ns)
				return false;
			timeout = deadline_ns - now;
		}
		uint32_t v = sleep_word(j, s);
		if (!v)
			continue;	/* it changed: look again */
		/* The kernel sleeps only while the word still reads v; the finishing
		 * exchange changes it and then sees WAITERS and wakes us. */
		heist__futex_wait(&j->state, v, timeout);
	}
}

bool
heist__wait_job(struct heist_future *j, uint64_t deadline_ns)
{
	struct worker *w = heist__current();
	if (!w)
		return block(j, deadline_ns);
	struct awaited a = {NULL, j, NULL};
	return help_until(w, &a, deadline_ns);
}
