/* workloads.h - the entry point of each workload file (w_*.c). Each one checks
 * bench_selected() for the rows it owns, builds its inputs and pools, measures with
 * bench_measure(), checks answers, adds its rows and frees what it made. To add a
 * workload: write w_<name>.c with such a function, declare it here, list it
 * in heist-bench.c's table and in meson.build. */
#ifndef HEIST_BENCH_WORKLOADS_H
#define HEIST_BENCH_WORKLOADS_H

#include "bench.h"

void w1_fib(const struct bench_opts *o);	/* W1 */
void w2_nqueens(const struct bench_opts *o);	/* W2 */
void w3_uts(const struct bench_opts *o);	/* W3 */
void w4_for_each(const struct bench_opts *o);	/* W4 */
void w5_storm(const struct bench_opts *o);	/* W5, W5-fine */
void w6_round_trip(const struct bench_opts *o);	/* W6, W6-cold */
void w7_matmul(const struct bench_opts *o);	/* W7 */
void w8_latency(const struct bench_opts *o);	/* W8 */
void idle_cpu(const struct bench_opts *o);	/* idle */

#endif /* HEIST_BENCH_WORKLOADS_H */
