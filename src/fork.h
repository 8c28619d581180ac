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

/* Between long stretches that neither spawn nor sync (a frame that runs task after
 * task inline): answer a thief's request, which only spawn and sync would otherwise
 * answer, by publishing the spawns still private. */
static inline void
heist__spawn_answer(void)
{
	struct worker *w = heist__current();
	if (w && unlikely(heist__deque_split_requested(&w->dq)) &&
	    heist__deque_private_count(&w->dq))
		heist__worker_publish(w, 0);
}

#endif
