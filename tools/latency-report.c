/* SPDX-License-Identifier: MIT */
/* latency-report.c - heist-latency's report: what it reads from the profiler once the
 * run is over (collect), and how it prints it: the table, JSON (--json) and the
 * HdrHistogram percentile distributions (--hgrm). The library measures; this file
 * reads heist/profile.h's reports, and sorts the kept samples itself only for what
 * the library does not split (a path's or a repeat's full distribution). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include "latency.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
	STDDEV_GRID = 4096,	/* quantiles integrated for a standard deviation estimate */
};

const char *const path_names[HEIST_PATHS] = {"inline", "own", "stolen", "injector",
					     "helping", "guest"};
static const char *const path_help[HEIST_PATHS] = {
	"synced by its parent, or claimed by its waiter",
	"popped from the runner's own deque",
	"stolen by an idle worker",
	"taken from the injector",
	"run by a thread inside a wait",
	"run by the guest slot (an outside heist_for_each)",
};

/* ---------------------------------------------------------------------------------- */
/* Sorted latencies                                                                   */

void
dist_add(struct dist *d, uint64_t v)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 1024;
		uint64_t *p = realloc(d->v, cap * sizeof(*p));
		if (!p)
			die_err("realloc", ENOMEM);
		d->v = p;
		d->cap = cap;
	}
	d->v[d->n++] = v;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

void
dist_sort(struct dist *d)
{
	if (d->n)
		qsort(d->v, d->n, sizeof(*d->v), cmp_u64);
}

/* The nearest rank profile.c uses: ceil(q * count), at least 1. */
static uint64_t
rank_of(double q, uint64_t count)
{
	double r = ceil(q * (double)count);
	return r < 1 ? 1 : (uint64_t)r;
}

uint64_t
dist_at(const struct dist *d, double q)
{
	if (!d->n)
		return 0;
	uint64_t k = rank_of(q, d->n);
	return d->v[(k > d->n ? d->n : k) - 1];
}

double
dist_mean(const struct dist *d)
{
	long double s = 0;
	for (size_t i = 0; i < d->n; i++)
		s += d->v[i];
	return d->n ? (double)(s / d->n) : 0;
}

double
dist_stddev(const struct dist *d)
{
	double m = dist_mean(d);
	long double s = 0;
	for (size_t i = 0; i < d->n; i++)
		s += ((long double)d->v[i] - m) * ((long double)d->v[i] - m);
	return d->n ? sqrt((double)(s / d->n)) : 0;
}

void
dist_free(struct dist *d)
{
	free(d->v);
	*d = (struct dist){0};
}

/* ---------------------------------------------------------------------------------- */
/* Collecting                                                                         */

struct result {
	struct heist_latency_report rep;
	struct heist_latency_report path[HEIST_PATHS];	/* by dispatch path */
	struct heist_stats stats;	/* the recorded repeats' (the warm-up's taken off) */
	unsigned threads;		/* heist_pool_threads */
	struct heist_worker_stats *thread;	/* the same, thread by thread */
	struct heist_placement *place;	/* the workers' */
	double stddev_ns[2];	/* dispatch, end-to-end */
	bool stddev_exact;
	/* JSON's and the .hgrm files' percentile points, at HdrHistogram's ticks */
	size_t nticks;
	double ticks[MAX_TICKS];
	uint64_t at[2][MAX_TICKS];
	/* From the kept samples, in cycles: dispatch by path, steal latency, and
	 * dispatch and end-to-end repeat by repeat. */
	struct dist path_dispatch[HEIST_PATHS], steal;
	struct dist *repeat[2];
	uint64_t nrepeat;		/* entries of repeat[k]: max(repeats_done, 1) */
};

const struct heist_latency_report *
result_report(const struct result *res)
{
	return &res->rep;
}

const struct heist_stats *
result_stats(const struct result *res)
{
	return &res->stats;
}

/* Every task was counted in the statistics before it started, and each recorded its
 * sample before its job finished; once the pool is idle, the profile is complete. */
static void
settle(const struct run *r, struct result *res)
{
	int err;
	if ((err = heist_pool_wait_idle(r->pool)))
		die_err("heist_pool_wait_idle", err);
	if ((err = heist_pool_stats(r->pool, &res->stats)))
		die_err("heist_pool_stats", err);
	if ((err = heist_profile_report(r->pool, &res->rep)))
		die_err("heist_profile_report", err);
	const struct heist_stats *b = &r->base;
	struct heist_stats *s = &res->stats;
	s->executed -= b->executed;
	s->spawned -= b->spawned;
	s->stolen -= b->stolen;
	s->steal_attempts -= b->steal_attempts;
	s->injector_pops -= b->injector_pops;
	s->sleeps -= b->sleeps;
	s->wakes -= b->wakes;
	s->spares_started -= b->spares_started;
	s->parks -= b->parks;
}

