/* w_uts.c - W3 uts: unbalanced tree search on a binomial tree. Each node does ~200 ns of
 * work (64 rounds of mix); the root has 2000 children, any other node 8 (probability
 * 0.124875) or none, so the tree is near-critical: thin, deep (~2000 levels) and
 * unpredictable. Each child is a task; the result is (nodes, sum of h mod 2^64).
 * heist-pin: heist with --threads workers pinned one per core (HEIST_PIN_CORE). */
#include "workloads.h"

#include "kernels.h"
#include "peers.h"

#include <inttypes.h>
#include <stdio.h>

struct uts_ctx {
	uint64_t seed;
	unsigned threads;
	heist_pool *pool;
	const char *impl;	/* heist variants: for the wrong-answer message */
};

static void
uts(struct uts_node *node)
{
	int n = uts_visit(node);
	if (n == 0)
		return;
	struct uts_node kid[n];
	for (int i = 0; i < n; i++) {
		uts_child(&kid[i], node, i);
		uts(&kid[i]);
	}
	for (int i = n - 1; i >= 0; i--)
		uts_add(node, &kid[i]);
}

static int
uts_task(void *p)
{
	struct uts_node *node = p;
	int n = uts_visit(node);
	if (n == 0)
		return 0;
	struct uts_node kid[n];
	heist_task t[n];
	for (int i = 0; i < n; i++) {
		uts_child(&kid[i], node, i);
		heist_spawn(&t[i], uts_task, &kid[i]);
	}
	for (int i = n - 1; i >= 0; i--) {	/* sync in reverse order of spawn */
		heist_sync(&t[i]);
		uts_add(node, &kid[i]);
	}
	return 0;
}

static void
check(const struct uts_ctx *c, const char *impl, struct uts_result got)
{
	struct uts_result want = uts_expected(c->seed);
	bench_check("W3 uts nodes", impl, c->threads, (long long)got.nodes,
		    (long long)want.nodes);
	if (got.sum != want.sum)
		bench_fail("WRONG ANSWER: W3 uts sum, %s with %u threads: got 0x%016" PRIx64
			   ", expected 0x%016" PRIx64, impl, c->threads, got.sum, want.sum);
}

static uint64_t
run_serial(void *ctx, int rep)
{
	struct uts_ctx *c = ctx;
	struct uts_node root = { .seed = c->seed, .depth = 0 };
	(void)rep;
	uint64_t t0 = bench_now_ns();
	uts(&root);
	uint64_t ns = bench_now_ns() - t0;
	check(c, "serial", root.r);
	return ns;
}

static uint64_t
run_heist(void *ctx, int rep)
{
	struct uts_ctx *c = ctx;
	struct uts_node root = { .seed = c->seed, .depth = 0 };
	(void)rep;
	uint64_t t0 = bench_now_ns();
	int err = heist_run(c->pool, uts_task, &root);
	uint64_t ns = bench_now_ns() - t0;
	if (err)
		bench_fail("W3 uts: heist_run returned %d", err);
	check(c, c->impl, root.r);
	return ns;
}

#ifdef HEIST_BENCH_OMP
static uint64_t
run_omp(void *ctx, int rep)
{
	struct uts_ctx *c = ctx;
	(void)rep;
	uint64_t t0 = bench_now_ns();
	struct uts_result r = peer_omp_uts(c->threads, c->seed);
	uint64_t ns = bench_now_ns() - t0;
	check(c, "omp", r);
	return ns;
}
#endif

#ifdef HEIST_BENCH_TBB
static uint64_t
run_tbb(void *ctx, int rep)
{
	struct uts_ctx *c = ctx;
	(void)rep;
	uint64_t t0 = bench_now_ns();
	struct uts_result r = peer_tbb_uts(c->seed);
	uint64_t ns = bench_now_ns() - t0;
	check(c, "tbb", r);
	return ns;
}
#endif

void
w3_uts(const struct bench_opts *o)
{
	if (!bench_selected(o, "W3", "W3"))
		return;
	uint64_t seed = o->quick ? 3 : 2;
	unsigned N = o->threads;
	char size[24];
	snprintf(size, sizeof size, "seed=%" PRIu64, seed);
	bench_progress("W3 uts %s:", size);

	struct uts_ctx serial = { seed, 1, NULL, "serial" }, h1 = { seed, 1, NULL, "heist" };
	struct uts_ctx hn = { seed, N, NULL, "heist" }, peer = { seed, N, NULL, NULL };
	struct uts_ctx pin = { seed, N, NULL, "heist-pin" };
	struct variant v[7];
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
	bench_rows_from("W3", size, v, nv);

	struct uts_result want = uts_expected(seed);
	for (unsigned i = 0; i < nv; i++) {
		double per = (double)v[i].median_ns / (double)want.nodes;
		row_metric(bench_row_for("W3", size, v[i].impl, v[i].threads), "ns_per_node", per,
			   "%.1f ns/node", per);
	}
	row_note(bench_row_for("W3", size, "serial", 1), "%" PRIu64 " nodes", want.nodes);
	bench_pin_note(bench_row_for("W3", size, "heist-pin", N), pin.pool);
	heist_pool_destroy(h1.pool);
	heist_pool_destroy(hn.pool);
	heist_pool_destroy(pin.pool);
}
