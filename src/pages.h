/* SPDX-License-Identifier: MIT */
/* pages.h - memory taken from the system in whole pages and given back to it when
 * freed (pages.c), for what a burst grows and a quiet moment drops: record slabs
 * (record.c) and large deque arrays (deque.c). The C library's allocator keeps freed
 * blocks of its arenas resident (glibc: a thread's arena shrinks only from its top,
 * and a freed large block raises the threshold under which later ones come from the
 * arenas), so after a burst of a million jobs had drained, 27-166 MB stayed resident
 * although heist had freed it all (issue 43); pages given back leave nothing behind. */
#ifndef HEIST_PAGES_H
#define HEIST_PAGES_H

#include <stddef.h>

/* bytes (a multiple of the page size, or rounded up to it) aligned to align (a power
 * of two; at most a page: 0), or NULL when out of memory. Never touches errno. */
void *heist__pages_alloc(size_t bytes, size_t align);

/* A hint before the caller writes all bytes of p (from heist__pages_alloc): fault them
 * in at once where the system can (platform.h). */
void heist__pages_prefault(void *p, size_t bytes);

/* Give back what heist__pages_alloc(bytes, align) returned (NULL: nothing). */
void heist__pages_free(void *p, size_t bytes);

/* Bytes held from heist__pages_alloc now, process-wide (tests' view of the heap). */
size_t heist__pages_in_use(void);

#endif
