/* SPDX-License-Identifier: MIT */
/* peer_omp.c - the workloads with OpenMP tasks, for comparison (see peers.h). Each
 * computation runs in `#pragma omp parallel num_threads(threads)` + `single`, the one
 * thread that enters making the first task; children are `omp task` with shared result
 * slots and `taskwait`, the same shape as the heist versions. OpenMP's team includes
 * the calling thread, so `threads` counts it. The loops (W4, W7) are a parallel region
 * in which each thread runs the share `schedule(static)` would give it, as one range:
 * the kernels are called per range, the same compiled code as for heist and serial
 * (kernels.h). W10's graphs are tasks with depend clauses. Built only with OpenMP
 * (HEIST_BENCH_OMP). */
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

static long
omp_fib(unsigned threads, int n)
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
	if (nq_solved(a))
		return;
	struct nq_arg kid[NQ_MAX];
	int k = 0;
	for (int col = nq_next(a, 0); col < a->n; col = nq_next(a, col + 1)) {
		nq_child(&kid[k], a, col);
		struct nq_arg *c = &kid[k++];
#pragma omp task firstprivate(c)
		nqueens(c);
	}
#pragma omp taskwait
	a->count = nq_sum(kid, k);
}

static long
omp_nqueens(unsigned threads, int n)
{
	struct nq_arg root = { .n = n, .rows = 0, .count = 0 };
#pragma omp parallel num_threads(threads) shared(root)
#pragma omp single
	nqueens(&root);
	return root.count;
}

/* ---- W3 uts: a task per child ------------------------------------------------------ */

static void
uts(struct uts_node *node)
{
	int n = uts_visit(node);
	if (n == 0)
		return;
	struct uts_node kid[n];
	for (int i = 0; i < n; i++) {
		uts_child(&kid[i], node, i);
		struct uts_node *c = &kid[i];
#pragma omp task firstprivate(c)
		uts(c);
	}
#pragma omp taskwait
	for (int i = n - 1; i >= 0; i--)
		uts_add(node, &kid[i]);
}

static struct uts_result
omp_uts(unsigned threads, uint64_t seed)
{
	struct uts_node root = { .seed = seed, .depth = 0 };
#pragma omp parallel num_threads(threads) shared(root)
#pragma omp single
	uts(&root);
	return root.r;
}

/* ---- W5 submit storm: one thread makes a task per k; the region's end waits ------- */

static void
omp_storm(unsigned threads, double *out, size_t ntasks, unsigned iters)
{
#pragma omp parallel num_threads(threads)
#pragma omp single
	for (size_t k = 0; k < ntasks; k++) {
#pragma omp task firstprivate(k)
		out[k] = w5_body(k, iters);
	}
}

/* ---- W4 for_each: a `parallel for` per repetition; libgomp keeps the team's threads
 * between regions, so each region pays the fork and the join, not thread creation ---- */

/* Thread t of nt's share of [0, n): what schedule(static) gives it, one range. */
static void
static_share(size_t n, size_t *b, size_t *e)
{
	size_t t = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
	*b = n * t / nt;
	*e = n * (t + 1) / nt;
}

static void
omp_for_each(unsigned threads, double *a, size_t n, unsigned reps)
{
	for (unsigned r = 0; r < reps; r++) {
#pragma omp parallel num_threads(threads)
		{
			size_t b, e;
			static_share(n, &b, &e);
			w4_range(a, b, e);	/* per range, as every row */
		}
	}
}

/* ---- reduce: `reduction(+:)` over a parallel region, each thread its static share -- */

static double
omp_reduce(unsigned threads, const double *a, size_t n, unsigned reps)
{
	double total = 0;
	for (unsigned r = 0; r < reps; r++) {
		double s = 0;
#pragma omp parallel num_threads(threads) reduction(+ : s)
		{
			size_t b, e;
			static_share(n, &b, &e);
			s += w4_sum(a, b, e);
		}
		total += s;
	}
	return total;
}

/* ---- W7 matmul: rows of C split statically over the team ---------------------------- */

static void
omp_matmul(unsigned threads, const double *A, const double *B, double *C, size_t n)
{
#pragma omp parallel num_threads(threads)
	{
		size_t r0, r1;
		static_share(n, &r0, &r1);
		w7_rows(A, B, C, n, r0, r1);
	}
}

/* ---- W8 latency tree: both children are tasks ---------------------------------------- */

static void
tree(struct w8_node *n)
{
	if (!w8_visit(n))
		return;
	struct w8_node kid[2];
	w8_children(kid, n);
	struct w8_node *k0 = &kid[0], *k1 = &kid[1];
#pragma omp task firstprivate(k0)
	tree(k0);
#pragma omp task firstprivate(k1)
	tree(k1);
#pragma omp taskwait
	w8_gather(n, kid);
}

static struct w8_result
omp_tree(unsigned threads, unsigned depth, unsigned payload)
{
	struct w8_node root = w8_root(depth, payload);
#pragma omp parallel num_threads(threads) shared(root)
#pragma omp single
	tree(&root);
	return root.r;
}

/* ---- W10 task graphs: a task per point, depend(in:) on its inputs' buffers and
 * depend(out:) on its own; one thread makes them all in order, as heist's graph
 * task submits them. A depend list cannot vary in length, so there is a pragma per
 * input count (0 to 3), as Task Bench's OpenMP version has. -------------------- */

static void
omp_graph(unsigned threads, const struct w10_graph *g)
{
#pragma omp parallel num_threads(threads)
#pragma omp single
	for (unsigned t = 0; t < g->steps; t++) {
		unsigned n = w10_points(g, t);
		/* where steps t and t - 1 begin in g->buf (step 0 has no inputs, so up is
		 * then never used). Indices into g->buf, not pointers of our own: gcc 12
		 * takes a variable used only in depend clauses for an unused one. */
		size_t row = (size_t)t * g->width, up = t ? row - g->width : 0;
		for (unsigned i = 0; i < n; i++) {
			unsigned in[3] = { 0, 0, 0 };
			switch (w10_inputs(g, t, i, in)) {
			case 0:
#pragma omp task firstprivate(t, i) depend(out : g->buf[row + i])
				w10_point(g, t, i);
				break;
			case 1:
#pragma omp task firstprivate(t, i) depend(in : g->buf[up + in[0]]) \
	depend(out : g->buf[row + i])
				w10_point(g, t, i);
				break;
			case 2:
#pragma omp task firstprivate(t, i) depend(in : g->buf[up + in[0]], g->buf[up + in[1]]) \
	depend(out : g->buf[row + i])
				w10_point(g, t, i);
				break;
			default:
#pragma omp task firstprivate(t, i) \
	depend(in : g->buf[up + in[0]], g->buf[up + in[1]], g->buf[up + in[2]]) \
	depend(out : g->buf[row + i])
				w10_point(g, t, i);
				break;
			}
		}
	}
}

const struct peer peer_omp = {
	.impl = "omp",
	.fib = omp_fib,
	.nqueens = omp_nqueens,
	.uts = omp_uts,
	.for_each = omp_for_each,
	.reduce = omp_reduce,
	.storm = omp_storm,
	.round_trip = NULL,	/* no way for an outside thread to hand a running team a task */
	.matmul = omp_matmul,
	.tree = omp_tree,
	.graph = omp_graph,
};
