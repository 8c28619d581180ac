/* w_roundtrip.c - W6 round trip: the latency of one submitted task. One outside thread
 * submits a task that returns 1 and waits for its result, again and again, timing each
 * round trip. "W6": back to back (hot; workers may still be spinning). "W6-cold": each
 * after a 10 ms pause, so the workers are asleep and the round trip includes a wake-up.
 * Samples from all repetitions are pooled; the table shows p50 as the time.
 *
 * heist: heist_submit with a future, heist_future_wait, heist_future_release. baseline:
 * baseline_submit of a task that sets a mutex+condvar future. oneTBB: enqueue on an
 * arena whose slots are all workers', waited for on a spin-then-futex latch. OpenMP has
 * no way for an outside thread to hand one task to a running team, so it has no row. */
#include "workloads.h"

#include "baseline_pool.h"
#include "malloc_count.h"
#include "peers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { COLD_PAUSE_MS = 10 };

struct rt_ctx {
	unsigned threads;
	bool cold;
	size_t per_rep, warmup;
	uint64_t *samples;
	size_t nsamples;
	heist_pool *pool;
	struct baseline_pool *bpool;
	uint64_t allocs;	/* heap allocations during repetition 0 */
	size_t allocs_rts;	/* round trips they were counted over */
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
heist_one(struct rt_ctx *c)
{
	heist_future *f = NULL;
	uint64_t t0 = bench_now_ns();
	int err = heist_submit(c->pool, return_one, NULL, &f);
	if (err)
		bench_fail("W6: heist_submit returned %d", err);
	int r = heist_future_wait(f);
	heist_future_release(f);
	uint64_t ns = bench_now_ns() - t0;
	bench_check("W6 round trip", "heist", c->threads, r, 1);
	return ns;
}

static uint64_t
baseline_one(struct rt_ctx *c)
{
	struct baseline_future f;
	uint64_t t0 = bench_now_ns();
	baseline_future_init(&f);
	if (baseline_submit(c->bpool, set_one, &f) != 0)
		bench_fail("W6: baseline_submit: out of memory");
	int r = baseline_future_wait(&f);
	baseline_future_fini(&f);
	uint64_t ns = bench_now_ns() - t0;
	bench_check("W6 round trip", "baseline", c->threads, r, 1);
	return ns;
}

#ifdef HEIST_BENCH_TBB
static uint64_t
tbb_one(struct rt_ctx *c)
{
	uint64_t t0 = bench_now_ns();
	int r = peer_tbb_round_trip();
	uint64_t ns = bench_now_ns() - t0;
	bench_check("W6 round trip", "tbb", c->threads, r, 1);
	return ns;
}
#endif

/* One repetition: per_rep round trips (warmup of them for the warm-up), recorded. */
static uint64_t
rounds(struct rt_ctx *c, int rep, uint64_t (*one)(struct rt_ctx *))
{
	size_t n = rep < 0 ? c->warmup : c->per_rep;
	uint64_t total = 0;
	if (rep == 0)
		malloc_count_start();
	for (size_t i = 0; i < n; i++) {
		if (c->cold)
			bench_sleep_ms(COLD_PAUSE_MS);
		uint64_t ns = one(c);
		total += ns;
		if (rep >= 0)
			c->samples[c->nsamples++] = ns;
	}
	if (rep == 0) {
		c->allocs = malloc_count_stop();
		c->allocs_rts = n;
	}
	return total;
}

static uint64_t run_heist(void *ctx, int rep) { return rounds(ctx, rep, heist_one); }
static uint64_t run_baseline(void *ctx, int rep) { return rounds(ctx, rep, baseline_one); }
#ifdef HEIST_BENCH_TBB
static uint64_t run_tbb(void *ctx, int rep) { return rounds(ctx, rep, tbb_one); }
#endif

static void
one_kind(const struct bench_opts *o, bool cold, heist_pool *pool, struct baseline_pool *bpool)
{
	const char *name = cold ? "W6-cold" : "W6";
	size_t total = cold ? (o->quick ? 200 : 1000) : (o->quick ? 10000 : 100000);
	size_t per_rep = (total + o->reps - 1) / o->reps;
	char size[24];
	snprintf(size, sizeof size, "%zu rt", per_rep * o->reps);
	bench_progress("%s round trip %s:", name, size);

	struct rt_ctx proto = {
		.threads = o->threads, .cold = cold, .per_rep = per_rep,
		.warmup = cold ? 3 : total / 20, .pool = pool, .bpool = bpool,
	};
	struct rt_ctx ctx[3];
	struct variant v[3];
	unsigned nv = 0;
	for (int i = 0; i < 3; i++) {
		ctx[i] = proto;
		ctx[i].samples = malloc(per_rep * o->reps * sizeof(uint64_t));
		if (!ctx[i].samples)
			bench_fail("W6: out of memory");
	}
	if (pool)
		bench_add(o, v, &nv, "heist", o->threads, run_heist, &ctx[0]);
	if (bpool)
		bench_add(o, v, &nv, "baseline", o->threads, run_baseline, &ctx[1]);
#ifdef HEIST_BENCH_TBB
	/* Cold TBB rows cost 2 s more; left out of the smoke run. */
	if (!(cold && o->quick))
		bench_add(o, v, &nv, "tbb", o->threads, run_tbb, &ctx[2]);
#endif
	bench_measure(o, v, nv);

	for (unsigned i = 0; i < nv; i++) {
		struct rt_ctx *c = v[i].ctx;
		bench_sort(c->samples, c->nsamples);
		uint64_t p50 = bench_percentile(c->samples, c->nsamples, 50);
		struct row *r = bench_row(name, size, v[i].impl, v[i].threads, (double)p50);
		uint64_t p99 = bench_percentile(c->samples, c->nsamples, 99);
		row_metric(r, "p99_ns", (double)p99, "p99 %.1f us", (double)p99 / 1e3);
		if (!cold) {
			uint64_t p999 = bench_percentile(c->samples, c->nsamples, 99.9);
			row_metric(r, "p99.9_ns", (double)p999, "p99.9 %.1f us", (double)p999 / 1e3);
		}
		if (malloc_count_available() && c->allocs_rts &&
		    strcmp(v[i].impl, "tbb") != 0) {
			double per = (double)c->allocs / (double)c->allocs_rts;
			row_metric(r, "heap_allocs_per_round_trip", per, "allocs/rt %.2f", per);
		}
		row_note(r, "pool of %u workers%s", v[i].threads,
			 strcmp(v[i].impl, "tbb") == 0 ? ", arena.enqueue + latch wait" : "");
	}
	for (int i = 0; i < 3; i++)
		free(ctx[i].samples);
}

void
w6_round_trip(const struct bench_opts *o)
{
	bool hot = bench_selected(o, "W6", "W6"), cold = bench_selected(o, "W6", "W6-cold");
	if (!hot && !cold)
		return;
	heist_pool *pool = NULL;
	struct baseline_pool *bpool = NULL;
	if (bench_impl_enabled(o, "heist"))
		pool = bench_heist_pool(o->threads);
	if (bench_impl_enabled(o, "baseline")) {
		int err = baseline_pool_create(&bpool, o->threads);
		if (err)
			bench_fail("baseline_pool_create: %s", strerror(err));
	}
	if (hot)
		one_kind(o, false, pool, bpool);
	if (cold)
		one_kind(o, true, pool, bpool);
	baseline_pool_destroy(bpool);
	heist_pool_destroy(pool);
}
