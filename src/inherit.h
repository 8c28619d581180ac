/* SPDX-License-Identifier: MIT */
/* inherit.h - what a child process made by fork() inherits of heist (inherit.c): every
 * pool that existed at the fork, without its threads (fork copies only the thread that
 * called it). The rule, in heist.h ("fork()"): in the child, calls that would need an
 * inherited pool's threads fail with ESHUTDOWN (submits, waits for idle, waits for a
 * future that only those threads could finish), heist_pool_destroy of an inherited pool
 * lets it go without touching it (its memory in the child is not freed: its locks and
 * queues are as the lost threads left them), and new pools work. A thread that forked
 * from inside a task (or a heist_for_each body) may go on with that task in the child,
 * as an outside thread, but the task may not return there: nothing is left to return
 * to, and the child aborts with a message if it does. */
#ifndef HEIST_INHERIT_H
#define HEIST_INHERIT_H

#include <stdatomic.h>
#include <stdbool.h>

#include "platform/platform.h"

/* The number of forks this process descends from since heist was first used: a pool
 * made in generation g is inherited once the generation is past g. Written only in a
 * child's fork handler, where that is the process's only thread; relaxed. */
extern _Atomic unsigned heist__fork_gen;

/* This thread called fork() inside a task or a body that it is still running. */
extern HEIST__TLS bool heist__forked_inside;

static inline unsigned
heist__generation(void)
{
	return atomic_load_explicit(&heist__fork_gen, memory_order_relaxed);
}

/* Register the fork handlers, once per process (pool creation calls it). prepare and
 * parent lock and unlock `lock` (the registry of pools), so that the child's copy is
 * consistent; child unlocks it, moves the generation on, and turns a forking worker or
 * guest into an outside thread. */
void heist__inherit_init(void (*lock)(void), void (*unlock)(void));

/* A task or body returned on this thread: abort if it returned in a child process
 * forked inside it. Nothing to look at where there is no fork (Windows, where the
 * thread-local read would be a call: platform.h). */
static inline void
heist__returned(void)
{
#if HEIST__HAS_FORK
	extern void heist__returned_in_child(void);
	if (__builtin_expect(heist__forked_inside, 0))
		heist__returned_in_child();
#endif
}

#endif
