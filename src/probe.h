/* SPDX-License-Identifier: MIT */
/* probe.h - the profiler's recording side, what the scheduler calls to time a task
 * (profile.c). The public reporting API is include/heist/profile.h; the counter
 * itself is clock.h's. With -Dprofiler=false, HEIST_PROFILER is 0 and every
 * `if (HEIST_PROFILER && ...)` around a probe compiles to nothing. */
#ifndef HEIST_PROBE_H
#define HEIST_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "heist/profile.h"
#include "platform/platform.h"

#ifndef HEIST_PROFILER
#define HEIST_PROFILER 1
#endif

struct profile;

/* Buffers for one worker, or NULL when out of memory. */
struct profile *heist__profile_new(size_t samples);

/* heist_config.profile_buffer as a sample count per worker (0: the default; capped). */
size_t heist__profile_capacity(size_t wanted);
void heist__profile_free(struct profile *p);

/* Sampling (heist_config.profile_every) of jobs: whether the job this thread submits
 * now is one to record, with chance 1 / (mask + 1), by heist/inline.h's draws (spawns
 * draw from their worker's state). Each thread draws from its own state; initial-exec,
 * as the other thread-locals. */
extern HEIST__TLS uint32_t heist__profile_tick;

static inline bool
heist__profile_pick(uint32_t mask)
{
	if (!mask)
		return true;
	uint32_t x = heist__profile_tick;
	if (!x)
		x = (uint32_t)(uintptr_t)&heist__profile_tick | 1;	/* seed: nonzero */
	heist__profile_tick = x = heist__sample_draw(x);
	return heist__sample_hit(x, mask);
}

/* A task's creation stamp: the counter, or 0 for a task not sampled (which then is
 * neither timed nor recorded when it runs). */
static inline uint64_t
heist__profile_stamp(uint32_t mask)
{
	return heist__profile_pick(mask) ? heist__tsc() : 0;
}

/* How a task reached the thread that runs it: an enum heist_dispatch_path, and for a
 * stolen task the counter when its owner published it and the thread index it was
 * stolen from (else 0 and -1). */
struct heist__run_from {
	unsigned path;
	int victim;
	uint64_t published;
};

/* The library's own range tasks (foreach.c, reduce.c), which samples call ranges. */
int heist__foreach_range(void *range);
int heist__reduce_half(void *half);

/* The owning worker only: one task's timestamps; kind is an enum heist_task_kind. */
void heist__profile_record(struct profile *p, unsigned worker, unsigned kind,
			   uint64_t created, uint64_t started, uint64_t ended,
			   const struct heist__run_from *from);

#endif
