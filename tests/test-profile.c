/* SPDX-License-Identifier: MIT */
/* test-profile.c - the latency profiler (src/profile.c, include/heist/profile.h): the
 * clock's calibration against CLOCK_MONOTONIC, reports whose counts equal the tasks
 * that ran (fork-join trees, submitted tasks), ordered percentiles, per-sample sanity,
 * buffers that overflow into the histograms (exact counts, percentiles within the
 * histogram's 1/128), reset, per-worker reports, and the error paths. The command-line
 * tool, heist-latency, is tested by tools/test-heist-latency.py. Rules and helpers:
 * common.h.
 *
 * Tasks only count themselves, in their parent's frame, and the test thread checks.
 * Timings are never pass or fail here; only counts, orderings and bounds that hold on
 * any machine.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "heist/profile.h"
#include "probe.h"	/* heist__tsc(), HEIST_PROFILER */
#include "w8.h"

enum {
	/* profile.c keeps this many samples per worker; beyond, only histograms count.
	 * Reports publish it (buffer_samples), which the overflow tests check. */
	BUFFER = 1 << 18,
	SUBMITTED = 1000,
	RACE_ROUNDS = 500,
};

/* threads 0: one worker per core (per CPU without hwloc). */
static heist_pool *
make_profiled_pool(unsigned threads, bool profile)
{
	struct heist_config cfg = {.threads = threads, .profile = profile};

	return make_pool_cfg(&cfg);
}

#define SKIP_WITHOUT_PROFILER()                                                       \
	do {                                                                          \
		if (!HEIST_PROFILER) {                                                \
			print_message("profiler compiled out (-Dprofiler=false)\n");  \
			skip();                                                       \
		}                                                                     \
	} while (0)

/* ---- workloads ---- */

/* W8's tree (bench/w8.c, shared with heist-bench and heist-latency): every node is a
 * task (the root is the heist_run task, the others are spawned and synced), so a tree
 * of depth d runs exactly w8_tasks(d) = 2^(d+1) - 1 tasks. */
#define tree_tasks w8_tasks

static void
run_tree(heist_pool *pool, unsigned depth, unsigned payload)
{
	struct w8_result r;
	assert_int_equal(w8_run(pool, depth, payload, &r), 0);
	assert_int_equal(r.tasks, w8_tasks(depth));
}

static void
submit_and_wait(heist_pool *pool, unsigned n)
{
	heist_future **f = calloc(n, sizeof(*f));
	assert_non_null(f);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(heist_submit(pool, ret_int, NULL, &f[i]), 0);
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(heist_future_wait(f[i]), 0);
		heist_future_release(f[i]);
	}
	free(f);
}

/* A worker records a task's sample just after the task returns, so the waiter can be
 * woken before the last sample is in (see report_after_wait_counts_the_last_task).
 * The other tests are about other things: they first wait until the profile has
 * caught up with the statistics (every task is counted in `executed` before it runs). */
static bool
caught_up(heist_pool *pool, struct heist_latency_report *rep, struct heist_stats *st,
	  uint64_t executed_before)
{
	assert_int_equal(heist_pool_stats(pool, st), 0);
	assert_int_equal(heist_profile_report(pool, rep), 0);
	return rep->end_to_end.count >= st->executed - executed_before;
}

static void
settle(heist_pool *pool, struct heist_latency_report *rep)
{
	struct heist_stats st;
	bool ok;

	POLL(ok, caught_up(pool, rep, &st, 0));
	if (!ok)
		fail_msg("the profile never caught up: %llu samples, %llu tasks executed",
			 (unsigned long long)rep->end_to_end.count,
			 (unsigned long long)st.executed);
}

static void
check_ordered(const struct heist_latency *l, const char *what)
{
	if (!(l->min <= l->p50 && l->p50 <= l->p90 && l->p90 <= l->p99 &&
	      l->p99 <= l->p999 && l->p999 <= l->p9999 && l->p9999 <= l->max))
		fail_msg("%s: percentiles out of order: min %llu p50 %llu p90 %llu p99 %llu "
			 "p99.9 %llu p99.99 %llu max %llu", what, (unsigned long long)l->min,
			 (unsigned long long)l->p50, (unsigned long long)l->p90,
			 (unsigned long long)l->p99, (unsigned long long)l->p999,
			 (unsigned long long)l->p9999, (unsigned long long)l->max);
	assert_true((double)l->min <= l->mean && l->mean <= (double)l->max);
	assert_true(l->min_ns <= l->p50_ns && l->p50_ns <= l->p90_ns &&
		    l->p90_ns <= l->p99_ns && l->p99_ns <= l->p999_ns &&
		    l->p999_ns <= l->p9999_ns && l->p9999_ns <= l->max_ns);
}

/* ---- the clock ---- */

/* One (CLOCK_MONOTONIC, counter) pair read close together: retried until the two
 * clock reads around the counter read are within 20 us, so that a preemption between
 * them cannot skew the ratio. */