static void
collect_threads(const struct run *r, struct result *res)
{
	int err;
	res->threads = heist_pool_threads(r->pool);
	res->thread = calloc(res->threads, sizeof(*res->thread));
	res->place = calloc(res->stats.workers, sizeof(*res->place));
	if (!res->thread || !res->place)
		die_err("calloc", ENOMEM);
	for (unsigned i = 0; i < res->threads; i++) {
		struct heist_worker_stats *t = &res->thread[i];
		if ((err = heist_pool_worker_stats(r->pool, i, t)))
			die_err("heist_pool_worker_stats", err);
		const struct heist_worker_stats *b = &r->base_thread[i];
		t->executed -= b->executed;
		t->spawned -= b->spawned;
		t->stolen -= b->stolen;
		t->steal_attempts -= b->steal_attempts;
		t->injector_pops -= b->injector_pops;
		t->sleeps -= b->sleeps;
		t->wakes -= b->wakes;
	}
	for (unsigned i = 0; i < res->stats.workers; i++)
		if ((err = heist_pool_placement(r->pool, i, &res->place[i], NULL, NULL, 0)))
			die_err("heist_pool_placement", err);
}

static uint64_t
since(uint64_t from, uint64_t to)
{
	return to > from ? to - from : 0;	/* the library clamps skew the same way */
}

struct sorting {
	struct result *res;
	const struct run *r;
};

/* The recorded repeat a sample belongs to: the last whose mark is at or before its
 * creation. */
