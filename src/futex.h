/* SPDX-License-Identifier: MIT */
/* futex.h - wait until a 32-bit word changes, and wake its waiters. A futex on Linux;
 * elsewhere a small table of mutex + condition variable pairs keyed by address. */
#ifndef HEIST_FUTEX_H
#define HEIST_FUTEX_H

#include <stdatomic.h>
#include <stdint.h>

/* Sleep while *word == expected, for at most timeout_ns (0: no limit). Returns on a
 * wake, on a change, on timeout or spuriously: callers re-check their condition. */
void heist__futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns);

/* Wake up to n threads sleeping on word (INT32_MAX: all). */
void heist__futex_wake(_Atomic uint32_t *word, int n);

/* The same, for a subset of a word's sleepers: a sleeper whose bits share one with the
 * waker's is woken (Linux's FUTEX_WAIT_BITSET and FUTEX_WAKE_BITSET); a plain wake
 * wakes every sleeper. Elsewhere the bits are ignored (a wake wakes all). */
void heist__futex_wait_bits(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns,
			    uint32_t bits);
void heist__futex_wake_bits(_Atomic uint32_t *word, int n, uint32_t bits);

#endif
