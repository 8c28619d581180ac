/* pool.h - the pool object shared by pool.c (lifetime, submit, statistics) and
 * worker.c (the loops). */
#ifndef HEIST_POOL_H
#define HEIST_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "injector.h"
#include "internal.h"
#include "sleep.h"
#include "worker.h"

struct heist_pool {
	/* n workers, then one guest slot: a worker record without a thread, which an
	 * outside thread occupies while it takes part in a heist_for_each. */
	struct worker *workers;
	unsigned n;
	unsigned slots;			/* n + 1: every deque a thief may visit */
	unsigned spin;			/* steal rounds before sleeping */
	size_t stack_size;
	char name[16];
	bool profile;			/* every worker has a profile buffer */

	struct topology *topo;
	_Atomic uint32_t started;	/* workers past their start-up; create waits */

	struct injector injector;
	struct sleep sleep;

	/* Jobs accepted and not yet finished. Submitters add at once; workers
	 * subtract in batches (done_unflushed) when they run out of work, so the count
	 * is never below the truth and reaches 0 only when everything has run. */
	CACHE_ALIGNED _Atomic uint64_t live;
	_Atomic uint32_t drain_seq;	/* destroy sleeps on it while live > 0 */
	/* Threads inside heist__pool_finished. A thread that is not a worker may be
	 * the one that brings live to 0, and it still touches the pool after that:
	 * destroy waits until this is 0 too before it frees anything. */
	_Atomic uint32_t finishing;

	/* Read by submitters and workers, written once each by destroy. */
	CACHE_ALIGNED _Atomic bool shutting;	/* outside submits get ESHUTDOWN */
	_Atomic bool stop;			/* drained: workers exit */

	/* The guest slot is taken: CAS false -> true with acquire by the thread that
	 * enters, store false with release when it leaves, so the next guest sees the
	 * slot's deque as the last one left it. */
	CACHE_ALIGNED _Atomic bool guest_busy;
};

/* Subtract n finished jobs from live; wakes destroy when that drains the pool. */
void heist__pool_finished(struct heist_pool *pool, uint64_t n);

/* Queue a new job (heist__job_new) on the pool: on the worker's own deque from one
 * of its workers, else through the injector. On error the job is discarded. */
int heist__pool_submit_job(struct heist_pool *pool, struct heist_future *j,
			   heist_future **out);

#endif
