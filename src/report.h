/* SPDX-License-Identifier: MIT */
/* report.h - the profile a program writes without knowing it (report.c): with
 * HEIST_PROFILE or HEIST_TRACE set (env.c), each pool writes heist-latency's JSON
 * report, or a Perfetto trace, of its tasks when it is destroyed, or at exit. */
#ifndef HEIST_REPORT_H
#define HEIST_REPORT_H

#include <stdbool.h>

#include "env.h"
#include "heist/heist.h"

struct report;

/* The report of a pool made with cfg: takes the names in *files (NULL when there are
 * none: nothing to write); numbers the pool among the process's reporting pools.
 * NULL with *nomem set when out of memory (the names are freed either way). */
struct report *heist__report_new(struct env_files *files, const struct heist_config *cfg,
				 bool *nomem);

/* Write the files, once, from the process that made the pool (a forked child does not
 * write its parent's pools); `when` says why ("destroy" or "exit"). A file that cannot
 * be written gets one line on stderr. errno is kept. NULL: no-op. */
void heist__report_write(struct report *r, heist_pool *pool, const char *when);
void heist__report_free(struct report *r);

#endif /* HEIST_REPORT_H */
