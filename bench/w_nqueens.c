/* w_nqueens.c - W2 nqueens, BOTS style: irregular fork-join with small copies. A task
 * per (row, safe column) pair, no cutoff; each child owns a copy of the board prefix
 * (struct nq_arg in the parent's frame); the parent sums its children's counts. The
 * serial version is the same recursion with plain calls, copies included. */
#include "workloads.h"

#include "kernels.h"
#include "peers.h"

#include <stdio.h>

struct nq_ctx {
	int n;
	unsigned threads;
	heist_pool *pool;
};

static void
nqueens(struct nq_arg *a)
{
	if (nq_solved(a))
		return;
	struct nq_arg kid[NQ_MAX];
	int k = 0;
	for (int col = nq_next(a, 0); col < a->n; col = nq_next(a, col + 1)) {
		nq_child(&kid[k], a, col);
		nqueens(&kid[k++]);
	}
	a->count = nq_sum(kid, k);
}

static int
nqueens_task(void *p)
{
	struct nq_arg *a = p;
	if (nq_solved(a))
		return 0;
	struct nq_arg kid[NQ_MAX];
	heist_task t[NQ_MAX];
	int k = 0;
	for (int col = nq_next(a, 0); col < a->n; col = nq_next(a, col + 1)) {
		nq_child(&kid[k], a, col);
		heist_spawn(&t[k], nqueens_task, &kid[k]);
		k++;
	}
	long count = 0;
	while (k--) {	/* sync in reverse order of spawn */
		heist_sync(&t[k]);
		count += kid[k].count;
	}
	a->count = count;
	return 0;
}

static uint64_t
run_serial(void *ctx, int rep)
{
	struct nq_ctx *c = ctx;
	struct nq_arg root = { .n = c->n };
	(void)rep;
	uint64_t t0 = bench_now_ns();
	nqueens(&root);
	uint64_t ns = bench_now_ns() - t0;
	bench_check("W2 nqueens", "serial", 1, root.count, nq_expected(c->n));
	return ns;
}

static uint64_t
run_heist(void *ctx, int rep)
{
	struct nq_ctx *c = ctx;
	struct nq_arg root = { .n = c->n };
	(void)rep;
	uint64_t t0 = bench_now_ns();
	int err = heist_run(c->pool, nqueens_task, &root);
	uint64_t ns = bench_now_ns() - t0;
	if (err)
		bench_fail("W2 nqueens: heist_run returned %d", err);
	bench_check("W2 nqueens", "heist", c->threads, root.count, nq_expected(c->n));
	return ns;
}

#ifdef HEIST_BENCH_OMP
static uint64_t
run_omp(void *ctx, int rep)
{
	struct nq_ctx *c = ctx;
	(void)rep;
	uint64_t t0 = bench_now_ns();
	long r = peer_omp_nqueens(c->threads, c->n);
	uint64_t ns = bench_now_ns() - t0;
	bench_check("W2 nqueens", "omp", c->threads, r, nq_expected(c->n));
	return ns;
}
#endif

#ifdef HEIST_BENCH_TBB
static uint64_t
run_tbb(void *ctx, int rep)
{
	struct nq_ctx *c = ctx;
	(void)rep;
	uint64_t t0 = bench_now_ns();
	long r = peer_tbb_nqueens(c->n);
	uint64_t ns = bench_now_ns() - t0;
	bench_check("W2 nqueens", "tbb", c->threads, r, nq_expected(c->n));
	return ns;
}
#endif

/* Tasks made: one per (row, safe column) pair, i.e. per node below the root. */
static long
nq_tasks(struct nq_arg *a)
{
	if (a->rows == a->n)
		return 0;
	long tasks = 0;
	for (int col = nq_next(a, 0); col < a->n; col = nq_next(a, col + 1)) {
		struct nq_arg kid;
		nq_child(&kid, a, col);
		tasks += 1 + nq_tasks(&kid);
	}
	return tasks;
}

static void
one_size(const struct bench_opts *o, int n, heist_pool *p1, heist_pool *pn)
{
	unsigned N = o->threads;
	char size[24];
	snprintf(size, sizeof size, "n=%d", n);
	bench_progress("W2 nqueens %s:", size);

	struct nq_ctx serial = { n, 1, NULL }, h1 = { n, 1, p1 }, hn = { n, N, pn };
	struct nq_ctx peer = { n, N, NULL };
	struct variant v[6];
	unsigned nv = 0;
	bench_add(o, v, &nv, "serial", 1, run_serial, &serial);
	if (p1)
		bench_add(o, v, &nv, "heist", 1, run_heist, &h1);
	if (pn)
		bench_add(o, v, &nv, "heist", N, run_heist, &hn);
#ifdef HEIST_BENCH_OMP
	bench_add(o, v, &nv, "omp", N, run_omp, &peer);
#endif
#ifdef HEIST_BENCH_TBB
	bench_add(o, v, &nv, "tbb", N, run_tbb, &peer);
#endif
	(void)peer;
	bench_measure(o, v, nv);
	bench_rows_from("W2", size, v, nv);

	struct nq_arg root = { .n = n };
	long tasks = nq_tasks(&root);
	struct variant *vs = bench_find(v, nv, "serial", 1), *v1 = bench_find(v, nv, "heist", 1);
	struct row *r = bench_row_for("W2", size, "serial", 1);
	row_metric(r, "tasks", (double)tasks, "%ld tasks, %ld solutions", tasks, nq_expected(n));
	if (vs && v1) {
		double per = ((double)v1->median_ns - (double)vs->median_ns) / (double)tasks;
		row_metric(bench_row_for("W2", size, "heist", 1), "overhead_per_task_ns", per,
			   "overhead %.1f ns/task", per);
	}
}

void
w2_nqueens(const struct bench_opts *o)
{
	int sizes[2] = { 12, 13 };
	if (o->quick) {
		sizes[0] = 10;
		sizes[1] = 11;
	}
	if (!bench_selected(o, "W2", "W2"))
		return;
	heist_pool *p1 = NULL, *pn = NULL;
	if (bench_impl_enabled(o, "heist")) {
		p1 = bench_heist_pool(1);
		if (o->threads != 1)
			pn = bench_heist_pool(o->threads);
	}
	for (int i = 0; i < 2; i++)
		one_size(o, sizes[i], p1, pn);
	heist_pool_destroy(p1);
	heist_pool_destroy(pn);
}
