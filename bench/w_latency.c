/* w_latency.c - W8: a fork-join binary tree of depth D (2^(D+1) - 1 nodes, every one a
 * task but the root), each node doing a 500-iteration floating-point loop before it
 * spawns its two children and syncs them: the tree of w8.c, which heist-latency runs
 * too. The answer is the node count and the sum of the loops' bit patterns mod 2^64,
 * checked against a loop over the same node indices computed before any clock.
 *
 * Rows: serial (plain recursion); heist with the profiler off and heist-prof with it on
 * (heist_config.profile), for the profiler's cost on a workload of ~1 us tasks and for
 * its dispatch-latency percentiles (heist_profile_report over the timed repetitions);
 * OpenMP tasks; oneTBB task_group. The per-task TSC trace and every percentile are the
 * job of tools/heist-latency; this row keeps the three that have targets. */
#include "workloads.h"

#include "peers.h"
#include "w8.h"

#include <heist/profile.h>

#include <inttypes.h>
#include <stdio.h>

struct tree {
	unsigned depth, payload;
	struct w8_result want;
	heist_pool *pool;
	unsigned threads;
	bool profiled;		/* reset the pool's profile before the first timed run */
};

static void
check(const struct tree *t, const char *impl, unsigned threads, struct w8_result got)
{
	bench_check("W8 tree nodes", impl, threads, (long long)got.tasks, (long long)t->want.tasks);
	if (got.sum != t->want.sum)
		bench_fail("WRONG ANSWER: W8 tree sum, %s with %u threads: got 0x%016" PRIx64
			   ", expected 0x%016" PRIx64, impl, threads, got.sum, t->want.sum);
}

static uint64_t
run_serial(void *ctx, int rep)
{
	struct tree *t = ctx;
	struct w8_node root = w8_root(t->depth, t->payload);
	(void)rep;
	uint64_t t0 = bench_now_ns();
	w8_serial(&root);
	uint64_t ns = bench_now_ns() - t0;
	check(t, "serial", 1, root.r);
	return ns;
}

static uint64_t
run_heist(void *ctx, int rep)
{
	struct tree *t = ctx;
	struct w8_result r;
	if (t->profiled && rep == 0)
		heist_profile_reset(t->pool);	/* report the timed runs only */
	uint64_t t0 = bench_now_ns();
	int err = w8_run(t->pool, t->depth, t->payload, &r);
	uint64_t ns = bench_now_ns() - t0;
	if (err)
		bench_fail("W8: heist_run returned %d", err);
	check(t, t->profiled ? "heist-prof" : "heist", t->threads, r);
	return ns;
}

#ifdef HEIST_BENCH_OMP
static uint64_t
run_omp(void *ctx, int rep)
{
	struct tree *t = ctx;
	(void)rep;
	uint64_t t0 = bench_now_ns();
	struct w8_result r = peer_omp_tree(t->threads, t->depth, t->payload);
	uint64_t ns = bench_now_ns() - t0;
	check(t, "omp", t->threads, r);
	return ns;
}
#endif

#ifdef HEIST_BENCH_TBB
static uint64_t
run_tbb(void *ctx, int rep)
{
	struct tree *t = ctx;
	(void)rep;
	uint64_t t0 = bench_now_ns();
	struct w8_result r = peer_tbb_tree(t->depth, t->payload);
	uint64_t ns = bench_now_ns() - t0;
	check(t, "tbb", t->threads, r);
	return ns;
}
#endif

/* "p50 0.21 us", with the target and MISSED when above limit_ns. */
static void
percentile_metric(struct row *r, const char *key, const char *name, double ns, double limit_ns)
{
	if (ns > limit_ns)
		row_metric(r, key, ns, "%s %.2f us (target <= %g: MISSED)", name, ns / 1e3,
			   limit_ns / 1e3);
	else
		row_metric(r, key, ns, "%s %.2f us", name, ns / 1e3);
}

void
w8_latency(const struct bench_opts *o)
{
	if (!bench_selected(o, "W8", "W8"))
		return;
	unsigned depth = o->quick ? 15 : 19;
	unsigned N = o->threads;
	char size[24];
	snprintf(size, sizeof size, "depth %u", depth);
	uint64_t tasks = w8_tasks(depth);
	bench_progress("W8 tree %s (%" PRIu64 " tasks):", size, tasks);

	struct tree serial = { .depth = depth, .payload = W8_PAYLOAD, .threads = 1 };
	serial.want = w8_expected(depth, W8_PAYLOAD);
	struct tree off = serial, on = serial, peer = serial;
	off.threads = on.threads = peer.threads = N;
	on.profiled = true;

	struct variant v[6];
	unsigned nv = 0;
	bench_add(o, v, &nv, "serial", 1, run_serial, &serial);
	if (bench_impl_enabled(o, "heist")) {
		off.pool = bench_heist_pool_with(N, HEIST_PIN_NONE, false);
		bench_add(o, v, &nv, "heist", N, run_heist, &off);
	}
	if (bench_impl_enabled(o, "heist-prof")) {
		on.pool = bench_heist_pool_with(N, HEIST_PIN_NONE, true);
		bench_add(o, v, &nv, "heist-prof", N, run_heist, &on);
	}
#ifdef HEIST_BENCH_OMP
	bench_add(o, v, &nv, "omp", N, run_omp, &peer);
#endif
#ifdef HEIST_BENCH_TBB
	bench_add(o, v, &nv, "tbb", N, run_tbb, &peer);
#endif
	(void)peer;
	bench_measure(o, v, nv);
	bench_rows_from("W8", size, v, nv);

	for (unsigned i = 0; i < nv; i++) {
		double per = (double)v[i].median_ns / (double)tasks;
		row_metric(bench_row_for("W8", size, v[i].impl, v[i].threads), "ns_per_task", per,
			   "%.0f ns/task", per);
	}
	struct variant *voff = bench_find(v, nv, "heist", N), *von = bench_find(v, nv, "heist-prof", N);
	struct row *ron = bench_row_for("W8", size, "heist-prof", N);
	if (voff && von) {
		double x = (double)von->median_ns / (double)voff->median_ns;
		row_metric(ron, "ratio_profile_off", x, "t/off %.3f (target <= 1.10: %s)", x,
			   x <= 1.10 ? "met" : "MISSED");
	}
	if (on.pool) {
		struct heist_latency_report rep;
		int err = heist_profile_report(on.pool, &rep);
		if (err) {
			row_note(ron, "heist_profile_report: error %d (profiler compiled out?)", err);
		} else {
			percentile_metric(ron, "dispatch_p50_ns", "dispatch p50", rep.dispatch.p50_ns, 500);
			percentile_metric(ron, "dispatch_p99_ns", "p99", rep.dispatch.p99_ns, 10e3);
			percentile_metric(ron, "dispatch_p999_ns", "p99.9", rep.dispatch.p999_ns, 100e3);
			row_note(ron, "%" PRIu64 " samples over %u runs, %s", rep.dispatch.count, o->reps,
				 rep.exact ? "exact" : "histogram, within 1%");
		}
	}
	row_note(bench_row_for("W8", size, "serial", 1), "%u iterations per node", serial.payload);
	heist_pool_destroy(off.pool);
	heist_pool_destroy(on.pool);
}
