/* SPDX-License-Identifier: MIT */
/* group.h - a task group (group.c): its count of jobs not yet final, its first error
 * and its token; what wait.c needs to wait for one. */
#ifndef HEIST_GROUP_H
#define HEIST_GROUP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "heist/heist.h"
#include "internal.h"

struct heist_future;

struct heist_group {
	heist_pool *pool;
	heist_cancel *token;		/* shared by the group's jobs: the first error
					   or heist_group_cancel requests it */
	/* Jobs submitted and not final: submitters add, each job's fire subtracts.
	 * Also the futex word waiters sleep on. */
	CACHE_ALIGNED _Atomic uint32_t pending;
	_Atomic int error;		/* the first nonzero result, or 0 */
};

/* One of g's jobs is final (or was never queued): count it out; wake the waiters when
 * that was the last. */
void heist__group_count_out(struct heist_group *g);

/* Whether job j, taken from a queue, is one of g's and not yet final. */
bool heist__group_owns(const struct heist_group *g, struct heist_future *j);

/* Whether every job of g is final. acquire: pairs with the count out (release), so the
 * jobs' results and writes are visible once it is true. */
static inline bool
heist__group_done(struct heist_group *g)
{
	return atomic_load_explicit(&g->pending, memory_order_acquire) == 0;
}

#endif
