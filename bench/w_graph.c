/* SPDX-License-Identifier: MIT */
/* w_graph.c - W10 task graphs: steps x width points in the shapes of Task Bench
 * (Slaughter et al., "Task Bench", SC'20), stencil_1d, fft, tree and no_comm, each at
 * width 8 and at 2 x --threads (fft: the power of two at or above it; left out where
 * that is 8 too): eight sizes. Point (t, i) runs once its inputs in step t - 1 are
 * done (kernels.h: w10_inputs) and writes its own 64-byte buffer: the sum of its
 * inputs' first words + t + i, then a spin of `iter` rounds (w10_point, kernels.c, one
 * copy for every row).
 *
 * A run of one variant is a sweep: the same graph at iter 0, then 64, 128, ... up to
 * the size's largest iter, each graph timed on its own (its buffers reset before its
 * clock starts) and checked: the answer is the last step's first words, and every
 * other point's word is checked too (a point that never ran keeps the reset's
 * pattern). The words do not depend on iter, so one serial graph at iter 0, made
 * before any clock, is the reference for all of them. The driver alternates the
 * variants' sweeps as it does any workload's runs; times() takes each graph's median
 * over the repetitions, and a row's time is its graph's at iter 0.
 *
 * Rows: serial (a loop over the points, step by step); heist (heist_submit_after per
 * point with its inputs' futures); heist-then (the way before it: heist_when_all of the
 * inputs, then heist_future_then; one input: then alone; none: heist_submit);
 * heist-graph (a heist_graph of the same points and edges, made once at the row's
 * warm-up and run for every graph: replay); heist-foreach (one heist_for_each per
 * step over its points, grain 1: each step
 * waits for the whole step before it); omp (task depend(in:) on the inputs' buffers,
 * depend(out:) on its own, made by one thread of the team); tbb (flow::graph, a
 * continue_node per point). The heist rows make the graph inside one heist_run, as the
 * fork-join rows enter the pool, so that the thread making the tasks is one of the
 * --threads (as OpenMP's single and oneTBB's arena caller are): a task submits every
 * point step by step and lets go of its futures of step t - 1 once step t holds its
 * own references to them; the main thread, asleep meanwhile as heist_run's caller
 * is, then waits for the points nobody depends on (the last step, and tree's points
 * that feed no point of the next step), from outside the pool (graph_heist says why).
 *
 * Figures: ns/task at iter 0 (the graph's time over its points: what a task costs
 * when it does nothing), and METG(50%), the minimum effective task granularity: the
 * shortest task duration at which a row is still half as efficient as at the largest
 * iter (metg50). Efficiency is Task Bench's: the work (task duration x tasks) over
 * threads x time, the task duration being iter x the time of one spin round, which
 * the serial row gives (its time at the largest iter less that at iter 0, over iter x
 * tasks). Full sizes take minutes, so W10 runs only when --only names it. */
#include "workloads.h"

#include "kernels.h"
#include "peers.h"

#include <inttypes.h>
#include <math.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_ITERS = 16, FIRST_ITER = 64 };

/* The bytes every buffer is reset to before a graph: a point that did not run keeps
 * them, which its right word equals only by a 1 in 2^64 chance. */
#define POISON 0xa5

struct graph_set {
	struct w10_graph g;
	char label[24];			/* "stencil w8": the rows' size column */
	size_t tasks;			/* points in the graph */
	unsigned niters;
	unsigned iters[MAX_ITERS];	/* 0, then FIRST_ITER, doubling up to the largest */
	unsigned nvar, reps;
	uint64_t *ns;			/* [variant][rep][iter]: each graph's time */
	uint64_t *med;			/* [variant][iter]: the medians (times()) */
	uint64_t *ref;			/* [steps x width]: the serial graph's words */
	heist_future **fut;		/* [2][width]: the heist rows' futures, steps t - 1, t */
	heist_future **sinks;		/* [tasks]: the futures nobody depends on */
	size_t nsinks;
	heist_graph *replay;		/* heist-graph's graph, made at its first sweep */
	/* the first point of this run's sweep whose word was wrong */
	bool bad;
	unsigned bad_iter, bad_t, bad_i;
	uint64_t bad_got;
};

