/* SPDX-License-Identifier: MIT */
/* clock.h - every clock heist reads: CLOCK_MONOTONIC nanoseconds for deadlines and
 * timed waits, and the profiler's timestamps: the x86 time-stamp counter, the aarch64
 * virtual counter, or CLOCK_MONOTONIC nanoseconds where neither is usable (clock.c
 * decides once, at calibration, and says which through heist__clock_info()).
 *
 * Ordering: heist__tsc() is a plain rdtsc, for creation and start stamps, where being
 * off by the few dozen cycles the CPU may reorder it is nothing beside the latencies
 * measured. heist__tsc_end() is rdtscp, which waits for the task's instructions to
 * finish but, unlike lfence; rdtsc, does not stop the ones after it: the lfence form
 * cost about 9 ns a stamp on a 500-iteration task (its floating-point chain could no
 * longer overlap the code that follows), W8 +14% instead of the 10% allowed. */
#ifndef HEIST_CLOCK_H
#define HEIST_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "heist/profile.h"

/* Monotonic nanoseconds (CLOCK_MONOTONIC), for deadlines. */
uint64_t heist__now_ns(void);

/* A deadline that never comes. */
#define HEIST_NEVER UINT64_MAX

/* The heist__now_ns() time timeout_ns from now; HEIST_NEVER when that is at or past
 * the end of the clock's range (a timeout that large means "forever"). */
static inline uint64_t
heist__deadline_after(uint64_t timeout_ns)
{
	uint64_t now = heist__now_ns();
	return timeout_ns >= HEIST_NEVER - now ? HEIST_NEVER : now + timeout_ns;
}

/* true once calibration found no usable hardware counter. Written once, before any
 * pool profiles (heist__once in clock.c orders it), then only read. */
extern bool heist__tsc_fallback;
/* x86: the CPU has rdtscp (CPUID 0x80000001 EDX bit 27). Set with the above. */
extern bool heist__tsc_rdtscp;

/* The counter's raw value: a start stamp (may be reordered by a few cycles). */
static inline uint64_t
heist__tsc(void)
{
	if (heist__tsc_fallback)
		return heist__now_ns();
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi)::"memory");
	return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v)::"memory");
	return v;
#else
	return heist__now_ns();
#endif
}

/* A stamp taken after everything before it has executed. */
static inline uint64_t
heist__tsc_end(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi, aux;
	if (heist__tsc_fallback)
		return heist__now_ns();
	if (heist__tsc_rdtscp)
		__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux)::"memory");
	else
		__asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
	return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
	uint64_t v;
	if (heist__tsc_fallback)
		return heist__now_ns();
	__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v)::"memory");
	return v;
#else
	return heist__now_ns();
#endif
}

/* Calibrate the counter once per process (about 20 ms the first time). Any thread;
 * every pool that profiles calls it before its first timestamp. */
void heist__clock_calibrate(void);

/* The calibrated counter, for reports. Calibrates first if needed. */
const struct heist_profile_clock *heist__clock_info(void);

#endif