static void
clock_pair(uint64_t *ns, uint64_t *cycles)
{
	for (int i = 0;; i++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		uint64_t c = heist__tsc();
		clock_gettime(CLOCK_MONOTONIC, &b);
		uint64_t na = (uint64_t)a.tv_sec * 1000000000u + (uint64_t)a.tv_nsec;
		uint64_t nb = (uint64_t)b.tv_sec * 1000000000u + (uint64_t)b.tv_nsec;
		if (nb - na < 20000 || i == 1000) {
			*ns = na + (nb - na) / 2;
			*cycles = c;
			return;
		}
	}
}

static void
clock_calibration_matches_monotonic(void **state)
{
	(void)state;
	SKIP_WITHOUT_PROFILER();
	struct heist_profile_clock clk;
	assert_int_equal(heist_profile_clock(&clk), 0);	/* calibrates */
	assert_non_null(clk.name);
	assert_true(clk.cycles_per_ns > 0);
	if (!strcmp(clk.name, "clock_gettime")) {
		assert_true(clk.cycles_per_ns == 1.0);
		assert_int_equal(clk.calibration, 0);
	} else {
		assert_true(!strcmp(clk.name, "tsc") || !strcmp(clk.name, "cntvct"));
		assert_true(clk.calibration == 1 || clk.calibration == 2);
	}
	/* Our own measurement over 50 ms of CLOCK_MONOTONIC. Sleeping is fine: the
	 * counter is invariant (else the profiler fell back to clock_gettime). */
	uint64_t n0, c0, n1, c1;
	clock_pair(&n0, &c0);
	nanosleep(&(struct timespec){0, 50000000}, NULL);
	clock_pair(&n1, &c1);
	double measured = (double)(c1 - c0) / (double)(n1 - n0);
	double ratio = measured / clk.cycles_per_ns;
	print_message("clock %s: %.4f cycles/ns calibrated, %.4f measured (ratio %.4f)\n",
		      clk.name, clk.cycles_per_ns, measured, ratio);
	assert_true(ratio > 0.95 && ratio < 1.05);

	/* Calibrated once per process: a second call gives the same clock. */
	struct heist_profile_clock again;
	assert_int_equal(heist_profile_clock(&again), 0);
	assert_true(again.cycles_per_ns == clk.cycles_per_ns);
	assert_string_equal(again.name, clk.name);
}

/* ---- reports ---- */

/* ---- dispatch paths and steal latency ---- */

/* A child that only a thief can start: its parent spawns it and, until it has
 * started, keeps submitting no-op jobs: a worker's submit publishes its deque (the
 * child at the top, the oldest) and wakes a sleeper, which steals the child. */
struct stolen_child {
	heist_pool *pool;
	atomic_bool started;
	atomic_int runner;
};

static int
mark_started(void *arg)
{
	struct stolen_child *c = arg;
	atomic_store(&c->runner, heist_worker_index());
	atomic_store(&c->started, true);
	return 0;
}

static int
parent_of_a_stolen_child(void *arg)
{
	struct stolen_child *c = arg;
	heist_task t;
	heist_spawn(&t, mark_started, c);
	while (!atomic_load(&c->started)) {
		int err = heist_submit(c->pool, ret_int, NULL, NULL);
		if (err)
			return err;
		nap(NAP_NS);
	}
	return heist_sync(&t);
}

struct path_tally {
	uint64_t n[HEIST_PATHS], published, bad;
	unsigned threads;	/* heist_pool_threads: a victim is below */
	uint64_t kind[3];	/* by enum heist_task_kind */
	uint64_t mark;		/* heist_profile_now() before the work, or 0 */
};

static void
tally_sample(void *ctx, const struct heist_profile_sample *s)
{
	struct path_tally *t = ctx;
	if (s->path >= HEIST_PATHS) {
		t->bad++;
		return;
	}
	t->n[s->path]++;
	if (s->kind < 3)
		t->kind[s->kind]++;
	else
		t->bad++;
	t->bad += s->created < t->mark;
	if (s->published) {
		t->published++;
		/* Only a task another thread took from a deque has a publication, and
		 * a victim: another thread of the pool. */
		t->bad += s->path != HEIST_PATH_STOLEN && s->path != HEIST_PATH_HELPING &&
			  s->path != HEIST_PATH_GUEST;
		t->bad += s->victim < 0 || (unsigned)s->victim >= t->threads ||
			  (unsigned)s->victim == s->worker;
	} else {
		t->bad += s->path == HEIST_PATH_STOLEN;
		t->bad += s->victim != -1;
	}
}

/* Every task has one path, the counts add up, and the kinds land where they should:
 * a tree on one worker is its root from the injector and the rest synced inline; a
 * child that only a thief can start is STOLEN and has a steal latency. */
