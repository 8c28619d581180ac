/* SPDX-License-Identifier: MIT */
/* w8.h - W8 of docs/workloads.md written once: the fork-join binary tree of depth D
 * (2^(D+1) - 1 tasks), each node running a payload loop (500 rounds of
 * x = x * 1.0000001 + 1e-9) before it spawns its two children and syncs them. Used by
 * heist-bench's W8 rows (serial, heist, and the OpenMP and oneTBB peers through the
 * inline parts below), by tools/heist-latency (its default fork-join workload) and by
 * tests/test-profile.c, so all three run the same tree and check the same answer.
 *
 * The answer is exact and does not depend on the order tasks ran in: the task count,
 * and the sum mod 2^64 of every node's loop result read as a 64-bit integer. Node i
 * (heap numbering: the root is 0, node i's children are 2i+1 and 2i+2) starts its loop
 * at x = i / 1000, so every node computes its own value and a node run twice, or with
 * another node's index, changes the sum.
 *
 * Compiles as C11 and as C++ (peer_tbb.cpp). It needs no heist header and nothing from
 * bench/ but kernels.h's BENCH_KERNEL (tools/meson.build compiles w8.c into
 * heist-latency with -Dbench=disabled). */
#ifndef HEIST_BENCH_W8_H
#define HEIST_BENCH_W8_H

#include <stdint.h>
#include <string.h>

#include "kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

struct heist_pool;	/* heist/heist.h: typedef struct heist_pool heist_pool */

enum {
	W8_DEPTH = 19,		/* docs/workloads.md: 1,048,575 tasks */
	W8_PAYLOAD = 500,	/* iterations of the loop per node */
};

/* A subtree's answer: its tasks (nodes) and checksum. */
struct w8_result {
	uint64_t tasks;
	uint64_t sum;		/* the nodes' loop results as integers, summed mod 2^64 */
};

/* One node, in its parent's frame (the root in the caller's): the task's argument, and
 * where it leaves its subtree's answer, so no two tasks share anything. */
struct w8_node {
	uint64_t index;		/* heap numbering: the root is 0, children 2i+1 and 2i+2 */
	unsigned level, depth;	/* the root is level 0, the leaves are level depth */
	unsigned payload;	/* iterations of the loop */
	const int *stop;	/* NULL, or a flag that, once nonzero, makes every node not
				   yet visited a leaf that ran nothing (w8_run_until) */
	struct w8_result r;	/* out */
};

/* The number of tasks in a tree of depth `depth`: 2^(depth+1) - 1. */
static inline uint64_t
w8_tasks(unsigned depth)
{
	return ((uint64_t)1 << (depth + 1)) - 1;
}

static inline struct w8_node
w8_root(unsigned depth, unsigned payload)
{
	struct w8_node root = { 0, 0, depth, payload, NULL, { 0, 0 } };
	return root;
}

/* Node index's payload: `payload` dependent rounds on a local double, returned as its
 * bits, so that the loop cannot be optimised away and the sum is exact. Out of line
 * and opaque to its callers (w8.c; kernels.h says why). */
BENCH_KERNEL uint64_t w8_work(uint64_t index, unsigned payload);

/* A node's own work: its answer so far is itself. Returns its number of children:
 * 0 for a leaf, else 2. */
static inline int
w8_visit(struct w8_node *n)
{
	/* relaxed: the flag orders nothing; a node that misses it runs as usual. */
	if (n->stop && __atomic_load_n(n->stop, __ATOMIC_RELAXED)) {
		n->r.tasks = 0;
		n->r.sum = 0;
		return 0;
	}
	n->r.tasks = 1;
	n->r.sum = w8_work(n->index, n->payload);
	return n->level == n->depth ? 0 : 2;
}

/* The two children of n, with nothing found yet. */
static inline void
w8_children(struct w8_node kid[2], const struct w8_node *n)
{
	for (int i = 0; i < 2; i++) {
		kid[i].index = 2 * n->index + 1 + (uint64_t)i;
		kid[i].level = n->level + 1;
		kid[i].depth = n->depth;
		kid[i].payload = n->payload;
		kid[i].stop = n->stop;
		kid[i].r.tasks = 0;
		kid[i].r.sum = 0;
	}
}

/* Add the children's answers to their parent's, once both have finished. */
static inline void
w8_gather(struct w8_node *n, const struct w8_node kid[2])
{
	n->r.tasks += kid[0].r.tasks + kid[1].r.tasks;
	n->r.sum += kid[0].r.sum + kid[1].r.sum;
}

/* The heist task (a heist_fn; arg is a struct w8_node): the node's work, then both
 * children spawned and synced in reverse order. Returns 0, or the first nonzero value
 * a child's heist_sync returned. Call it through heist_run (or w8_run). */
int w8_tree(void *arg);

/* The same tree with plain calls (heist-bench's serial row). */
void w8_serial(struct w8_node *n);

/* Run the tree of the given depth and payload on pool, from outside it (heist_run),
 * and fill *out with its answer. Returns heist_run's value: 0, or an errno code.
 * The caller compares out->tasks with w8_tasks(depth). */
int w8_run(struct heist_pool *pool, unsigned depth, unsigned payload, struct w8_result *out);

/* w8_run that stops early once *stop (read with relaxed atomic loads) is nonzero: the
 * nodes not visited by then run nothing and count nothing, so out->tasks says how many
 * ran (heist-latency's Ctrl-C). */
int w8_run_until(struct heist_pool *pool, unsigned depth, unsigned payload, const int *stop,
		 struct w8_result *out);

/* The right answer, by a loop over the node indices: cheaper than a tree but still
 * every node's payload, so call it before any clock. */
struct w8_result w8_expected(unsigned depth, unsigned payload);

#ifdef __cplusplus
}
#endif

#endif /* HEIST_BENCH_W8_H */