static uint64_t
repeat_of(const struct run *r, uint64_t created)
{
	uint64_t lo = 0, hi = r->repeats_done;	/* marks [0, repeats_done] */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (r->repeat_mark[mid] <= created)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static void
sort_sample(void *ctx, const struct heist_profile_sample *s)
{
	struct sorting *c = ctx;
	uint64_t d = since(s->created, s->started), e = since(s->created, s->ended);
	if (s->path < HEIST_PATHS)
		dist_add(&c->res->path_dispatch[s->path], d);
	if (s->published)
		dist_add(&c->res->steal, since(s->published, s->started));
	if (c->r->repeats_done) {
		uint64_t k = repeat_of(c->r, s->created);
		dist_add(&c->res->repeat[0][k], d);
		dist_add(&c->res->repeat[1][k], e);
	}
}

static void
collect_sorted(const struct run *r, struct result *res)
{
	uint64_t n = res->nrepeat = r->repeats_done ? r->repeats_done : 1;
	for (int k = 0; k < 2; k++)
		if (!(res->repeat[k] = calloc(n, sizeof(struct dist))))
			die_err("calloc", ENOMEM);
	struct sorting c = {res, r};
	int err = heist_profile_samples(r->pool, sort_sample, &c);
	if (err)
		die_err("heist_profile_samples", err);
	for (int k = 0; k < HEIST_PATHS; k++)
		dist_sort(&res->path_dispatch[k]);
	dist_sort(&res->steal);
	for (uint64_t i = 0; i < n; i++)
		for (int k = 0; k < 2; k++)
			dist_sort(&res->repeat[k][i]);
}

/* HdrHistogram's percentile ticks: TICKS_PER_HALF equal steps in each half of the
 * remaining distance to 100% (0, 10, .., 40, 50, 55, .., 70, 75, 77.5, ..), up to the
 * first tick whose rank is the last sample, then 100% itself. */
static size_t
make_ticks(uint64_t count, double *q)
{
	size_t n = 0;
	for (int h = 0; h <= MAX_HALVINGS; h++) {
		double base = 1.0 - ldexp(1.0, -h), step = ldexp(1.0, -(h + 1)) / TICKS_PER_HALF;
		for (int j = 0; j < TICKS_PER_HALF; j++) {
			double p = base + j * step;
			if (p >= 1.0)	/* beyond a double's resolution */
				goto last;
			q[n++] = p;
			if (rank_of(p, count) >= count)
				goto last;
		}
	}
last:
	q[n++] = 1.0;
	return n;
}

struct moments {
	long double sum2[2];
	double mean[2];
	uint64_t n;
};

static void
add_moments(void *ctx, const struct heist_profile_sample *s)
{
	struct moments *m = ctx;
	long double d = (long double)since(s->created, s->started) - m->mean[0];
	long double e = (long double)since(s->created, s->ended) - m->mean[1];
	m->sum2[0] += d * d;
	m->sum2[1] += e * e;
	m->n++;
}

/* Standard deviation (the .hgrm footer): from every sample when all were kept, else
 * by integrating the quantile function on a fine grid. */
static void
collect_stddev(heist_pool *pool, struct result *res)
{
	const struct heist_latency_report *rep = &res->rep;
	double per_ns = rep->clock.cycles_per_ns;
	int err;
	res->stddev_exact = rep->exact;
	if (!rep->end_to_end.count)
		return;
	if (rep->exact) {
		struct moments m = {.mean = {rep->dispatch.mean, rep->end_to_end.mean}};
		if ((err = heist_profile_samples(pool, add_moments, &m)))
			die_err("heist_profile_samples", err);
		for (int k = 0; k < 2; k++)
			res->stddev_ns[k] = m.n ? sqrt((double)(m.sum2[k] / m.n)) / per_ns : 0;
		return;
	}
	double *q = malloc(STDDEV_GRID * sizeof(*q));
	uint64_t *v = malloc(STDDEV_GRID * sizeof(*v));
	if (!q || !v)
		die_err("malloc", ENOMEM);
	for (int i = 0; i < STDDEV_GRID; i++)
		q[i] = (i + 0.5) / STDDEV_GRID;
	for (int k = 0; k < 2; k++) {
		if ((err = heist_profile_percentiles(pool, (enum heist_latency_kind)k, q, v,
						     STDDEV_GRID)))
			die_err("heist_profile_percentiles", err);
		double mean = k ? rep->end_to_end.mean : rep->dispatch.mean, s2 = 0;
		for (int i = 0; i < STDDEV_GRID; i++)
			s2 += ((double)v[i] - mean) * ((double)v[i] - mean);
		res->stddev_ns[k] = sqrt(s2 / STDDEV_GRID) / per_ns;
	}
	free(q);
	free(v);
}

struct result *
collect(const struct run *r)
{
	struct result *res = calloc(1, sizeof(*res));
	if (!res)
		die_err("calloc", ENOMEM);
	int err;
	settle(r, res);
	collect_threads(r, res);
	for (int k = 0; k < HEIST_PATHS; k++)
		if ((err = heist_profile_path_report(r->pool, (enum heist_dispatch_path)k,
						     &res->path[k])))
			die_err("heist_profile_path_report", err);
	res->nticks = make_ticks(res->rep.end_to_end.count, res->ticks);
	for (int k = 0; k < 2; k++)
		if ((err = heist_profile_percentiles(r->pool, (enum heist_latency_kind)k,
						     res->ticks, res->at[k], res->nticks)))
			die_err("heist_profile_percentiles", err);
	collect_stddev(r->pool, res);
	collect_sorted(r, res);
	return res;
}

void
result_free(struct result *res)
{
	if (!res)
		return;
	for (int k = 0; k < HEIST_PATHS; k++)
		dist_free(&res->path_dispatch[k]);
	dist_free(&res->steal);
	for (int k = 0; k < 2; k++) {
		for (uint64_t i = 0; res->repeat[k] && i < res->nrepeat; i++)
			dist_free(&res->repeat[k][i]);
		free(res->repeat[k]);
	}
	free(res->thread);
	free(res->place);
	free(res);
}

/* ---------------------------------------------------------------------------------- */
/* The table                                                                          */

static const char *
calibration_name(int c)
{
	switch (c) {
	case 1: return "from CPUID leaf 0x15 / CNTFRQ (the counter's nominal frequency)";
	case 2: return "measured against CLOCK_MONOTONIC_RAW";
	default: return "none needed";
	}
}

static const char *
calibration_key(int c)
{
	return c == 1 ? "frequency-register" : c == 2 ? "measured" : "none";
}

static void
fmt_latency(char *buf, size_t size, double cycles, double ns, bool is_ns_clock)
{
	char c[32], t[32];
	fmt_time(t, sizeof(t), ns);
	if (is_ns_clock) {	/* the counter is CLOCK_MONOTONIC: cycles are ns */
		snprintf(buf, size, "%s", t);
		return;
	}
	fmt_count(c, sizeof(c), (uint64_t)llround(cycles));
	snprintf(buf, size, "%s cycles (%s)", c, t);
}

/* Display columns of a UTF-8 string (µ is two bytes, one column). */
static int
width(const char *s)
{
	int w = 0;
	for (; *s; s++)
		w += ((unsigned char)*s & 0xC0) != 0x80;
	return w;
}

static void
print_padded(FILE *f, const char *s, int w)
{
	fputs(s, f);
	for (int i = width(s); i < w; i++)
		fputc(' ', f);
}

static void
print_rule(int w)
{
	for (int i = 0; i < w; i++)
		putchar('-');
}

/* The open loop first: what a client submitting at the target rate would see. */
static void
print_open(const struct run *r)
{
	const struct options *o = r->o;
	const struct open_result *op = r->open;
	char a[32], b[32];
	printf("Open loop: tasks due at fixed times, latency from each one's due time (no "
	       "coordinated omission):\n");
	fmt_count(a, sizeof(a), (uint64_t)llround(op->submit_rate));
	fmt_count(b, sizeof(b), (uint64_t)llround(op->complete_rate));
	printf("  submitted at %s tasks/s (%.1f%% of the target), completed at %s tasks/s\n",
	       a, 100 * op->submit_rate / o->rate, b);
	static const struct {
		const char *name;
		double q;
	} rows[] = {{"P50", 0.5}, {"P90", 0.9}, {"P99", 0.99}, {"P99.9", 0.999},
		    {"P99.99", 0.9999}, {"max", 1.0}};
	const struct dist *col[3] = {&op->lag, &op->start, &op->end};
	const char *head[3] = {"due -> submitted", "due -> started", "due -> finished"};
	printf("  %-10s", "Percentile");
	for (int c = 0; c < 3; c++) {
		printf(" | ");
		print_padded(stdout, head[c], 16);
	}
	printf("\n  -----------");
	for (int c = 0; c < 3; c++) {
		printf("+-");
		print_rule(17);
	}
	printf("\n");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		printf("  %-10s", rows[i].name);
		for (int c = 0; c < 3; c++) {
			fmt_time(a, sizeof(a), (double)dist_at(col[c], rows[i].q));
			printf(" | ");
			print_padded(stdout, a, 16);
		}
		printf("\n");
	}
	printf("  (due -> submitted is the producers' own lateness: a sleep that woke late, "
	       "or a full injector)\n\n");
}

