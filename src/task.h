/* SPDX-License-Identifier: MIT */
/* task.h - the task record every queue holds: a spawned fork-join task lives in its
 * parent's stack frame (the public heist_task), a submitted one inside a heap job
 * (future.h). Queues hold pointers to it; nothing here allocates. */
#ifndef HEIST_TASK_H
#define HEIST_TASK_H

#include <assert.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "heist/heist.h"

struct worker;
struct heist_pool;

/* task.state: what kind of task this is and, for a spawned one, how far it got.
 * Values no zeroed or stale record is likely to hold, so that heist_sync can tell a
 * record that was never spawned (and abort with a message rather than hang). */
enum {
	TASK_PENDING = 0x7a5c0de0,	/* spawned, not finished */
	TASK_SLEEPER = 0x7a5c0de1,	/* spawned, not finished, its owner sleeps on it */
	TASK_DONE = 0x7a5c0de2,		/* spawned, finished: result is valid */
	TASK_SYNCED = 0x7a5c0de3,	/* debug builds: synced, must be spawned again */
	TASK_JOB = 0x7a5c0de4,		/* a submitted job: its state lives in its future */
};

struct task {
	heist_fn fn;
	void *arg;
	/* Spawned tasks: a thief exchanges TASK_DONE with release after writing result
	 * (and wakes the owner if it found TASK_SLEEPER); heist_sync loads it with
	 * acquire. Jobs: always TASK_JOB. */
	_Atomic uint32_t state;
	int result;
	union {
		/* Spawned: the worker that stole it, stored with release once it has
		 * set floor, for heist_sync to help it (wait.c). Until then its
		 * spawner's idle epoch, 0 or 1 (task_epoch_mark), for the thief
		 * (worker.c): no worker's address. */
		_Atomic(struct worker *) thief;
		/* Job: the pool it was submitted to (set before it is queued). */
		struct heist_pool *pool;
	};
	uint64_t created_tsc;	/* profiling: when it was spawned or submitted */
	union {
		/* Job: the injector's link. */
		struct task *_Atomic next;
		/* Spawned and stolen: the thief's deque bottom when it started the task,
		 * so that everything at or above it in that deque is the task's own. */
		int64_t floor;
	};
};

/* A spawned task's thief word before any thief took it: the spawner's epoch e, which
 * is 0 or 1 (a parity: worker.h's cur_epoch). */
static inline struct worker *
task_epoch_mark(unsigned e)
{
	return (struct worker *)(uintptr_t)e;
}

/* The thief in a thief word, or NULL while it holds the epoch mark. */
static inline struct worker *
task_thief(struct worker *word)
{
	return (uintptr_t)word > 1 ? word : NULL;
}

static_assert(sizeof(struct task) == sizeof(heist_task), "heist_task must hold a task");
/* heist/inline.h writes these through heist_task's own fields. */
static_assert(offsetof(struct task, fn) == offsetof(heist_task, heist__fn), "fn");
static_assert(offsetof(struct task, arg) == offsetof(heist_task, heist__arg), "arg");
static_assert(offsetof(struct task, state) == offsetof(heist_task, heist__state), "state");
static_assert(offsetof(struct task, result) == offsetof(heist_task, heist__result), "result");
static_assert(offsetof(struct task, thief) == offsetof(heist_task, heist__thief), "thief");
static_assert(offsetof(struct task, created_tsc) == offsetof(heist_task, heist__tsc), "tsc");
static_assert(TASK_PENDING == HEIST__TASK_PENDING && TASK_SYNCED == HEIST__TASK_SYNCED,
	      "heist/inline.h: task states");
static_assert(_Alignof(struct task) <= _Alignof(heist_task), "heist_task alignment");

#endif