static void
paths_add_up_and_steals_have_a_latency(void **state)
{
	(void)state;
	SKIP_WITHOUT_PROFILER();
	heist_pool *pool = make_profiled_pool(1, true);
	struct heist_latency_report rep, part;
	run_tree(pool, 9, 10);
	settle(pool, &rep);
	assert_int_equal(rep.end_to_end.count, tree_tasks(9));
	assert_int_equal(rep.path_count[HEIST_PATH_INJECTOR], 1);
	assert_int_equal(rep.path_count[HEIST_PATH_INLINE], tree_tasks(9) - 1);
	assert_int_equal(rep.steal.count, 0);
	assert_int_equal(heist_profile_path_report(pool, HEIST_PATH_INLINE, &part), 0);
	assert_int_equal(part.end_to_end.count, tree_tasks(9) - 1);
	assert_int_equal(part.dispatch.count, tree_tasks(9) - 1);
	assert_int_equal(part.exact, 1);
	check_ordered(&part.dispatch, "inline dispatch");
	heist_pool_destroy(pool);

	pool = make_profiled_pool(2, true);
	static struct stolen_child c;
	c.pool = pool;
	atomic_store(&c.started, false);
	atomic_store(&c.runner, -1);
	assert_int_equal(heist_run(pool, parent_of_a_stolen_child, &c), 0);
	assert_true(atomic_load(&c.runner) >= 0);	/* a worker, the thief */
	run_tree(pool, 10, 50);
	settle(pool, &rep);
	uint64_t sum = 0;
	for (int k = 0; k < HEIST_PATHS; k++)
		sum += rep.path_count[k];
	assert_int_equal(sum, rep.end_to_end.count);
	struct path_tally t = {.threads = heist_pool_threads(pool)};
	assert_int_equal(heist_profile_samples(pool, tally_sample, &t), 0);
	assert_int_equal(t.bad, 0);
	for (int k = 0; k < HEIST_PATHS; k++) {
		assert_int_equal(t.n[k], rep.path_count[k]);
		assert_int_equal(heist_profile_path_report(pool, (enum heist_dispatch_path)k,
							   &part), 0);
		assert_int_equal(part.end_to_end.count, rep.path_count[k]);
	}
	assert_true(rep.path_count[HEIST_PATH_STOLEN] >= 1);	/* the child at least */
	assert_int_equal(rep.steal.count, t.published);
	assert_true(rep.steal.count >= rep.path_count[HEIST_PATH_STOLEN]);
	check_ordered(&rep.steal, "steal");
	uint64_t q[1];
	const double half = 0.5;
	assert_int_equal(heist_profile_percentiles(pool, HEIST_LATENCY_STEAL, &half, q, 1), 0);
	assert_int_equal(q[0], rep.steal.p50);
	heist_pool_destroy(pool);
}

static int
sum_range(void *arg, size_t begin, size_t end)
{
	atomic_uint_fast64_t *sum = arg;
	for (size_t i = begin; i < end; i++)
		atomic_fetch_add(sum, i);
	return 0;
}

/* Each sample says what the task was (submitted, spawned, a loop's range), and is
 * created after a heist_profile_now() taken before the work. */
static void
samples_name_their_kind_and_follow_a_mark(void **state)
{
	(void)state;
	SKIP_WITHOUT_PROFILER();
	assert_int_equal(heist_profile_now() == 0, 0);
	heist_pool *pool = make_profiled_pool(2, true);
	struct heist_latency_report rep;
	struct heist_stats st;
	run_tree(pool, 4, 10);	/* before the mark: reset below forgets it */
	settle(pool, &rep);
	assert_int_equal(heist_pool_stats(pool, &st), 0);
	uint64_t before = st.executed;
	heist_profile_reset(pool);
	uint64_t mark = heist_profile_now();
	heist_future *f;
	assert_int_equal(heist_submit(pool, ret_int, (void *)42, &f), 0);
	assert_int_equal(heist_future_wait(f), 42);
	heist_future_release(f);
	run_tree(pool, 6, 10);	/* heist_run's root is a job, the rest spawned */
	atomic_uint_fast64_t sum = 0;
	assert_int_equal(heist_for_each(pool, 0, 1000, 1, sum_range, &sum), 0);
	assert_int_equal(atomic_load(&sum), 999 * 1000 / 2);
	bool ok;
	POLL(ok, caught_up(pool, &rep, &st, before));
	assert_true(ok);
	struct path_tally t = {.threads = heist_pool_threads(pool), .mark = mark};
	assert_int_equal(heist_profile_samples(pool, tally_sample, &t), 0);
	assert_int_equal(t.bad, 0);
	assert_true(t.kind[HEIST_TASK_SUBMITTED] >= 2);	/* the job, the tree's root */
	assert_int_equal(t.kind[HEIST_TASK_SPAWNED], tree_tasks(6) - 1);
	assert_true(t.kind[HEIST_TASK_RANGE] >= 1);	/* 1,000 elements, grain 1 */
	assert_true(heist_profile_now() >= mark);
	heist_pool_destroy(pool);
}

/* heist_config.profile_buffer: the samples each thread keeps; the rest count in the
 * histograms, and in the path counts, but not in a path's percentiles. */