/* The scheduler's own numbers: dispatch by path, and the steal latency. */
static void
print_paths(const struct result *res)
{
	const struct heist_latency_report *rep = &res->rep;
	char a[64], p50[96], p99[96], p999[96];
	printf("How tasks reached their threads (dispatch latency, created -> started, by "
	       "path):\n");
	printf("  %-9s %12s  %-10s %-10s %-10s\n", "path", "tasks", "P50", "P99", "P99.9");
	bool partial = false;
	for (int k = 0; k < HEIST_PATHS; k++) {
		const struct heist_latency *d = &res->path[k].dispatch;
		if (!rep->path_count[k])
			continue;
		fmt_count(a, sizeof(a), rep->path_count[k]);
		if (d->count) {
			fmt_time(p50, sizeof(p50), d->p50_ns);
			fmt_time(p99, sizeof(p99), d->p99_ns);
			fmt_time(p999, sizeof(p999), d->p999_ns);
		} else {	/* none of them is in the buffers */
			snprintf(p50, sizeof(p50), "-");
			snprintf(p99, sizeof(p99), "-");
			snprintf(p999, sizeof(p999), "-");
		}
		printf("  %-9s %12s%s ", path_names[k], a, res->path[k].exact ? " " : "*");
		print_padded(stdout, p50, 10);
		putchar(' ');
		print_padded(stdout, p99, 10);
		putchar(' ');
		print_padded(stdout, p999, 10);
		printf(" %s\n", path_help[k]);
		partial |= !res->path[k].exact;
	}
	if (partial)
		printf("  * percentiles of the samples kept in the buffers only (the histograms "
		       "keep no path)\n");
	const struct heist_latency *s = &rep->steal;
	if (s->count) {
		fmt_count(a, sizeof(a), s->count);
		fmt_time(p50, sizeof(p50), s->p50_ns);
		fmt_time(p99, sizeof(p99), s->p99_ns);
		fmt_time(p999, sizeof(p999), s->p999_ns);
		printf("steal latency (published -> started, %s stolen task%s): P50 %s, P99 %s, "
		       "P99.9 %s\n", a, plural(s->count), p50, p99, p999);
	} else {
		printf("steal latency: no task was stolen\n");
	}
	printf("\nEvery task, whatever its path (a spawned child's dispatch includes its wait "
	       "for the parent's heist_sync):\n");
}

static void
print_header(const struct run *r, const struct result *res)
{
	const struct options *o = r->o;
	const struct heist_latency_report *rep = &res->rep;
	char a[64], b[64], c[64];
	switch (o->workload) {
	case FORK_JOIN:
		fmt_count(a, sizeof(a), r->expected);
		printf("workload: fork-join (W8), binary tree of depth %u: %s task%s, payload "
		       "%" PRIu64 " iteration%s per task\n", o->depth, a, plural(r->expected),
		       o->payload, plural(o->payload));
		break;
	case SUBMIT:
		fmt_count(a, sizeof(a), r->expected);
		if (r->open) {
			fmt_count(b, sizeof(b), (uint64_t)llround(o->rate));
			printf("workload: submit (W5), open loop: %s tasks/s from %u producer%s "
			       "for %g s (%s tasks), payload %" PRIu64 " iterations per task\n",
			       b, o->producers, o->producers == 1 ? "" : "s", o->duration, a,
			       o->payload);
		} else {
			printf("workload: submit (W5), %s fire-and-forget tasks from the main "
			       "thread, payload %" PRIu64 " iterations per task\n", a, o->payload);
		}
		break;
	case FOR_EACH:
		fmt_count(a, sizeof(a), o->tasks);
		fmt_count(b, sizeof(b), o->loops);
		printf("workload: for-each (W4), %s doubles x %s loops, payload %" PRIu64
		       " iterations per element\n", a, b, o->payload);
		break;
	}
	printf("pool:     %u worker%s, pin %s", res->stats.workers, plural(res->stats.workers),
	       pin_names[o->pin]);
	if (res->stats.bind_failures)
		printf(" (%u could not be bound)", res->stats.bind_failures);
	if (o->injector_limit)
		printf(", injector limit %" PRIu64, o->injector_limit);
	if (o->spin)
		printf(", spin %u", o->spin);
	if (o->repeat > 1)
		printf("; %" PRIu64 " repeats, merged (the profile is not reset between "
		       "them)", o->repeat);
	if (o->warmup)
		printf("; %" PRIu64 " warm-up run%s before, not recorded", o->warmup,
		       o->warmup == 1 ? "" : "s");
	printf("\n");
	if (r->interrupted) {
		fmt_time(a, sizeof(a), (double)r->wall_ns);
		printf("stopped:  by Ctrl-C after %s, in repeat %" PRIu64 " of %" PRIu64
		       ": the report covers what ran until then\n", a, r->repeats_done,
		       o->repeat);
	}
	printf("clock:    %s, %.4f cycles/ns, calibration %s, %s\n", rep->clock.name,
	       rep->clock.cycles_per_ns, calibration_name(rep->clock.calibration),
	       rep->clock.invariant ? "invariant" : "not invariant");
	fmt_count(a, sizeof(a), rep->end_to_end.count);
	if (rep->sampled_every > 1)
		printf("sampling: one task in %" PRIu64 " recorded (--sample)\n",
		       rep->sampled_every);
	if (rep->exact) {
		printf("samples:  %s, all kept: percentiles are exact\n", a);
	} else {
		fmt_count(b, sizeof(b), rep->samples_dropped);
		fmt_count(c, sizeof(c), rep->buffer_samples);
		printf("samples:  %s, of which %s overflowed the buffers (%s per worker):\n"
		       "          percentiles come from histograms (within 1%%); count, min, "
		       "max and mean are exact\n", a, b, c);
	}
	printf("\n");
}

