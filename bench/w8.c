/* SPDX-License-Identifier: MIT */
/* w8.c - the W8 tree on heist, its serial twin, and its answer (see w8.h). Only the
 * public API (heist/heist.h) is used, and nothing else from bench/, so that
 * tools/meson.build can compile this file into heist-latency (and test-profile) when
 * the benchmarks are not built. */
#include "w8.h"

#include <heist/heist.h>

int
w8_tree(void *arg)
{
	struct w8_node *n = arg;
	if (!w8_visit(n))
		return 0;
	struct w8_node kid[2];
	heist_task t[2];
	w8_children(kid, n);
	heist_spawn(&t[0], w8_tree, &kid[0]);
	heist_spawn(&t[1], w8_tree, &kid[1]);
	int r1 = heist_sync(&t[1]);	/* reverse order of the spawns */
	int r0 = heist_sync(&t[0]);
	w8_gather(n, kid);
	return r0 ? r0 : r1;
}

void
w8_serial(struct w8_node *n)
{
	if (!w8_visit(n))
		return;
	struct w8_node kid[2];
	w8_children(kid, n);
	w8_serial(&kid[0]);
	w8_serial(&kid[1]);
	w8_gather(n, kid);
}

int
w8_run(heist_pool *pool, unsigned depth, unsigned payload, struct w8_result *out)
{
	return w8_run_until(pool, depth, payload, NULL, out);
}

int
w8_run_until(heist_pool *pool, unsigned depth, unsigned payload, const int *stop,
	     struct w8_result *out)
{
	struct w8_node root = w8_root(depth, payload);
	root.stop = stop;
	int err = heist_run(pool, w8_tree, &root);
	*out = root.r;
	return err;
}

BENCH_KERNEL uint64_t
w8_work(uint64_t index, unsigned payload)
{
	double x = (double)index * 1e-3;
	for (unsigned k = 0; k < payload; k++)
		x = x * 1.0000001 + 1e-9;
	uint64_t bits;
	memcpy(&bits, &x, sizeof bits);
	return bits;
}

struct w8_result
w8_expected(unsigned depth, unsigned payload)
{
	struct w8_result want = { w8_tasks(depth), 0 };
	for (uint64_t i = 0; i < want.tasks; i++)
		want.sum += w8_work(i, payload);
	return want;
}