static void
buffer_size_is_the_callers(void **state)
{
	(void)state;
	SKIP_WITHOUT_PROFILER();
	struct heist_config cfg = {.threads = 1, .profile = true, .profile_buffer = 1000};
	struct heist_latency_report rep, inl;
	heist_pool *pool = make_pool_cfg(&cfg);
	run_tree(pool, 10, 10);
	settle(pool, &rep);
	assert_int_equal(rep.buffer_samples, 1000);
	assert_int_equal(rep.samples_kept, 1000);
	assert_int_equal(rep.samples_dropped, tree_tasks(10) - 1000);
	assert_int_equal(rep.end_to_end.count, tree_tasks(10));
	assert_int_equal(rep.exact, 0);
	assert_int_equal(rep.path_count[HEIST_PATH_INLINE] + rep.path_count[HEIST_PATH_INJECTOR],
			 tree_tasks(10));
	assert_int_equal(heist_profile_path_report(pool, HEIST_PATH_INLINE, &inl), 0);
	assert_int_equal(inl.exact, 0);
	assert_true(inl.end_to_end.count <= 1000);
	check_ordered(&rep.dispatch, "overflowed dispatch");
	heist_pool_destroy(pool);

	cfg.profile_buffer = 0;
	pool = make_pool_cfg(&cfg);
	assert_int_equal(heist_profile_report(pool, &rep), 0);
	assert_int_equal(rep.buffer_samples, 262144);
	heist_pool_destroy(pool);
}

/* heist_config.profile_every: one task in N recorded, each by a draw of its own, so
 * the count is near tasks / N (the bounds are 4x either way: this checks the
 * sampling's rate, not its randomness), and nothing else changes: the statistics stay
 * exact and the report says the rate (rounded up to a power of two). */
static void
sampling_records_about_one_task_in_n(void **state)
{
	enum { DEPTH = 14, JOBS = 4096 };
	const uint64_t tasks = tree_tasks(DEPTH);
	struct heist_config cfg = {.threads = 1, .profile = true, .profile_every = 10};
	struct heist_latency_report rep;
	struct heist_stats st;
	bool ok;

	(void)state;
	SKIP_WITHOUT_PROFILER();
	heist_pool *pool = make_pool_cfg(&cfg);
	run_tree(pool, DEPTH, 10);
	POLL(ok, heist_pool_stats(pool, &st) == 0 && st.executed >= tasks);
	assert_true(ok);
	assert_int_equal(st.executed, tasks);
	assert_int_equal(st.spawned, tasks - 1);
	assert_int_equal(heist_profile_report(pool, &rep), 0);
	assert_int_equal(rep.sampled_every, 16);
	if (rep.end_to_end.count < tasks / 64 || rep.end_to_end.count > tasks / 4)
		fail_msg("%llu of %llu tasks recorded, sampling one in 16",
			 (unsigned long long)rep.end_to_end.count, (unsigned long long)tasks);
	assert_int_equal(rep.dispatch.count, rep.end_to_end.count);
	check_ordered(&rep.dispatch, "sampled dispatch");
	check_ordered(&rep.end_to_end, "sampled end-to-end");

	/* Jobs are drawn by the thread that submits them. */
	heist_profile_reset(pool);
	submit_and_wait(pool, JOBS);
	POLL(ok, heist_pool_stats(pool, &st) == 0 && st.executed >= tasks + JOBS);
	assert_true(ok);
	assert_int_equal(heist_profile_report(pool, &rep), 0);
	if (rep.end_to_end.count < JOBS / 64 || rep.end_to_end.count > JOBS / 4)
		fail_msg("%llu of %d jobs recorded, sampling one in 16",
			 (unsigned long long)rep.end_to_end.count, JOBS);
	heist_pool_destroy(pool);

	/* The rate as the report gives it: every task by default, at most 2^20. */
	const struct {
		unsigned every;
		uint64_t reported;
	} rates[] = {{0, 1}, {1, 1}, {2, 2}, {3, 4}, {1u << 20, 1u << 20}, {~0u, 1u << 20}};
	for (size_t i = 0; i < sizeof rates / sizeof *rates; i++) {
		cfg.profile_every = rates[i].every;
		pool = make_pool_cfg(&cfg);
		assert_int_equal(heist_profile_report(pool, &rep), 0);
		assert_int_equal(rep.sampled_every, rates[i].reported);
		heist_pool_destroy(pool);
	}
}

static void
tree_counts_are_exact(void **state)
{
	(void)state;
	SKIP_WITHOUT_PROFILER();
	heist_pool *pool = make_profiled_pool(0, true);
	struct heist_latency_report rep;
	run_tree(pool, 10, 50);
	settle(pool, &rep);
	assert_int_equal(rep.dispatch.count, 2047);
	assert_int_equal(rep.end_to_end.count, 2047);
	assert_int_equal(rep.samples_kept, 2047);
	assert_int_equal(rep.samples_dropped, 0);
	assert_int_equal(rep.exact, 1);
	struct heist_stats st;
	assert_int_equal(heist_pool_stats(pool, &st), 0);
	assert_int_equal(st.executed, 2047);
	assert_int_equal(st.spawned, 2046);

	/* No reset: a second tree adds to the first. */
	run_tree(pool, 10, 50);
	settle(pool, &rep);
	assert_int_equal(rep.end_to_end.count, 2 * 2047);
	heist_pool_destroy(pool);
}

