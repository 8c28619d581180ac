/* SPDX-License-Identifier: MIT */
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

/* The size's p.a is the depth, p.b the payload. */
static void
answer(struct bench_job *j, struct w8_result r)
{
	j->answer = bench_tree_answer(r.tasks, r.sum);
}

static void
run_serial(struct bench_job *j)
{
	struct w8_node root = w8_root((unsigned)j->p.a, (unsigned)j->p.b);
	w8_serial(&root);
	answer(j, root.r);
}

static void
run_heist(struct bench_job *j)
{
	struct w8_result r;
	int err = w8_run(j->pool, (unsigned)j->p.a, (unsigned)j->p.b, &r);
	if (err)
		bench_fail("W8: heist_run returned %d", err);
	answer(j, r);
}

static void
run_peer(struct bench_job *j)
{
	answer(j, j->peer->tree(j->threads, (unsigned)j->p.a, (unsigned)j->p.b));
}

static const struct bench_impl impls[] = {
	{ "serial", 1, POOL_NONE, .run = run_serial },
	{ "heist", THREADS, POOL_HEIST, .run = run_heist },
	{ "heist-prof", THREADS, POOL_HEIST_PROF, .run = run_heist },
	{ "omp", THREADS, POOL_PEER, .run = run_peer },
	{ "tbb", THREADS, POOL_PEER, .run = run_peer },
};

static void *
setup(struct bench_set *s)
{
	struct w8_result *want = bench_alloc(s, 1, sizeof *want);
	*want = w8_expected((unsigned)s->p.a, (unsigned)s->p.b);
	snprintf(s->detail, sizeof s->detail, " (%" PRIu64 " tasks)", want->tasks);
	return want;
}

/* The profile of heist-prof covers the timed runs only. */
static void
reset(struct bench_job *j)
{
	if (j->kind == POOL_HEIST_PROF && j->rep == 0)
		heist_profile_reset(j->pool);
}

static void
check(const struct bench_job *j)
{
	const struct w8_result *want = j->in;
	bench_check("W8 tree nodes", j->impl, j->threads, j->answer.value,
		    (long long)want->tasks);
	bench_check_sum("W8 tree sum", j, j->answer.sum, want->sum);
}

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

static void
figures(struct bench_set *s)
{
	const struct w8_result *want = s->in;
	unsigned N = s->o->threads;
	bench_figure_per(s, "ns_per_task", (double)want->tasks, 0, "ns/task");
	struct variant *voff = bench_find(s, "heist", N), *von = bench_find(s, "heist-prof", N);
	if (voff && von) {
		double x = (double)von->median_ns / (double)voff->median_ns;
		row_metric(von->row, "ratio_profile_off", x, "t/off %.3f (target <= 1.10: %s)", x,
			   x <= 1.10 ? "met" : "MISSED");
	}
	if (von) {
		struct heist_latency_report rep;
		int err = heist_profile_report(von->job.pool, &rep);
		if (err) {
			row_note(von->row, "heist_profile_report: error %d (profiler compiled out?)",
				 err);
		} else {
			percentile_metric(von->row, "dispatch_p50_ns", "dispatch p50",
					  rep.dispatch.p50_ns, 500);
			percentile_metric(von->row, "dispatch_p99_ns", "p99", rep.dispatch.p99_ns,
					  10e3);
			percentile_metric(von->row, "dispatch_p999_ns", "p99.9",
					  rep.dispatch.p999_ns, 100e3);
			row_note(von->row, "%" PRIu64 " samples over %u runs, %s",
				 rep.dispatch.count, s->o->reps,
				 rep.exact ? "exact" : "histogram, within 1%");
		}
	}
	row_note(bench_set_row(s, "serial", 1), "%" PRIu64 " iterations per node", s->p.b);
}

const struct bench_workload w8_latency = {
	.group = "W8", .title = "tree",
	.nsizes = 1,
	.sizes = {	/* depth, payload */
		{ "W8", { "depth 19", 19, W8_PAYLOAD }, { "depth 15", 15, W8_PAYLOAD } },
	},
	.setup = setup, .reset = reset, .check = check, .figures = figures,
	BENCH_IMPLS(impls),
};
