/* SPDX-License-Identifier: MIT */
/* worker.h - a worker thread (worker.c): its deque, its statistics, the main loop
 * that finds it work, running a task it took, and the guest slot. Victim choice is
 * steal.c's, waiting wait.c's, sleeping sleep.c's. */
#ifndef HEIST_WORKER_H
#define HEIST_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include "deque.h"
#include "internal.h"
#include "probe.h"
#include "topology.h"

struct heist_pool;
struct heist_future;
struct awaited;

struct worker {
	struct deque dq;		/* first: its owner line is the hottest */

	/* Owner's line: written only by this worker (stats are read by anyone). The
	 * inline fast paths (heist/inline.h) use cur_epoch, the sampling and the first
	 * counter: they stay first, at the offsets worker.c asserts. */
	/* The idle epoch of the work this thread runs now (submit.c): the job's, a
	 * stolen task's spawner's (spawn records it in the task), the guest's: 0 or 1,
	 * the parity. What it submits, and the continuations it queues, count in it. */
	CACHE_ALIGNED unsigned cur_epoch;
	/* The profiler's sampling of spawns (heist_config.profile_every): the mask a
	 * draw is tested with, and the state of the draws (heist/inline.h's and
	 * fork.c's), never 0. */
	uint32_t sample_mask;
	uint32_t sample_tick;
	struct {
		/* Spawns synced inline by heist/inline.h's fast path: each is one
		 * spawned and one executed task. The library counts the others. */
		counter pairs;
		counter executed, spawned, stolen, steal_attempts, injector_pops, sleeps,
			wakes, parks;
	} stats;
	struct heist_pool *pool;
	unsigned index;
	bool profile;			/* the pool profiles: prof is set */
	struct profile *prof;
	uint64_t rng;
	uint64_t done_unflushed[2];	/* jobs finished, per idle epoch, not yet
					   subtracted from pool->live */
	bool in_hook;			/* in on_worker_start/stop: no work is counted */
	unsigned in_body;		/* loop bodies this thread is inside (foreach.c) */
	unsigned since_low;		/* tasks taken since the low queue's last look */
	/* Tasks this thread runs from its loop (heist__worker_run), nested: while not
	 * 0 it is inside work the pool counts in live, and what it submits to its pool
	 * may count itself with a relaxed add (submit.c, (3)); at 0 it is between tasks
	 * (searching, keeping timers) and enters as an outside thread does. */
	unsigned running;
	/* The job this thread's loop runs (running == 1) has returned and fires what
	 * waited for it (future.c): the first job that makes runnable on our deque is
	 * the task our loop pops next, and stays private (submit.c, queue_local). */
	bool loop_job_ending;
	/* Spawns this worker published and then synced itself, from its deque's public
	 * part, since a sync last found its task stolen: published work nobody took, so
	 * it stops publishing unasked (heist__worker_publish). Owner only. */
	unsigned untaken;
	/* The profiler: how the task this thread runs next reached it, set by whoever
	 * took it (heist__worker_took) and read when the run starts. */
	struct heist__run_from run_from;
	unsigned stolen_from;		/* the profiler: the victim of our last steal */
	struct hazard *hazard;		/* our cell in pool->hazards, for our steals */
	heist__thread thread;
	const struct victims *victims;	/* whom to steal from (topology.h) */
	int bind_error;			/* written before pool create returns */
	/* A spare just called to stand in (spare.c): it looks for work at least once
	 * before it may find itself surplus, so that a stand-in called by a short
	 * timed wait outlives that wait. Owner only. */
	bool stand_in_owed;
	/* A timed wait counted this thread parked, and it has not moved on since
	 * (wait.c, timed_park). Owner only. */
	bool timed_parked;

	/* Waiting (wait.c), on a line of its own: what this thread is blocked in,
	 * for the walkers of other pools that follow chains of waits through it; how
	 * many such walkers are reading through it now (its wait does not end before
	 * they are out); and the pool whose threads this thread's own walk reads at
	 * the moment, which that pool's destroy waits to see cleared (pool.c). This
	 * thread writes blocked_in and guard; walkers count themselves in readers;
	 * destroy reads guard. */
	CACHE_ALIGNED const struct awaited *_Atomic blocked_in;
	_Atomic uint32_t readers;
	struct heist_pool *_Atomic guard;
};

/* The worker running on this thread lives in heist/inline.h's heist__self_v2, a void
 * pointer there because the inline code sees only the start of a worker. On a thread
 * that is no worker it points at heist__nobody, not NULL, so that the inline fast
 * paths need no test of their own: its bounds fail both compares, and they call the
 * library. initial-exec: one %fs-relative load, not a __tls_get_addr call, even in the
 * shared library. On Windows, which exports no thread-local variable, a TLS slot of
 * the platform's instead (NULL for none), which heist__self_get reads for the inline
 * code. */