static const char *const shape_names[] = { "stencil", "fft", "tree", "no_comm" };

/* ---- the shape and width of a size ------------------------------------------------ */

enum { FIXED_WIDTH = 8 };

/* Sizes 2k and 2k + 1 are shape k (enum w10_shape), the first of width 8, the second
 * of 2 x --threads (for fft the power of two at or above it). */
static unsigned shape_of(const struct bench_set *s) { return s->index / 2; }

static unsigned
width_of(const struct bench_set *s)
{
	if (s->index % 2 == 0)
		return FIXED_WIDTH;
	unsigned w = 2 * s->o->threads;
	if (shape_of(s) == W10_FFT) {
		unsigned p = 1;
		while (p < w)
			p *= 2;
		w = p;
	}
	return w;
}

/* Every variant of a 2 x --threads size is left out when its width is 8 too (--threads
 * 4): the size before it has those rows. */
static bool
distinct(const struct bench_set *s)
{
	return s->index % 2 == 0 || width_of(s) != FIXED_WIDTH;
}

/* ---- one sweep: the graph at every iter, each timed and checked ------------------- */

static void
sweep(struct bench_job *j, void (*graph)(struct bench_job *j, struct graph_set *gs))
{
	struct graph_set *gs = j->in;
	struct w10_graph *g = &gs->g;
	size_t nbuf = (size_t)g->steps * g->width;
	gs->bad = false;
	for (unsigned k = 0; k < gs->niters; k++) {
		g->iter = gs->iters[k];
		memset(g->buf, POISON, nbuf * sizeof *g->buf);
		uint64_t t0 = bench_now_ns();
		graph(j, gs);
		uint64_t ns = bench_now_ns() - t0;
		if (j->rep >= 0) {	/* not the warm-up */
			size_t run = (size_t)j->slot * gs->reps + (size_t)j->rep;
			gs->ns[run * gs->niters + k] = ns;
		}
		for (unsigned t = 0; t < g->steps && !gs->bad; t++)
			for (unsigned i = 0, n = w10_points(g, t); i < n && !gs->bad; i++) {
				size_t p = (size_t)t * g->width + i;
				if (g->buf[p].word == gs->ref[p])
					continue;
				gs->bad = true;
				gs->bad_iter = g->iter;
				gs->bad_t = t;
				gs->bad_i = i;
				gs->bad_got = g->buf[p].word;
			}
	}
}

static void
check(const struct bench_job *j)
{
	const struct graph_set *gs = j->in;
	if (!gs->bad)
		return;
	size_t p = (size_t)gs->bad_t * gs->g.width + gs->bad_i;
	bench_fail("WRONG ANSWER: W10 %s at iter %u, %s with %u threads: point (%u, %u) has "
		   "0x%016" PRIx64 ", the serial graph 0x%016" PRIx64 " (%s)", gs->label,
		   gs->bad_iter, j->impl, j->threads, gs->bad_t, gs->bad_i, gs->bad_got,
		   gs->ref[p], gs->bad_t + 1 == gs->g.steps ? "the answer: the last step" :
		   "a point that ran before its inputs, twice, or not at all");
}

/* ---- serial ----------------------------------------------------------------------- */

static void
graph_serial(struct bench_job *j, struct graph_set *gs)
{
	(void)j;
	const struct w10_graph *g = &gs->g;
	for (unsigned t = 0; t < g->steps; t++)
		for (unsigned i = 0, n = w10_points(g, t); i < n; i++)
			w10_point(g, t, i);
}

static void run_serial(struct bench_job *j) { sweep(j, graph_serial); }

/* ---- heist: dependent tasks, or when_all + then ----------------------------------- */

/* The graph the running point tasks belong to (set before a run, published by its
 * heist_run); a task's argument is (t << 16) | i. */
static const struct w10_graph *active;

static int
point_task(void *arg)
{
	uintptr_t ti = (uintptr_t)arg;
	w10_point(active, (unsigned)(ti >> 16), (unsigned)(ti & 0xffff));
	return 0;
}

