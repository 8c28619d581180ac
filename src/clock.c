/* SPDX-License-Identifier: MIT */
/* clock.c - the clocks of clock.h: monotonic nanoseconds, and the calibration of the
 * profiler's counter (its rate from CPUID leaf 0x15 or cntfrq_el0, else measured
 * against platform.h's raw monotonic clock; the monotonic clock itself where the
 * counter is not invariant). The profiler's buffers and reports are in profile.c. */
#include "clock.h"

#include "platform/platform.h"

enum { CALIBRATE_NS = 20000000, CALIBRATE_READS = 1 << 26 };

bool heist__tsc_fallback;
bool heist__tsc_rdtscp;

static struct heist_profile_clock the_clock;
static heist__once_flag clock_once = HEIST__ONCE_INIT;

uint64_t
heist__now_ns(void)
{
	return heist__clock_ns();
}

#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
/* Counter ticks per ns, measured against the raw monotonic clock over CALIBRATE_NS;
 * 0 if that clock does not advance (calibrate_once then falls back). */
static double
measure(void)
{
	uint64_t t0 = heist__clock_raw_ns(), c0 = heist__tsc();
	uint64_t t1 = t0;
	for (unsigned i = 0; i < CALIBRATE_READS && t1 - t0 < CALIBRATE_NS; i++)
		t1 = heist__clock_raw_ns();
	uint64_t c1 = heist__tsc();
	if (t1 - t0 < CALIBRATE_NS || c1 <= c0)
		return 0;
	return (double)(c1 - c0) / (double)(t1 - t0);
}
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static void
calibrate_hw(void)
{
	unsigned a, b, c, d;
	the_clock.name = "tsc";
	heist__tsc_rdtscp = __get_cpuid(0x80000001, &a, &b, &c, &d) && (d & (1u << 27));
	the_clock.invariant = __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8));
	if (!the_clock.invariant) {
		/* A TSC that changes speed with power states measures nothing. */
		heist__tsc_fallback = true;
		return;
	}
	if (__get_cpuid_max(0, NULL) >= 0x15) {
		__cpuid(0x15, a, b, c, d);
		if (a && b && c) {	/* crystal Hz * (TSC / crystal ratio) */
			the_clock.cycles_per_ns = (double)c * b / a / 1e9;
			the_clock.calibration = 1;
			return;
		}
	}
	the_clock.cycles_per_ns = measure();
	the_clock.calibration = 2;
}
#elif defined(__aarch64__)
static void
calibrate_hw(void)
{
	uint64_t hz;
	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(hz));
	the_clock.name = "cntvct";
	the_clock.invariant = 1;	/* the generic timer runs at a fixed frequency */
	if (hz) {
		the_clock.cycles_per_ns = (double)hz / 1e9;
		the_clock.calibration = 1;
	} else {
		the_clock.cycles_per_ns = measure();
		the_clock.calibration = 2;
	}
}
#else
static void
calibrate_hw(void)
{
	heist__tsc_fallback = true;
}
#endif

static void
calibrate_once(void)
{
	calibrate_hw();
	/* A counter that does not advance (some emulators) or whose rate could not be
	 * measured would turn every sample into infinities: the clock answers instead.
	 * Below a tick per microsecond no counter is worth reading. */
	if (!heist__tsc_fallback && !(the_clock.cycles_per_ns >= 0.001))
		heist__tsc_fallback = true;
	if (heist__tsc_fallback) {
		the_clock.name = "clock_gettime";
		the_clock.cycles_per_ns = 1.0;
		the_clock.calibration = 0;
	}
}

void
heist__clock_calibrate(void)
{
	heist__once(&clock_once, calibrate_once);
}

const struct heist_profile_clock *
heist__clock_info(void)
{
	heist__clock_calibrate();
	return &the_clock;
}
