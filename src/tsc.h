/* tsc.h - the profiler's timestamps: the x86 time-stamp counter, the aarch64 virtual
 * counter, or CLOCK_MONOTONIC nanoseconds where neither is usable (profile.c decides
 * once, at calibration, and says which in the report).
 *
 * Ordering: heist__tsc() is a plain rdtsc, for creation and start stamps, where being
 * off by the few dozen cycles the CPU may reorder it is nothing beside the latencies
 * measured. heist__tsc_end() is rdtscp, which waits for the task's instructions to
 * finish but, unlike lfence; rdtsc, does not stop the ones after it: the lfence form
 * cost about 9 ns a stamp on a 500-iteration task (its floating-point chain could no
 * longer overlap the code that follows), W8 +14% instead of the 10% allowed. */
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
/* x86: the CPU has rdtscp (CPUID 0x80000001 EDX bit 27). Set with the above. */
extern bool heist__tsc_rdtscp;

uint64_t heist__clock_ns(void);

static inline uint64_t
heist__tsc(void)
{
	if (heist__tsc_fallback)
		return heist__clock_ns();
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi)::"memory");
	return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v)::"memory");
	return v;
#else
	return heist__clock_ns();
#endif
}

/* A stamp taken after everything before it has executed. */
static inline uint64_t
heist__tsc_end(void)
{
	if (heist__tsc_fallback)
		return heist__clock_ns();
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi, aux;
	if (heist__tsc_rdtscp)
		__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux)::"memory");
	else
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