static void
submitted_counts_are_exact(void **state)
{
	(void)state;
	SKIP_WITHOUT_PROFILER();
	heist_pool *pool = make_profiled_pool(0, true);
	struct heist_latency_report rep;
	submit_and_wait(pool, SUBMITTED);
	settle(pool, &rep);
	assert_int_equal(rep.dispatch.count, SUBMITTED);
	assert_int_equal(rep.end_to_end.count, SUBMITTED);
	assert_int_equal(rep.samples_kept, SUBMITTED);
	assert_int_equal(rep.exact, 1);
	check_ordered(&rep.dispatch, "dispatch");
	check_ordered(&rep.end_to_end, "end-to-end");
	heist_pool_destroy(pool);
}

/* The header: "Read ... a pool's profile while none of its tasks run (after waiting
 * for them)". So a report taken right after heist_run or heist_future_wait returns
 * must count the task just waited for. Repeated, because the window is short. */
static void
report_after_wait_counts_the_last_task(void **state)
{
	(void)state;
	SKIP_WITHOUT_PROFILER();
	heist_pool *pool = make_profiled_pool(2, true);
	struct heist_latency_report rep;
	struct heist_stats st;
	unsigned short_run = 0, short_wait = 0;
	for (unsigned i = 0; i < RACE_ROUNDS; i++) {
		/* Every task that ran is in st.executed (counted before it starts). */
		run_tree(pool, 1, 0);
		assert_int_equal(heist_pool_stats(pool, &st), 0);
		assert_int_equal(heist_profile_report(pool, &rep), 0);
		short_run += rep.end_to_end.count != st.executed;
		submit_and_wait(pool, 1);
		assert_int_equal(heist_pool_stats(pool, &st), 0);
		assert_int_equal(heist_profile_report(pool, &rep), 0);
		short_wait += rep.end_to_end.count != st.executed;
	}
	heist_pool_destroy(pool);
	if (short_run || short_wait)
		fail_msg("a report taken right after the wait missed the last task in %u of "
			 "%u heist_run calls and %u of %u heist_future_wait calls: the worker "
			 "records the sample after completing the task (src/worker.c, "
			 "heist__worker_run)", short_run, RACE_ROUNDS, short_wait, RACE_ROUNDS);
}

struct sample_check {
	unsigned workers;
	uint64_t n, bad_order, bad_worker;
	uint64_t *per_worker;
};

static uint64_t
since(uint64_t from, uint64_t to)
{
	return to > from ? to - from : 0;
}

static void
check_sample(void *ctx, const struct heist_profile_sample *s)
{
	struct sample_check *c = ctx;
	c->n++;
	if (since(s->created, s->started) > since(s->created, s->ended) ||
	    s->started > s->ended)
		c->bad_order++;
	if (s->worker >= c->workers)
		c->bad_worker++;
	else
		c->per_worker[s->worker]++;
}

static void
samples_are_consistent(void **state)
{
	(void)state;
	SKIP_WITHOUT_PROFILER();
	heist_pool *pool = make_profiled_pool(0, true);
	unsigned workers = heist_pool_size(pool);
	struct heist_latency_report rep;
	run_tree(pool, 12, 20);
	submit_and_wait(pool, SUBMITTED);
	settle(pool, &rep);
	uint64_t tasks = tree_tasks(12) + SUBMITTED;
	assert_int_equal(rep.end_to_end.count, tasks);
	assert_int_equal(rep.samples_dropped, 0);

	struct sample_check c = {.workers = workers};
	c.per_worker = calloc(workers, sizeof(*c.per_worker));
	assert_non_null(c.per_worker);
	assert_int_equal(heist_profile_samples(pool, check_sample, &c), 0);
	assert_int_equal(c.n, tasks);
	assert_int_equal(c.bad_order, 0);	/* dispatch <= end-to-end, every sample */
	assert_int_equal(c.bad_worker, 0);

	/* Per-worker reports add up to the pool's, and agree with the samples. */
	uint64_t sum = 0, kept = 0, min = UINT64_MAX, max = 0;
	for (unsigned w = 0; w < workers; w++) {
		struct heist_latency_report wr;
		assert_int_equal(heist_profile_worker_report(pool, w, &wr), 0);
		assert_int_equal(wr.end_to_end.count, wr.dispatch.count);
		assert_int_equal(wr.samples_kept, c.per_worker[w]);
		assert_int_equal(wr.end_to_end.count, c.per_worker[w]);
		sum += wr.end_to_end.count;
		kept += wr.samples_kept;
		if (wr.end_to_end.count) {
			check_ordered(&wr.end_to_end, "worker end-to-end");
			min = wr.end_to_end.min < min ? wr.end_to_end.min : min;
			max = wr.end_to_end.max > max ? wr.end_to_end.max : max;
		}
	}
	assert_int_equal(sum, tasks);
	assert_int_equal(kept, rep.samples_kept);
	assert_int_equal(min, rep.end_to_end.min);
	assert_int_equal(max, rep.end_to_end.max);
	free(c.per_worker);
	heist_pool_destroy(pool);
}

