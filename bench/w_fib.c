/* SPDX-License-Identifier: MIT */
/* w_fib.c - W1 fib: the cost of a spawn/sync pair. Every call above the leaves is a
 * task (no cutoff). heist spawns on a heist_task record in the caller's frame and syncs
 * it; the serial version is the same recursion with plain calls. Rows: serial, heist
 * with 1 worker (T_1, for the overhead per spawn) and with --threads workers, OpenMP,
 * oneTBB. Also the heap allocations of a whole heist fib(30) run (should be 0), and more
 * heist rows with --threads workers: heist-prof, the profiler on (heist_config.profile:
 * a TSC read per spawn, start and end), for its cost per spawn; heist-sample, the same
 * recording one task in 64 (profile_every);
 * heist-pin, workers pinned one per core (HEIST_PIN_CORE), to show pinning costs
 * nothing; heist-worker (1 and --threads workers), a worker-passing task
 * (HEIST_WORKER_TASK_1) instead of heist_spawn of an argument struct. With a C++ compiler, heist-cxx rows (1 and --threads workers): the same
 * recursion with heist::join (cxx.h), whose overhead per spawn is compared with the C
 * API's (issue 15: at most 1.1x). */
#include "workloads.h"

#include "cxx.h"
#include "kernels.h"
#include "malloc_count.h"
#include "peers.h"

static long
fib(int n)
{
	if (n < 2)
		return n;
	long a = fib(n - 1);
	long b = fib(n - 2);
	return a + b;
}

struct fib_arg {
	int n;
	long r;
};

static int
fib_task(void *p)
{
	struct fib_arg *a = p;
	if (a->n < 2) {
		a->r = a->n;
		return 0;
	}
	struct fib_arg x = { a->n - 1, 0 }, y = { a->n - 2, 0 };
	heist_task t;
	heist_spawn(&t, fib_task, &x);
	fib_task(&y);
	heist_sync(&t);
	a->r = x.r + y.r;
	return 0;
}

static long
heist_fib(heist_pool *pool, int n)
{
	struct fib_arg a = { n, 0 };
	int err = heist_run(pool, fib_task, &a);
	if (err)
		bench_fail("W1 fib: heist_run returned %d", err);
	return a.r;
}

/* The same recursion as a worker-passing task (HEIST_WORKER_TASK_1): the worker passed
 * down, the child's value returned by its sync (issue 41). */
static long fib_w(heist_worker *w, int n);
HEIST_WORKER_TASK_1(fib_w_child, long, fib_w, int)

static long
fib_w(heist_worker *w, int n)
{
	if (n < 2)
		return n;
	struct fib_w_child t;
	fib_w_child_spawn(w, &t, n - 1);
	long b = fib_w(w, n - 2);
	return fib_w_child_sync(w, &t) + b;
}

static int
fib_w_root(void *p)
{
	struct fib_arg *a = p;
	a->r = fib_w(heist_worker_self(), a->n);
	return 0;
}

static long
heist_fib_w(heist_pool *pool, int n)
{
	struct fib_arg a = { n, 0 };
	int err = heist_run(pool, fib_w_root, &a);
	if (err)
		bench_fail("W1 fib: heist_run returned %d", err);
	return a.r;
}

long w1_serial(int n) { return fib(n); }
long w1_heist(heist_pool *pool, int n) { return heist_fib(pool, n); }

/* The size's p.a is n. */
static void run_serial(struct bench_job *j) { j->answer.value = fib((int)j->p.a); }
static void run_heist(struct bench_job *j) { j->answer.value = heist_fib(j->pool, (int)j->p.a); }
static void run_peer(struct bench_job *j) { j->answer.value = j->peer->fib(j->threads, (int)j->p.a); }
static void run_worker(struct bench_job *j) { j->answer.value = heist_fib_w(j->pool, (int)j->p.a); }
#ifdef HEIST_BENCH_CXX
static void run_cxx(struct bench_job *j) { j->answer.value = cxx_fib(j->pool, (int)j->p.a); }
#endif

static const struct bench_impl impls[] = {
	{ "serial", 1, POOL_NONE, .run = run_serial },
	{ "heist", 1, POOL_HEIST, .run = run_heist },
	{ "heist", THREADS, POOL_HEIST, .run = run_heist },
	{ "heist-prof", THREADS, POOL_HEIST_PROF, .run = run_heist },
	{ "heist-sample", THREADS, POOL_HEIST_SAMPLE, .run = run_heist },
	{ "heist-pin", THREADS, POOL_HEIST_PIN, .run = run_heist },
	{ "heist-worker", 1, POOL_HEIST, .run = run_worker },
	{ "heist-worker", THREADS, POOL_HEIST, .run = run_worker },
#ifdef HEIST_BENCH_CXX
	{ "heist-cxx", 1, POOL_HEIST, .run = run_cxx },
	{ "heist-cxx", THREADS, POOL_HEIST, .run = run_cxx },
#endif
	{ "omp", THREADS, POOL_PEER, .run = run_peer },
	{ "tbb", THREADS, POOL_PEER, .run = run_peer },
};

