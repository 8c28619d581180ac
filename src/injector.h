/* SPDX-License-Identifier: MIT */
/* injector.h - the queue that threads outside the pool submit to. Many producers,
 * one consumer at a time (a worker holding the consumer flag takes a batch).
 * Producers never wait for each other: a push is one atomic exchange. */
#ifndef HEIST_INJECTOR_H
#define HEIST_INJECTOR_H

#include <stdbool.h>
#include <stddef.h>

#include "internal.h"
#include "task.h"

struct injector {
	/* Producers exchange this; the consumer reads it to tell empty from a
	 * producer caught between its exchange and its link. */
	CACHE_ALIGNED struct task *_Atomic tail;

	/* The consumer's: whoever holds `consuming`. */
	CACHE_ALIGNED struct task *head;
	struct task sentinel;	/* Vyukov's dummy node: keeps the list non-empty */
	_Atomic bool consuming;

	/* Tasks queued: producers add before they push, the consumer subtracts what
	 * it took. Read by idle workers, pending() and the back-pressure wait. */
	CACHE_ALIGNED _Atomic size_t depth;
	size_t limit;			/* 0: unbounded */
	_Atomic uint32_t room_seq;	/* bumped when a full queue gains room */
	_Atomic uint32_t room_waiters;	/* producers sleeping on room_seq */
};

void heist__injector_init(struct injector *q, size_t limit);

/* Reserve a place: blocks while the queue holds limit tasks. Then push. The depth
 * increment is seq_cst: it is what the sleep protocol's last look sees (sleep.c).
 * Returns the depth before ours: jobs still queued, for the notifier (sleep.h,
 * heist__sleep_notify_job's backlog). */
size_t heist__injector_reserve(struct injector *q);
void heist__injector_push(struct injector *q, struct task *t);

/* A worker puts back a job that it took but may not run where it stands (wait.c,
 * fork.c): counted like a new submission, but never held up by the limit, which is
 * back-pressure for outside producers only. */
size_t heist__injector_requeue(struct injector *q, struct task *t);	/* as reserve */

/* Take up to max tasks into out[]; returns how many. Fails fast (0) when another
 * worker is consuming or the queue looks empty. */
size_t heist__injector_take(struct injector *q, struct task **out, size_t max);

/* Look at every queued task, oldest first, as the consumer (fails fast, NULL, when
 * another thread is consuming), until match(ctx, t) returns true; return that task,
 * which stays queued. A task is alive while match looks at it (the queue holds it and
 * only the consumer takes it): match takes whatever reference it needs to keep it. */
struct task *heist__injector_find(struct injector *q, bool (*match)(void *ctx, struct task *t),
				  void *ctx);

/* Take the oldest task if match(ctx, t) says so (it is alive while match looks, as for
 * heist__injector_find); else, or when another thread is consuming, NULL. *busy says
 * whether the oldest task went unseen: the queue was not empty, and another thread
 * was consuming (or had just been, and we did not get in). */
struct task *heist__injector_take_if(struct injector *q, bool (*match)(void *ctx, struct task *t),
				     void *ctx, bool *busy);

static inline size_t
heist__injector_depth(struct injector *q)
{
	/* seq_cst: the sleep protocol's last look (sleep.c); elsewhere a hint. */
	return atomic_load_explicit(&q->depth, memory_order_seq_cst);
}

#endif
