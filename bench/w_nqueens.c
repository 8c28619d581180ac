/* SPDX-License-Identifier: MIT */
/* w_nqueens.c - W2 nqueens, BOTS style: irregular fork-join with small copies. A task
 * per (row, safe column) pair, no cutoff; each child owns a copy of the board prefix
 * (struct nq_arg in the parent's frame); the parent sums its children's counts. The
 * serial version is the same recursion with plain calls, copies included; heist-worker
 * the same with worker-passing tasks (HEIST_WORKER_VOID_TASK_1). */
#include "workloads.h"

#include "kernels.h"
#include "peers.h"

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

/* The same with worker-passing tasks (HEIST_WORKER_VOID_TASK_1): each child gets the
 * worker that runs it, and its sync calls nqueens_w directly (issue 41). */
static void nqueens_w(heist_worker *w, struct nq_arg *a);
HEIST_WORKER_VOID_TASK_1(nq_w_child, nqueens_w, struct nq_arg *)

static void
nqueens_w(heist_worker *w, struct nq_arg *a)
{
	if (nq_solved(a))
		return;
	struct nq_arg kid[NQ_MAX];
	struct nq_w_child t[NQ_MAX];
	int k = 0;
	for (int col = nq_next(a, 0); col < a->n; col = nq_next(a, col + 1)) {
		nq_child(&kid[k], a, col);
		nq_w_child_spawn(w, &t[k], &kid[k]);
		k++;
	}
	long count = 0;
	while (k--) {
		nq_w_child_sync(w, &t[k]);
		count += kid[k].count;
	}
	a->count = count;
}

static int
nqueens_w_root(void *p)
{
	nqueens_w(heist_worker_self(), p);
	return 0;
}

/* The size's p.a is n. */
static void
run_serial(struct bench_job *j)
{
	struct nq_arg root = { .n = (int)j->p.a };
	nqueens(&root);
	j->answer.value = root.count;
}

static void
run_heist(struct bench_job *j)
{
	struct nq_arg root = { .n = (int)j->p.a };
	int err = heist_run(j->pool, nqueens_task, &root);
	if (err)
		bench_fail("W2 nqueens: heist_run returned %d", err);
	j->answer.value = root.count;
}

static void
run_worker(struct bench_job *j)
{
	struct nq_arg root = { .n = (int)j->p.a };
	int err = heist_run(j->pool, nqueens_w_root, &root);
	if (err)
		bench_fail("W2 nqueens: heist_run returned %d", err);
	j->answer.value = root.count;
}

static void
run_peer(struct bench_job *j)
{
	j->answer.value = j->peer->nqueens(j->threads, (int)j->p.a);
}

static const struct bench_impl impls[] = {
	{ "serial", 1, POOL_NONE, .run = run_serial },
	{ "heist", 1, POOL_HEIST, .run = run_heist },
	{ "heist", THREADS, POOL_HEIST, .run = run_heist },
	{ "heist-worker", 1, POOL_HEIST, .run = run_worker },
	{ "heist-worker", THREADS, POOL_HEIST, .run = run_worker },
	{ "omp", THREADS, POOL_PEER, .run = run_peer },
	{ "tbb", THREADS, POOL_PEER, .run = run_peer },
};

static void
check(const struct bench_job *j)
{
	bench_check("W2 nqueens", j->impl, j->threads, j->answer.value, nq_expected((int)j->p.a));
}

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
figures(struct bench_set *s)
{
	int n = (int)s->p.a;
	struct nq_arg root = { .n = n };
	long tasks = nq_tasks(&root);
	struct variant *vs = bench_find(s, "serial", 1), *v1 = bench_find(s, "heist", 1);
	row_metric(bench_set_row(s, "serial", 1), "tasks", (double)tasks,
		   "%ld tasks, %ld solutions", tasks, nq_expected(n));
	if (vs && v1) {
		double per = ((double)v1->median_ns - (double)vs->median_ns) / (double)tasks;
		row_metric(v1->row, "overhead_per_task_ns", per, "overhead %.1f ns/task", per);
	}
}

const struct bench_workload w2_nqueens = {
	.group = "W2", .title = "nqueens",
	.nsizes = 2,
	.sizes = {
		{ "W2", { "n=12", 12, 0 }, { "n=10", 10, 0 } },
		{ "W2", { "n=13", 13, 0 }, { "n=11", 11, 0 } },
	},
	.check = check, .figures = figures,
	BENCH_IMPLS(impls),
};