static void
print_totals(const struct result *res)
{
	const struct heist_latency_report *rep = &res->rep;
	const struct heist_latency *d = &rep->dispatch, *e = &rep->end_to_end;
	bool ns_clock = !strcmp(rep->clock.name, "clock_gettime");
	struct {
		const char *name;
		double dc, dn, ec, en;
	} rows[] = {
		{"min", (double)d->min, d->min_ns, (double)e->min, e->min_ns},
		{"mean", d->mean, d->mean_ns, e->mean, e->mean_ns},
		{"P50", (double)d->p50, d->p50_ns, (double)e->p50, e->p50_ns},
		{"P90", (double)d->p90, d->p90_ns, (double)e->p90, e->p90_ns},
		{"P99", (double)d->p99, d->p99_ns, (double)e->p99, e->p99_ns},
		{"P99.9", (double)d->p999, d->p999_ns, (double)e->p999, e->p999_ns},
		{"P99.99", (double)d->p9999, d->p9999_ns, (double)e->p9999, e->p9999_ns},
		{"max", (double)d->max, d->max_ns, (double)e->max, e->max_ns},
	};
	enum { NROWS = sizeof(rows) / sizeof(rows[0]) };
	char cells[NROWS][2][96], a[32], b[32];
	const char *head1 = "Dispatch latency (wait)", *head2 = "End-to-end";
	int w1 = width(head1), w2 = width(head2);
	for (int i = 0; i < NROWS; i++) {
		fmt_latency(cells[i][0], sizeof(cells[i][0]), rows[i].dc, rows[i].dn, ns_clock);
		fmt_latency(cells[i][1], sizeof(cells[i][1]), rows[i].ec, rows[i].en, ns_clock);
		if (width(cells[i][0]) > w1)
			w1 = width(cells[i][0]);
		if (width(cells[i][1]) > w2)
			w2 = width(cells[i][1]);
	}
	fmt_count(a, sizeof(a), d->count);
	fmt_count(b, sizeof(b), e->count);
	printf("  %-10s | ", "Percentile");
	print_padded(stdout, head1, w1);
	printf(" | %s\n", head2);
	printf("  -----------+-");
	print_rule(w1);
	printf("-+-");
	print_rule(w2);
	printf("\n  %-10s | ", "count");
	print_padded(stdout, a, w1);
	printf(" | %s\n", b);
	for (int i = 0; i < NROWS; i++) {
		printf("  %-10s | ", rows[i].name);
		print_padded(stdout, cells[i][0], w1);
		printf(" | %s\n", cells[i][1]);
	}
	printf("\n");
}

void
print_table(const struct run *r, const struct result *res)
{
	const struct options *o = r->o;
	char a[64], b[64], c[64];
	print_header(r, res);
	if (r->open)
		print_open(r);
	print_paths(res);
	print_totals(res);

	const struct heist_stats *s = &res->stats;
	char n[7][32];
	uint64_t v[7] = {s->executed, s->spawned, s->stolen, s->steal_attempts,
			 s->injector_pops, s->sleeps, s->wakes};
	for (int i = 0; i < 7; i++)
		fmt_count(n[i], sizeof(n[i]), v[i]);
	printf("pool statistics: %s task%s executed, %s spawned, %s stolen, %s steal "
	       "attempt%s,\n                 %s injector pop%s, %s sleep%s, %s wake%s\n",
	       n[0], plural(v[0]), n[1], n[2], n[3], plural(v[3]), n[4], plural(v[4]), n[5],
	       plural(v[5]), n[6], plural(v[6]));
	fmt_time(a, sizeof(a), (double)r->wall_ns);
	fmt_count(b, sizeof(b), (uint64_t)llround((double)res->rep.end_to_end.count * 1e9 /
						 (double)(r->wall_ns ? r->wall_ns : 1)));
	printf("wall time:       %s", a);
	if (r->repeats_done > 1) {
		fmt_time(c, sizeof(c), (double)r->wall_ns / (double)r->repeats_done);
		printf(" (%" PRIu64 " repeats, %s each on average)", r->repeats_done, c);
	}
	printf(", %s tasks/s\n", b);
	(void)o;
}

/* ---------------------------------------------------------------------------------- */
/* JSON                                                                               */

static void
json_latency(FILE *f, const char *name, const struct heist_latency *l, double stddev_ns)
{
	fprintf(f, "  \"%s\": {\"count\": %" PRIu64 ", \"min\": %" PRIu64 ", \"max\": %" PRIu64
		", \"mean\": %.3f, \"p50\": %" PRIu64 ", \"p90\": %" PRIu64 ", \"p99\": %" PRIu64
		", \"p999\": %" PRIu64 ", \"p9999\": %" PRIu64 ",\n", name, l->count, l->min,
		l->max, l->mean, l->p50, l->p90, l->p99, l->p999, l->p9999);
	fprintf(f, "    \"min_ns\": %.3f, \"max_ns\": %.3f, \"mean_ns\": %.3f, \"p50_ns\": %.3f, "
		"\"p90_ns\": %.3f, \"p99_ns\": %.3f, \"p999_ns\": %.3f, \"p9999_ns\": %.3f, ",
		l->min_ns, l->max_ns, l->mean_ns, l->p50_ns, l->p90_ns, l->p99_ns, l->p999_ns,
		l->p9999_ns);
	if (isnan(stddev_ns))	/* not computed for this distribution */
		fprintf(f, "\"stddev_ns\": null}");
	else
		fprintf(f, "\"stddev_ns\": %.3f}", stddev_ns);
}

