/* SPDX-License-Identifier: MIT */
/* w_idle.c - idle CPU: what a heist pool costs while it has nothing to do. A pool runs
 * a short burst (fork-join and submitted tasks), then gets 200 ms to fall asleep; then
 * the process's CPU time (getrusage RUSAGE_SELF, user + system, every thread) is measured
 * over 1 s of idling (0.5 s with --quick). The target is under 1 ms of CPU per second.
 * A figure, not a pass/fail. The other runtimes' threads, if any ran before, have been
 * idle for far longer than their spin phases by then. */
#include "workloads.h"

#include <stdio.h>

static int
tiny(void *arg)
{
	volatile int *x = arg;
	return *x;
}

static int
burst(void *arg)
{
	/* A few thousand spawns so every worker wakes and steals. */
	int n = *(int *)arg;
	if (n < 2)
		return 0;
	int a = n - 1, b = n - 2;
	heist_task t;
	heist_spawn(&t, burst, &a);
	burst(&b);
	return heist_sync(&t);
}


void
idle_cpu(const struct bench_opts *o)
{
	if (!bench_selected(o, "idle", "idle") || !bench_impl_enabled(o, "heist"))
		return;
	unsigned window_ms = o->quick ? 500 : 1000;
	bench_progress("idle CPU: burst, 200 ms to settle, %u ms idle\n", window_ms);

	heist_pool *pool = bench_heist_pool(o->threads);
	int n = 18, zero = 0;
	if (heist_run(pool, burst, &n) != 0)
		bench_fail("idle: heist_run of the burst failed");
	for (int i = 0; i < 64; i++) {
		heist_future *f = NULL;
		if (heist_submit(pool, tiny, &zero, &f) != 0 || heist_future_wait(f) != 0)
			bench_fail("idle: submitted task failed");
		heist_future_release(f);
	}
	bench_sleep_ms(200);

	struct heist_stats s0, s1;
	heist_pool_stats(pool, &s0);
	double c0 = bench_cpu_ms();
	uint64_t t0 = bench_now_ns();
	bench_sleep_ms(window_ms);
	double c1 = bench_cpu_ms();
	uint64_t t1 = bench_now_ns();
	heist_pool_stats(pool, &s1);

	double per_s = (c1 - c0) / ((double)(t1 - t0) / 1e9);
	struct row *r = bench_row("idle", "pool", "heist", o->threads, -1);
	row_metric(r, "cpu_ms_per_s", per_s, "%.3f ms CPU/s%s", per_s,
		   per_s >= 1.0 ? " (target < 1: MISSED)" : "");
	row_metric(r, "wakes", (double)(s1.wakes - s0.wakes), "wakes %llu",
		   (unsigned long long)(s1.wakes - s0.wakes));
	row_metric(r, "steal_attempts", (double)(s1.steal_attempts - s0.steal_attempts),
		   "steal attempts %llu", (unsigned long long)(s1.steal_attempts - s0.steal_attempts));
	row_note(r, "whole process, over %u ms after 200 ms settling", window_ms);
	heist_pool_destroy(pool);
}
