/* SPDX-License-Identifier: MIT */
/* faults.h - failure injection and call counting for the tests.
 *
 * A test executable links faults.c and passes
 *   -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc,
 *          --wrap=posix_memalign,--wrap=mmap,--wrap=pthread_create
 * so that every call to those functions from the test and from the statically linked
 * library goes through the __wrap_ functions in faults.c. Calls made inside shared
 * libraries (libc itself, liburcu, cmocka) are not redirected and never fail.
 * On Windows the wraps are malloc, calloc, realloc and the library's platform layer's
 * heist__os_aligned_alloc, heist__os_pages_map and heist__thread_start (faults.c says
 * why): the same kinds of failure reach the library the same way. There, every object
 * linked statically (the C runtime's helpers, winpthreads, libgcc's emulated TLS) has
 * its malloc calls wrapped too.
 *
 * Each kind of call (allocation, thread creation) has its own switch: off (call through),
 * "fail the call that comes after `skip` more calls" (once), or "fail every call". A
 * switch can watch every thread or only the thread that armed it. Everything is atomic,
 * so arming, disarming and counting are safe while other threads allocate.
 * A failed allocation returns NULL with errno ENOMEM (posix_memalign returns ENOMEM);
 * a failed pthread_create returns EAGAIN and starts nothing.
 */
#ifndef HEIST_TESTS_FAULTS_H
#define HEIST_TESTS_FAULTS_H

#include <stdbool.h>
#include <stdint.h>

enum fault_kind {
	FAULT_ALLOC,	/* malloc, calloc, realloc, aligned_alloc, posix_memalign, mmap */
	FAULT_THREAD,	/* pthread_create */
	FAULT_KINDS
};

/* Which threads an armed switch applies to. */
enum fault_scope {
	FAULT_ANY_THREAD,
	FAULT_THIS_THREAD	/* only the thread that armed it */
};

/* Let `skip` calls of this kind through, fail the next one, then let all through. */
void fault_fail_nth(enum fault_kind kind, uint64_t skip, enum fault_scope scope);

/* Fail every call of this kind until fault_disarm(). */
void fault_fail_all(enum fault_kind kind, enum fault_scope scope);

/* Let every call through again. Returns how many calls were failed since arming. */
uint64_t fault_disarm(enum fault_kind kind);

/* How many calls were failed since the switch was last armed. */
uint64_t fault_failed(enum fault_kind kind);

/* Calls of this kind seen so far (failed ones included): from every thread, and from
 * the calling thread only. */
uint64_t fault_calls(enum fault_kind kind);
uint64_t fault_calls_this_thread(enum fault_kind kind);

#endif /* HEIST_TESTS_FAULTS_H */
