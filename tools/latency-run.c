/* SPDX-License-Identifier: MIT */
/* latency-run.c - heist-latency's closed-loop workloads (W8 fork-join, W5 submit, W4
 * for-each), the warm-up, and what lets a person follow and stop a long run: an
 * estimate of its length up front, a progress line with the time left, and Ctrl-C,
 * which stops the workload at its next look and lets main print the report of what
 * ran. The open-loop submit load is latency-open.c's. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include "latency.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(_WIN32)
#include <windows.h>
#endif

#include "w8.h"		/* bench/w8.h: the W8 tree heist-bench runs too */

enum {
	LONG_RUN_S = 60,	/* runs estimated longer than this get a warning first */
};

int latency_stop;

#if defined(_WIN32)
/* Windows has no SIGINT delivery to speak of: Ctrl-C and Ctrl-Break come to a console
 * control handler, on a thread of its own. The first one sets the flag; the handler
 * then takes itself off, so that a second one ends the process as usual (POSIX's
 * SA_RESETHAND below). */
static BOOL WINAPI
on_ctrl(DWORD type)
{
	if (type != CTRL_C_EVENT && type != CTRL_BREAK_EVENT)
		return FALSE;
	/* relaxed: the flag orders nothing; every look at it is a poll. */
	__atomic_store_n(&latency_stop, 1, __ATOMIC_RELAXED);
	SetConsoleCtrlHandler(on_ctrl, FALSE);
	return TRUE;
}

static void
catch_sigint(void)
{
	SetConsoleCtrlHandler(on_ctrl, TRUE);
}
#else
static void
on_sigint(int sig)
{
	(void)sig;
	/* relaxed: the flag orders nothing; every look at it is a poll. */
	__atomic_store_n(&latency_stop, 1, __ATOMIC_RELAXED);
}

/* Ctrl-C once: stop and report. SA_RESETHAND: a second one kills as usual. */
static void
catch_sigint(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sa.sa_flags = SA_RESETHAND | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
}
#endif

/* W5: fire-and-forget tasks have no future, so the last one to finish posts. */
static struct {
	double *out;
	unsigned payload;
	atomic_uint_fast64_t left;
	sem_t done;
} storm;

static int
storm_task(void *arg)
{
	uint64_t k = (uintptr_t)arg;
	storm.out[k] = spin(storm.payload, (double)k, 1e-7);
	/* acq_rel: the last decrement sees every other task's write of out[] (each
	 * released its own decrement), and sem_post hands them to the main thread. */
	if (atomic_fetch_sub_explicit(&storm.left, 1, memory_order_acq_rel) == 1)
		sem_post(&storm.done);
	return 0;
}

/* W4 */
struct loop {
	double *a;
	unsigned payload;
};

static int
loop_body(void *arg, size_t begin, size_t end)
{
	struct loop *l = arg;
	for (size_t i = begin; i < end; i++)
		l->a[i] = spin(l->payload, l->a[i], 1e-9);
	return 0;
}

/* The progress line's count of finished units: W4's loops (W8 and W5 count tasks in
 * the pool's statistics, the open loop counts time). relaxed: a display value. */
static atomic_uint_fast64_t loops_done;

/* --force-steal: the root spawns its first subtree and waits until another worker has
 * started it, so at least one task is stolen. A worker's heist_submit publishes its
 * deque and wakes a sleeper, so the root submits one no-op job after the spawn: the
 * thief takes the oldest task, the subtree. */
struct gate {
	heist_pool *pool;
	struct w8_node *node;
	atomic_bool started;	/* release by the subtree's runner, acquire by the root */
};

static int
noop(void *arg)
{
	(void)arg;
	return 0;
}

static int
gated_subtree(void *arg)
{
	struct gate *g = arg;
	atomic_store_explicit(&g->started, true, memory_order_release);
	return w8_tree(g->node);
}

