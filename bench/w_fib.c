/* w_fib.c - W1 fib: the cost of a spawn/sync pair. Every call above the leaves is a
 * task (no cutoff). heist spawns on a heist_task record in the caller's frame and syncs
 * it; the serial version is the same recursion with plain calls. Rows: serial, heist
 * with 1 worker (T_1, for the overhead per spawn) and with --threads workers, OpenMP,
 * oneTBB. Also the heap allocations of a whole heist fib(30) run (should be 0), and two
 * more heist rows with --threads workers: heist-prof, the profiler on
 * (heist_config.profile: a TSC read per spawn, start and end), for its cost per spawn;
 * heist-pin, workers pinned one per core (HEIST_PIN_CORE), to show pinning costs
 * nothing. */
#include "workloads.h"

#include "malloc_count.h"
#include "peers.h"

#include <stdio.h>
#include <string.h>

struct fib_ctx {
	int n;
	unsigned threads;
	heist_pool *pool;	/* heist variants only */
	const char *impl;	/* heist variants: for the wrong-answer message */
};

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

static uint64_t
run_serial(void *ctx, int rep)
{
	struct fib_ctx *c = ctx;
	(void)rep;
	uint64_t t0 = bench_now_ns();
	long r = fib(c->n);
	uint64_t ns = bench_now_ns() - t0;
	bench_check("W1 fib", "serial", 1, r, fib_expected(c->n));
	return ns;
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

static uint64_t
run_heist(void *ctx, int rep)
{
	struct fib_ctx *c = ctx;
	(void)rep;
	uint64_t t0 = bench_now_ns();
	long r = heist_fib(c->pool, c->n);
	uint64_t ns = bench_now_ns() - t0;
	bench_check("W1 fib", c->impl, c->threads, r, fib_expected(c->n));
	return ns;
}

#ifdef HEIST_BENCH_OMP
static uint64_t
run_omp(void *ctx, int rep)
{
	struct fib_ctx *c = ctx;
	(void)rep;
	uint64_t t0 = bench_now_ns();
	long r = peer_omp_fib(c->threads, c->n);
	uint64_t ns = bench_now_ns() - t0;
	bench_check("W1 fib", "omp", c->threads, r, fib_expected(c->n));
	return ns;
}
#endif

#ifdef HEIST_BENCH_TBB
static uint64_t
run_tbb(void *ctx, int rep)
{
	struct fib_ctx *c = ctx;
	(void)rep;
	uint64_t t0 = bench_now_ns();
	long r = peer_tbb_fib(c->n);
	uint64_t ns = bench_now_ns() - t0;
	bench_check("W1 fib", "tbb", c->threads, r, fib_expected(c->n));
	return ns;
}
#endif

void
w1_fib(const struct bench_opts *o)
{
	if (!bench_selected(o, "W1", "W1"))
		return;
	int n = o->quick ? 30 : 38;
	unsigned N = o->threads;
	char size[24];
	snprintf(size, sizeof size, "fib(%d)", n);
	bench_progress("W1 %s:", size);

	struct fib_ctx serial = { n, 1, NULL, "serial" }, h1 = { n, 1, NULL, "heist" };
	struct fib_ctx hn = { n, N, NULL, "heist" }, peer = { n, N, NULL, NULL };
	struct fib_ctx prof = { n, N, NULL, "heist-prof" }, pin = { n, N, NULL, "heist-pin" };
	struct variant v[8];
	unsigned nv = 0;
	bench_add(o, v, &nv, "serial", 1, run_serial, &serial);
	if (bench_impl_enabled(o, "heist")) {
		h1.pool = bench_heist_pool(1);
		bench_add(o, v, &nv, "heist", 1, run_heist, &h1);
		if (N != 1) {
			hn.pool = bench_heist_pool(N);
			bench_add(o, v, &nv, "heist", N, run_heist, &hn);
		}
	}
	if (bench_impl_enabled(o, "heist-prof")) {
		prof.pool = bench_heist_pool_with(N, HEIST_PIN_NONE, true);
		bench_add(o, v, &nv, "heist-prof", N, run_heist, &prof);
	}
	if (bench_impl_enabled(o, "heist-pin")) {
		pin.pool = bench_heist_pool_with(N, HEIST_PIN_CORE, false);
		bench_add(o, v, &nv, "heist-pin", N, run_heist, &pin);
	}
#ifdef HEIST_BENCH_OMP
	bench_add(o, v, &nv, "omp", N, run_omp, &peer);
#endif
#ifdef HEIST_BENCH_TBB
	bench_add(o, v, &nv, "tbb", N, run_tbb, &peer);
#endif
	(void)peer;
	bench_measure(o, v, nv);
	bench_rows_from("W1", size, v, nv);

	/* Calls made: 2 * fib(n + 1) - 1; a spawn for each call above the leaves. */
	double calls = 2.0 * (double)fib_expected(n + 1) - 1;
	for (unsigned i = 0; i < nv; i++) {
		double per = (double)v[i].median_ns / calls;
		row_metric(bench_row_for("W1", size, v[i].impl, v[i].threads), "ns_per_call", per,
			   "%.2f ns/call", per);
	}

	struct variant *vs = bench_find(v, nv, "serial", 1), *v1 = bench_find(v, nv, "heist", 1);
	if (vs && v1) {
		double per = ((double)v1->median_ns - (double)vs->median_ns) / calls;
		row_metric(bench_row_for("W1", size, "heist", 1), "overhead_per_spawn_ns", per,
			   "overhead/spawn %.2f ns", per);
	}
	struct variant *vn = bench_find(v, nv, "heist", N), *vp = bench_find(v, nv, "heist-prof", N);
	if (vn && vp) {
		/* Per call, as overhead/spawn above; per spawned (profiled) task: the calls
		 * above the leaves, fib(n + 1) - 1 of them. */
		double extra = (double)vp->median_ns - (double)vn->median_ns;
		double spawns = (double)fib_expected(n + 1) - 1;
		struct row *r = bench_row_for("W1", size, "heist-prof", N);
		row_metric(r, "profile_cost_per_call_ns", extra / calls, "profiler +%.2f ns/call",
			   extra / calls);
		row_metric(r, "profile_cost_per_task_ns", extra / spawns, "+%.1f ns/task",
			   extra / spawns);
	}
	bench_pin_note(bench_row_for("W1", size, "heist-pin", N), pin.pool);

	heist_pool *pool = hn.pool ? hn.pool : h1.pool;
	if (pool && malloc_count_available()) {
		malloc_count_start();
		long r = heist_fib(pool, 30);
		uint64_t allocs = malloc_count_stop();
		bench_check("W1 fib(30) allocation run", "heist", heist_pool_size(pool), r,
			    fib_expected(30));
		struct row *row = bench_row_for("W1", size, "heist", heist_pool_size(pool));
		row_metric(row, "heap_allocs_fib30", (double)allocs, "allocs(fib30)=%llu%s",
			   (unsigned long long)allocs, allocs ? " (target 0: MISSED)" : "");
	}
	heist_pool_destroy(h1.pool);
	heist_pool_destroy(hn.pool);
	heist_pool_destroy(prof.pool);
	heist_pool_destroy(pin.pool);
}
