/* SPDX-License-Identifier: MIT */
/* group.h - a task group (group.c): its jobs counted in and out in lanes, its first
 * error and its token; what wait.c needs to wait for one. */
#ifndef HEIST_GROUP_H
#define HEIST_GROUP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "heist/heist.h"
#include "internal.h"

struct heist_future;

/* A lane: the counts kept by the threads that use it (a worker or the guest of the
 * group's pool uses lane index, any other thread the last one), on a line of its own,
 * so that a submit and a finish write no line another thread writes. The group's jobs
 * not yet final are the sum of submitted less the sum of finished, over every lane: a
 * job may be counted in on one lane and out on another. */
struct group_lane {
	CACHE_ALIGNED _Atomic uint64_t submitted;
	_Atomic uint64_t finished;
	_Atomic uint64_t left;		/* count outs that touch the group no more */
};

struct heist_group {
	heist_pool *pool;		/* compared, never read: the group may outlive it */
	unsigned gen;			/* its pool's fork generation (inherit.h) */
	heist_cancel *token;		/* shared by the group's jobs: the first error
					   or heist_group_cancel requests it */
	unsigned lanes;			/* the workers' lanes; lane[lanes] is the rest's */
	_Atomic int error;		/* the first nonzero result, or 0 */
	/* The priority of jobs adopted from now on (heist_group_set_priority).
	 * relaxed: a setting, ordered with the submits by the caller. */
	_Atomic int priority;
	/* Sleeping, on a line of its own: read by every finisher, written only while
	 * someone sleeps. Threads asleep in heist__group_sleep, or about to be: while
	 * it is not 0, every finisher also counts down countdown (group.c argues it). */
	CACHE_ALIGNED _Atomic uint32_t sleepers;
	_Atomic uint32_t wake_seq;	/* the futex word they sleep on */
	_Atomic uint32_t armed;		/* a sleeper has set countdown going */
	/* While a sleeper is armed, never above the count downs still to come: the
	 * finisher that takes it from 1 to 0 wakes the sleepers. */
	_Atomic int64_t countdown;
	struct group_lane lane[];	/* lanes + 1 */
};

/* One of g's jobs is final (or was never queued): count it out; wake the sleepers when
 * that was the last. */
void heist__group_count_out(struct heist_group *g);

/* What a group job keeps at the start of its inline_copy (its node on its own list);
 * a dependent task of a group keeps its own fields after it (then.c). */
enum { GROUP_NODE_BYTES = 24 };

/* Make j, a new job nobody else has seen, one of g's: it uses g's token, lent, takes
 * g's priority, and counts out of g once it is final. Counted in now: the caller
 * counts it out (heist__group_count_out) if j is then never queued nor made final. */
void heist__group_adopt(struct heist_group *g, struct heist_future *j);

/* Whether job j, taken from a queue, is one of g's and not yet final. */
bool heist__group_owns(const struct heist_group *g, struct heist_future *j);

/* Whether every job of g is final. acquire: the jobs' results and writes are visible
 * once it is true. */
bool heist__group_done(struct heist_group *g);

/* Sleep until g may be done, for at most timeout_ns (0: no limit), unless it is done.
 * It may return early; the caller looks again. */
void heist__group_sleep(struct heist_group *g, uint64_t timeout_ns);

#endif