static int
gated_root(void *arg)
{
	struct gate *root = arg;
	struct w8_node *n = root->node;
	if (!w8_visit(n))
		return 0;
	struct w8_node kid[2];
	heist_task t[2];
	w8_children(kid, n);
	struct gate g = {.pool = root->pool, .node = &kid[0]};
	heist_spawn(&t[0], gated_subtree, &g);
	int err = heist_submit(root->pool, noop, NULL, NULL);
	while (!err && !atomic_load_explicit(&g.started, memory_order_acquire) &&
	       !stop_requested())
		sched_yield();
	heist_spawn(&t[1], w8_tree, &kid[1]);
	int r1 = heist_sync(&t[1]);
	int r0 = heist_sync(&t[0]);
	w8_gather(n, kid);
	return err ? err : r0 ? r0 : r1;
}

/* Returns the tasks that ran. */
static uint64_t
run_fork_join(struct run *r)
{
	const struct options *o = r->o;
	/* W8, bench/w8.c: each node is a task in its parent's frame that writes its
	 * subtree's count back, so the count checks that every task ran once. */
	struct w8_result res;
	int err;
	if (o->force_steal) {
		struct w8_node root = w8_root(o->depth, (unsigned)o->payload);
		root.stop = &latency_stop;
		struct gate g = {.pool = r->pool, .node = &root};
		err = heist_run(r->pool, gated_root, &g);
		res = root.r;
		res.tasks += 1;	/* the no-op job */
	} else {
		err = w8_run_until(r->pool, o->depth, (unsigned)o->payload, &latency_stop,
				   &res);
	}
	if (err)
		die_err("heist_run", err);
	if (res.tasks != r->expected && !stop_requested()) {
		fprintf(stderr, PROG ": the tree ran %" PRIu64 " tasks, expected %" PRIu64 "\n",
			res.tasks, r->expected);
		exit(1);
	}
	r->checksum += (double)res.sum;
	return res.tasks;
}

static uint64_t
run_submit(struct run *r)
{
	const struct options *o = r->o;
	storm.out = r->array;
	storm.payload = (unsigned)o->payload;
	/* relaxed: each heist_submit hands its task over with release, which orders this
	 * store before any task's decrement. */
	atomic_store_explicit(&storm.left, o->tasks, memory_order_relaxed);
	int err = 0;
	uint64_t k = 0;
	for (; k < o->tasks && !stop_requested(); k++) {
		err = heist_submit(r->pool, storm_task, (void *)(uintptr_t)k, NULL);
		if (err)
			break;
	}
	/* Tasks never submitted will not count down: take them off at once. */
	uint64_t missing = o->tasks - k;
	bool wait = !missing ||
		    atomic_fetch_sub_explicit(&storm.left, missing, memory_order_acq_rel) !=
			    missing;
	while (wait && sem_wait(&storm.done) != 0 && errno == EINTR)
		;
	if (err)
		die_err("heist_submit", err);
	for (uint64_t i = 0; i < k; i++)
		r->checksum += r->array[i];
	return k;
}

static void
run_for_each(struct run *r)
{
	const struct options *o = r->o;
	struct loop l = {r->array, (unsigned)o->payload};
	for (uint64_t i = 0; i < o->loops && !stop_requested(); i++) {
		int err = heist_for_each(r->pool, 0, o->tasks, 0, loop_body, &l);
		if (err)
			die_err("heist_for_each", err);
		atomic_fetch_add_explicit(&loops_done, 1, memory_order_relaxed);
	}
}

/* One repeat; `slot` is where an open-loop repeat keeps its timestamps. Returns the
 * tasks that ran, or 0 when the workload does not know (W4's splits). */
static uint64_t
run_once(struct run *r, uint64_t slot)
{
	switch (r->o->workload) {
	case FORK_JOIN:
		return run_fork_join(r);
	case SUBMIT:
		if (r->open) {
			open_run(r, slot);
			return 0;	/* latency-open.c counts its own */
		}
		return run_submit(r);
	case FOR_EACH:
		run_for_each(r);
		return 0;
	}
	return 0;
}

/* ---------------------------------------------------------------------------------- */
/* Following a long run                                                               */