/* A sorted distribution's summary, its values divided by per_ns to give ns. */
static void
json_dist(FILE *f, const char *name, const struct dist *d, double per_ns)
{
	fprintf(f, "\"%s\": {\"count\": %zu, \"min_ns\": %.3f, \"mean_ns\": %.3f, "
		"\"p50_ns\": %.3f, \"p90_ns\": %.3f, \"p99_ns\": %.3f, \"p999_ns\": %.3f, "
		"\"p9999_ns\": %.3f, \"max_ns\": %.3f}", name, d->n,
		(double)dist_at(d, 0) / per_ns, dist_mean(d) / per_ns,
		(double)dist_at(d, 0.5) / per_ns, (double)dist_at(d, 0.9) / per_ns,
		(double)dist_at(d, 0.99) / per_ns, (double)dist_at(d, 0.999) / per_ns,
		(double)dist_at(d, 0.9999) / per_ns, (double)dist_at(d, 1.0) / per_ns);
}

static void
json_open(FILE *f, const struct run *r)
{
	const struct options *o = r->o;
	const struct open_result *op = r->open;
	fprintf(f, "  \"open_loop\": {\"target_rate\": %.3f, \"producers\": %u, "
		"\"duration_s\": %.6f, \"tasks_per_repeat\": %" PRIu64 ", \"submitted\": %"
		PRIu64 ", \"completed\": %" PRIu64 ", \"submit_rate\": %.3f, "
		"\"complete_rate\": %.3f, \"target_met\": %s,\n    ", o->rate, o->producers,
		o->duration, op->tasks, op->submitted, op->completed, op->submit_rate,
		op->complete_rate, op->submit_rate >= 0.95 * o->rate ? "true" : "false");
	json_dist(f, "due_to_submitted", &op->lag, 1.0);
	fprintf(f, ",\n    ");
	json_dist(f, "due_to_started", &op->start, 1.0);
	fprintf(f, ",\n    ");
	json_dist(f, "due_to_finished", &op->end, 1.0);
	/* The whole distributions, at HdrHistogram's ticks, for plot-latency: the latency
	 * an open loop exists for is the one from the due time. */
	double q[MAX_TICKS];
	size_t n = make_ticks(op->start.n ? op->start.n : 1, q);
	fprintf(f, ",\n    \"due_percentiles\": [");
	for (size_t i = 0; op->start.n && i < n; i++)
		fprintf(f, "%s\n      {\"p\": %.15g, \"due_to_started_ns\": %" PRIu64
			", \"due_to_finished_ns\": %" PRIu64 "}", i ? "," : "", q[i],
			dist_at(&op->start, q[i]), dist_at(&op->end, q[i]));
	fprintf(f, "]},\n");
}

static void
json_repeats(FILE *f, const struct run *r, const struct result *res)
{
	double per_ns = res->rep.clock.cycles_per_ns;
	fprintf(f, "  \"per_repeat\": [");
	for (uint64_t i = 0; i < r->repeats_done; i++) {
		fprintf(f, "%s\n    {\"repeat\": %" PRIu64 ", \"wall_ns\": %" PRIu64 ", "
			"\"from_kept_samples\": %s, ", i ? "," : "", i + 1, r->repeat_ns[i],
			res->rep.exact ? "false" : "true");
		json_dist(f, "dispatch", &res->repeat[0][i], per_ns);
		fprintf(f, ",\n     ");
		json_dist(f, "end_to_end", &res->repeat[1][i], per_ns);
		if (r->open) {
			fprintf(f, ",\n     ");
			json_dist(f, "due_to_started", &r->open->repeat_start[i], 1.0);
			fprintf(f, ",\n     ");
			json_dist(f, "due_to_finished", &r->open->repeat_end[i], 1.0);
		}
		fprintf(f, "}");
	}
	fprintf(f, "\n  ],\n");
}

static void
json_threads(FILE *f, const struct result *res)
{
	fprintf(f, "  \"threads\": [");
	for (unsigned i = 0; i < res->threads; i++) {
		const struct heist_worker_stats *t = &res->thread[i];
		unsigned workers = res->stats.workers;
		const char *role = i < workers ? "worker" : i == workers ? "guest" : "spare";
		fprintf(f, "%s\n    {\"index\": %u, \"role\": \"%s\", \"executed\": %" PRIu64
			", \"spawned\": %" PRIu64 ", \"stolen\": %" PRIu64 ", \"steal_attempts\": %"
			PRIu64 ", \"injector_pops\": %" PRIu64 ", \"sleeps\": %" PRIu64
			", \"wakes\": %" PRIu64, i ? "," : "", i, role, t->executed, t->spawned,
			t->stolen, t->steal_attempts, t->injector_pops, t->sleeps, t->wakes);
		if (i < workers) {
			const struct heist_placement *p = &res->place[i];
			fprintf(f, ", \"placement\": {\"bound\": %d, \"error\": %d, \"cpus\": "
				"\"%s\", \"victim_ranks\": %u}", p->bound, p->error, p->cpus,
				p->nranks);
		}
		fprintf(f, "}");
	}
	fprintf(f, "\n  ],\n");
}

