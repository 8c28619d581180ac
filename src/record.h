/* SPDX-License-Identifier: MIT */
/* record.h - per-thread caches of job records (future.h), so that a submit does not
 * call malloc in steady state. A record goes back to the cache of the thread that
 * allocated it, wherever it is freed; a thread's cache lives until its thread exits
 * and its last record comes home, and heist__record_trim gives back what a burst left
 * beyond a small reserve. */
#ifndef HEIST_RECORD_H
#define HEIST_RECORD_H

#include <stdatomic.h>
#include <stdint.h>

/* A record: a job (future.h). A wide record: a job that keeps more in it (a dependent
 * task's inputs, then.c); a cache of its own, so that other jobs stay two lines. */
enum { RECORD_BYTES = 128, WIDE_RECORD_BYTES = 256 };

/* RECORD_BYTES of memory aligned to its size, or NULL when out of memory. */
void *heist__record_alloc(void);
/* WIDE_RECORD_BYTES of memory aligned to its size, or NULL when out of memory. */
void *heist__record_alloc_wide(void);
/* Any thread, a record of either size. A record of another thread's cache may wait
 * on this thread, with up to 31 more of that cache, until this thread frees one of
 * another cache of that size, trims or exits. */
void heist__record_free(void *p);
/* On the calling thread's caches, after a burst: send the records of other caches it
 * holds to their homes, take the records freed elsewhere home
 * and free every slab whose records are all home, but a reserve of one (256 KiB) each,
 * giving its pages back to the system.
 * O(records at home + slabs): for quiet moments, not for the submit path. */
void heist__record_trim(void);

/* A worker going to sleep: sends home the records of other caches it holds, as
 * heist__record_trim does, and trims each of its caches whose last new slab is
 * heist__record_idle_ns old by `now` (heist__now_ns). Returns when the next of them will
 * be, for a worker asleep to call it again then; HEIST_NEVER when there is nothing to
 * wait for (no cache holds more than the reserve, or one was trimmed and kept only
 * slabs with records out, which a later sleep trims as before: a timer for them would
 * wake an idle worker again and again while the program holds their futures). */
uint64_t heist__record_trim_idle(uint64_t now);

/* How long after its last new slab a cache's surplus may go (heist__record_trim_idle):
 * 10 s. Tests lower it before they start the threads that read it (relaxed: read on
 * the way to sleep, written by a test while no worker of its runs). */
extern _Atomic uint64_t heist__record_idle_ns;

#endif