/* Nanoseconds one payload iteration takes here, timed once. */
static double
ns_per_iteration(void)
{
	enum { ITERS = 200000 };
	uint64_t t = now_ns();
	volatile double sink = spin(ITERS, 1.0, 1e-9);
	(void)sink;
	return (double)(now_ns() - t) / ITERS;
}

/* A guess at the run's length in seconds, from the payload's speed here and the
 * work's size; the scheduler's own cost is put at 100 ns a task. */
static double
estimate_s(const struct run *r)
{
	const struct options *o = r->o;
	double runs = (double)(o->repeat + o->warmup);
	if (r->open)
		return runs * o->duration;
	double workers = heist_pool_size(r->pool), iter = ns_per_iteration(), tasks;
	switch (o->workload) {
	case FORK_JOIN:
		tasks = (double)r->expected;
		return runs * tasks * ((double)o->payload * iter + 100) / workers * 1e-9;
	case SUBMIT:
		tasks = (double)o->tasks;
		return runs * tasks * ((double)o->payload * iter + 100) / workers * 1e-9;
	case FOR_EACH:
		tasks = (double)o->tasks * (double)o->loops;
		return runs * tasks * (double)o->payload * iter / workers * 1e-9;
	}
	return 0;
}

static void
warn_if_long(const struct run *r)
{
	double s = estimate_s(r);
	if (s <= LONG_RUN_S)
		return;
	char t[32], what[96];
	fmt_time(t, sizeof(t), s * 1e9);
	describe_workload(what, sizeof(what), r->o);
	if (s >= 120)
		snprintf(t, sizeof(t), "%.0f min", s / 60);
	fprintf(stderr, PROG ": %s will take about %s (an estimate); Ctrl-C stops it and "
		"prints the report of what ran\n", what, t);
}

/* The progress line: only on a terminal, only once a run takes more than a second. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop, printed;
	uint64_t executed0;	/* the statistics' count when the run started */
} progress = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, 0};

/* The fraction of the run done: tasks for W8 and W5, loops for W4, time for the open
 * loop. */
static double
fraction_done(const struct run *r, double elapsed)
{
	const struct options *o = r->o;
	double runs = (double)(o->repeat + o->warmup), f;
	if (r->open)
		return elapsed / (runs * o->duration);
	if (o->workload == FOR_EACH) {
		f = (double)atomic_load_explicit(&loops_done, memory_order_relaxed) /
		    (runs * (double)o->loops);
	} else {
		struct heist_stats s;
		if (heist_pool_stats(r->pool, &s))
			return 0;
		f = (double)(s.executed - progress.executed0) / (runs * (double)r->expected);
	}
	return f > 1 ? 1 : f;
}

static void *
progress_main(void *arg)
{
	struct run *r = arg;
	char what[96];
	describe_workload(what, sizeof(what), r->o);
	pthread_mutex_lock(&progress.lock);
	while (!progress.stop) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 250000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&progress.cond, &progress.lock, &until);
		double t = (double)now_ns() * 1e-9 - r->t0;
		if (progress.stop || t < 1.0)
			continue;
		double f = fraction_done(r, t);
		char left[32] = "?";
		if (f > 0.001)
			fmt_time(left, sizeof(left), t * (1 - f) / f * 1e9);
		fprintf(stderr, "\r\033[Krunning %s: %.1f%%, repeat %u/%" PRIu64 ", %.0f s, "
			"about %s left (Ctrl-C: stop and report) ", what, 100 * f,
			atomic_load(&r->current), r->o->repeat + r->o->warmup, t, left);
		progress.printed = true;
	}
	if (progress.printed)
		fputs("\r\033[K", stderr);
	pthread_mutex_unlock(&progress.lock);
	return NULL;
}

/* ---------------------------------------------------------------------------------- */

