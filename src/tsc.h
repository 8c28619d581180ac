/* tsc.h - the profiler's timestamps: the x86 time-stamp counter (lfence; rdtsc, so
 * the read is not hoisted above the work before it), the aarch64 virtual counter
 * (isb; mrs cntvct_el0), or CLOCK_MONOTONIC nanoseconds where neither is usable
 * (profile.c decides once, at calibration, and says which in the report). */
#ifndef HEIST_TSC_H
#define HEIST_TSC_H

#include <stdbool.h>
#include <stdint.h>

#ifndef HEIST_PROFILER
#define HEIST_PROFILER 1
#endif

/* true once calibration found no usable hardware counter. Written once, before any
 * pool profiles (pthread_once in profile.c orders it), then only read. */
extern bool heist__tsc_fallback;

uint64_t heist__clock_ns(void);

static inline uint64_t
heist__tsc(void)
{
	if (heist__tsc_fallback)
		return heist__clock_ns();
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;
	__asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
	return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v)::"memory");
	return v;
#else
	return heist__clock_ns();
#endif
}

/* Calibrate once per process (about 20 ms the first time). Any thread. */
void heist__tsc_calibrate(void);

#endif
