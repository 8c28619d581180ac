/* SPDX-License-Identifier: MIT */
/* w_matmul.c - W7 matmul: C = A x B for square double matrices, the naive i-k-j loop
 * (w7_rows in kernels.h), parallel over the rows of C: coarse data parallelism. heist
 * runs heist_for_each over the rows with the automatic grain, called from the main
 * thread per multiply; OpenMP a `parallel for` over the rows; oneTBB a parallel_for
 * over a blocked_range of rows in its arena. Inputs are built before any clock; C must
 * equal the serial C bit for bit. Small sizes run several multiplies per timed run
 * (each one a parallel loop of its own) so that a run lasts a few ms; the figure is
 * the time per multiply. */
#include "workloads.h"

#include "kernels.h"
#include "peers.h"

#include <stdio.h>
#include <string.h>

struct mm {
	size_t n;
	unsigned mults;		/* multiplies per timed run */
	double *A, *B, *C, *ref;
};

static void
check(const struct bench_job *j)
{
	const struct mm *m = j->in;
	char what[64];
	snprintf(what, sizeof(what), "W7 matmul n=%zu", m->n);
	bench_check_array(what, j, m->C, m->ref, m->n * m->n,
			  "C in row-major order: a row not computed, or its write not visible");
}

/* Poison C, so that a row nobody computed cannot pass for the previous run's. */
static void
reset(struct bench_job *j)
{
	struct mm *m = j->in;
	memset(m->C, 0xff, m->n * m->n * sizeof m->C[0]);
}

static void
run_serial(struct bench_job *j)
{
	struct mm *m = j->in;
	for (unsigned k = 0; k < m->mults; k++)
		w7_rows(m->A, m->B, m->C, m->n, 0, m->n);
}

static int
rows_body(void *arg, size_t begin, size_t end)
{
	struct mm *m = arg;
	w7_rows(m->A, m->B, m->C, m->n, begin, end);
	return 0;
}

static void
run_heist(struct bench_job *j)
{
	struct mm *m = j->in;
	for (unsigned k = 0; k < m->mults; k++) {
		int err = heist_for_each(j->pool, 0, m->n, 0, rows_body, m);
		if (err)
			bench_fail("W7: heist_for_each returned %d", err);
	}
}

static void
run_peer(struct bench_job *j)
{
	struct mm *m = j->in;
	for (unsigned k = 0; k < m->mults; k++)
		j->peer->matmul(j->threads, m->A, m->B, m->C, m->n);
}

static const struct bench_impl impls[] = {
	{ "serial", 1, POOL_NONE, .run = run_serial },
	{ "heist", THREADS, POOL_HEIST, .run = run_heist,
	  .note = "for_each over rows from the main thread, auto grain" },
	{ "heist-pin", THREADS, POOL_HEIST_PIN, .run = run_heist },
	{ "omp", THREADS, POOL_PEER, .run = run_peer },
	{ "tbb", THREADS, POOL_PEER, .run = run_peer },
};

/* The size's p.a is n. */
static void *
setup(struct bench_set *s)
{
	struct mm *m = bench_alloc(s, 1, sizeof *m);
	size_t n = (size_t)s->p.a, nn = n * n;
	m->n = n;
	/* About 2^25 multiply-adds per timed run: 16 multiplies at n=128, 2 at 256. */
	size_t work = n * n * n;
	m->mults = work >= ((size_t)1 << 25) ? 1 : (unsigned)(((size_t)1 << 25) / work);
	snprintf(s->detail, sizeof s->detail, " (%u per run)", m->mults);

	m->A = bench_alloc(s, nn, sizeof *m->A);
	m->B = bench_alloc(s, nn, sizeof *m->B);
	m->C = bench_alloc(s, nn, sizeof *m->C);
	m->ref = bench_alloc(s, nn, sizeof *m->ref);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			m->A[i * n + j] = (double)((i * 7 + j * 3) % 11) / 10.0;
			m->B[i * n + j] = (double)((i * 5 + j * 2) % 13) / 10.0;
		}
	w7_rows(m->A, m->B, m->ref, n, 0, n);
	return m;
}

/* Rows show the time per multiply. */
static void
times(struct bench_set *s)
{
	const struct mm *m = s->in;
	for (unsigned i = 0; i < s->n; i++)
		s->v[i].median_ns /= m->mults;
}

static void
figures(struct bench_set *s)
{
	const struct mm *m = s->in;
	double work = (double)m->n * (double)m->n * (double)m->n;
	bench_figure_per(s, "ms_per_multiply", 1e6, 3, "ms/multiply");
	double best_peer = 0;
	const char *best_name = NULL;
	for (unsigned i = 0; i < s->n; i++) {
		const struct variant *v = &s->v[i];
		double gflops = 2.0 * work / (double)v->median_ns;
		row_metric(v->row, "gflops", gflops, "%.2f GFLOP/s", gflops);
		if (v->job.kind == POOL_PEER && (!best_name || (double)v->median_ns < best_peer)) {
			best_peer = (double)v->median_ns;
			best_name = v->job.impl;
		}
	}
	struct variant *vh = bench_find(s, "heist", s->o->threads);
	if (vh && best_name) {
		double x = (double)vh->median_ns / best_peer;
		row_metric(vh->row, "ratio_to_best_peer", x, "t/%s %.2f (target <= 1.00: %s)",
			   best_name, x, x <= 1.0 ? "met" : "MISSED");
	}
	bench_pin_note(s);
}

const struct bench_workload w7_matmul = {
	.group = "W7", .title = "matmul",
	.nsizes = 2,
	.sizes = {
		{ "W7", { "n=256", 256, 0 }, { "n=128", 128, 0 } },
		{ "W7", { "n=512", 512, 0 }, { "n=256", 256, 0 } },
	},
	.setup = setup, .reset = reset, .check = check, .times = times, .figures = figures,
	BENCH_IMPLS(impls),
};
