/* SPDX-License-Identifier: MIT */
/* malloc_count.h - count heap allocations made by the whole process (every thread, the
 * heist shared library included) between start and stop. Counting is off outside that
 * window, so it costs the timed runs of other implementations one relaxed load. */
#ifndef HEIST_BENCH_MALLOC_COUNT_H
#define HEIST_BENCH_MALLOC_COUNT_H

#include <stdbool.h>
#include <stdint.h>

/* Whether the interposer is built in (glibc, no sanitizer); else counts are always 0. */
bool malloc_count_available(void);

/* Zero the count and start counting. */
void malloc_count_start(void);

/* Stop counting; the number of malloc, calloc, realloc, posix_memalign, aligned_alloc,
 * memalign, valloc and pvalloc calls since malloc_count_start. */
uint64_t malloc_count_stop(void);

#endif /* HEIST_BENCH_MALLOC_COUNT_H */
