/* SPDX-License-Identifier: MIT */
/* workloads.h - the workloads of heist-bench, one w_*.c file each. A workload is a
 * struct bench_workload (bench.h): its sizes, how to build its inputs and check an
 * answer, its figures, and a static table of variants (implementation, threads, pool,
 * the function that runs one repetition); bench_run() in bench.c measures them all the
 * same way. To add a workload: write w_<name>.c defining one, declare it here, list it
 * in heist-bench.c's table and in meson.build. */
#ifndef HEIST_BENCH_WORKLOADS_H
#define HEIST_BENCH_WORKLOADS_H

#include "bench.h"

extern const struct bench_workload w1_fib;		/* W1 */
extern const struct bench_workload w2_nqueens;		/* W2 */
extern const struct bench_workload w3_uts;		/* W3 */
extern const struct bench_workload w4_for_each;		/* W4 */
extern const struct bench_workload w5_storm;		/* W5, W5-fine */
extern const struct bench_workload w6_round_trip;	/* W6, W6-cold */
extern const struct bench_workload w7_matmul;		/* W7 */
extern const struct bench_workload w8_latency;		/* W8 */
extern const struct bench_workload w_chain;		/* continuations (issue 14) */
extern const struct bench_workload w_reduce;		/* reduce: W4's array summed */
extern const struct bench_workload w10_graph;		/* W10, only with --only */

/* W1's serial fib and its heist fib on pool (w_fib.c), for --instructions. */
long w1_serial(int n);
long w1_heist(heist_pool *pool, int n);

/* --instructions (instr.c): run this program (self) twice under callgrind for W1
 * fib(n) and print the instructions per spawn+sync pair; 0, or 1 if it could not.
 * bench_instr_child is the child's side; its exit status. */
int bench_instructions(const char *self, int n);
int bench_instr_child(const char *what, int n);

/* idle: what an idle heist pool costs; no variants, no repetitions (w_idle.c). */
void idle_cpu(const struct bench_opts *o);
/* W9 at light load: an open loop at 20,000 and 200,000 tasks/s; the pool's CPU and how
 * late tasks start (w_light.c). */
void light_load(const struct bench_opts *o);
/* timers: timed tasks due at 1,000/s with 100,000 timers pending; idle CPU with and
 * without them (w_timer.c). */
void timer_load(const struct bench_opts *o);
/* W11: a high-priority stream on an idle pool and through a low flood (w_prio.c). */
void prio_load(const struct bench_opts *o);

#endif /* HEIST_BENCH_WORKLOADS_H */
