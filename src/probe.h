/* probe.h - the profiler's recording side, what the scheduler calls to time a task
 * (profile.c). The public reporting API is include/heist/profile.h; the counter
 * itself is clock.h's. With -Dprofiler=false, HEIST_PROFILER is 0 and every
 * `if (HEIST_PROFILER && ...)` around a probe compiles to nothing. */
#ifndef HEIST_PROBE_H
#define HEIST_PROBE_H

#include <stdint.h>

#include "clock.h"

#ifndef HEIST_PROFILER
#define HEIST_PROFILER 1
#endif

struct profile;

/* Buffers for one worker, or NULL when out of memory. */
struct profile *heist__profile_new(void);
void heist__profile_free(struct profile *p);

/* The owning worker only: one task's timestamps. */
void heist__profile_record(struct profile *p, unsigned worker, uint64_t created,
			   uint64_t started, uint64_t ended);

#endif