void
print_json(const struct run *r, const struct result *res)
{
	const struct options *o = r->o;
	const struct heist_latency_report *rep = &res->rep;
	const struct heist_stats *s = &res->stats;
	double per_ns = rep->clock.cycles_per_ns;
	FILE *f = stdout;

	fprintf(f, "{\n  \"tool\": \"" PROG "\", \"version\": \"%s\",\n", HEIST_VERSION);
	fprintf(f, "  \"workload\": \"%s\",\n", workload_names[o->workload]);
	fprintf(f, "  \"parameters\": {\"threads\": %u, \"workers\": %u, \"pin\": \"%s\", "
		"\"payload\": %" PRIu64 ", \"repeat\": %" PRIu64 ", \"warmup\": %" PRIu64
		", \"merged\": true, \"injector_limit\": %" PRIu64 ", \"spin\": %u",
		o->threads, s->workers, pin_names[o->pin], o->payload, o->repeat, o->warmup,
		o->injector_limit, o->spin);
	if (o->workload == FORK_JOIN)
		fprintf(f, ", \"depth\": %u", o->depth);
	else
		fprintf(f, ", \"tasks\": %" PRIu64, r->expected ? r->expected : o->tasks);
	if (o->workload == FOR_EACH)
		fprintf(f, ", \"loops\": %" PRIu64, o->loops);
	if (r->open)
		fprintf(f, ", \"rate\": %.3f, \"producers\": %u, \"duration_s\": %.6f", o->rate,
			o->producers, o->duration);
	fprintf(f, "},\n");
	fprintf(f, "  \"interrupted\": %s, \"repeats_done\": %" PRIu64 ",\n",
		r->interrupted ? "true" : "false", r->repeats_done);
	if (r->expected && !r->interrupted)
		fprintf(f, "  \"expected_tasks\": %" PRIu64 ",\n", r->expected * o->repeat);
	else
		fprintf(f, "  \"expected_tasks\": null,\n");
	if (isfinite(r->checksum))	/* JSON has no inf */
		fprintf(f, "  \"checksum\": %.17g,\n", r->checksum);
	else
		fprintf(f, "  \"checksum\": null,\n");
	fprintf(f, "  \"clock\": {\"name\": \"%s\", \"cycles_per_ns\": %.6f, \"invariant\": %d, "
		"\"calibration\": %d, \"calibration_method\": \"%s\"},\n", rep->clock.name,
		rep->clock.cycles_per_ns, rep->clock.invariant, rep->clock.calibration,
		calibration_key(rep->clock.calibration));
	fprintf(f, "  \"exact\": %s, \"samples_kept\": %" PRIu64 ", \"samples_dropped\": %"
		PRIu64 ", \"buffer_samples_per_worker\": %" PRIu64 ", \"stddev_exact\": %s,\n",
		rep->exact ? "true" : "false", rep->samples_kept, rep->samples_dropped,
		rep->buffer_samples, res->stddev_exact ? "true" : "false");
	fprintf(f, "  \"sampled_every\": %" PRIu64 ",\n", rep->sampled_every);
	if (r->open)
		json_open(f, r);
	json_latency(f, "dispatch", &rep->dispatch, res->stddev_ns[0]);
	fprintf(f, ",\n");
	json_latency(f, "end_to_end", &rep->end_to_end, res->stddev_ns[1]);
	fprintf(f, ",\n");
	json_latency(f, "steal", &rep->steal, NAN);
	fprintf(f, ",\n  \"paths\": {\n");
	for (int k = 0; k < HEIST_PATHS; k++) {
		const struct heist_latency_report *pr = &res->path[k];
		fprintf(f, "  \"%s\": {\"count\": %" PRIu64 ", \"exact\": %s,\n", path_names[k],
			rep->path_count[k], pr->exact ? "true" : "false");
		json_latency(f, "dispatch", &pr->dispatch, NAN);
		fprintf(f, ",\n");
		json_latency(f, "end_to_end", &pr->end_to_end, NAN);
		fprintf(f, "}%s\n", k + 1 < HEIST_PATHS ? "," : "");
	}
	fprintf(f, "  },\n");
	fprintf(f, "  \"stats\": {\"workers\": %u, \"executed\": %" PRIu64 ", \"spawned\": %"
		PRIu64 ", \"stolen\": %" PRIu64 ", \"steal_attempts\": %" PRIu64
		", \"injector_pops\": %" PRIu64 ", \"sleeps\": %" PRIu64 ", \"wakes\": %" PRIu64
		", \"bind_failures\": %u, \"spares_started\": %" PRIu64 ", \"parks\": %" PRIu64
		"},\n", s->workers, s->executed, s->spawned, s->stolen, s->steal_attempts,
		s->injector_pops, s->sleeps, s->wakes, s->bind_failures, s->spares_started,
		s->parks);
	json_threads(f, res);
	fprintf(f, "  \"wall_ns\": %" PRIu64 ",\n  \"repeat_wall_ns\": [", r->wall_ns);
	for (uint64_t i = 0; i < r->repeats_done; i++)
		fprintf(f, "%s%" PRIu64, i ? ", " : "", r->repeat_ns[i]);
	fprintf(f, "],\n");
	json_repeats(f, r, res);
	fprintf(f, "  \"percentiles\": [\n");
	for (size_t i = 0; i < res->nticks; i++)
		fprintf(f, "    {\"p\": %.15g, \"dispatch_cycles\": %" PRIu64 ", \"dispatch_ns\": "
			"%.3f, \"end_to_end_cycles\": %" PRIu64 ", \"end_to_end_ns\": %.3f}%s\n",
			res->ticks[i], res->at[0][i], (double)res->at[0][i] / per_ns,
			res->at[1][i], (double)res->at[1][i] / per_ns,
			i + 1 < res->nticks ? "," : "");
	fprintf(f, "  ],\n");
	/* Each path's dispatch distribution at its own ticks (plot-latency's per-path
	 * plot), from the kept samples. */
	fprintf(f, "  \"path_percentiles\": {");
	bool first = true;
	for (int k = 0; k < HEIST_PATHS; k++) {
		const struct dist *d = &res->path_dispatch[k];
		if (!d->n)
			continue;
		double q[MAX_TICKS];
		size_t n = make_ticks(d->n, q);
		fprintf(f, "%s\n    \"%s\": [", first ? "" : ",", path_names[k]);
		for (size_t i = 0; i < n; i++)
			fprintf(f, "%s{\"p\": %.15g, \"dispatch_ns\": %.3f}", i ? ", " : "", q[i],
				(double)dist_at(d, q[i]) / per_ns);
		fprintf(f, "]");
		first = false;
	}
	fprintf(f, "\n  }\n}\n");
}

