/* SPDX-License-Identifier: MIT */
/* fork.h - what fork.c offers the library beyond the public spawn and sync. */
#ifndef HEIST_FORK_H
#define HEIST_FORK_H

#include <stdbool.h>

#include "heist/heist.h"
#include "worker.h"

/* Take back t, spawned by this thread and not yet synced, without running it: true if
 * no thief took it (it is off the deque, and the caller does its work itself; the
 * record may be spawned again); false if a thief has it, or heist_spawn ran it at once
 * (then heist_sync(t) waits for it and returns its result, as for any spawn). Syncs
 * and take-backs together follow spawns in reverse order. */
bool heist__spawn_take_back(heist_task *t);

/* Before a stretch of code that makes no heist call and may run long (a graph's node):
 * publish the spawns still private, asked for or not, waking a sleeper if none
 * searches. A thief that goes idle while the stretch runs cannot get a private spawn
 * (it only asks, and asking is answered at the next spawn, sync or answer), so a
 * sibling spawned just before would wait for the whole stretch. */
static inline void
heist__spawn_publish(void)
{
	struct worker *w = heist__current();
	if (w && heist__deque_private_count(&w->dq))
		heist__worker_publish(w, 0);
}

#endif
