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
#include <stdlib.h>
#include <string.h>

struct mm {
	size_t n;
	unsigned mults;		/* multiplies per timed run */
	double *A, *B, *C, *ref;
	heist_pool *pool;
	unsigned threads;
};

static void
check(const struct mm *m, const char *impl, unsigned threads)
{
	size_t nn = m->n * m->n;
	if (memcmp(m->C, m->ref, nn * sizeof m->C[0]) == 0)
		return;
	for (size_t i = 0; i < nn; i++)
		if (memcmp(&m->C[i], &m->ref[i], sizeof m->C[i]) != 0)
			bench_fail("WRONG ANSWER: W7 matmul n=%zu, %s with %u threads: "
				   "C[%zu][%zu] = %.17g, expected %.17g",
				   m->n, impl, threads, i / m->n, i % m->n, m->C[i], m->ref[i]);
}

/* Poison C, so that a row nobody computed cannot pass for the previous run's. */
static void
reset(struct mm *m)
{
	memset(m->C, 0xff, m->n * m->n * sizeof m->C[0]);
}

static uint64_t
run_serial(void *ctx, int rep)
{
	struct mm *m = ctx;
	(void)rep;
	reset(m);
	uint64_t t0 = bench_now_ns();
	for (unsigned k = 0; k < m->mults; k++)
		w7_rows(m->A, m->B, m->C, m->n, 0, m->n);
	uint64_t ns = bench_now_ns() - t0;
	check(m, "serial", 1);
	return ns;
}

static int
rows_body(void *arg, size_t begin, size_t end)
{
	struct mm *m = arg;
	w7_rows(m->A, m->B, m->C, m->n, begin, end);
	return 0;
}

static uint64_t
run_heist(void *ctx, int rep)
{
	struct mm *m = ctx;
	(void)rep;
	reset(m);
	uint64_t t0 = bench_now_ns();
	for (unsigned k = 0; k < m->mults; k++) {
		int err = heist_for_each(m->pool, 0, m->n, 0, rows_body, m);
		if (err)
			bench_fail("W7: heist_for_each returned %d", err);
	}
	uint64_t ns = bench_now_ns() - t0;
	check(m, "heist", m->threads);
	return ns;
}

#ifdef HEIST_BENCH_OMP
static uint64_t
run_omp(void *ctx, int rep)
{
	struct mm *m = ctx;
	(void)rep;
	reset(m);
	uint64_t t0 = bench_now_ns();
	for (unsigned k = 0; k < m->mults; k++)
		peer_omp_matmul(m->threads, m->A, m->B, m->C, m->n);
	uint64_t ns = bench_now_ns() - t0;
	check(m, "omp", m->threads);
	return ns;
}
#endif

#ifdef HEIST_BENCH_TBB
static uint64_t
run_tbb(void *ctx, int rep)
{
	struct mm *m = ctx;
	(void)rep;
	reset(m);
	uint64_t t0 = bench_now_ns();
	for (unsigned k = 0; k < m->mults; k++)
		peer_tbb_matmul(m->A, m->B, m->C, m->n);
	uint64_t ns = bench_now_ns() - t0;
	check(m, "tbb", m->threads);
	return ns;
}
#endif

static void
one_size(const struct bench_opts *o, heist_pool *pool, size_t n)
{
	unsigned N = o->threads;
	char size[24];
	snprintf(size, sizeof size, "n=%zu", n);
	/* About 2^25 multiply-adds per timed run: 16 multiplies at n=128, 2 at 256. */
	size_t work = n * n * n;
	unsigned mults = work >= ((size_t)1 << 25) ? 1 : (unsigned)(((size_t)1 << 25) / work);
	bench_progress("W7 matmul %s (%u per run):", size, mults);

	struct mm m = { .n = n, .mults = mults, .pool = pool, .threads = N };
	size_t nn = n * n;
	m.A = malloc(nn * sizeof *m.A);
	m.B = malloc(nn * sizeof *m.B);
	m.C = malloc(nn * sizeof *m.C);
	m.ref = malloc(nn * sizeof *m.ref);
	if (!m.A || !m.B || !m.C || !m.ref)
		bench_fail("W7: out of memory");
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			m.A[i * n + j] = (double)((i * 7 + j * 3) % 11) / 10.0;
			m.B[i * n + j] = (double)((i * 5 + j * 2) % 13) / 10.0;
		}
	w7_rows(m.A, m.B, m.ref, n, 0, n);

	struct mm serial = m;
	serial.threads = 1;
	struct variant v[5];
	unsigned nv = 0;
	bench_add(o, v, &nv, "serial", 1, run_serial, &serial);
	if (pool)
		bench_add(o, v, &nv, "heist", N, run_heist, &m);
#ifdef HEIST_BENCH_OMP
	bench_add(o, v, &nv, "omp", N, run_omp, &m);
#endif
#ifdef HEIST_BENCH_TBB
	bench_add(o, v, &nv, "tbb", N, run_tbb, &m);
#endif
	bench_measure(o, v, nv);
	/* Rows show the time per multiply. */
	for (unsigned i = 0; i < nv; i++)
		v[i].median_ns /= mults;
	bench_rows_from("W7", size, v, nv);

	double best_peer = 0;
	const char *best_name = NULL;
	for (unsigned i = 0; i < nv; i++) {
		struct row *r = bench_row_for("W7", size, v[i].impl, v[i].threads);
		double ms = (double)v[i].median_ns / 1e6;
		row_metric(r, "ms_per_multiply", ms, "%.3f ms/multiply", ms);
		double gflops = 2.0 * (double)work / (double)v[i].median_ns;
		row_metric(r, "gflops", gflops, "%.2f GFLOP/s", gflops);
		bool peer = strcmp(v[i].impl, "omp") == 0 || strcmp(v[i].impl, "tbb") == 0;
		if (peer && (!best_name || (double)v[i].median_ns < best_peer)) {
			best_peer = (double)v[i].median_ns;
			best_name = v[i].impl;
		}
	}
	struct variant *vh = bench_find(v, nv, "heist", N);
	if (vh && best_name) {
		double x = (double)vh->median_ns / best_peer;
		row_metric(bench_row_for("W7", size, "heist", N), "ratio_to_best_peer", x,
			   "t/%s %.2f (target <= 1.00: %s)", best_name, x, x <= 1.0 ? "met" : "MISSED");
	}
	row_note(bench_row_for("W7", size, "heist", N), "for_each over rows, auto grain");
	free(m.A);
	free(m.B);
	free(m.C);
	free(m.ref);
}

void
w7_matmul(const struct bench_opts *o)
{
	if (!bench_selected(o, "W7", "W7"))
		return;
	heist_pool *pool = bench_impl_enabled(o, "heist") ? bench_heist_pool(o->threads) : NULL;
	one_size(o, pool, o->quick ? 128 : 256);
	one_size(o, pool, o->quick ? 256 : 512);
	heist_pool_destroy(pool);
}
