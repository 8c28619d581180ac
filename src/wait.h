/* SPDX-License-Identifier: MIT */
/* wait.h - every wait for a task to finish (wait.c): a sync whose child was stolen, a
 * future waited for on a worker (helping by the waiting rule, then parking with a
 * spare in its place), a future waited for on any other thread (spin, then sleep on
 * the future's futex), with or without a deadline. */
#ifndef HEIST_WAIT_H
#define HEIST_WAIT_H

#include <stdbool.h>
#include <stdint.h>

struct worker;
struct task;
struct heist_future;
struct heist_group;
struct heist_pool;

/* What a thread waits for: a spawned task (stolen), a job, or a group. One lives in
 * the frame of every wait on a worker; a wait that cannot help publishes it in its
 * worker's blocked_in (worker.h) for walkers to follow. */
struct awaited {
	struct task *task;
	struct heist_future *job;
	struct heist_group *group;
};

/* Whether some thread of any pool is reading through pool p's threads (a walk across
 * pools, wait.c), as its guard names p. pool.c's destroy waits, after the drain, until
 * none does; the caller holds the registry's lock, so the pools it passes in `pools`
 * (a list linked by next_all) are alive. */
bool heist__wait_walked(struct heist_pool *p, struct heist_pool *pools);

/* Wait for job j on the calling thread, whatever it is. deadline_ns: a
 * heist__now_ns() time, or HEIST_NEVER (clock.h). Returns whether j is done. */
bool heist__wait_job(struct heist_future *j, uint64_t deadline_ns);

/* The thread w, counted as parked since a timed wait (w->timed_parked), has moved on:
 * count it out (heist__worker_run calls this once a task returns, and
 * heist__worker_guest_leave once the guest's loop ends). */
void heist__wait_timed_over(struct worker *w);

/* heist_sync's wait for a spawned task that a thief took; returns its result. */
int heist__wait_stolen(struct worker *w, struct task *t);

/* Wait until every job of group g is final, on the calling thread, whatever it is. */
void heist__wait_group(struct heist_group *g);

#endif
