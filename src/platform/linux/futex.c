/* SPDX-License-Identifier: MIT */
/* linux/futex.c - platform.h's waits on a word with the Linux futex: private futexes,
 * and the bitset forms for the wakes wait.c aims at a subset of a word's sleepers.
 * Callers keep their own state word and re-check it after every return, so spurious
 * wake-ups are harmless. The calls keep errno: a futex wait that finds the word
 * changed sets EAGAIN, a timed one ETIMEDOUT, and the caller's errno is none of
 * heist's business (heist.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "../platform.h"

#include <errno.h>
#include <time.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

void
heist__futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
	struct timespec ts, *tsp = NULL;
	if (timeout_ns) {
		ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
		ts.tv_nsec = (long)(timeout_ns % 1000000000u);
		tsp = &ts;
	}
	/* The kernel compares *word with expected under its own lock, so a wake that
	 * follows a change of the word cannot slip between our check and our sleep. */
	int saved = errno;
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, tsp, NULL, 0);
	errno = saved;
}

void
heist__futex_wake(_Atomic uint32_t *word, int n)
{
	int saved = errno;
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
	errno = saved;
}

void
heist__futex_wait_bits(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns,
		       uint32_t bits)
{
	/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline. */
	struct timespec ts, *tsp = NULL;
	int saved = errno;
	if (timeout_ns) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t ns = (uint64_t)ts.tv_nsec + timeout_ns;
		ts.tv_sec += (time_t)(ns / 1000000000u);
		ts.tv_nsec = (long)(ns % 1000000000u);
		tsp = &ts;
	}
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_BITSET_PRIVATE, expected, tsp, NULL,
		bits);
	errno = saved;
}

void
heist__futex_wake_bits(_Atomic uint32_t *word, int n, uint32_t bits)
{
	int saved = errno;
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_BITSET_PRIVATE, n, NULL, NULL, bits);
	errno = saved;
}
