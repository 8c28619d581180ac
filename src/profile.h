/* profile.h (private) - what the scheduler calls to record a task's latency. The
 * public reporting API is include/heist/profile.h. */
#ifndef HEIST_PROFILE_PRIVATE_H
#define HEIST_PROFILE_PRIVATE_H

#include <stdint.h>

#include "tsc.h"

struct profile;

/* Buffers for one worker, or NULL when out of memory. */
struct profile *heist__profile_new(void);
void heist__profile_free(struct profile *p);

/* The owning worker only: one task's timestamps. */
void heist__profile_record(struct profile *p, unsigned worker, uint64_t created,
			   uint64_t started, uint64_t ended);

#endif