static void
setup(struct run *r)
{
	const struct options *o = r->o;
	switch (o->workload) {
	case FORK_JOIN:
		r->expected = w8_tasks(o->depth) + o->force_steal;
		if (o->force_steal && heist_pool_size(r->pool) < 2) {
			fprintf(stderr, PROG ": --force-steal needs 2 workers or more\n");
			exit(EXIT_USAGE);
		}
		break;
	case SUBMIT:
		r->expected = o->tasks;
		if (sem_init(&storm.done, 0, 0))
			die_err("sem_init", errno);
		/* fallthrough */
	case FOR_EACH:
		if (o->tasks > SIZE_MAX / sizeof(double))	/* a 32-bit size_t */
			die_err("malloc", ENOMEM);
		r->array = malloc((size_t)o->tasks * sizeof(double));
		if (!r->array)
			die_err("malloc", ENOMEM);
		for (uint64_t i = 0; i < o->tasks; i++)	/* W4: a[i] = i */
			r->array[i] = (double)i;
		break;
	}
	if (o->rate > 0)
		open_setup(r);
	r->repeat_ns = calloc(o->repeat, sizeof(*r->repeat_ns));
	r->repeat_mark = calloc(o->repeat + 1, sizeof(*r->repeat_mark));
	if (!r->repeat_ns || !r->repeat_mark)
		die_err("calloc", ENOMEM);
}

/* After the warm-up: forget its samples, and remember the statistics so far, which
 * the report subtracts (they cannot be reset). Every task of the warm-up recorded its
 * sample before its job finished, so the pool is quiet once it is idle. */
static void
forget_warmup(struct run *r)
{
	int err;
	if ((err = heist_pool_wait_idle(r->pool)))
		die_err("heist_pool_wait_idle", err);
	heist_profile_reset(r->pool);
	if ((err = heist_pool_stats(r->pool, &r->base)))
		die_err("heist_pool_stats", err);
	unsigned n = heist_pool_threads(r->pool);
	r->base_thread = calloc(n, sizeof(*r->base_thread));
	if (!r->base_thread)
		die_err("calloc", ENOMEM);
	for (unsigned i = 0; i < n; i++)
		if ((err = heist_pool_worker_stats(r->pool, i, &r->base_thread[i])))
			die_err("heist_pool_worker_stats", err);
	r->checksum = 0;
}

void
run_workload(struct run *r)
{
	const struct options *o = r->o;
	setup(r);
	catch_sigint();
	warn_if_long(r);

	pthread_t prog;
	bool show = isatty(STDERR_FILENO);
	r->t0 = (double)now_ns() * 1e-9;
	struct heist_stats s0;
	progress.executed0 = heist_pool_stats(r->pool, &s0) ? 0 : s0.executed;
	if (show && pthread_create(&prog, NULL, progress_main, r))
		show = false;
	for (uint64_t i = 0; i < o->warmup && !stop_requested(); i++) {
		atomic_store(&r->current, (unsigned)(i + 1));
		run_once(r, 0);
	}
	forget_warmup(r);
	r->recording = true;
	for (uint64_t i = 0; i < o->repeat && !stop_requested(); i++) {
		atomic_store(&r->current, (unsigned)(o->warmup + i + 1));
		r->repeat_mark[i] = heist_profile_now();
		uint64_t t = now_ns();
		r->tasks_ran += run_once(r, i * (r->open ? r->open->tasks : 0));
		r->repeat_ns[i] = now_ns() - t;
		r->wall_ns += r->repeat_ns[i];
		r->repeats_done++;
	}
	r->repeat_mark[r->repeats_done] = heist_profile_now();
	r->interrupted = stop_requested();
	if (o->workload == FOR_EACH)
		for (uint64_t i = 0; i < o->tasks; i++)
			r->checksum += r->array[i];
	if (r->open)
		open_finish(r);
	if (show) {
		pthread_mutex_lock(&progress.lock);
		progress.stop = true;
		pthread_cond_signal(&progress.cond);
		pthread_mutex_unlock(&progress.lock);
		pthread_join(prog, NULL);
	}
	if (o->workload == SUBMIT)
		sem_destroy(&storm.done);
}