/* heist_profile_percentiles and the report answer alike, and the answers grow with q. */
static void
percentiles_agree_with_report(void **state)
{
	(void)state;
	SKIP_WITHOUT_PROFILER();
	heist_pool *pool = make_profiled_pool(0, true);
	struct heist_latency_report rep;
	run_tree(pool, 11, 20);
	settle(pool, &rep);
	check_ordered(&rep.dispatch, "dispatch");
	check_ordered(&rep.end_to_end, "end-to-end");

	enum { N = 1001 };
	double q[N];
	uint64_t v[N];
	for (int i = 0; i < N; i++)
		q[i] = (double)i / (N - 1);
	for (int k = 0; k < 2; k++) {
		const struct heist_latency *l = k ? &rep.end_to_end : &rep.dispatch;
		assert_int_equal(heist_profile_percentiles(pool, (enum heist_latency_kind)k,
							   q, v, N), 0);
		assert_int_equal(v[0], l->min);
		assert_int_equal(v[N - 1], l->max);
		assert_int_equal(v[500], l->p50);
		assert_int_equal(v[900], l->p90);
		assert_int_equal(v[990], l->p99);
		for (int i = 1; i < N; i++)
			assert_true(v[i - 1] <= v[i]);
		double fine[] = {0.999, 0.9999};
		uint64_t fv[2];
		assert_int_equal(heist_profile_percentiles(pool, (enum heist_latency_kind)k,
							   fine, fv, 2), 0);
		assert_int_equal(fv[0], l->p999);
		assert_int_equal(fv[1], l->p9999);
	}
	/* n == 0 reads nothing, and accepts NULL arrays. */
	assert_int_equal(heist_profile_percentiles(pool, HEIST_LATENCY_DISPATCH, NULL, NULL, 0),
			 0);
	heist_pool_destroy(pool);
}

/* ---- overflowing buffers ---- */

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

struct collect {
	uint64_t *v[2];
	size_t n;
};

static void
collect_sample(void *ctx, const struct heist_profile_sample *s)
{
	struct collect *c = ctx;
	c->v[0][c->n] = since(s->created, s->started);
	c->v[1][c->n] = since(s->created, s->ended);
	c->n++;
}

/* On one worker: a depth-17 tree (2^18 - 1 tasks) fills the buffer but one place and
 * stays exact; 64 more tasks overflow it by 63. Counts stay exact, and each
 * percentile, now from the histogram, is bounded by the kept samples: the value of rank
 * k among all lies between kept[k - 64] and kept[k], and the histogram answers at most
 * 1/128 above the true value (its sub-bucket width). */
static void
overflow_boundary_keeps_counts_exact(void **state)
{
	(void)state;
	SKIP_WITHOUT_PROFILER();
	enum { EXTRA = 64 };
	heist_pool *pool = make_profiled_pool(1, true);
	struct heist_latency_report rep;
	run_tree(pool, 17, 0);
	settle(pool, &rep);
	assert_int_equal(rep.end_to_end.count, BUFFER - 1);
	assert_int_equal(rep.samples_kept, BUFFER - 1);
	assert_int_equal(rep.buffer_samples, BUFFER);
	assert_int_equal(rep.samples_dropped, 0);
	assert_int_equal(rep.exact, 1);

	struct collect c = {{malloc(BUFFER * sizeof(uint64_t)), malloc(BUFFER * sizeof(uint64_t))},
			    0};
	assert_non_null(c.v[0]);
	assert_non_null(c.v[1]);

	submit_and_wait(pool, EXTRA);
	settle(pool, &rep);
	uint64_t total = BUFFER - 1 + EXTRA;
	assert_int_equal(rep.dispatch.count, total);
	assert_int_equal(rep.end_to_end.count, total);
	assert_int_equal(rep.samples_kept, BUFFER);
	assert_int_equal(rep.samples_dropped, EXTRA - 1);
	assert_int_equal(rep.exact, 0);
	check_ordered(&rep.dispatch, "dispatch");
	check_ordered(&rep.end_to_end, "end-to-end");

	assert_int_equal(heist_profile_samples(pool, collect_sample, &c), 0);
	assert_int_equal(c.n, BUFFER);
	double q[] = {0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0};
	enum { NQ = sizeof(q) / sizeof(q[0]) };
	for (int k = 0; k < 2; k++) {
		uint64_t v[NQ];
		const struct heist_latency *l = k ? &rep.end_to_end : &rep.dispatch;
		qsort(c.v[k], c.n, sizeof(uint64_t), cmp_u64);
		assert_int_equal(heist_profile_percentiles(pool, (enum heist_latency_kind)k, q, v,
							   NQ), 0);
		for (int i = 0; i < NQ; i++) {
			uint64_t rank = (uint64_t)ceil(q[i] * (double)total);
			rank = rank ? rank : 1;
			uint64_t lo = rank > EXTRA ? c.v[k][rank - EXTRA - 1] : l->min;
			double hi = rank <= c.n ? (double)c.v[k][rank - 1] * (1.0 + 1.0 / 128) + 1
						: (double)l->max;
			if ((double)v[i] < (double)lo || (double)v[i] > hi)
				fail_msg("%s q=%g: %llu outside [%llu, %.0f]", k ? "end-to-end" :
					 "dispatch", q[i], (unsigned long long)v[i],
					 (unsigned long long)lo, hi);
			if (i)
				assert_true(v[i - 1] <= v[i]);
		}
	}
	free(c.v[0]);
	free(c.v[1]);
	heist_pool_destroy(pool);
}

