/* SPDX-License-Identifier: MIT */
/* w_light.c - W9 at light load: an open loop (docs/workloads.md) of 1 us tasks at a
 * fixed rate, 20,000 and 200,000 a second, and a trickle of empty tasks at 1,000 a
 * second (issue 42), on heist and on the baseline pool. What it
 * shows is what a pool costs while it mostly waits: the CPU its threads use per second
 * of wall time (the process's CPU less the producer's, getrusage), and how late tasks
 * start, from each one's due time (so a late producer hides nothing): P50 and P99.
 * The pools of a load take turns (light_slices), so that both meet the same machine.
 * Figures, not pass/fail, but the 20,000/s CPU prints its target (issue 25: at most
 * 0.15 cores), and the trickle's (issue 42: at most 0.03 cores). oneTBB has no paced submit of the same kind (an arena enqueue could be,
 * but its threads' spinning is the very thing measured), so it is left out. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* RUSAGE_THREAD; meson passes it too */
#endif
#include "workloads.h"

#include "baseline_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct slot {
	uint64_t due;
	uint64_t late;	/* started - due, written by the task */
	uint64_t task_ns;	/* how long the task spins: 1 us, or 0 (empty) */
};

/* The rates run, and their tasks' length. */
static const struct {
	unsigned rate;
	unsigned task_ns;
	double target_cores;	/* heist's CPU target, or 0 for none */
} loads[] = {{20000, 1000, 0.15}, {200000, 1000, 0}, {1000, 0, 0.03}};

static void
light_task(struct slot *s)
{
	uint64_t start = bench_now_ns();
	s->late = start > s->due ? start - s->due : 0;
	while (bench_now_ns() - start < s->task_ns)
		;
}

static int
heist_body(void *arg)
{
	light_task(arg);
	return 0;
}

static void
baseline_body(void *arg)
{
	light_task(arg);
}


/* Until t (bench_now_ns): a sleep to 50 us before, then a spin, so that each submit
 * leaves on time; the producer's CPU is not the pool's, and is taken out. */
static void
until(uint64_t t)
{
	uint64_t now = bench_now_ns();
	if (t > now + 100 * 1000) {
		uint64_t ns = t - now - 50 * 1000;
		struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
		nanosleep(&ts, NULL);
	}
	while (bench_now_ns() < t)
		;
}

/* One pool's share of a load: the pools take turns, a slice each (below). */
struct light_share {
	const char *impl;
	heist_pool *heist;		/* or */
	struct baseline_pool *baseline;
	struct slot *s;			/* n slots, filled slice by slice */
	size_t used;
	double cpu_ms, wall_ms;		/* its slices' pool CPU and wall time */
};

/* Slices per share: the pools of a load take turns this many times each, 0.1 s a turn
 * at the full length. A tail at light load is set by how soon a sleeping thread's
 * vCPU runs again, which on a VM is the host's doing and comes in bursts that last
 * seconds (docs/benchmarks.md, "Light load"); a pool that had the whole 3 seconds
 * after the other's caught different bursts, and which of the two a run's P99 favoured
 * was a coin toss. Turns of 0.1 s put both through the same weather. */
static unsigned
light_slices(const struct bench_opts *o)
{
	return o->quick ? 3 : 30;
}

/* One slice of share p: `per` tasks of load k, submitted on time from this thread. */
static void
run_slice(struct light_share *p, size_t k, size_t per)
{
	uint64_t period = 1000000000ull / loads[k].rate;
	struct slot *s = p->s + p->used;
	double pool0 = bench_cpu_ms(), mine0 = bench_thread_cpu_ms();
	uint64_t t0 = bench_now_ns() + 1000 * 1000;
	for (size_t i = 0; i < per; i++) {
		s[i].due = t0 + i * period;
		s[i].task_ns = loads[k].task_ns;
		until(s[i].due);
		int err = p->heist ? heist_submit(p->heist, heist_body, &s[i], NULL)
				   : baseline_submit(p->baseline, baseline_body, &s[i]);
		if (err)
			bench_fail("W9: submit failed: %d", err);
	}
	if (p->heist)
		heist_pool_wait_idle(p->heist);
	else
		baseline_wait_all(p->baseline);
	uint64_t t1 = bench_now_ns();
	/* The other pools are asleep meanwhile (the pause after each slice). */
	p->cpu_ms += (bench_cpu_ms() - pool0) - (bench_thread_cpu_ms() - mine0);
	p->wall_ms += (double)(t1 - t0) / 1e6;
	p->used += per;
}