enum how { AFTER, WHEN_ALL_THEN };

struct build {
	struct graph_set *gs;
	heist_pool *pool;
	enum how how;
};

/* Submit point (t, i) with the futures of step t - 1 (prev) as its inputs; its future
 * in *out. */
static int
submit_point(const struct build *b, heist_future *const *prev, unsigned t, unsigned i,
	     heist_future **out)
{
	unsigned idx[3];
	heist_future *in[3];
	unsigned n = w10_inputs(&b->gs->g, t, i, idx);
	for (unsigned k = 0; k < n; k++)
		in[k] = prev[idx[k]];
	void *arg = (void *)(((uintptr_t)t << 16) | i);
	if (b->how == AFTER)
		return heist_submit_after(b->pool, in, n, point_task, arg, NULL, out);
	if (n == 0)
		return heist_submit(b->pool, point_task, arg, out);
	if (n == 1)
		return heist_future_then(in[0], point_task, arg, out);
	heist_future *all;
	int err = heist_when_all(b->pool, in, n, &all);
	if (err)
		return err;
	err = heist_future_then(all, point_task, arg, out);
	heist_future_release(all);	/* the continuation holds its own reference */
	return err;
}

/* The graph task: every point, step by step. Step t's tasks hold their own references
 * to their inputs, so once step t is submitted the task lets go of step t - 1's
 * futures, but for those no point depends on, which it leaves in sinks for the main
 * thread to wait for. */
static int
build_graph(void *arg)
{
	const struct build *b = arg;
	struct graph_set *gs = b->gs;
	const struct w10_graph *g = &gs->g;
	gs->nsinks = 0;
	for (unsigned t = 0; t <= g->steps; t++) {
		heist_future **cur = gs->fut + (size_t)(t % 2) * g->width;
		heist_future **prev = gs->fut + (size_t)((t + 1) % 2) * g->width;
		for (unsigned i = 0, n = t < g->steps ? w10_points(g, t) : 0; i < n; i++) {
			int err = submit_point(b, prev, t, i, &cur[i]);
			if (err)
				return err;
		}
		for (unsigned i = 0, n = t > 0 ? w10_points(g, t - 1) : 0; i < n; i++) {
			if (w10_consumed(g, t - 1, i))
				heist_future_release(prev[i]);
			else
				gs->sinks[gs->nsinks++] = prev[i];
		}
	}
	return 0;
}

/* The graph is made on a worker (heist_run), and waited for from the main thread,
 * outside the pool: a worker's heist_future_wait follows what the awaited task waits
 * for (wait.c), and here that is every point before it, a walk this row is not about. */
static void
graph_heist(struct bench_job *j, struct graph_set *gs, enum how how)
{
	struct build b = { gs, j->pool, how };
	active = &gs->g;
	int err = heist_run(j->pool, build_graph, &b);
	if (err)
		bench_fail("W10 %s: %s: making the graph failed: %s", gs->label, j->impl,
			   strerror(err));
	for (size_t k = 0; k < gs->nsinks; k++) {
		int r = heist_future_wait(gs->sinks[k]);
		if (r && !err)
			err = r;
		heist_future_release(gs->sinks[k]);
	}
	if (err)
		bench_fail("W10 %s: %s: a point task returned %d", gs->label, j->impl, err);
}

static void
graph_after(struct bench_job *j, struct graph_set *gs)
{
	graph_heist(j, gs, AFTER);
}

static void
graph_then(struct bench_job *j, struct graph_set *gs)
{
	graph_heist(j, gs, WHEN_ALL_THEN);
}

static void run_after(struct bench_job *j) { sweep(j, graph_after); }
static void run_then(struct bench_job *j) { sweep(j, graph_then); }

/* ---- heist-graph: a heist_graph made once, run for every graph ------------------ */

/* A node per point, an edge per input: made at the row's first sweep (its warm-up),
 * outside every clock, and run as it is for every iter (the points read the iter from
 * the graph they belong to, active). */
