/* SPDX-License-Identifier: MIT */
/* placement.c - print where each worker of a pool runs and whom it steals from, to
 * compare with `lstopo`. Usage: example-placement [threads] [none|core|pu] */
#include <heist/heist.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct heist_config cfg = {0};
	if (argc > 1)
		cfg.threads = (unsigned)atoi(argv[1]);
	if (argc > 2)
		cfg.pin = !strcmp(argv[2], "pu") ? HEIST_PIN_PU
			: !strcmp(argv[2], "core") ? HEIST_PIN_CORE : HEIST_PIN_NONE;
	heist_pool *pool;
	int err = heist_pool_create(&pool, &cfg);
	if (err) {
		fprintf(stderr, "heist_pool_create: %s\n", strerror(err));
		return 1;
	}
	unsigned n = heist_pool_size(pool);
	unsigned *victims = calloc(n, sizeof(*victims)), *ranks = calloc(n, sizeof(*ranks));
	if (!victims || !ranks)
		return 1;
	struct heist_stats s;
	heist_pool_stats(pool, &s);
	printf("%u workers, %u failed to bind\n", n, s.bind_failures);
	for (unsigned i = 0; i < n; i++) {
		struct heist_placement p;
		heist_pool_placement(pool, i, &p, victims, ranks, n);
		printf("worker %u: cpus %s%s, victims", i, p.cpus[0] ? p.cpus : "(any)",
		       p.bound < 0 ? " (binding failed)" : "");
		for (unsigned k = 0; k + 1 < n; k++)
			printf("%s%u", k == 0 || ranks[k] != ranks[k - 1] ? " | " : " ", victims[k]);
		printf("\n");
	}
	free(victims);
	free(ranks);
	heist_pool_destroy(pool);
	return 0;
}
