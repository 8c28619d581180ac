/* SPDX-License-Identifier: MIT */
/* w_uts.c - W3 uts: unbalanced tree search on a binomial tree. Each node does ~200 ns of
 * work (64 rounds of mix); the root has 2000 children, any other node 8 (probability
 * 0.124875) or none, so the tree is near-critical: thin, deep (~2000 levels) and
 * unpredictable. Each child is a task; the result is (nodes, sum of h mod 2^64).
 * heist-pin: heist with --threads workers pinned one per core (HEIST_PIN_CORE);
 * heist-worker: worker-passing tasks (HEIST_WORKER_VOID_TASK_1). */
#include "workloads.h"

#include "kernels.h"
#include "peers.h"

#include <inttypes.h>

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

/* The same with worker-passing tasks (HEIST_WORKER_VOID_TASK_1, issue 41). */
static void uts_w(heist_worker *w, struct uts_node *node);
HEIST_WORKER_VOID_TASK_1(uts_w_child, uts_w, struct uts_node *)

static void
uts_w(heist_worker *w, struct uts_node *node)
{
	int n = uts_visit(node);
	if (n == 0)
		return;
	struct uts_node kid[n];
	struct uts_w_child t[n];
	for (int i = 0; i < n; i++) {
		uts_child(&kid[i], node, i);
		uts_w_child_spawn(w, &t[i], &kid[i]);
	}
	for (int i = n - 1; i >= 0; i--) {
		uts_w_child_sync(w, &t[i]);
		uts_add(node, &kid[i]);
	}
}

static int
uts_w_root(void *p)
{
	uts_w(heist_worker_self(), p);
	return 0;
}

static void
answer(struct bench_job *j, struct uts_result r)
{
	j->answer = bench_tree_answer(r.nodes, r.sum);
}

/* The size's p.a is the root seed. */
static void
run_serial(struct bench_job *j)
{
	struct uts_node root = { .seed = j->p.a, .depth = 0 };
	uts(&root);
	answer(j, root.r);
}

static void
run_heist(struct bench_job *j)
{
	struct uts_node root = { .seed = j->p.a, .depth = 0 };
	int err = heist_run(j->pool, uts_task, &root);
	if (err)
		bench_fail("W3 uts: heist_run returned %d", err);
	answer(j, root.r);
}

static void
run_worker(struct bench_job *j)
{
	struct uts_node root = { .seed = j->p.a, .depth = 0 };
	int err = heist_run(j->pool, uts_w_root, &root);
	if (err)
		bench_fail("W3 uts: heist_run returned %d", err);
	answer(j, root.r);
}

static void run_peer(struct bench_job *j) { answer(j, j->peer->uts(j->threads, j->p.a)); }

static const struct bench_impl impls[] = {
	{ "serial", 1, POOL_NONE, .run = run_serial },
	{ "heist", 1, POOL_HEIST, .run = run_heist },
	{ "heist", THREADS, POOL_HEIST, .run = run_heist },
	{ "heist-pin", THREADS, POOL_HEIST_PIN, .run = run_heist },
	{ "heist-worker", 1, POOL_HEIST, .run = run_worker },
	{ "heist-worker", THREADS, POOL_HEIST, .run = run_worker },
	{ "omp", THREADS, POOL_PEER, .run = run_peer },
	{ "tbb", THREADS, POOL_PEER, .run = run_peer },
};

static void
check(const struct bench_job *j)
{
	struct uts_result want = uts_expected(j->p.a);
	bench_check("W3 uts nodes", j->impl, j->threads, j->answer.value, (long long)want.nodes);
	bench_check_sum("W3 uts sum", j, j->answer.sum, want.sum);
}

static void
figures(struct bench_set *s)
{
	struct uts_result want = uts_expected(s->p.a);
	bench_figure_per(s, "ns_per_node", (double)want.nodes, 1, "ns/node");
	row_note(bench_set_row(s, "serial", 1), "%" PRIu64 " nodes", want.nodes);
	bench_pin_note(s);
}

const struct bench_workload w3_uts = {
	.group = "W3", .title = "uts",
	.nsizes = 1, .sizes = { { "W3", { "seed=2", 2, 0 }, { "seed=3", 3, 0 } } },
	.check = check, .figures = figures,
	BENCH_IMPLS(impls),
};
