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

/* Wait for job j on the calling thread, whatever it is. deadline_ns: a
 * heist__now_ns() time, or HEIST_NEVER (clock.h). Returns whether j is done. */
bool heist__wait_job(struct heist_future *j, uint64_t deadline_ns);

/* heist_sync's wait for a spawned task that a thief took; returns its result. */
int heist__wait_stolen(struct worker *w, struct task *t);

struct heist_group;

/* Wait until every job of group g is final, on the calling thread, whatever it is. */
void heist__wait_group(struct heist_group *g);

#endif
