/* submit.h - admission and the drain (submit.c): every job and every guest is counted
 * in the pool's `live` from the moment it is accepted until it has run or been
 * skipped, and heist_pool_destroy waits for that count to drain. The argument that
 * nothing accepted is ever lost is in submit.c. */
#ifndef HEIST_SUBMIT_H
#define HEIST_SUBMIT_H

#include <stdint.h>

#include "heist/heist.h"

struct heist_pool;
struct heist_future;

/* A thread that is not one of the pool's workers enters: counts itself in live.
 * Returns 0; or ESHUTDOWN once destroy has begun, and then it has already left again
 * and must not touch the pool. */
int heist__pool_enter(struct heist_pool *pool);

/* n jobs (or guests) finished: subtract them from live; wakes destroy when that
 * drains the pool. The caller's last touch of the pool, if it is no worker. */
void heist__pool_leave(struct heist_pool *pool, uint64_t n);

/* heist_pool_destroy's first half: refuse outside submits from now on, and return
 * once every accepted job has run and the last leaver is out of the pool. */
void heist__pool_drain(struct heist_pool *pool);

/* Queue a new job (heist__job_new) on the pool: on the worker's own deque from one
 * of its workers, else through the injector. On error the job is discarded. */
int heist__submit_job(struct heist_pool *pool, struct heist_future *j, heist_future **out);

#endif
