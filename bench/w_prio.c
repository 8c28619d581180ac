/* SPDX-License-Identifier: MIT */
/* w_prio.c - W11, priorities (issue 42, WORKLOADS.md): a stream of 1 us high-priority
 * tasks, one due every 1 ms, each timed from its due time to its start (open loop: a
 * late producer cannot hide queueing), on an idle pool and then through a flood of
 * 50 us low-priority tasks that keeps every worker busy (a backlog of at least 10,000
 * kept topped up by a second producer). Every low task must run (checked). A third
 * run sends the same stream at normal priority through a normal flood: what a pool
 * without priorities gives. Target printed: flood P99 <= 2x idle P99. Figures, not
 * pass/fail; the producers are threads of their own, so on two cores they share the
 * CPUs with the two workers, in every run alike. */
#include "workloads.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { BACKLOG = 10000, TOP_UP = 1000 };
#define STREAM_GAP_NS (1000ull * 1000)	/* one stream task per ms */
#define STREAM_TASK_NS 1000ull
#define FLOOD_TASK_NS (50ull * 1000)

static void
spin_ns(uint64_t ns)
{
	uint64_t t0 = bench_now_ns();
	while (bench_now_ns() - t0 < ns)
		;
}

struct stream_task {
	uint64_t due_ns, late_ns;
};

static int
stream_body(void *arg)
{
	struct stream_task *t = arg;
	uint64_t now = bench_now_ns();
	t->late_ns = now > t->due_ns ? now - t->due_ns : 0;
	spin_ns(STREAM_TASK_NS);
	return 0;
}

static atomic_size_t flood_ran;

static int
flood_body(void *arg)
{
	(void)arg;
	spin_ns(FLOOD_TASK_NS);
	atomic_fetch_add_explicit(&flood_ran, 1, memory_order_relaxed);
	return 0;
}

struct flood {
	heist_pool *pool;
	int priority;
	atomic_bool stop;
	size_t submitted;
};

/* The flood's producer: keeps the pool's queued work at BACKLOG or more. */
static void *
flood_producer(void *arg)
{
	struct flood *f = arg;
	while (!atomic_load(&f->stop)) {
		while (heist_pool_pending(f->pool) < BACKLOG) {
			for (int i = 0; i < TOP_UP; i++)
				if (heist_submit_priority(f->pool, f->priority, flood_body, NULL,
							  NULL))
					bench_fail("W11: a flood submit failed");
			f->submitted += TOP_UP;
		}
		bench_sleep_ms(1);
	}
	return NULL;
}

static void
sleep_until(uint64_t t)
{
	uint64_t now = bench_now_ns();
	if (t > now) {
		struct timespec ts = {(time_t)((t - now) / 1000000000u),
				      (long)((t - now) % 1000000000u)};
		nanosleep(&ts, NULL);
	}
}

/* The stream: n tasks of priority p, one due every STREAM_GAP_NS; their lateness,
 * sorted, in late[]. */
static void
stream(heist_pool *pool, int p, struct stream_task *t, heist_future **fs, uint64_t *late,
       size_t n)
{
	uint64_t t0 = bench_now_ns() + STREAM_GAP_NS;
	for (size_t i = 0; i < n; i++) {
		t[i].due_ns = t0 + i * STREAM_GAP_NS;
		t[i].late_ns = 0;
		sleep_until(t[i].due_ns);
		if (heist_submit_priority(pool, p, stream_body, &t[i], &fs[i]))
			bench_fail("W11: a stream submit failed");
	}
	for (size_t i = 0; i < n; i++) {
		if (heist_future_wait(fs[i]))
			bench_fail("W11: a stream task failed");
		heist_future_release(fs[i]);
		late[i] = t[i].late_ns;
	}
	bench_sort(late, n);
}

/* The stream through a flood of priority flood_p; checks that the flood all ran. */
static void
stream_through_flood(heist_pool *pool, int stream_p, int flood_p, struct stream_task *t,
		     heist_future **fs, uint64_t *late, size_t n)
{
	struct flood f = {pool, flood_p, false, 0};
	atomic_store(&flood_ran, 0);
	pthread_t producer;
	if (pthread_create(&producer, NULL, flood_producer, &f))
		bench_fail("W11: no producer thread");
	while (heist_pool_pending(pool) < BACKLOG)
		bench_sleep_ms(1);
	stream(pool, stream_p, t, fs, late, n);
	atomic_store(&f.stop, true);
	pthread_join(producer, NULL);
	if (heist_pool_wait_idle(pool))
		bench_fail("W11: wait_idle failed");
	if (atomic_load(&flood_ran) != f.submitted)
		bench_fail("W11: %zu of %zu flood tasks ran", atomic_load(&flood_ran),
			   f.submitted);
}

static void
report(unsigned threads, const char *size, const uint64_t *late, size_t n, const char *note)
{
	double p50 = (double)late[n / 2] / 1e3, p99 = (double)late[n * 99 / 100] / 1e3;
	struct row *r = bench_row("W11", size, "heist", threads, -1);
	row_metric(r, "p50_us", p50, "due->started P50 %.1f us", p50);
	row_metric(r, "p99_us", p99, "P99 %.1f us", p99);
	if (note)
		row_note(r, "%s", note);
}

void
prio_load(const struct bench_opts *o)
{
	if (!bench_selected(o, "W11", "W11") || !bench_impl_enabled(o, "heist"))
		return;
	double seconds = o->quick ? 0.3 : 3.0;
	size_t n = (size_t)(seconds * 1e9 / (double)STREAM_GAP_NS);
	size_t n_control = n / 3 ? n / 3 : 1;
	bench_progress("W11: a high stream of 1 us tasks every ms for %.1f s, idle and "
		       "through a low flood of 50 us tasks (backlog %d)\n", seconds, BACKLOG);
	struct stream_task *t = calloc(n, sizeof(*t));
	heist_future **fs = calloc(n, sizeof(*fs));
	uint64_t *idle = calloc(n, sizeof(*idle)), *flood = calloc(n, sizeof(*flood));
	uint64_t *control = calloc(n, sizeof(*control));
	if (!t || !fs || !idle || !flood || !control)
		bench_fail("W11: out of memory");
	heist_pool *pool = bench_heist_pool(o->threads);
	bench_sleep_ms(200);
	stream(pool, HEIST_PRIORITY_HIGH, t, fs, idle, n);
	stream_through_flood(pool, HEIST_PRIORITY_HIGH, HEIST_PRIORITY_LOW, t, fs, flood, n);
	stream_through_flood(pool, HEIST_PRIORITY_NORMAL, HEIST_PRIORITY_NORMAL, t, fs, control,
			     n_control);
	heist_pool_destroy(pool);
	double idle99 = (double)idle[n * 99 / 100], flood99 = (double)flood[n * 99 / 100];
	char note[128];
	snprintf(note, sizeof(note), "flood P99 / idle P99 %.2fx (target <= 2: %s)",
		 flood99 / idle99, flood99 <= 2 * idle99 ? "met" : "MISSED");
	report(o->threads, "high/idle", idle, n, NULL);
	report(o->threads, "high/low flood", flood, n, note);
	report(o->threads, "normal/flood", control, n_control,
	       "no priorities: the stream queues behind the backlog");
	free(t), free(fs), free(idle), free(flood), free(control);
}
