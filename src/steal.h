/* SPDX-License-Identifier: MIT */
/* steal.h - victim choice (steal.c): which deques a hungry worker tries, and in what
 * order. The deque's own steal (the Chase-Lev protocol) is deque.c's. */
#ifndef HEIST_STEAL_H
#define HEIST_STEAL_H

struct worker;
struct task;

/* Try to take one task from the top of victim's deque, retrying a few times when
 * another thief wins the race. NULL if it is empty (then the victim is asked to
 * publish) or keeps losing. */
struct task *heist__steal_from(struct worker *w, struct worker *victim);

/* One pass over w's victims, nearest rank first, from a random one within each rank;
 * the first task found, or NULL. */
struct task *heist__steal_round(struct worker *w);

#endif
