/* SPDX-License-Identifier: MIT */
/* peers.h - the same workloads on other runtimes, for comparison: OpenMP tasks
 * (peer_omp.c, built when meson finds OpenMP: HEIST_BENCH_OMP) and oneTBB task_group
 * (peer_tbb.cpp, built when meson finds tbb: HEIST_BENCH_TBB). Each runtime is one
 * struct peer, a table of its versions of the workloads; a workload's table names the
 * peers it has rows for, and the driver leaves out the ones not built (bench_peer in
 * bench.c). Every function runs one whole computation with `threads` threads, calling
 * thread included, and returns its answer; the caller times it and checks the answer. */
#ifndef HEIST_BENCH_PEERS_H
#define HEIST_BENCH_PEERS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"
#include "w8.h"

#ifdef __cplusplus
extern "C" {
#endif

struct peer {
	const char *impl;	/* its rows' impl: "omp", "tbb" */
	long (*fib)(unsigned threads, int n);
	long (*nqueens)(unsigned threads, int n);
	struct uts_result (*uts)(unsigned threads, uint64_t seed);
	/* W4: reps times a[i] = w4_elem(a[i]) over [0, n), one parallel loop each. */
	void (*for_each)(unsigned threads, double *a, size_t n, unsigned reps);
	/* reduce: reps times the sum of a[0, n) by w4_sum per range, one parallel
	 * reduction each; returns the sum of the sums. */
	double (*reduce)(unsigned threads, const double *a, size_t n, unsigned reps);
	/* W5: one thread makes a task per k, out[k] = w5_body(k, iters), and waits. */
	void (*storm)(unsigned threads, double *out, size_t ntasks, unsigned iters);
	/* W6: hand a task that returns 1 to the runtime's workers and wait for it;
	 * returns the task's value. NULL where an outside thread cannot do that. */
	int (*round_trip)(unsigned threads);
	/* W7: C = A x B, parallel over the rows of C. */
	void (*matmul)(unsigned threads, const double *A, const double *B, double *C, size_t n);
	/* W8: the binary tree of w8.h (2^(depth+1) - 1 nodes), a task per child. */
	struct w8_result (*tree)(unsigned threads, unsigned depth, unsigned payload);
	/* W10: one run of graph g, a task per point that runs once its inputs are done
	 * (kernels.h: w10_inputs), each calling w10_point; returns when every point is. */
	void (*graph)(unsigned threads, const struct w10_graph *g);
};

#ifdef HEIST_BENCH_OMP
/* parallel + single + task per child (fork-join, W5), parallel for (W4, W7), task
 * depend(in, out) per point (W10); no W6. */
extern const struct peer peer_omp;
#endif

#ifdef HEIST_BENCH_TBB
/* task_group in a task_arena (fork-join, W5), parallel_for (W4, W7), enqueue on a
 * workers-only arena + latch (W6), a flow::graph of continue_nodes (W10). Its `threads`
 * must be what peer_tbb_start got. */
extern const struct peer peer_tbb;
/* Make the arena of `threads` slots (and the global limits); call before the others,
 * again to change the count. peer_tbb_stop frees it. */
void peer_tbb_start(unsigned threads);
void peer_tbb_stop(void);
#endif

#ifdef __cplusplus
}
#endif

#endif /* HEIST_BENCH_PEERS_H */