/* Twice the buffer: a depth-18 tree (524,287 tasks) on one worker, no payload. Fast
 * enough for every build (about 0.1 s; 0.5 s under ThreadSanitizer on two cores), so
 * no sanitizer build needs a smaller tree. */
static void
overflow_big_tree(void **state)
{
	(void)state;
	SKIP_WITHOUT_PROFILER();
	heist_pool *pool = make_profiled_pool(1, true);
	struct heist_latency_report rep;
	run_tree(pool, 18, 0);
	settle(pool, &rep);
	assert_int_equal(rep.dispatch.count, tree_tasks(18));
	assert_int_equal(rep.end_to_end.count, tree_tasks(18));
	assert_int_equal(rep.samples_kept, BUFFER);
	assert_int_equal(rep.samples_dropped, tree_tasks(18) - BUFFER);
	assert_int_equal(rep.exact, 0);
	check_ordered(&rep.dispatch, "dispatch");
	check_ordered(&rep.end_to_end, "end-to-end");
	heist_pool_destroy(pool);
}

/* A report taken while a worker records, across the moment its buffer fills: never
 * `exact` with samples that overflowed into the histograms (the sort would have read
 * past the kept samples it had: merge counted the histograms after it had read a
 * dropped count of 0). Each round's buffer fills during a stream of reports. */
struct tree_job {
	heist_pool *pool;
	unsigned depth;
};

static int
tree_job_run(void *arg)
{
	struct tree_job *t = arg;
	struct w8_result r;
	int err = w8_run(t->pool, t->depth, 0, &r);
	return err ? err : r.tasks == w8_tasks(t->depth) ? 0 : EIO;
}

static void
check_report_while_recording(const struct heist_latency_report *rep)
{
	if (rep->exact && (rep->samples_dropped || rep->dispatch.count != rep->samples_kept ||
			   rep->end_to_end.count != rep->samples_kept))
		fail_msg("exact, with %llu kept, %llu dropped, %llu dispatch samples",
			 (unsigned long long)rep->samples_kept,
			 (unsigned long long)rep->samples_dropped,
			 (unsigned long long)rep->dispatch.count);
	if (rep->dispatch.count)
		check_ordered(&rep->dispatch, "dispatch");
	if (rep->end_to_end.count)
		check_ordered(&rep->end_to_end, "end-to-end");
}

static void
a_report_while_the_buffer_fills_is_never_falsely_exact(void **state)
{
	(void)state;
	SKIP_WITHOUT_PROFILER();
	enum { ROUNDS = 20, SAMPLES = 4096, DEPTH = 14 };	/* 32,767 tasks a round */
	for (int round = 0; round < ROUNDS; round++) {
		struct heist_config cfg = {.threads = 2, .profile = true,
					   .profile_buffer = SAMPLES};
		heist_pool *pool = make_pool_cfg(&cfg);
		struct tree_job t = {pool, DEPTH};
		heist_future *f;
		assert_int_equal(heist_submit(pool, tree_job_run, &t, &f), 0);
		struct heist_latency_report rep;
		uint64_t q[2];
		const double at[2] = {0.5, 1.0};
		while (!heist_future_done(f)) {
			assert_int_equal(heist_profile_report(pool, &rep), 0);
			check_report_while_recording(&rep);
			assert_int_equal(heist_profile_percentiles(pool, HEIST_LATENCY_DISPATCH,
								   at, q, 2), 0);
			assert_true(q[0] <= q[1]);
		}
		assert_int_equal(heist_future_wait(f), 0);
		heist_future_release(f);
		heist_pool_destroy(pool);
	}
}

/* ---- reset ---- */

static void
reset_clears_counts(void **state)
{
	(void)state;
	SKIP_WITHOUT_PROFILER();
	heist_pool *pool = make_profiled_pool(0, true);
	struct heist_latency_report rep;
	run_tree(pool, 8, 10);
	settle(pool, &rep);
	assert_int_equal(rep.end_to_end.count, tree_tasks(8));

	heist_profile_reset(pool);
	assert_int_equal(heist_profile_report(pool, &rep), 0);
	assert_int_equal(rep.dispatch.count, 0);
	assert_int_equal(rep.end_to_end.count, 0);
	assert_int_equal(rep.samples_kept, 0);
	assert_int_equal(rep.samples_dropped, 0);
	assert_int_equal(rep.end_to_end.max, 0);
	assert_int_equal(rep.end_to_end.p50, 0);
	struct sample_check c = {.workers = heist_pool_size(pool)};
	c.per_worker = calloc(c.workers, sizeof(*c.per_worker));
	assert_non_null(c.per_worker);
	assert_int_equal(heist_profile_samples(pool, check_sample, &c), 0);
	assert_int_equal(c.n, 0);
	free(c.per_worker);

	/* The statistics are not the profile's: reset leaves them. */
	struct heist_stats st;
	assert_int_equal(heist_pool_stats(pool, &st), 0);
	assert_int_equal(st.executed, tree_tasks(8));

	/* After a reset, only what runs next. */
	run_tree(pool, 5, 10);
	struct heist_stats before = st;
	bool ok;
	POLL(ok, caught_up(pool, &rep, &st, before.executed));
	(void)ok;	/* the count below says what went wrong */
	assert_int_equal(rep.end_to_end.count, tree_tasks(5));
	check_ordered(&rep.end_to_end, "end-to-end after reset");
	heist_pool_destroy(pool);
}