/* ---------------------------------------------------------------------------------- */
/* HdrHistogram percentile distribution (.hgrm)                                       */

/* HdrHistogram's buckets needed to hold max with 256 sub-buckets (profile.c's layout:
 * 256 unit buckets, then 128 per power of two), counted as HdrHistogram counts them. */
static int
hdr_buckets(uint64_t max)
{
	int b = 1;
	for (uint64_t limit = 256; limit <= max && b < 64; limit <<= 1)
		b++;
	return b;
}

/* One distribution: its values at the ticks q[0..n) (q[n-1] = 1), its count, max and
 * mean in its own units, and units_per_us. */
struct hgrm {
	const double *q;
	const uint64_t *at;
	size_t n;
	uint64_t count, max;
	double mean, stddev, per_us;
};

static void
write_hgrm(const char *path, const struct hgrm *h)
{
	FILE *f = open_or_die(path);
	fprintf(f, "%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount",
		"1/(1-Percentile)");
	if (h->count) {
		for (size_t i = 0; i + 1 < h->n; i++) {
			double p = h->q[i];
			uint64_t v = h->at[i];
			/* TotalCount: the nearest rank; all of them once at the max. */
			uint64_t below = v >= h->max ? h->count : rank_of(p, h->count);
			fprintf(f, "%12.3f %2.12f %10" PRIu64 " %14.2f\n", (double)v / h->per_us, p,
				below, 1.0 / (1.0 - p));
			if (v >= h->max)	/* reached the largest value: then 100% */
				break;
		}
		fprintf(f, "%12.3f %2.12f %10" PRIu64 "\n", (double)h->max / h->per_us, 1.0,
			h->count);
	}
	fprintf(f, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n", h->mean / h->per_us,
		h->stddev / h->per_us);
	fprintf(f, "#[Max     = %12.3f, Total count    = %12" PRIu64 "]\n",
		(double)h->max / h->per_us, h->count);
	fprintf(f, "#[Buckets = %12d, SubBuckets     = %12d]\n", hdr_buckets(h->max), 256);
	close_or_die(f, path);
}

/* A sorted distribution as a .hgrm file, at its own ticks. */
static void
write_dist_hgrm(const char *base, const char *infix, const struct dist *d, double per_us)
{
	double q[MAX_TICKS];
	uint64_t at[MAX_TICKS];
	size_t n = make_ticks(d->n, q);
	for (size_t i = 0; i < n; i++)
		at[i] = dist_at(d, q[i]);
	struct hgrm h = {q, at, n, d->n, dist_at(d, 1.0), dist_mean(d), dist_stddev(d),
			 per_us};
	char *name = with_infix(base, infix);
	write_hgrm(name, &h);
	fprintf(stderr, PROG ": wrote %s\n", name);
	free(name);
}

/* base: end-to-end; base.dispatch: dispatch, both from the library's distributions
 * (overflowed samples included); then from the kept samples, base.dispatch-PATH for
 * each path that ran tasks and base.steal; with --rate, base.due-started and
 * base.due-finished. */
void
write_hgrms(const char *base, const struct run *r, const struct result *res)
{
	const struct heist_latency_report *rep = &res->rep;
	double per_us = rep->clock.cycles_per_ns * 1e3;
	for (int k = 1; k >= 0; k--) {
		const struct heist_latency *l = k ? &rep->end_to_end : &rep->dispatch;
		struct hgrm h = {res->ticks, res->at[k], res->nticks, l->count, l->max,
				 l->mean, res->stddev_ns[k] * rep->clock.cycles_per_ns, per_us};
		char *name = k ? strdup(base) : with_infix(base, "dispatch");
		if (!name)
			die_err("strdup", ENOMEM);
		write_hgrm(name, &h);
		fprintf(stderr, PROG ": wrote %s\n", name);
		free(name);
	}
	for (int k = 0; k < HEIST_PATHS; k++) {
		if (!res->path_dispatch[k].n)
			continue;
		char infix[32];
		snprintf(infix, sizeof(infix), "dispatch-%s", path_names[k]);
		write_dist_hgrm(base, infix, &res->path_dispatch[k], per_us);
	}
	if (res->steal.n)
		write_dist_hgrm(base, "steal", &res->steal, per_us);
	if (r->open) {
		write_dist_hgrm(base, "due-started", &r->open->start, 1e3);
		write_dist_hgrm(base, "due-finished", &r->open->end, 1e3);
	}
}
