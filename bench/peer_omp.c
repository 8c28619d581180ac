/* peer_omp.c - the workloads with OpenMP tasks, for comparison (see peers.h). Each
 * computation runs in `#pragma omp parallel num_threads(threads)` + `single`, the one
 * thread that enters making the first task; children are `omp task` with shared result
 * slots and `taskwait`, the same shape as the heist versions. OpenMP's team includes
 * the calling thread, so `threads` counts it. Built only with OpenMP (HEIST_BENCH_OMP). */
#include "peers.h"

#include <omp.h>

/* ---- W1 fib: a task per call above the leaves, no cutoff ------------------------- */

static long
fib(int n)
{
	if (n < 2)
		return n;
	long a, b;
#pragma omp task shared(a) firstprivate(n)
	a = fib(n - 1);
	b = fib(n - 2);
#pragma omp taskwait
	return a + b;
}

long
peer_omp_fib(unsigned threads, int n)
{
	long r = 0;
#pragma omp parallel num_threads(threads) shared(r)
#pragma omp single
	r = fib(n);
	return r;
}

/* ---- W2 nqueens: a task per (row, safe column), the child owns its board copy ---- */

static void
nqueens(struct nq_arg *a)
{
	if (a->rows == a->n) {
		a->count = 1;
		return;
	}
	struct nq_arg kid[NQ_MAX];
	int k = 0;
	for (int col = 0; col < a->n; col++) {
		if (!nq_safe(a->board, a->rows, col))
			continue;
		nq_child(&kid[k], a, col);
		struct nq_arg *c = &kid[k++];
#pragma omp task firstprivate(c)
		nqueens(c);
	}
#pragma omp taskwait
	long count = 0;
	while (k--)
		count += kid[k].count;
	a->count = count;
}

long
peer_omp_nqueens(unsigned threads, int n)
{
	struct nq_arg root = { .n = n, .rows = 0, .count = 0 };
#pragma omp parallel num_threads(threads) shared(root)
#pragma omp single
	nqueens(&root);
	return root.count;
}

/* ---- W3 uts: a task per child ------------------------------------------------------ */

struct uts_node {
	uint64_t seed;
	int depth;
	struct uts_result r;
};

static void
uts(struct uts_node *node)
{
	uint64_t h = uts_work(node->seed);
	int n = uts_children(h, node->depth);
	node->r.nodes = 1;
	node->r.sum = h;
	if (n == 0)
		return;
	struct uts_node kid[n];
	for (int i = 0; i < n; i++) {
		kid[i].seed = uts_child_seed(node->seed, i);
		kid[i].depth = node->depth + 1;
		struct uts_node *c = &kid[i];
#pragma omp task firstprivate(c)
		uts(c);
	}
#pragma omp taskwait
	for (int i = n - 1; i >= 0; i--) {
		node->r.nodes += kid[i].r.nodes;
		node->r.sum += kid[i].r.sum;
	}
}

struct uts_result
peer_omp_uts(unsigned threads, uint64_t seed)
{
	struct uts_node root = { .seed = seed, .depth = 0 };
#pragma omp parallel num_threads(threads) shared(root)
#pragma omp single
	uts(&root);
	return root.r;
}

/* ---- W5 submit storm: one thread makes a task per k; the region's end waits ------- */

void
peer_omp_storm(unsigned threads, double *out, size_t ntasks, unsigned iters)
{
#pragma omp parallel num_threads(threads)
#pragma omp single
	for (size_t k = 0; k < ntasks; k++) {
#pragma omp task firstprivate(k)
		out[k] = w5_body(k, iters);
	}
}
