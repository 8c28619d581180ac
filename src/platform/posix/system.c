/* SPDX-License-Identifier: MIT */
/* posix/system.c - the parts of platform.h that POSIX.1-2008 leaves to each system,
 * in the form every POSIX system has: sysconf's count of online CPUs, no CPU list (so
 * no pinning without hwloc, which pins on every system it knows), no thread names and
 * no program name. Linux has its own (linux/system.c); a native file for macOS or a BSD
 * belongs beside it, built and tested where that system runs. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "../platform.h"

#include <errno.h>
#include <unistd.h>

void
heist__thread_name(const char *name)
{
	(void)name;
}

void
heist__thread_precise_timeouts(void)
{
}

unsigned
heist__cpu_count(void)
{
	int saved = errno;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	errno = saved;
	return n > 0 ? (unsigned)n : 1;
}

unsigned
heist__cpu_quota(void)
{
	return 0;	/* POSIX has no CPU quota to read */
}

unsigned
heist__cpu_list(int *cpus, unsigned max)
{
	(void)cpus;
	(void)max;
	return 0;
}

int
heist__cpu_pin(int cpu)
{
	(void)cpu;
	return ENOSYS;
}

void
heist__program_name(char *buf, size_t size)
{
	if (size)
		buf[0] = '\0';
}
