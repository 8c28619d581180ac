/* SPDX-License-Identifier: MIT */
/* split.h - lazy binary splitting (Tzannes, Caragea, Barua, Vishkin, "Lazy Binary
 * Splitting", PPoPP 2010), shared by heist_for_each (foreach.c) and heist_reduce
 * (reduce.c): a worker running a range a grain at a time splits off the upper half of
 * what is left only when its deque is empty, so that a thief always finds something,
 * and a split made while some worker is idle is published at once, so that the idle
 * worker need not ask first: loops of a few microseconds would otherwise be half over
 * before the request was seen. */
#ifndef HEIST_SPLIT_H
#define HEIST_SPLIT_H

#include <stdbool.h>

#include "pool.h"
#include "sleep.h"
#include "worker.h"

/* Whether to split now: the deque is empty (nothing for a thief to take). If it is not
 * but a thief asks, hand out what is there. */
static inline bool
heist__split_wanted(struct worker *w)
{
	if (heist__deque_count(&w->dq) == 0)
		return true;
	if (heist__deque_split_requested(&w->dq) && heist__deque_private_count(&w->dq))
		heist__worker_publish(w, 0);
	return false;
}

/* After spawning a split: publish it at once if some worker is idle. */
static inline void
heist__split_offer(struct worker *w)
{
	if (heist__deque_private_count(&w->dq) && heist__sleep_has_idle(&w->pool->sleep))
		heist__worker_publish(w, 0);
}

#endif