extern const struct heist__worker_view heist__nobody;

#if HEIST__TLS_EXPORTED
/* The worker running on this thread, or NULL. */
static inline struct worker *
heist__current(void)
{
	void *p = heist__self_v2;
	return p == (const void *)&heist__nobody ? NULL : (struct worker *)p;
}

/* Make w (NULL: none) this thread's worker. */
static inline void
heist__set_current(struct worker *w)
{
	heist__self_v2 = w ? (void *)w : (void *)&heist__nobody;
}

/* What heist/inline.h's fast paths start from: the worker, or heist__nobody. */
static inline void *
heist__self_view(void)
{
	return heist__self_v2;
}

/* Before a pool starts its first thread: 0, or EAGAIN (platform.h). */
static inline int
heist__worker_slot_init(void)
{
	return 0;
}
#else
/* Windows: the platform's thread slot (platform.h), which holds NULL for no worker;
 * heist/inline.h calls heist__self_get, which answers heist__nobody for it. */
static inline struct worker *
heist__current(void)
{
	return (struct worker *)heist__thread_slot_get(HEIST__SLOT_WORKER);
}

static inline void
heist__set_current(struct worker *w)
{
	heist__thread_slot_set(HEIST__SLOT_WORKER, w);
}

static inline void *
heist__self_view(void)
{
	struct worker *w = heist__current();
	return w ? (void *)w : (void *)&heist__nobody;
}

static inline int
heist__worker_slot_init(void)
{
	return heist__thread_slot_init();
}
#endif

void heist__worker_main(void *arg);

/* Run tasks until the pool stops, or, for a spare, until it is surplus (spare.h). */
void heist__worker_loop(struct worker *w);

/* Call heist_config's on_worker_start (start) or on_worker_stop hook, on w's thread. */
void heist__worker_hook(struct worker *w, bool start);

/* Run a spawned task under the profiler, recorded as having come `from`. Counts
 * nothing. */
int heist__worker_run_profiled(struct worker *w, struct task *t,
			       const struct heist__run_from *from);

/* For the profiler: the task t that w is about to run came by `path`
 * (enum heist_dispatch_path); if stolen, its owner stamped the moment it published it
 * in its floor (heist__worker_publish), which the thief overwrites only when it
 * starts it, and the steal left the victim's index in w->stolen_from. */
static inline void
heist__worker_took(struct worker *w, unsigned path, const struct task *t, bool stolen)
{
	if (HEIST_PROFILER && unlikely(w->profile)) {
		w->run_from.path = path;
		w->run_from.published = stolen ? (uint64_t)t->floor : 0;
		w->run_from.victim = stolen ? (int)w->stolen_from : -1;
	}
}

/* Run any task taken from a queue: a stolen spawned task or a job. */
void heist__worker_run(struct worker *w, struct task *t);

/* Publish the private deque region but its newest `keep` tasks, and wake a sleeper
 * if nobody searches. */
void heist__worker_publish(struct worker *w, int64_t keep);

/* Take the bottom task of our deque. A pending thief's request is answered first by
 * publishing the private tasks below the one we take; with only that one, the request
 * stays pending for the next push. */
static inline struct task *
heist__worker_pop(struct worker *w)
{
	if (unlikely(heist__deque_split_requested(&w->dq)) &&
	    heist__deque_private_count(&w->dq) > 1)
		heist__worker_publish(w, 1);
	return heist__deque_pop(&w->dq);
}

/* Anything queued in the injector or public in some deque, without asking owners to
 * publish. Issues a seq_cst fence first (sleep.h's step (2) for a searcher). */
bool heist__pool_work_visible(struct heist_pool *pool);

/* A number that changes whenever the pool makes progress: a task started, a steal,
 * an injector take, a submission from outside. For the stall test of spare.h. */
uint64_t heist__pool_progress(struct heist_pool *pool);

/* Report the jobs w finished to the pool's count (submit.c), before w idles. */
void heist__worker_flush_done(struct worker *w);

/* An outside thread takes the pool's guest slot for the length of a heist_for_each:
 * it becomes a worker without a thread of its own (heist__current() is the slot),
 * forks in place, and its deque is a victim like the others. Returns false when the
 * slot is taken (then *err is 0: use heist_run instead), or the pool is shutting down
 * (*err is ESHUTDOWN). */
bool heist__worker_guest_enter(struct heist_pool *pool, int *err);
void heist__worker_guest_leave(struct heist_pool *pool);

#endif
