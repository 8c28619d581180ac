/* SPDX-License-Identifier: MIT */
/* baseline_pool.h - the classic thread pool that heist is measured against: one mutex and
 * one condition variable guard a FIFO list of malloc'ed nodes; N workers take from it;
 * wait_all waits on a pending counter. What a typical hand-written pool looks like. */
#ifndef HEIST_BENCH_BASELINE_POOL_H
#define HEIST_BENCH_BASELINE_POOL_H

#include <pthread.h>
#include <stdbool.h>

struct baseline_pool;

/* Start a pool of threads workers. Returns 0 or an errno value; *out is NULL then. */
int baseline_pool_create(struct baseline_pool **out, unsigned threads);

/* Queue fn(arg). Returns 0 or ENOMEM. */
int baseline_submit(struct baseline_pool *p, void (*fn)(void *), void *arg);

/* Wait until every task submitted so far has finished. */
void baseline_wait_all(struct baseline_pool *p);

/* Run what is queued, then stop and join the workers. NULL is a no-op. */
void baseline_pool_destroy(struct baseline_pool *p);

/* A one-result future as such a pool's users write it: mutex, condvar, flag. */
struct baseline_future {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int result;
};

void baseline_future_init(struct baseline_future *f);
void baseline_future_fini(struct baseline_future *f);
void baseline_future_set(struct baseline_future *f, int result);
int baseline_future_wait(struct baseline_future *f);

#endif /* HEIST_BENCH_BASELINE_POOL_H */