static heist_graph *
make_replay(struct graph_set *gs)
{
	const struct w10_graph *g = &gs->g;
	size_t nbuf = (size_t)g->steps * g->width;
	heist_graph_node **node = calloc(nbuf, sizeof *node);
	heist_graph *hg = NULL;
	int err = node ? heist_graph_create(&hg) : ENOMEM;
	for (unsigned t = 0; t < g->steps && !err; t++)
		for (unsigned i = 0, n = w10_points(g, t); i < n && !err; i++) {
			void *arg = (void *)(((uintptr_t)t << 16) | i);
			size_t p = (size_t)t * g->width + i;
			err = heist_graph_add_task(hg, point_task, arg, &node[p]);
			unsigned idx[3];
			for (unsigned k = 0, m = err ? 0 : w10_inputs(g, t, i, idx); k < m && !err; k++)
				err = heist_graph_edge(node[(size_t)(t - 1) * g->width + idx[k]],
						       node[p]);
		}
	free(node);
	if (err)
		bench_fail("W10 %s: heist-graph: making the graph failed: %s", gs->label,
			   strerror(err));
	return hg;
}

/* The run is started and waited for from the main thread, as Taskflow's
 * executor.run(taskflow).wait(). */
static void
graph_replay(struct bench_job *j, struct graph_set *gs)
{
	if (!gs->replay)
		gs->replay = make_replay(gs);
	active = &gs->g;
	heist_future *f;
	int err = heist_graph_run(j->pool, gs->replay, NULL, &f);
	if (!err) {
		err = heist_future_wait(f);
		heist_future_release(f);
	}
	if (err)
		bench_fail("W10 %s: %s: the run returned %s", gs->label, j->impl, strerror(err));
}

static void run_replay(struct bench_job *j) { sweep(j, graph_replay); }

/* ---- heist-foreach: a parallel loop per step --------------------------------------- */

struct step {
	const struct w10_graph *g;
	heist_pool *pool;
	unsigned t;
};

static int
step_body(void *arg, size_t begin, size_t end)
{
	const struct step *s = arg;
	for (size_t i = begin; i < end; i++)
		w10_point(s->g, s->t, (unsigned)i);
	return 0;
}

/* Every step inside one task, so each loop forks in place (as W4's heist row). */
static int
steps_task(void *arg)
{
	struct step s = *(const struct step *)arg;
	for (s.t = 0; s.t < s.g->steps; s.t++) {
		int err = heist_for_each(s.pool, 0, w10_points(s.g, s.t), 1, step_body, &s);
		if (err)
			return err;
	}
	return 0;
}

static void
graph_foreach(struct bench_job *j, struct graph_set *gs)
{
	struct step s = { &gs->g, j->pool, 0 };
	int err = heist_run(j->pool, steps_task, &s);
	if (err)
		bench_fail("W10 %s: %s: heist_for_each returned %d", gs->label, j->impl, err);
}

static void run_foreach(struct bench_job *j) { sweep(j, graph_foreach); }

/* ---- the peers ------------------------------------------------------------------- */

static void
graph_peer(struct bench_job *j, struct graph_set *gs)
{
	j->peer->graph(j->threads, &gs->g);
}

static void run_peer(struct bench_job *j) { sweep(j, graph_peer); }

/* heist, heist-then and heist-graph count their heap allocations over the first timed
 * sweep. */
static const struct bench_impl impls[] = {
	{ "serial", 1, POOL_NONE, .run = run_serial, .when = distinct },
	{ "heist", THREADS, POOL_HEIST, .run = run_after, .count_allocs = true,
	  .when = distinct, .note = "heist_submit_after per point" },
	{ "heist-then", THREADS, POOL_HEIST, .run = run_then, .count_allocs = true,
	  .when = distinct, .note = "when_all + then per point" },
	{ "heist-graph", THREADS, POOL_HEIST, .run = run_replay, .count_allocs = true,
	  .when = distinct, .note = "one heist_graph, made once, run per graph" },
	{ "heist-foreach", THREADS, POOL_HEIST, .run = run_foreach, .when = distinct,
	  .note = "heist_for_each per step, grain 1" },
	{ "omp", THREADS, POOL_PEER, .run = run_peer, .when = distinct,
	  .note = "task depend per point" },
	{ "tbb", THREADS, POOL_PEER, .run = run_peer, .when = distinct,
	  .note = "flow::graph of continue_nodes, made in the timed region" },
};

