/* SPDX-License-Identifier: MIT */
/* win/wait.c - platform.h's waits on a word with WaitOnAddress, WakeByAddressSingle and
 * WakeByAddressAll (Windows 8 and later; -lsynchronization). The system compares the
 * word with the expected value against wakers, as the Linux futex does, so a wake that
 * follows a change of the word is never lost. A timeout rounds up to whole
 * milliseconds (a caller's deadline is its own: it looks at the clock again). Windows
 * has no bitset wakes: a bits wake wakes every sleeper on the word (a superset of
 * Linux's; the others re-check and sleep again). */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include "../platform.h"

#include <errno.h>
#include <windows.h>

void
heist__futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
	DWORD ms = INFINITE;
	if (timeout_ns) {
		uint64_t m = (timeout_ns + 999999u) / 1000000u;
		ms = m >= INFINITE ? INFINITE - 1 : (DWORD)m;
	}
	int saved = errno;
	DWORD last = GetLastError();
	WaitOnAddress((volatile void *)word, &expected, sizeof(expected), ms);
	SetLastError(last);
	errno = saved;
}

void
heist__futex_wake(_Atomic uint32_t *word, int n)
{
	if (n == 1)
		WakeByAddressSingle((void *)word);
	else
		WakeByAddressAll((void *)word);
}

void
heist__futex_wait_bits(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns,
		       uint32_t bits)
{
	(void)bits;
	heist__futex_wait(word, expected, timeout_ns);
}

void
heist__futex_wake_bits(_Atomic uint32_t *word, int n, uint32_t bits)
{
	(void)n;
	(void)bits;
	WakeByAddressAll((void *)word);
}
