/* SPDX-License-Identifier: MIT */
/* w_roundtrip.c - W6 round trip: the latency of one submitted task. One outside thread
 * submits a task that returns 1 and waits for its result, again and again, timing each
 * round trip. "W6": back to back (hot; workers may still be spinning). "W6-cold": each
 * after a 10 ms pause, so the workers are asleep and the round trip includes a wake-up.
 * Samples from all repetitions are pooled; the table shows p50 as the time.
 *
 * heist: heist_submit with a future, heist_future_wait, heist_future_release. baseline:
 * baseline_submit of a task that sets a mutex+condvar future. oneTBB: enqueue on an
 * arena whose slots are all workers', waited for on a spin-then-futex latch. OpenMP has
 * no way for an outside thread to hand one task to a running team, so it has no row.
 * With a C++ compiler, heist-cxx: pool.submit of a lambda returning 1, then
 * future::get() (cxx.h), on the heist row's pool. */
#include "workloads.h"

#include "baseline_pool.h"
#include "cxx.h"
#include "malloc_count.h"
#include "peers.h"

#include <stdio.h>
#include <string.h>

enum { COLD_PAUSE_MS = 10 };

struct rt {
	unsigned pause_ms;		/* before each round trip: 0, or COLD_PAUSE_MS */
	size_t per_rep, warmup;		/* round trips per repetition, in the warm-up */
	uint64_t *samples[BENCH_MAX_VARIANTS];	/* per variant (job slot), every repetition */
	size_t nsamples[BENCH_MAX_VARIANTS];
};

static int
return_one(void *arg)
{
	(void)arg;
	return 1;
}

static void
set_one(void *arg)
{
	baseline_future_set(arg, 1);
}

static uint64_t
heist_one(struct bench_job *j)
{
	heist_future *f = NULL;
	uint64_t t0 = bench_now_ns();
	int err = heist_submit(j->pool, return_one, NULL, &f);
	if (err)
		bench_fail("W6: heist_submit returned %d", err);
	int r = heist_future_wait(f);
	heist_future_release(f);
	uint64_t ns = bench_now_ns() - t0;
	bench_check("W6 round trip", j->impl, j->threads, r, 1);
	return ns;
}

static uint64_t
baseline_one(struct bench_job *j)
{
	struct baseline_future f;
	uint64_t t0 = bench_now_ns();
	baseline_future_init(&f);
	if (baseline_submit(j->bpool, set_one, &f) != 0)
		bench_fail("W6: baseline_submit: out of memory");
	int r = baseline_future_wait(&f);
	baseline_future_fini(&f);
	uint64_t ns = bench_now_ns() - t0;
	bench_check("W6 round trip", j->impl, j->threads, r, 1);
	return ns;
}

#ifdef HEIST_BENCH_CXX
static uint64_t
cxx_one(struct bench_job *j)
{
	uint64_t t0 = bench_now_ns();
	int r = cxx_round_trip(j->pool);
	uint64_t ns = bench_now_ns() - t0;
	bench_check("W6 round trip", j->impl, j->threads, r, 1);
	return ns;
}
#endif

static uint64_t
peer_one(struct bench_job *j)
{
	uint64_t t0 = bench_now_ns();
	int r = j->peer->round_trip(j->threads);
	uint64_t ns = bench_now_ns() - t0;
	bench_check("W6 round trip", j->impl, j->threads, r, 1);
	return ns;
}

/* One repetition: per_rep round trips (warmup of them for the warm-up), recorded. */
static void
rounds(struct bench_job *j, uint64_t (*one)(struct bench_job *))
{
	struct rt *c = j->in;
	size_t n = j->rep < 0 ? c->warmup : c->per_rep;
	for (size_t i = 0; i < n; i++) {
		if (c->pause_ms)
			bench_sleep_ms(c->pause_ms);
		uint64_t ns = one(j);
		if (j->rep >= 0)
			c->samples[j->slot][c->nsamples[j->slot]++] = ns;
	}
}