/* ---- inputs, times and figures ------------------------------------------------------ */

/* The size's p.a is the number of steps, p.b the largest iter; its index gives the
 * shape and the width (shape_of, width_of). */
static void *
setup(struct bench_set *s)
{
	struct graph_set *gs = bench_alloc(s, 1, sizeof *gs);
	struct w10_graph *g = &gs->g;
	g->shape = shape_of(s);
	g->width = width_of(s);
	g->steps = (unsigned)s->p.a;
	if (g->width >= (1u << 16) || g->steps >= (1u << 15))
		bench_fail("W10: width %u or %u steps too large", g->width, g->steps);
	while ((1u << g->fft_bits) < g->width)
		g->fft_bits++;
	gs->iters[gs->niters++] = 0;
	for (uint64_t it = FIRST_ITER; it <= s->p.b && gs->niters < MAX_ITERS; it *= 2)
		gs->iters[gs->niters++] = (unsigned)it;

	size_t nbuf = (size_t)g->steps * g->width;
	unsigned char *raw = bench_alloc(s, nbuf + 1, sizeof *g->buf);
	g->buf = (struct w10_buf *)(raw + (64 - (uintptr_t)raw % 64) % 64);
	for (unsigned t = 0; t < g->steps; t++)
		gs->tasks += w10_points(g, t);
	gs->nvar = s->n;
	gs->reps = s->o->reps;
	gs->ns = bench_alloc(s, (size_t)gs->nvar * gs->reps * gs->niters, sizeof *gs->ns);
	gs->med = bench_alloc(s, (size_t)gs->nvar * gs->niters, sizeof *gs->med);
	gs->ref = bench_alloc(s, nbuf, sizeof *gs->ref);
	gs->fut = bench_alloc(s, 2 * (size_t)g->width, sizeof *gs->fut);
	gs->sinks = bench_alloc(s, gs->tasks, sizeof *gs->sinks);

	/* The reference: the serial graph at iter 0 (the words do not depend on iter). */
	memset(g->buf, POISON, nbuf * sizeof *g->buf);
	g->iter = 0;
	graph_serial(NULL, gs);
	for (size_t p = 0; p < nbuf; p++)
		gs->ref[p] = g->buf[p].word;

	snprintf(gs->label, sizeof gs->label, "%s w%u", shape_names[g->shape], g->width);
	snprintf(s->size, sizeof s->size, "%s", gs->label);
	snprintf(s->detail, sizeof s->detail, " (%u steps, %zu tasks, iter 0..%u)", g->steps,
		 gs->tasks, gs->iters[gs->niters - 1]);
	return gs;
}

/* Each graph's median over the repetitions; a row's time is its graph's at iter 0. */
static void
times(struct bench_set *s)
{
	struct graph_set *gs = s->in;
	for (unsigned v = 0; v < s->n; v++) {
		for (unsigned k = 0; k < gs->niters; k++) {
			uint64_t x[BENCH_MAX_REPS];
			for (unsigned r = 0; r < gs->reps; r++)
				x[r] = gs->ns[((size_t)v * gs->reps + r) * gs->niters + k];
			gs->med[(size_t)v * gs->niters + k] = bench_median(x, gs->reps);
		}
		s->v[v].median_ns = gs->med[(size_t)v * gs->niters];
	}
}

/*
 * METG(50%) of one row from its efficiency at each iter (eff[1..niters), iters > 0):
 * going down from the largest iter, the first grid point whose efficiency is below
 * half the largest iter's; the crossing is interpolated between it and the point
 * above it, linearly in log2 of the task duration (the grid doubles). NAN where the
 * efficiencies say nothing (none positive). If no grid point falls below half, the
 * smallest duration measured is returned with *bound set: the METG is at most that.
 */
