/* SPDX-License-Identifier: MIT */
/* inherit.c - fork(): the handlers that keep heist usable in a child process, and the
 * check that a task forked inside does not return there (inherit.h has the rule).
 * The handlers are platform.h's (pthread_atfork; none on Windows, which has no fork);
 * the generation count lets every pool tell, with one load, whether it was made
 * before the last fork, without any list of pools to walk. */
#include "inherit.h"

#include <stdio.h>
#include <stdlib.h>

#include "hold.h"
#include "worker.h"

_Atomic unsigned heist__fork_gen;
HEIST__TLS bool heist__forked_inside;

static void (*registry_lock)(void);
static void (*registry_unlock)(void);
static heist__once_flag handlers_once = HEIST__ONCE_INIT;

/* The registry's lock, then the hold cells' (the order of heist__pool_enter_if_alive,
 * which links a cell under the registry's lock). */
static void
prepare(void)
{
	registry_lock();
	heist__hold_lock_all();
}

static void
parent(void)
{
	heist__hold_unlock_all();
	registry_unlock();
}

static void
child(void)
{
	heist__hold_unlock_all();
	registry_unlock();
	/* relaxed: the child's only thread. */
	atomic_fetch_add_explicit(&heist__fork_gen, 1, memory_order_relaxed);
	if (heist__current()) {
		/* A worker's (or guest's) frames are on our stack: the task may go on,
		 * as an outside thread's code, but not return into the pool's loops,
		 * which would wait for threads the child does not have. */
		heist__forked_inside = true;
		heist__set_current(NULL);
	}
}

static void
register_handlers(void)
{
	/* On failure (ENOMEM) a child would find its pools' generation unchanged and
	 * hang in its waits; nothing better can be done without the handlers. */
	(void)heist__fork_handlers(prepare, parent, child);
}

void
heist__inherit_init(void (*lock)(void), void (*unlock)(void))
{
	registry_lock = lock;
	registry_unlock = unlock;
	heist__once(&handlers_once, register_handlers);
}

void
heist__returned_in_child(void)
{
	fputs("heist: a task returned in a child process forked inside it; the child has "
	      "no pool to return to (end the child with exec or _exit)\n", stderr);
	abort();
}
