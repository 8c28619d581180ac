/* SPDX-License-Identifier: MIT */
/* cpu.c - CPU time, user + system: the process's, every thread's (bench_cpu_ms), and
 * the calling thread's (bench_thread_cpu_ms), so that a workload can take out its
 * producer's: getrusage(RUSAGE_SELF / RUSAGE_THREAD), or GetProcessTimes and
 * GetThreadTimes on Windows. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* RUSAGE_THREAD; meson passes it too */
#endif
#include "bench.h"

#include <stdbool.h>

#if defined(_WIN32)
#include <windows.h>

static double
cpu_ms(bool thread)
{
	FILETIME created, exited, kernel, user;	/* 100 ns units */
	BOOL ok = thread ? GetThreadTimes(GetCurrentThread(), &created, &exited, &kernel, &user)
			 : GetProcessTimes(GetCurrentProcess(), &created, &exited, &kernel, &user);
	if (!ok)
		return 0;
	ULARGE_INTEGER k = {.LowPart = kernel.dwLowDateTime, .HighPart = kernel.dwHighDateTime};
	ULARGE_INTEGER u = {.LowPart = user.dwLowDateTime, .HighPart = user.dwHighDateTime};
	return (double)(k.QuadPart + u.QuadPart) / 1e4;
}
#else
#include <sys/resource.h>
#include <sys/time.h>

static double
cpu_ms(bool thread)
{
	struct rusage ru;
	getrusage(thread ? RUSAGE_THREAD : RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}
#endif

double
bench_cpu_ms(void)
{
	return cpu_ms(false);
}

double
bench_thread_cpu_ms(void)
{
	return cpu_ms(true);
}
