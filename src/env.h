/* SPDX-License-Identifier: MIT */
/* env.h - a pool's configuration from the environment (env.c). */
#ifndef HEIST_ENV_H
#define HEIST_ENV_H

#include "heist/heist.h"

/* HEIST_PROFILE and HEIST_TRACE as given (%p not yet expanded), copies the caller
 * frees; NULL when unset, bad, or the profiler was compiled out. */
struct env_files {
	char *profile, *trace;
};

/* The sampling HEIST_PROFILE turns on when neither the program nor
 * HEIST_PROFILE_EVERY chose one (docs/profiler.md gives its cost on W8), and the
 * most heist_config.profile_every takes. */
#define PROFILE_EVERY_DEFAULT 4
#define PROFILE_EVERY_MAX 1048576

/* Fill the fields of *cfg that are still at their default (0) from HEIST_NUM_THREADS,
 * HEIST_PIN and HEIST_MAX_SPARES, unless cfg->ignore_environment; with HEIST_PROFILE
 * or HEIST_TRACE set, turn profile on (with HEIST_PROFILE_EVERY's sampling, when the
 * program chose none) and give their names in *files. A bad value is ignored, with
 * one line on stderr. Called once per heist_pool_create, before the fields are
 * checked. 0, or ENOMEM (then *files holds nothing). */
int heist__env_apply(struct heist_config *cfg, struct env_files *files);
void heist__env_files_free(struct env_files *files);

/* s as it may be shown inside double quotes on one line of stderr: a newline, CR, tab,
 * backslash and double quote as \n, \r, \t, \\ and \", the other bytes below 0x20
 * and 0x7f as \xHH, every other byte as is (UTF-8 stays readable). A copy the caller
 * frees; NULL when out of memory. */
char *heist__env_escape(const char *s);

#endif /* HEIST_ENV_H */
