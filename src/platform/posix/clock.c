/* SPDX-License-Identifier: MIT */
/* posix/clock.c - platform.h's clocks: clock_gettime. CLOCK_MONOTONIC_RAW where the
 * system has it (Linux, macOS), for the profiler's calibration. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "../platform.h"

#include <time.h>

/* A clock the system does not serve (CLOCK_MONOTONIC_RAW on a kernel or sandbox
 * without it) reads as CLOCK_MONOTONIC, never as an unset timespec. */
static uint64_t
read_ns(clockid_t id)
{
	struct timespec ts;
	if (clock_gettime(id, &ts) != 0 &&
	    (id == CLOCK_MONOTONIC || clock_gettime(CLOCK_MONOTONIC, &ts) != 0))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t
heist__clock_ns(void)
{
	return read_ns(CLOCK_MONOTONIC);
}

uint64_t
heist__clock_raw_ns(void)
{
#ifdef CLOCK_MONOTONIC_RAW
	return read_ns(CLOCK_MONOTONIC_RAW);
#else
	return read_ns(CLOCK_MONOTONIC);
#endif
}