static double
metg50(const struct graph_set *gs, const double *eff, double ns_per_iter, bool *bound)
{
	unsigned top = gs->niters - 1;
	*bound = false;
	if (top < 1 || !(eff[top] > 0) || !(ns_per_iter > 0))
		return NAN;
	for (unsigned k = top - 1; k >= 1; k--) {
		double r = eff[k] / eff[top], r_up = eff[k + 1] / eff[top];
		if (r >= 0.5)
			continue;
		double lo = log2(ns_per_iter * gs->iters[k]);
		double hi = log2(ns_per_iter * gs->iters[k + 1]);
		return exp2(lo + (0.5 - r) / (r_up - r) * (hi - lo));
	}
	*bound = true;
	return ns_per_iter * gs->iters[1];
}

static void
figures(struct bench_set *s)
{
	const struct graph_set *gs = s->in;
	unsigned top = gs->niters - 1;
	double tasks = (double)gs->tasks;
	bench_figure_per(s, "ns_per_task", tasks, 1, "ns/task");

	/* One spin round's time, from the serial row: the slope between iter 0 and the
	 * largest iter. */
	struct variant *vs = bench_find(s, "serial", 1);
	double ns_per_iter = NAN;
	if (vs && top > 0) {
		const uint64_t *m = &gs->med[(size_t)vs->job.slot * gs->niters];
		ns_per_iter = ((double)m[top] - (double)m[0]) / (tasks * gs->iters[top]);
		row_metric(vs->row, "ns_per_iter", ns_per_iter, "%.2f ns/iter", ns_per_iter);
		row_note(vs->row, "times: one graph at iter 0");
	}
	for (unsigned v = 0; v < s->n; v++) {
		struct variant *var = &s->v[v];
		if (var == vs)
			continue;
		if (var->counted) {
			double per = (double)var->allocs / (tasks * gs->niters);
			row_metric(var->row, "heap_allocs_per_task", per, "allocs/task %.3f", per);
		}
		if (!vs || top == 0) {
			row_note(var->row, "no METG without the serial row");
			continue;
		}
		const uint64_t *m = &gs->med[(size_t)v * gs->niters];
		double eff[MAX_ITERS] = { 0 };
		for (unsigned k = 1; k <= top; k++)
			eff[k] = ns_per_iter * gs->iters[k] * tasks /
				 ((double)var->job.threads * (double)m[k]);
		row_metric(var->row, "efficiency_top", eff[top], "eff@%u %.2f", gs->iters[top],
			   eff[top]);
		bool bound;
		double metg = metg50(gs, eff, ns_per_iter, &bound);
		if (isnan(metg))
			row_metric(var->row, "metg50_ns", metg, "METG(50%%) -");
		else
			row_metric(var->row, "metg50_ns", metg, "METG(50%%) %s%.2f us",
				   bound ? "<= " : "", metg / 1e3);
	}
}

const struct bench_workload w10_graph = {
	.group = "W10", .title = "graph",
	.nsizes = 8,
	.sizes = {	/* steps, largest iter; shape and width: shape_of, width_of */
		{ "W10", { NULL, 1000, 65536 }, { NULL, 50, 4096 } },	/* stencil_1d */
		{ "W10", { NULL, 1000, 65536 }, { NULL, 50, 4096 } },
		{ "W10", { NULL, 1000, 65536 }, { NULL, 50, 4096 } },	/* fft */
		{ "W10", { NULL, 1000, 65536 }, { NULL, 50, 4096 } },
		{ "W10", { NULL, 1000, 65536 }, { NULL, 50, 4096 } },	/* tree */
		{ "W10", { NULL, 1000, 65536 }, { NULL, 50, 4096 } },
		{ "W10", { NULL, 1000, 65536 }, { NULL, 50, 4096 } },	/* no_comm */
		{ "W10", { NULL, 1000, 65536 }, { NULL, 50, 4096 } },
	},
	.setup = setup, .check = check, .times = times, .figures = figures,
	.only_named = true,
	BENCH_IMPLS(impls),
};
