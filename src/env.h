/* SPDX-License-Identifier: MIT */
/* env.h - a pool's configuration from the environment (env.c). */
#ifndef HEIST_ENV_H
#define HEIST_ENV_H

#include "heist/heist.h"

/* Fill the fields of *cfg that are still at their default (0) from HEIST_NUM_THREADS,
 * HEIST_PIN and HEIST_MAX_SPARES, unless cfg->ignore_environment. A bad value is
 * ignored, with one line on stderr. Called once per heist_pool_create, before the
 * fields are checked. */
void heist__env_apply(struct heist_config *cfg);

#endif /* HEIST_ENV_H */