static void
report(const struct light_share *p, size_t k, double seconds, unsigned slices,
       unsigned threads)
{
	size_t n = p->used;
	uint64_t *late = calloc(n, sizeof(*late));
	if (!late)
		bench_fail("W9: out of memory");
	for (size_t i = 0; i < n; i++)
		late[i] = p->s[i].late;
	bench_sort(late, n);
	double cores = p->cpu_ms / p->wall_ms;
	char size[32];
	snprintf(size, sizeof size, "%uk/s%s", loads[k].rate / 1000,
		 loads[k].task_ns ? "" : " empty");
	struct row *r = bench_row("W9", size, p->impl, threads, -1);
	double target = p->heist ? loads[k].target_cores : 0;
	char verdict[48] = "";
	if (target > 0)
		snprintf(verdict, sizeof verdict, " (target <= %.2f: %s)", target,
			 cores <= target ? "met" : "MISSED");
	row_metric(r, "cores", cores, "CPU %.3f cores%s", cores, verdict);
	row_metric(r, "p50_us", (double)late[n / 2] / 1e3, "due->started P50 %.2f us",
		   (double)late[n / 2] / 1e3);
	row_metric(r, "p99_us", (double)late[n * 99 / 100] / 1e3, "P99 %.2f us",
		   (double)late[n * 99 / 100] / 1e3);
	row_note(r, "open loop, %s tasks, %.1f s in %u turns; CPU of the pool's threads",
		 loads[k].task_ns ? "1 us" : "empty", seconds, slices);
	free(late);
}

void
light_load(const struct bench_opts *o)
{
	if (!bench_selected(o, "W9", "W9"))
		return;
	double seconds = o->quick ? 0.3 : 3.0;
	unsigned slices = light_slices(o);
	bench_progress("W9 light load: open loop at 20k/s and 200k/s, and 1k/s empty, %.1f s "
		       "each, the pools taking turns of %.2f s\n", seconds, seconds / slices);
	for (size_t k = 0; k < sizeof loads / sizeof loads[0]; k++) {
		size_t per = (size_t)(loads[k].rate * seconds) / slices;
		struct light_share share[2];
		unsigned m = 0;
		if (bench_impl_enabled(o, "heist"))
			share[m++] = (struct light_share){ .impl = "heist",
							   .heist = bench_heist_pool(o->threads) };
		if (bench_impl_enabled(o, "baseline")) {
			share[m] = (struct light_share){ .impl = "baseline" };
			if (baseline_pool_create(&share[m].baseline, o->threads))
				bench_fail("W9: baseline pool");
			m++;
		}
		for (unsigned j = 0; j < m; j++)
			if (!(share[j].s = calloc(per * slices, sizeof(struct slot))))
				bench_fail("W9: out of memory");
		bench_sleep_ms(200);	/* the workers asleep first */
		for (unsigned i = 0; i < slices; i++) {
			for (unsigned j = 0; j < m; j++) {
				/* every other turn the other pool first */
				run_slice(&share[(i + j) % m], k, per);
				bench_sleep_ms(20);	/* its threads asleep again */
			}
		}
		for (unsigned j = 0; j < m; j++) {
			report(&share[j], k, seconds, slices, o->threads);
			free(share[j].s);
		}
		for (unsigned j = 0; j < m; j++) {
			if (share[j].heist)
				heist_pool_destroy(share[j].heist);
			else
				baseline_pool_destroy(share[j].baseline);
		}
		bench_sleep_ms(o->settle_ms);
	}
}
