/* SPDX-License-Identifier: MIT */
/* w_reduce.c - reduce: the sum of W4's array (a[i] = i), reps times, one parallel
 * reduction each, every implementation summing its ranges with the one w4_sum
 * (kernels.c). serial: one w4_sum over the array; heist: heist_reduce, all the
 * repetitions inside one heist_run (the caller is a worker); heist-det:
 * heist_reduce_deterministic the same way; heist-outside: heist_reduce from the main
 * thread per repetition; OpenMP: `reduction(+:)` over a parallel region, each thread
 * its static share; oneTBB: parallel_reduce on a blocked_range, auto partitioner,
 * inside one arena.execute. Not one of WORKLOADS.md's: issue 18's reduce row. The
 * answer is exact in any association (integers below 2^53), so every row is checked
 * against reps * n(n-1)/2. */
#include "workloads.h"

#include "kernels.h"
#include "peers.h"

struct red {
	size_t n;
	unsigned reps;
	double *a;
	double total;	/* the run's answer: the sum of its sums */
};

static void
reset(struct bench_job *j)
{
	struct red *r = j->in;
	r->total = -1;
}

static void
check(const struct bench_job *j)
{
	const struct red *r = j->in;
	double want = (double)r->reps * ((double)r->n * (double)(r->n - 1) / 2);
	bench_check("reduce sum", j->impl, j->threads, (long long)r->total, (long long)want);
}

static void
run_serial(struct bench_job *j)
{
	struct red *r = j->in;
	double total = 0;
	for (unsigned k = 0; k < r->reps; k++)
		total += w4_sum(r->a, 0, r->n);
	r->total = total;
}

static int
sum_body(void *arg, void *acc, size_t begin, size_t end)
{
	*(double *)acc += w4_sum(arg, begin, end);
	return 0;
}

static void
add(void *arg, void *into, const void *from)
{
	(void)arg;
	*(double *)into += *(const double *)from;
}

typedef int (*reduce_fn)(heist_pool *, size_t, size_t, size_t, void *, size_t, const void *,
			 heist_reduce_fn, heist_combine_fn, void *);

struct reps {
	struct bench_job *j;
	reduce_fn reduce;
};

static int
reductions(struct bench_job *j, reduce_fn reduce)
{
	struct red *r = j->in;
	double total = 0;
	for (unsigned k = 0; k < r->reps; k++) {
		double s;
		int err = reduce(j->pool, 0, r->n, 0, &s, sizeof s, NULL, sum_body, add, r->a);
		if (err)
			return err;
		total += s;
	}
	r->total = total;
	return 0;
}

static int
inside_task(void *arg)
{
	struct reps *p = arg;
	return reductions(p->j, p->reduce);
}

static void
enter(struct bench_job *j, reduce_fn reduce)
{
	struct reps p = {j, reduce};
	int err = heist_run(j->pool, inside_task, &p);
	if (err)
		bench_fail("reduce: heist_run returned %d", err);
}

static void run_heist(struct bench_job *j) { enter(j, heist_reduce); }
static void run_heist_det(struct bench_job *j) { enter(j, heist_reduce_deterministic); }

static void
run_heist_outside(struct bench_job *j)
{
	int err = reductions(j, heist_reduce);
	if (err)
		bench_fail("reduce: heist_reduce from outside returned %d", err);
}

static void
run_peer(struct bench_job *j)
{
	struct red *r = j->in;
	r->total = j->peer->reduce(j->threads, r->a, r->n, r->reps);
}

static const struct bench_impl impls[] = {
	{ "serial", 1, POOL_NONE, .run = run_serial },
	{ "heist", THREADS, POOL_HEIST, .run = run_heist, .count_allocs = true,
	  .note = "heist_reduce, reps in one heist_run" },
	{ "heist-det", THREADS, POOL_HEIST, .run = run_heist_det,
	  .note = "heist_reduce_deterministic, reps in one heist_run" },
	{ "heist-outside", THREADS, POOL_HEIST, .run = run_heist_outside,
	  .note = "heist_reduce from the main thread per rep" },
	{ "heist-pin", THREADS, POOL_HEIST_PIN, .run = run_heist_outside },
	{ "omp", THREADS, POOL_PEER, .run = run_peer,
	  .note = "reduction(+:) over a parallel region, static shares" },
	{ "tbb", THREADS, POOL_PEER, .run = run_peer,
	  .note = "parallel_reduce, auto partitioner; reps in one arena.execute" },
};

static void *
setup(struct bench_set *s)
{
	struct red *r = bench_alloc(s, 1, sizeof *r);
	r->n = (size_t)s->p.a;
	r->reps = (unsigned)s->p.b;
	r->a = bench_alloc(s, r->n, sizeof *r->a);
	for (size_t i = 0; i < r->n; i++)
		r->a[i] = (double)i;
	return r;
}

static void
figures(struct bench_set *s)
{
	const struct red *r = s->in;
	unsigned N = s->o->threads;
	bench_figure_rate(s, "items_per_s", (double)r->n * (double)r->reps, 0, "items");
	struct variant *vs = bench_find(s, "serial", 1), *vh = bench_find(s, "heist", N);
	for (unsigned i = 0; vs && i < s->n; i++) {
		if (&s->v[i] == vs)
			continue;
		double sp = (double)vs->median_ns / (double)s->v[i].median_ns;
		row_metric(s->v[i].row, "speedup", sp, "x%.2f vs serial", sp);
	}
	struct variant *vd = bench_find(s, "heist-det", N), *vo = bench_find(s, "omp", N);
	if (vh && vd) {
		double x = (double)vd->median_ns / (double)vh->median_ns;
		row_metric(vd->row, "ratio_to_plain", x, "t/plain %.2f (target <= 1.10: %s)", x,
			   x <= 1.10 ? "met" : "MISSED");
	}
	if (vh && vo) {
		double x = (double)vh->median_ns / (double)vo->median_ns;
		row_metric(vh->row, "ratio_to_omp", x, "t/omp %.2f (target <= 1.00: %s)", x,
			   x <= 1.00 ? "met" : "MISSED");
	}
	bench_pin_note(s);
}

const struct bench_workload w_reduce = {
	.group = "reduce", .title = "sum of W4's array",
	.nsizes = 2,
	.sizes = {	/* array length, reductions */
		{ "reduce", { "10k x 10k", 10000, 10000 }, { "10k x 1k", 10000, 1000 } },
		{ "reduce", { "10M x 10", 10000000, 10 }, { "1M x 3", 1000000, 3 } },
	},
	.setup = setup, .reset = reset, .check = check, .figures = figures,
	BENCH_IMPLS(impls),
};
