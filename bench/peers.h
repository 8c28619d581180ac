/* peers.h - the same workloads on other runtimes, for comparison: OpenMP tasks
 * (peer_omp.c, built when meson finds OpenMP: HEIST_BENCH_OMP) and oneTBB task_group
 * (peer_tbb.cpp, built when meson finds tbb: HEIST_BENCH_TBB). Every function runs one
 * whole computation with `threads` threads, calling thread included, and returns its
 * answer; the caller times it and checks the answer. */
#ifndef HEIST_BENCH_PEERS_H
#define HEIST_BENCH_PEERS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"
#include "w8.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef HEIST_BENCH_OMP
long peer_omp_fib(unsigned threads, int n);
long peer_omp_nqueens(unsigned threads, int n);
struct uts_result peer_omp_uts(unsigned threads, uint64_t seed);
/* W5: one thread creates a task per k (parallel + single + task). */
void peer_omp_storm(unsigned threads, double *out, size_t ntasks, unsigned iters);
/* W4: reps times a[i] = w4_elem(a[i]) over [0, n), one `parallel for` each. */
void peer_omp_for_each(unsigned threads, double *a, size_t n, unsigned reps);
/* W7: C = A x B, `parallel for` over the rows of C. */
void peer_omp_matmul(unsigned threads, const double *A, const double *B, double *C, size_t n);
/* W8: the binary tree of w8.h (2^(depth+1) - 1 nodes), a task per child. */
struct w8_result peer_omp_tree(unsigned threads, unsigned depth, unsigned payload);
#endif

#ifdef HEIST_BENCH_TBB
/* Make the arena of `threads` slots (and the global limits); call before the others,
 * again to change the count. peer_tbb_stop frees it. */
void peer_tbb_start(unsigned threads);
void peer_tbb_stop(void);
long peer_tbb_fib(int n);
long peer_tbb_nqueens(int n);
struct uts_result peer_tbb_uts(uint64_t seed);
/* W5: the calling thread enters the arena and runs a task_group task per k. */
void peer_tbb_storm(double *out, size_t ntasks, unsigned iters);
/* W6: hand a task that returns 1 to the arena's workers (enqueue) and wait for it on a
 * latch; returns the task's value. */
int peer_tbb_round_trip(void);
/* W4: enter the arena once, then reps times a parallel_for over a blocked_range of
 * [0, n) with the default (auto) partitioner. */
void peer_tbb_for_each(double *a, size_t n, unsigned reps);
/* W7: C = A x B, parallel_for over the rows of C (auto partitioner), in the arena. */
void peer_tbb_matmul(const double *A, const double *B, double *C, size_t n);
/* W8: the binary tree of w8.h, a task_group run per child. */
struct w8_result peer_tbb_tree(unsigned depth, unsigned payload);
#endif

#ifdef __cplusplus
}
#endif

#endif /* HEIST_BENCH_PEERS_H */
