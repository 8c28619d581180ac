/* task.h - the task record every queue holds: a spawned fork-join task lives in its
 * parent's stack frame (the public heist_task), a submitted one inside a heap job
 * (future.h). Queues hold pointers to it; nothing here allocates. */
#ifndef HEIST_TASK_H
#define HEIST_TASK_H

#include <assert.h>
#include <stdatomic.h>
#include <stdint.h>

#include "heist/heist.h"

struct worker;

/* task.state: what kind of task this is and, for a spawned one, whether it is done. */
enum {
	TASK_PENDING = 0,	/* spawned, not finished */
	TASK_DONE = 1,		/* spawned, finished: result is valid */
	TASK_JOB = 2,		/* a submitted job: its state lives in its future */
};

struct task {
	heist_fn fn;
	void *arg;
	/* Spawned tasks: a thief stores TASK_DONE with release after writing result;
	 * heist_sync's slow path loads it with acquire. Jobs: always TASK_JOB. */
	_Atomic uint32_t state;
	int result;
	/* The worker that stole this task, for heist_sync to steal back from (a hint:
	 * relaxed on both sides, nothing is published through it). */
	_Atomic(struct worker *) thief;
	uint64_t created_tsc;	/* profiling: when it was spawned or submitted */
	struct task *_Atomic next; /* the injector's link */
};

static_assert(sizeof(struct task) == sizeof(heist_task), "heist_task must hold a task");
static_assert(_Alignof(struct task) <= _Alignof(heist_task), "heist_task alignment");

#endif