static void run_heist(struct bench_job *j) { rounds(j, heist_one); }
static void run_baseline(struct bench_job *j) { rounds(j, baseline_one); }
static void run_peer(struct bench_job *j) { rounds(j, peer_one); }
#ifdef HEIST_BENCH_CXX
static void run_cxx(struct bench_job *j) { rounds(j, cxx_one); }
#endif

/* Cold TBB rows cost 2 s more; left out of the smoke run. */
static bool hot_or_full(const struct bench_set *s) { return !(s->p.b && s->o->quick); }

/* heist and baseline count their heap allocations in the first timed repetition. */
static const struct bench_impl impls[] = {
	{ "heist", THREADS, POOL_HEIST, .run = run_heist, .count_allocs = true },
#ifdef HEIST_BENCH_CXX
	{ "heist-cxx", THREADS, POOL_HEIST, .run = run_cxx, .count_allocs = true },
#endif
	{ "baseline", THREADS, POOL_BASELINE, .run = run_baseline, .count_allocs = true },
	{ "tbb", THREADS, POOL_PEER, .run = run_peer, .when = hot_or_full },
};

/* The size's p.a is the round trips over all repetitions, p.b the pause before each. */
static void *
setup(struct bench_set *s)
{
	struct rt *c = bench_alloc(s, 1, sizeof *c);
	size_t total = (size_t)s->p.a;
	c->pause_ms = (unsigned)s->p.b;
	c->per_rep = (total + s->o->reps - 1) / s->o->reps;
	c->warmup = c->pause_ms ? 3 : total / 20;
	snprintf(s->size, sizeof s->size, "%zu rt", c->per_rep * s->o->reps);
	for (unsigned i = 0; i < s->n; i++)
		c->samples[i] = bench_alloc(s, c->per_rep * s->o->reps, sizeof(uint64_t));
	return c;
}

/* A row's time is the median round trip. */
static void
times(struct bench_set *s)
{
	struct rt *c = s->in;
	for (unsigned i = 0; i < s->n; i++) {
		bench_sort(c->samples[i], c->nsamples[i]);
		s->v[i].median_ns = bench_percentile(c->samples[i], c->nsamples[i], 50);
	}
}

static void
figures(struct bench_set *s)
{
	struct rt *c = s->in;
	for (unsigned i = 0; i < s->n; i++) {
		struct variant *v = &s->v[i];
		uint64_t p99 = bench_percentile(c->samples[i], c->nsamples[i], 99);
		row_metric(v->row, "p99_ns", (double)p99, "p99 %.1f us", (double)p99 / 1e3);
		if (!c->pause_ms) {
			uint64_t p999 = bench_percentile(c->samples[i], c->nsamples[i], 99.9);
			row_metric(v->row, "p99.9_ns", (double)p999, "p99.9 %.1f us",
				   (double)p999 / 1e3);
		}
		if (v->counted) {
			double per = (double)v->allocs / (double)c->per_rep;
			row_metric(v->row, "heap_allocs_per_round_trip", per, "allocs/rt %.2f", per);
		}
		row_note(v->row, "pool of %u workers%s", v->job.threads,
			 strcmp(v->job.impl, "tbb") == 0 ? ", arena.enqueue + latch wait"
			 : strcmp(v->job.impl, "heist-cxx") == 0 ? ", pool.submit + get()" : "");
	}
	struct variant *vx = bench_find(s, "heist-cxx", s->o->threads);
	struct variant *vc = bench_find(s, "heist", s->o->threads);
	if (vx && vc) {
		double x = (double)vx->median_ns / (double)vc->median_ns;
		row_metric(vx->row, "ratio_to_c", x, "t/C %.2f", x);
	}
}

const struct bench_workload w6_round_trip = {
	.group = "W6", .title = "round trip",
	.nsizes = 2,
	.sizes = {	/* round trips, pause before each (ms) */
		{ "W6", { NULL, 100000, 0 }, { NULL, 10000, 0 } },
		{ "W6-cold", { NULL, 1000, COLD_PAUSE_MS }, { NULL, 200, COLD_PAUSE_MS } },
	},
	.setup = setup, .times = times, .figures = figures,
	BENCH_IMPLS(impls),
};
