/* SPDX-License-Identifier: MIT */
/* linux/system.c - the parts of platform.h that Linux does its own way: the affinity
 * mask (sched_getaffinity, what taskset and cgroups' cpusets set) for the CPU count and
 * list, pthread_setaffinity_np for pinning, pthread_setname_np (15 bytes) for names,
 * prctl's timer slack for precise timeouts, and /proc/self/comm for the program's name. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "../platform.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

void
heist__thread_name(const char *name)
{
	char short_name[16];	/* the kernel keeps 15 bytes and refuses more */
	snprintf(short_name, sizeof(short_name), "%s", name);
	pthread_setname_np(pthread_self(), short_name);
}

void
heist__thread_precise_timeouts(void)
{
	int saved = errno;
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	errno = saved;
}

unsigned
heist__cpu_count(void)
{
	int saved = errno;
	cpu_set_t set;
	unsigned n = 0;
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) {
		n = (unsigned)CPU_COUNT(&set);
	} else {
		long online = sysconf(_SC_NPROCESSORS_ONLN);
		n = online > 0 ? (unsigned)online : 1;
	}
	errno = saved;
	return n;
}

unsigned
heist__cpu_list(int *cpus, unsigned max)
{
	int saved = errno;
	cpu_set_t set;
	unsigned count = 0;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (unsigned c = 0; c < CPU_SETSIZE && count < max; c++)
			if (CPU_ISSET(c, &set))
				cpus[count++] = (int)c;
	errno = saved;
	return count;
}

int
heist__cpu_pin(int cpu)
{
	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return EINVAL;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET((unsigned)cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

void
heist__program_name(char *buf, size_t size)
{
	if (!size)
		return;
	buf[0] = '\0';
	int saved = errno;
	FILE *f = fopen("/proc/self/comm", "r");
	if (f) {
		if (!fgets(buf, (int)size, f))
			buf[0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
	errno = saved;
}