static void
check(const struct bench_job *j)
{
	bench_check("W1 fib", j->impl, j->threads, j->answer.value, fib_expected((int)j->p.a));
}

#ifdef HEIST_BENCH_CXX
/* The heist-cxx rows: time over the C row of the same thread count, and on the
 * 1-worker row the overhead per spawn over the C row's. */
static void
cxx_figures(struct bench_set *s, double calls)
{
	struct variant *vs = bench_find(s, "serial", 1);
	unsigned counts[2] = { 1, s->o->threads };
	for (unsigned k = 0; k < (counts[1] == 1 ? 1u : 2u); k++) {
		struct variant *vx = bench_find(s, "heist-cxx", counts[k]);
		struct variant *vc = bench_find(s, "heist", counts[k]);
		if (!vx || !vc)
			continue;
		double x = (double)vx->median_ns / (double)vc->median_ns;
		row_metric(vx->row, "ratio_to_c", x, "t/C %.2f", x);
		if (counts[k] != 1 || !vs)
			continue;
		double per = ((double)vx->median_ns - (double)vs->median_ns) / calls;
		double per_c = ((double)vc->median_ns - (double)vs->median_ns) / calls;
		double r = per / per_c;
		row_metric(vx->row, "overhead_per_spawn_ns", per, "overhead/spawn %.2f ns", per);
		row_metric(vx->row, "overhead_ratio_to_c", r, "%.2fx C's%s", r,
			   r > 1.10 ? " (target <= 1.10: MISSED)" : " (target <= 1.10: met)");
	}
	struct variant *vx = bench_find(s, "heist-cxx", s->o->threads);
	if (vx && malloc_count_available()) {
		malloc_count_start();
		long r = cxx_fib(vx->job.pool, 30);
		uint64_t allocs = malloc_count_stop();
		bench_check("W1 fib(30) allocation run", "heist-cxx", s->o->threads, r,
			    fib_expected(30));
		row_metric(vx->row, "heap_allocs_fib30", (double)allocs, "allocs(fib30)=%llu%s",
			   (unsigned long long)allocs, allocs ? " (target 0: MISSED)" : "");
	}
}
#else
static void cxx_figures(struct bench_set *s, double calls) { (void)s; (void)calls; }
#endif

static void
figures(struct bench_set *s)
{
	int n = (int)s->p.a;
	unsigned N = s->o->threads;
	/* Calls made: 2 * fib(n + 1) - 1; a spawn for each call above the leaves. */
	double calls = 2.0 * (double)fib_expected(n + 1) - 1;
	bench_figure_per(s, "ns_per_call", calls, 2, "ns/call");

	struct variant *vs = bench_find(s, "serial", 1), *v1 = bench_find(s, "heist", 1);
	if (vs && v1) {
		double per = ((double)v1->median_ns - (double)vs->median_ns) / calls;
		row_metric(v1->row, "overhead_per_spawn_ns", per, "overhead/spawn %.2f ns", per);
	}
	struct variant *vn = bench_find(s, "heist", N);
	const char *profiled[] = { "heist-prof", "heist-sample" };
	for (int k = 0; k < 2 && vn; k++) {
		struct variant *vp = bench_find(s, profiled[k], N);
		if (!vp)
			continue;
		/* Per call, as overhead/spawn above; per spawned (profiled) task: the calls
		 * above the leaves, fib(n + 1) - 1 of them; and the time as a ratio to
		 * heist's (the target: at most 2x). */
		double extra = (double)vp->median_ns - (double)vn->median_ns;
		double spawns = (double)fib_expected(n + 1) - 1;
		double ratio = (double)vp->median_ns / (double)vn->median_ns;
		row_metric(vp->row, "profile_cost_per_call_ns", extra / calls,
			   "profiler +%.2f ns/call", extra / calls);
		row_metric(vp->row, "profile_cost_per_task_ns", extra / spawns, "+%.1f ns/task",
			   extra / spawns);
		row_metric(vp->row, "profile_time_ratio", ratio, "t/heist %.2f%s", ratio,
			   k ? " (1 task in 64 recorded)" : "");
	}
	bench_pin_note(s);
	cxx_figures(s, calls);

	struct variant *vh = vn ? vn : v1;
	if (vh && malloc_count_available()) {
		heist_pool *pool = vh->job.pool;
		malloc_count_start();
		long r = heist_fib(pool, 30);
		uint64_t allocs = malloc_count_stop();
		bench_check("W1 fib(30) allocation run", "heist", heist_pool_size(pool), r,
			    fib_expected(30));
		row_metric(vh->row, "heap_allocs_fib30", (double)allocs, "allocs(fib30)=%llu%s",
			   (unsigned long long)allocs, allocs ? " (target 0: MISSED)" : "");
	}
}

const struct bench_workload w1_fib = {
	.group = "W1", .title = "",
	.nsizes = 1, .sizes = { { "W1", { "fib(38)", 38, 0 }, { "fib(30)", 30, 0 } } },
	.check = check, .figures = figures,
	BENCH_IMPLS(impls),
};