/* ---- errors ---- */

static void
not_profiling_is_einval(void **state)
{
	(void)state;
	SKIP_WITHOUT_PROFILER();
	heist_pool *pool = make_profiled_pool(2, false);
	run_tree(pool, 4, 0);
	struct heist_latency_report rep;
	double q = 0.5;
	uint64_t v;
	assert_int_equal(heist_profile_report(pool, &rep), EINVAL);
	assert_int_equal(heist_profile_worker_report(pool, 0, &rep), EINVAL);
	assert_int_equal(heist_profile_percentiles(pool, HEIST_LATENCY_DISPATCH, &q, &v, 1),
			 EINVAL);
	assert_int_equal(heist_profile_samples(pool, check_sample, NULL), EINVAL);
	heist_profile_reset(pool);	/* a no-op */
	heist_pool_destroy(pool);
}

static void
null_arguments_are_einval(void **state)
{
	(void)state;
	SKIP_WITHOUT_PROFILER();
	heist_pool *pool = make_profiled_pool(2, true);
	struct heist_latency_report rep;
	double q = 0.5;
	uint64_t v;
	assert_int_equal(heist_profile_clock(NULL), EINVAL);
	assert_int_equal(heist_profile_report(NULL, &rep), EINVAL);
	assert_int_equal(heist_profile_report(pool, NULL), EINVAL);
	assert_int_equal(heist_profile_worker_report(NULL, 0, &rep), EINVAL);
	assert_int_equal(heist_profile_worker_report(pool, 0, NULL), EINVAL);
	assert_int_equal(heist_profile_worker_report(pool, heist_pool_size(pool), &rep), 0);
	assert_int_equal(heist_profile_worker_report(pool, heist_pool_threads(pool), &rep),
			 EINVAL);
	assert_int_equal(heist_profile_percentiles(NULL, HEIST_LATENCY_DISPATCH, &q, &v, 1),
			 EINVAL);
	assert_int_equal(heist_profile_percentiles(pool, HEIST_LATENCY_DISPATCH, NULL, &v, 1),
			 EINVAL);
	assert_int_equal(heist_profile_percentiles(pool, HEIST_LATENCY_DISPATCH, &q, NULL, 1),
			 EINVAL);
	assert_int_equal(heist_profile_percentiles(pool, HEIST_LATENCY_STEAL, &q, &v, 1), 0);
	assert_int_equal(heist_profile_percentiles(pool, (enum heist_latency_kind)3, &q, &v, 1),
			 EINVAL);
	assert_int_equal(heist_profile_path_report(NULL, HEIST_PATH_INLINE, &rep), EINVAL);
	assert_int_equal(heist_profile_path_report(pool, HEIST_PATH_INLINE, NULL), EINVAL);
	assert_int_equal(heist_profile_path_report(pool, HEIST_PATHS, &rep), EINVAL);
	assert_int_equal(heist_profile_path_report(pool, HEIST_PATH_GUEST, &rep), 0);
	assert_int_equal(heist_profile_samples(NULL, check_sample, NULL), EINVAL);
	assert_int_equal(heist_profile_samples(pool, NULL, NULL), EINVAL);
	heist_profile_reset(NULL);	/* a no-op */
	heist_pool_destroy(pool);
}

/* Built with -Dprofiler=false: every call says so. */
static void
compiled_out_is_enotsup(void **state)
{
	(void)state;
	if (HEIST_PROFILER) {
		print_message("profiler compiled in\n");
		skip();
	}
	heist_pool *pool = make_profiled_pool(1, true);
	struct heist_latency_report rep;
	struct heist_profile_clock clk;
	assert_int_equal(heist_profile_clock(&clk), ENOTSUP);
	assert_int_equal(heist_profile_report(pool, &rep), ENOTSUP);
	heist_pool_destroy(pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(clock_calibration_matches_monotonic),
		cmocka_unit_test(tree_counts_are_exact),
		cmocka_unit_test(sampling_records_about_one_task_in_n),
		cmocka_unit_test(paths_add_up_and_steals_have_a_latency),
		cmocka_unit_test(samples_name_their_kind_and_follow_a_mark),
		cmocka_unit_test(buffer_size_is_the_callers),
		cmocka_unit_test(submitted_counts_are_exact),
		cmocka_unit_test(samples_are_consistent),
		cmocka_unit_test(percentiles_agree_with_report),
		cmocka_unit_test(overflow_boundary_keeps_counts_exact),
		cmocka_unit_test(overflow_big_tree),
		cmocka_unit_test(a_report_while_the_buffer_fills_is_never_falsely_exact),
		cmocka_unit_test(reset_clears_counts),
		cmocka_unit_test(not_profiling_is_einval),
		cmocka_unit_test(null_arguments_are_einval),
		cmocka_unit_test(compiled_out_is_enotsup),
		cmocka_unit_test(report_after_wait_counts_the_last_task),
	};
	return RUN_TESTS(tests);
}
