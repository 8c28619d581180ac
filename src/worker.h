/* worker.h - a worker thread: its deque, its statistics, and the loops that find
 * work for it (the main loop, and the helping loops of sync and future waits). */
#ifndef HEIST_WORKER_H
#define HEIST_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "deque.h"
#include "internal.h"
#include "topology.h"

struct heist_pool;
struct heist_future;

struct worker {
	struct deque dq;		/* first: its owner line is the hottest */

	/* Owner's line: written only by this worker (stats are read by anyone). */
	CACHE_ALIGNED struct heist_pool *pool;
	unsigned index;
	bool profile;			/* the pool profiles: prof is set */
	struct profile *prof;
	uint64_t rng;
	uint64_t done_unflushed;	/* jobs finished, not yet subtracted from pool->live */
	struct {
		counter executed, spawned, stolen, steal_attempts, injector_pops, sleeps,
			wakes;
	} stats;
	pthread_t thread;
	const struct victims *victims;	/* ranked victims, or NULL: uniform */
	int bind_error;			/* written before pool create returns */
};

/* The worker running on this thread, or NULL. initial-exec: one %fs-relative load,
 * not a __tls_get_addr call, even in the shared library. */
extern __thread struct worker *heist__self __attribute__((tls_model("initial-exec")));

void *heist__worker_main(void *arg);

/* Run a spawned task inline under the profiler (heist_sync when the pool profiles). */
int heist__worker_run_profiled(struct worker *w, struct task *t);

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

/* heist_sync's slow path: t was not at the bottom of the deque. */
int heist__worker_sync_slow(struct worker *w, struct task *t);

/* An outside thread takes the pool's guest slot for the length of a heist_for_each:
 * it becomes a worker without a thread of its own (heist__self points at the slot),
 * forks in place, and its deque is a victim like the others. Returns false when the
 * slot is taken or the thread is already an online QSBR reader (then *err is 0: use
 * heist_run instead), or the pool is shutting down (*err is ESHUTDOWN). A thread the
 * application registered with liburcu-qsbr and put offline cannot be told from an
 * unregistered one through liburcu's API: heist.h asks such threads not to call
 * heist_for_each from outside. */
bool heist__worker_guest_enter(struct heist_pool *pool, int *err);
void heist__worker_guest_leave(struct heist_pool *pool);

/* Helping waits for a job: run other work until it is done. */
void heist__worker_wait_job(struct worker *w, struct heist_future *j);
bool heist__worker_wait_job_until(struct worker *w, struct heist_future *j,
				  uint64_t deadline_ns);

#endif
