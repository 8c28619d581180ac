/* SPDX-License-Identifier: MIT */
/* record.h - per-thread caches of job records (future.h), so that a submit does not
 * call malloc in steady state. A record goes back to the cache of the thread that
 * allocated it, wherever it is freed; a thread's cache lives until its thread exits
 * and its last record comes home. */
#ifndef HEIST_RECORD_H
#define HEIST_RECORD_H

enum { RECORD_BYTES = 128 };

/* RECORD_BYTES of memory aligned to 16, or NULL when out of memory. */
void *heist__record_alloc(void);
/* Any thread. */
void heist__record_free(void *p);

#endif
