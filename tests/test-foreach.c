/* SPDX-License-Identifier: MIT */
/* test-foreach.c - data parallelism: heist_for_each and heist_submit_bulk. Every index
 * is visited exactly once (per-index counters) over empty, tiny, odd and large ranges,
 * several grains and nonzero begins, on pools of one and two workers, called from an
 * outside thread, from inside heist_run, from inside a submitted task, and as a bulk
 * submission; sub-ranges are half-open, non-empty, inside the range and at most grain
 * long; bodies run on the pool's threads (workers, spare threads, the caller of an
 * outside loop); a nonzero body result stops the loop, is
 * returned, and no body runs after the call returns; bad input is rejected; loops nest
 * three deep without deadlock. Cancellation tokens are tested in test-cancel.c.
 * Rules and helpers: common.h.
 *
 * Nothing here waits on a clock: a test polls a condition, and a short spin only
 * widens windows. (Not sched_yield: on a machine loaded with busy processes each one
 * can give the CPU away for a whole time slice.)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* The large ranges: suite 'slow' runs them full size, suite 'unit' a tenth as long,
 * which still makes for many splits and steals. ThreadSanitizer runs these loops
 * about 10x slower: a tenth again there. million_index_range_... keeps one range of a
 * million and more in every build and suite. */
struct big {
	size_t odd, even;	/* an odd length, a power of two */
	int err_rounds;		/* rounds of no_body_runs_after_the_loop_returns */
};

#ifdef TEST_TSAN
static const struct big BIG_SLOW = { 100003, 131072, 20 };
static const struct big BIG_UNIT = { 20011, 16384, 10 };
#else
static const struct big BIG_SLOW = { 1000003, 1048576, 100 };
static const struct big BIG_UNIT = { 100003, 131072, 20 };
#endif
static struct big big;		/* one of the two, chosen in main() */
enum { MILLION_ODD = 1000003 };

static const unsigned POOL_SIZES[] = {1, 2};
#define NPOOLS (sizeof(POOL_SIZES) / sizeof(POOL_SIZES[0]))

/* ---------------------------------------------------------------------------------- */
/* Who runs a body: a worker, the guest slot (the caller of an outside loop), or a     */
/* spare thread standing in for a parked worker (heist.h, heist_worker_index).        */

enum role { ROLE_WORKER, ROLE_GUEST, ROLE_SPARE, ROLE_NONE };

static enum role
thread_role(const heist_pool *pool)
{
	int wi = heist_worker_index(), ti = heist_thread_index();
	int size = (int)heist_pool_size(pool), threads = (int)heist_pool_threads(pool);

	if (wi >= 0)
		return wi < size && ti == wi ? ROLE_WORKER : ROLE_NONE;
	if (ti == size)
		return ROLE_GUEST;
	return ti > size && ti < threads ? ROLE_SPARE : ROLE_NONE;
}

/* A thread that may run a body of pool's loop: any but the guest slot, unless the
 * loop was called from outside (then its caller takes part). */
static bool
may_run_body(const heist_pool *pool, bool caller_takes_part)
{
	enum role r = thread_role(pool);

	return r == ROLE_WORKER || r == ROLE_SPARE || (r == ROLE_GUEST && caller_takes_part);
}

/* ---------------------------------------------------------------------------------- */
/* How a loop is started: the four ways a caller can run one.                         */

enum mode {
	FROM_OUTSIDE,	/* heist_for_each on the test thread */
	FROM_RUN,	/* heist_for_each inside heist_run's function */
	FROM_TASK,	/* heist_for_each inside a submitted task the test waits for */
	AS_BULK,	/* heist_submit_bulk, the test waits for the future */
	MODES
};

static const char *const MODE_NAMES[] = {"outside", "run", "task", "bulk"};

struct call {
	heist_pool *pool;
	size_t begin, end, grain;
	heist_range_fn body;
	void *arg;
	atomic_bool *returned;	/* set as soon as the loop has returned, or NULL */
	int result;		/* heist_for_each's return value, inside a task */
	atomic_uint not_on_worker;
};

static int
call_for_each(void *p)
{
	struct call *c = p;

	if (!may_run_body(c->pool, false))
		atomic_fetch_add(&c->not_on_worker, 1);
	c->result = heist_for_each(c->pool, c->begin, c->end, c->grain, c->body, c->arg);
	if (c->returned)
		atomic_store(c->returned, true);
	return c->result;
}

/* Run the loop the way mode says; returns what the loop returned (the future's value
 * for AS_BULK and FROM_TASK). */
static int
run_loop(enum mode mode, struct call *c)
{
	heist_future *f = NULL;
	int r = -1;

	atomic_init(&c->not_on_worker, 0);
	c->result = -1;
	switch (mode) {
	case FROM_OUTSIDE:
		r = heist_for_each(c->pool, c->begin, c->end, c->grain, c->body, c->arg);
		if (c->returned)
			atomic_store(c->returned, true);
		return r;
	case FROM_RUN:
		r = heist_run(c->pool, call_for_each, c);
		assert_int_equal(r, c->result);
		break;
	case FROM_TASK:
		assert_int_equal(heist_submit(c->pool, call_for_each, c, &f), 0);
		r = heist_future_wait(f);
		assert_true(heist_future_done(f));
		heist_future_release(f);
		assert_int_equal(r, c->result);
		break;
	case AS_BULK:
		assert_int_equal(heist_submit_bulk(c->pool, c->begin, c->end, c->grain, c->body,
						   c->arg, &f), 0);
		assert_non_null(f);
		r = heist_future_wait(f);
		if (c->returned)
			atomic_store(c->returned, true);
		assert_true(heist_future_done(f));
		heist_future_release(f);
		return r;
	default:
		fail();
	}
	assert_int_equal(atomic_load(&c->not_on_worker), 0);
	return r;
}

/* ---------------------------------------------------------------------------------- */
/* Visiting: each index once, sub-ranges well formed, bodies on workers.              */

struct visit {
	heist_pool *pool;
	size_t begin, end, grain;
	unsigned pool_size;
	atomic_uint *hits;		/* hits[i - begin]: calls that covered i */
	uint32_t *written;		/* plain writes, read after the loop returned */
	atomic_size_t max_len;		/* the longest sub-range seen */
	atomic_uint calls;
	atomic_uint bad_range;		/* empty, outside [begin, end), longer than grain */
	atomic_uint bad_worker;		/* bodies on a thread that may not run them */
	bool caller_takes_part;		/* from outside: the caller runs chunks too (-1) */
	atomic_bool returned;		/* set by the caller once the loop returned */
	atomic_uint after_return;	/* bodies that ran after that */
};

static uint32_t
mark(size_t i)
{
	return (uint32_t)(i * 2654435761u) | 1;	/* never 0, so calloc's zero is "unwritten" */
}

static int
visit_body(void *arg, size_t b, size_t e)
{
	struct visit *v = arg;

	if (atomic_load(&v->returned))
		atomic_fetch_add(&v->after_return, 1);
	atomic_fetch_add(&v->calls, 1);
	/* A caller outside the pool takes part in its own loop (heist.h). */
	if (!may_run_body(v->pool, v->caller_takes_part))
		atomic_fetch_add(&v->bad_worker, 1);
	if (!(b < e && b >= v->begin && e <= v->end) || (v->grain && e - b > v->grain)) {
		atomic_fetch_add(&v->bad_range, 1);
		return 0;	/* do not index out of bounds */
	}
	size_t len = e - b, seen = atomic_load(&v->max_len);
	while (len > seen && !atomic_compare_exchange_weak(&v->max_len, &seen, len))
		;
	for (size_t i = b; i < e; i++) {
		atomic_fetch_add_explicit(&v->hits[i - v->begin], 1, memory_order_relaxed);
		v->written[i - v->begin] = mark(i);
	}
	if (atomic_load(&v->returned))
		atomic_fetch_add(&v->after_return, 1);
	return 0;
}

/* Run one loop over [begin, end) with grain and check everything about it. */
static void
visit_once(heist_pool *pool, enum mode mode, size_t begin, size_t end, size_t grain)
{
	size_t n = end - begin;
	struct visit v = {
		.pool = pool,
		.begin = begin, .end = end, .grain = grain,
		.pool_size = heist_pool_size(pool),
		.caller_takes_part = mode == FROM_OUTSIDE,
		.hits = calloc(n ? n : 1, sizeof(atomic_uint)),
		.written = calloc(n ? n : 1, sizeof(uint32_t)),
	};
	assert_non_null(v.hits);
	assert_non_null(v.written);
	struct call c = {
		.pool = pool, .begin = begin, .end = end, .grain = grain,
		.body = visit_body, .arg = &v, .returned = &v.returned,
	};

	int r = run_loop(mode, &c);
	if (r != 0 || atomic_load(&v.bad_range) || atomic_load(&v.bad_worker)) {
		print_error("mode %s, pool %u, [%zu, %zu), grain %zu: result %d, bad ranges %u, "
			    "bad worker indexes %u\n", MODE_NAMES[mode], v.pool_size, begin, end,
			    grain, r, atomic_load(&v.bad_range), atomic_load(&v.bad_worker));
	}
	assert_int_equal(r, 0);
	assert_int_equal(atomic_load(&v.bad_range), 0);
	assert_int_equal(atomic_load(&v.bad_worker), 0);
	size_t missed = 0, repeated = 0, unwritten = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned h = atomic_load_explicit(&v.hits[i], memory_order_relaxed);
		missed += h == 0;
		repeated += h > 1;
		unwritten += v.written[i] != mark(begin + i);
	}
	if (missed || repeated || unwritten)
		print_error("mode %s, pool %u, [%zu, %zu), grain %zu: %zu missed, %zu repeated, "
			    "%zu writes not seen\n", MODE_NAMES[mode], v.pool_size, begin, end,
			    grain, missed, repeated, unwritten);
	assert_int_equal(missed, 0);
	assert_int_equal(repeated, 0);
	assert_int_equal(unwritten, 0);
	if (n == 0)
		assert_int_equal(atomic_load(&v.calls), 0);
	else
		assert_in_range(atomic_load(&v.calls), 1, n);
	if (grain)
		assert_true(atomic_load(&v.max_len) <= grain);
	/* Anything still running would show here or in after_return. */
	assert_int_equal(atomic_load(&v.after_return), 0);
	free(v.hits);
	free(v.written);
}

static void
visit_grid(const size_t *sizes, size_t nsizes, const size_t *begins, size_t nbegins,
	   const enum mode *modes, size_t nmodes)
{
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *pool = make_pool(POOL_SIZES[p]);
		for (size_t s = 0; s < nsizes; s++) {
			size_t n = sizes[s];
			/* 0 = automatic, 1, 7, 1000, and one longer than the range */
			const size_t grains[] = {0, 1, 7, 1000, n + 1};
			for (size_t g = 0; g < sizeof(grains) / sizeof(grains[0]); g++)
				for (size_t b = 0; b < nbegins; b++)
					for (size_t m = 0; m < nmodes; m++)
						visit_once(pool, modes[m], begins[b],
							   begins[b] + n, grains[g]);
		}
		heist_pool_destroy(pool);
	}
}

static const enum mode ALL_MODES[] = {FROM_OUTSIDE, FROM_RUN, FROM_TASK, AS_BULK};
#define NMODES (sizeof(ALL_MODES) / sizeof(ALL_MODES[0]))

static void
empty_range_never_calls_body_and_returns_zero(void **state)
{
	(void)state;
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *pool = make_pool(POOL_SIZES[p]);
		const size_t at[] = {0, 1, 12345, SIZE_MAX};
		for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++)
			for (size_t m = 0; m < NMODES; m++)
				for (size_t grain = 0; grain < 3; grain++)
					visit_once(pool, ALL_MODES[m], at[k], at[k], grain);
		heist_pool_destroy(pool);
	}
}

static void
tiny_ranges_visit_each_index_once(void **state)
{
	(void)state;
	const size_t sizes[] = {1, 2, 3};
	const size_t begins[] = {0, 1, 1000};
	visit_grid(sizes, 3, begins, 3, ALL_MODES, NMODES);
}

static void
odd_large_range_visits_each_index_once_from_outside(void **state)
{
	(void)state;
	const size_t sizes[] = {big.odd};
	const size_t begins[] = {0, 77777};
	const enum mode modes[] = {FROM_OUTSIDE};
	visit_grid(sizes, 1, begins, 2, modes, 1);
}

static void
odd_large_range_visits_each_index_once_inside_tasks(void **state)
{
	(void)state;
	const size_t sizes[] = {big.odd};
	const size_t begins[] = {3};
	const enum mode modes[] = {FROM_RUN, FROM_TASK};
	visit_grid(sizes, 1, begins, 1, modes, 2);
}

static void
odd_large_range_visits_each_index_once_as_bulk(void **state)
{
	(void)state;
	const size_t sizes[] = {big.odd};
	const size_t begins[] = {5};
	const enum mode modes[] = {AS_BULK};
	visit_grid(sizes, 1, begins, 1, modes, 1);
}

/* A million and more, in every build: automatic grain in every mode, and grain 1 (a
 * million body calls) in every mode, or only from outside under ThreadSanitizer. */
static void
million_index_range_visits_each_index_once(void **state)
{
	(void)state;
#ifdef TEST_TSAN
	const size_t grain1_modes = 1;
#else
	const size_t grain1_modes = NMODES;
#endif
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *pool = make_pool(POOL_SIZES[p]);
		for (size_t m = 0; m < NMODES; m++) {
			visit_once(pool, ALL_MODES[m], 0, MILLION_ODD, 0);
			if (m < grain1_modes)
				visit_once(pool, ALL_MODES[m], 1000, 1000 + MILLION_ODD, 1);
		}
		heist_pool_destroy(pool);
	}
}

static void
power_of_two_range_visits_each_index_once(void **state)
{
	(void)state;
	const size_t sizes[] = {big.even};
	const size_t begins[] = {0, 1};
	const enum mode modes[] = {FROM_OUTSIDE, FROM_RUN};
	visit_grid(sizes, 1, begins, 2, modes, 2);
}

/* Halving and "begin + grain" near the top of size_t must not wrap. */
static void
range_ending_at_size_max_visits_each_index_once(void **state)
{
	(void)state;
	const size_t sizes[] = {4099};
	const size_t begins[] = {SIZE_MAX - 4099};
	visit_grid(sizes, 1, begins, 1, ALL_MODES, NMODES);
}

/* Mid-sized ranges with many grains: every sub-range is non-empty, inside the range,
 * at most grain long (visit_body counts violations, visit_once checks max_len). */
static void
subranges_are_half_open_nonempty_and_at_most_grain(void **state)
{
	(void)state;
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *pool = make_pool(POOL_SIZES[p]);
		const size_t grains[] = {1, 2, 3, 5, 64, 999, 1024, 4095, 4096};
		for (size_t g = 0; g < sizeof(grains) / sizeof(grains[0]); g++)
			for (size_t m = 0; m < NMODES; m++)
				visit_once(pool, ALL_MODES[m], 100, 100 + 40961, grains[g]);
		heist_pool_destroy(pool);
	}
}

/* Bodies record which workers they ran on: every index is a worker's, and on two
 * workers a thief may take part.
 * Only the bound is asserted; who takes part is the scheduler's choice. */
struct where {
	heist_pool *pool;
	atomic_uint seen[2];	/* by worker index */
	atomic_uint outside;	/* the guest slot: the caller of an outside loop */
	atomic_uint spare;	/* spare threads standing in for a parked worker */
	atomic_uint none;	/* none of these */
};

static int
where_body(void *arg, size_t b, size_t e)
{
	struct where *w = arg;
	int wi = heist_worker_index();

	(void)b;
	(void)e;
	switch (thread_role(w->pool)) {
	case ROLE_WORKER:
		if (wi < 2)
			atomic_fetch_add(&w->seen[wi], 1);
		else
			atomic_fetch_add(&w->none, 1);
		break;
	case ROLE_GUEST:
		atomic_fetch_add(&w->outside, 1);
		break;
	case ROLE_SPARE:
		atomic_fetch_add(&w->spare, 1);
		break;
	default:
		atomic_fetch_add(&w->none, 1);
	}
	return 0;
}

static void
body_runs_with_a_worker_index_of_the_pool(void **state)
{
	(void)state;
	for (size_t p = 0; p < NPOOLS; p++) {
		unsigned size = POOL_SIZES[p];
		heist_pool *pool = make_pool(size);
		for (size_t m = 0; m < NMODES; m++) {
			struct where w = { .pool = pool };
			struct call c = {
				.pool = pool, .begin = 0, .end = 5000, .grain = 1,
				.body = where_body, .arg = &w,
			};
			assert_int_equal(run_loop(ALL_MODES[m], &c), 0);
			/* From outside, the caller takes part: its chunks report -1. */
			unsigned outside = atomic_load(&w.outside);
			if (ALL_MODES[m] != FROM_OUTSIDE)
				assert_int_equal(outside, 0);
			assert_int_equal(atomic_load(&w.none), 0);
			assert_int_equal(atomic_load(&w.seen[0]) + atomic_load(&w.seen[1]) + outside +
					 atomic_load(&w.spare), 5000);
			if (size == 1)
				assert_int_equal(atomic_load(&w.seen[1]), 0);
		}
		heist_pool_destroy(pool);
	}
}

/* ---------------------------------------------------------------------------------- */
/* Errors                                                                             */

struct failing {
	size_t fail_from, fail_every;	/* indices fail_from + k * fail_every fail */
	size_t nfail;			/* how many such indices (0: none fail) */
	int value;			/* what a failing chunk returns; 0: value_of() */
	bool slow;			/* bodies spin a while, so others run meanwhile */
	atomic_uint calls;
	atomic_uint failures;		/* failing bodies that ran */
	atomic_bool failed;		/* a failing body has returned (set just before) */
	atomic_uint after_failure;	/* bodies that started after that */
	atomic_bool returned;		/* the loop has returned */
	atomic_uint after_return;	/* bodies running after that */
	atomic_int first_value;		/* the value of the first failing body to return */
	atomic_bool returned_value[4096];	/* which values failing bodies returned */
};

/* A few microseconds of work that no compiler removes. */
static void
spin_a_while(void)
{
	for (volatile int k = 0; k < 2000; k++)
		;
}

static int
value_of(size_t chunk_begin)
{
	return 10000 + (int)(chunk_begin % 4096);
}

static int
failing_body(void *arg, size_t b, size_t e)
{
	struct failing *f = arg;

	if (atomic_load(&f->returned))
		atomic_fetch_add(&f->after_return, 1);
	if (atomic_load(&f->failed))
		atomic_fetch_add(&f->after_failure, 1);
	atomic_fetch_add(&f->calls, 1);
	if (f->slow)
		spin_a_while();
	bool fails = false;
	if (f->nfail) {
		size_t last = f->fail_from + (f->nfail - 1) * f->fail_every;
		for (size_t i = b; i < e && !fails; i++)
			fails = i >= f->fail_from && i <= last &&
				(i - f->fail_from) % f->fail_every == 0;
	}
	if (atomic_load(&f->returned))
		atomic_fetch_add(&f->after_return, 1);
	if (!fails)
		return 0;
	int v = f->value ? f->value : value_of(b);
	int none = 0;
	atomic_compare_exchange_strong(&f->first_value, &none, v);
	atomic_store(&f->returned_value[v % 4096], true);
	atomic_fetch_add(&f->failures, 1);
	atomic_store(&f->failed, true);
	return v;
}

static struct failing *
new_failing(size_t fail_from, size_t fail_every, size_t nfail, int value)
{
	struct failing *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->fail_from = fail_from;
	f->fail_every = fail_every ? fail_every : 1;
	f->nfail = nfail;
	f->value = value;
	return f;
}

static int
run_failing(heist_pool *pool, enum mode mode, struct failing *f, size_t begin, size_t end,
	    size_t grain)
{
	struct call c = {
		.pool = pool, .begin = begin, .end = end, .grain = grain,
		.body = failing_body, .arg = f, .returned = &f->returned,
	};
	return run_loop(mode, &c);
}

/* On one worker the bodies run one at a time, so "stops the chunks not yet started"
 * is exact: once a body has failed, no body starts, and the loop gives its value. */
static void
error_stops_unstarted_chunks_on_one_worker(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	const size_t grains[] = {0, 1, 7, 1000};
	const size_t n = 100000;
	const size_t where[] = {0, 1, n / 3, n / 2, n - 1};
	for (size_t m = 0; m < NMODES; m++)
		for (size_t g = 0; g < sizeof(grains) / sizeof(grains[0]); g++)
			for (size_t k = 0; k < sizeof(where) / sizeof(where[0]); k++) {
				struct failing *f = new_failing(where[k], 1, 1, 7);
				int r = run_failing(pool, ALL_MODES[m], f, 0, n, grains[g]);
				assert_int_equal(r, 7);
				assert_int_equal(atomic_load(&f->failures), 1);
				/* One thread runs chunks, so none starts after the failure;
				 * from outside the caller runs chunks beside the worker, and
				 * one of them may start while the other fails. */
				if (ALL_MODES[m] != FROM_OUTSIDE)
					assert_int_equal(atomic_load(&f->after_failure), 0);
				assert_int_equal(atomic_load(&f->after_return), 0);
				free(f);
			}
	heist_pool_destroy(pool);
}

/* The loop waits for the bodies that are running: after it returns, none runs. */
static void
no_body_runs_after_the_loop_returns(void **state)
{
	(void)state;
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *pool = make_pool(POOL_SIZES[p]);
		for (int round = 0; round < big.err_rounds; round++) {
			enum mode mode = ALL_MODES[round % NMODES];
			size_t n = 2000 + (size_t)round * 37;
			/* a failure somewhere, or none every fifth round */
			struct failing *f = new_failing(10 + (size_t)round * 997 % n, 1,
							round % 5 != 4, 7);
			f->slow = true;
			int r = run_failing(pool, mode, f, 10, 10 + n, round % 3);
			assert_int_equal(r, round % 5 != 4 ? 7 : 0);
			/* give a body that the loop did not wait for a chance to show */
			spin_a_while();
			spin_a_while();
			assert_int_equal(atomic_load(&f->after_return), 0);
			free(f);
		}
		heist_pool_destroy(pool);
	}
}

/* Exactly one chunk fails: the loop gives exactly its value. */
static void
single_failing_chunk_value_is_returned(void **state)
{
	(void)state;
	const size_t n = 20000;
	const size_t where[] = {0, n / 2, n - 1};
	const size_t grains[] = {0, 1, 7};
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *pool = make_pool(POOL_SIZES[p]);
		for (size_t m = 0; m < NMODES; m++)
			for (size_t g = 0; g < 3; g++)
				for (size_t k = 0; k < 3; k++) {
					struct failing *f = new_failing(where[k], 1, 1,
									(int)(41 + k));
					int r = run_failing(pool, ALL_MODES[m], f, 0, n, grains[g]);
					assert_int_equal(r, (int)(41 + k));
					assert_int_equal(atomic_load(&f->failures), 1);
					assert_int_equal(atomic_load(&f->after_return), 0);
					free(f);
				}
		heist_pool_destroy(pool);
	}
}

/* Many chunks would fail, each with its own value. On one worker only the first to
 * run does, and its value is returned; on two, the value returned is one that a
 * failing body returned (which of those is first is the scheduler's race). */
static void
first_failure_wins_among_many(void **state)
{
	(void)state;
	const size_t n = 50000;
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *pool = make_pool(POOL_SIZES[p]);
		for (size_t m = 0; m < NMODES; m++)
			for (size_t grain = 1; grain <= 3; grain++) {
				/* every 97th index from 1000 on fails */
				struct failing *f = new_failing(1000, 97, n, 0);
				int r = run_failing(pool, ALL_MODES[m], f, 0, n, grain);
				assert_in_range(r, 10000, 10000 + 4095);
				assert_true(atomic_load(&f->returned_value[r % 4096]));
				assert_int_equal(atomic_load(&f->after_return), 0);
				/* One executing thread: a 1-worker pool, unless the
				 * caller takes part (from outside) beside its worker. */
				if (POOL_SIZES[p] == 1 && ALL_MODES[m] != FROM_OUTSIDE) {
					assert_int_equal(atomic_load(&f->failures), 1);
					assert_int_equal(r, atomic_load(&f->first_value));
					assert_int_equal(atomic_load(&f->after_failure), 0);
				}
				free(f);
			}
		heist_pool_destroy(pool);
	}
}

/* Two failing chunks whose failures are ordered: the loop gives the first one's value.
 * Chunk 0 and chunk 1 of [0, 2) meet (each waits, with a bound, until the other has
 * entered), so both have passed the loop's "stop?" check. Chunk 0 then submits task Z
 * to its own worker's deque and fails with 11. Z can only run on chunk 0's worker
 * (the other is held in chunk 1), and only after chunk 0 has returned and its result
 * was recorded; chunk 1 waits until Z has run and then fails with 13. A loop that
 * let the later failure win gives 13. If the two chunks never run at the same time
 * (the scheduler need not split a two-index range), there is nothing to check: skip.
 * The meeting's bound only decides between checking and skipping, never pass or fail. */
/* 100 us naps: 2 s; an idle worker steals in far less. */
enum { MEET_NAP_NS = 100 * 1000, MEET_NAPS = 20 * 1000 };

struct ordered {
	heist_pool *pool;
	atomic_bool entered[2];
	atomic_bool z_ran;
	atomic_bool alone;	/* a chunk waited in vain for the other */
	atomic_bool returned;
	atomic_uint after_return;
};

static int
z_task(void *p)
{
	struct ordered *o = p;
	atomic_store(&o->z_ran, true);
	return 0;
}

static int
ordered_body(void *arg, size_t b, size_t e)
{
	struct ordered *o = arg;
	size_t me = b, other = 1 - b;
	long i;

	if (e != b + 1 || b > 1)
		return -1;
	if (me == 0) {
		/* A submit from a worker makes its deque public, the other half
		 * included, so an idle worker can take it at once. */
		if (heist_submit(o->pool, ret_int, NULL, NULL))
			return -1;
	}
	atomic_store(&o->entered[me], true);
	for (i = 0; i < MEET_NAPS && !atomic_load(&o->entered[other]); i++)
		nap(MEET_NAP_NS);
	if (i == MEET_NAPS) {
		atomic_store(&o->alone, true);
		return 0;
	}
	if (me == 0) {
		if (heist_submit(o->pool, z_task, o, NULL))
			return -1;
		return 11;
	}
	for (i = 0; i < MEET_NAPS && !atomic_load(&o->z_ran); i++)
		nap(MEET_NAP_NS);
	if (atomic_load(&o->returned))
		atomic_fetch_add(&o->after_return, 1);
	return i == MEET_NAPS ? -2 : 13;
}

static void
earlier_of_two_ordered_failures_wins(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	int rounds = 0;

	for (size_t m = 0; m < NMODES; m++) {
		struct ordered o = { .pool = pool };
		struct call c = {
			.pool = pool, .begin = 0, .end = 2, .grain = 1,
			.body = ordered_body, .arg = &o, .returned = &o.returned,
		};
		int r = run_loop(ALL_MODES[m], &c);
		assert_int_equal(atomic_load(&o.after_return), 0);
		if (atomic_load(&o.alone))
			break;	/* this scheduler does not split it: skip */
		assert_true(atomic_load(&o.z_ran));
		assert_int_equal(r, 11);
		rounds++;
	}
	heist_pool_destroy(pool);
	if (!rounds)
		skip();
}

/* heist_submit_bulk's future gives the body's nonzero result (exactly, when one chunk
 * fails) and 0 when none does. */
static void
submit_bulk_future_gives_first_nonzero(void **state)
{
	(void)state;
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *pool = make_pool(POOL_SIZES[p]);
		for (size_t grain = 0; grain < 4; grain++) {
			struct failing *f = new_failing(12345, 1, 1, 99);
			assert_int_equal(run_failing(pool, AS_BULK, f, 0, 30000, grain), 99);
			assert_int_equal(atomic_load(&f->failures), 1);
			free(f);
			f = new_failing(0, 1, 0, 99);
			assert_int_equal(run_failing(pool, AS_BULK, f, 0, 30000, grain), 0);
			assert_int_equal(atomic_load(&f->failures), 0);
			free(f);
			f = new_failing(100, 50, 1000, 0);
			int r = run_failing(pool, AS_BULK, f, 0, 30000, grain);
			assert_in_range(r, 10000, 10000 + 4095);
			assert_true(atomic_load(&f->returned_value[r % 4096]));
			free(f);
		}
		heist_pool_destroy(pool);
	}
}

/* ---------------------------------------------------------------------------------- */
/* Bad input                                                                          */

static atomic_uint bad_input_calls;

static int
count_body(void *arg, size_t b, size_t e)
{
	(void)arg;
	(void)b;
	(void)e;
	atomic_fetch_add(&bad_input_calls, 1);
	return 0;
}

static void
for_each_rejects_begin_after_end(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	atomic_store(&bad_input_calls, 0);
	assert_int_equal(heist_for_each(pool, 1, 0, 0, count_body, NULL), EINVAL);
	assert_int_equal(heist_for_each(pool, 100, 10, 1, count_body, NULL), EINVAL);
	assert_int_equal(heist_for_each(pool, SIZE_MAX, 0, 0, count_body, NULL), EINVAL);
	struct call c = {
		.pool = pool, .begin = 5, .end = 4, .grain = 1, .body = count_body,
	};
	assert_int_equal(run_loop(FROM_RUN, &c), EINVAL);
	assert_int_equal(run_loop(FROM_TASK, &c), EINVAL);
	heist_pool_destroy(pool);
	assert_int_equal(atomic_load(&bad_input_calls), 0);
}

static void
for_each_rejects_null_body(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	assert_int_equal(heist_for_each(pool, 0, 10, 0, NULL, NULL), EINVAL);
	assert_int_equal(heist_for_each(pool, 0, 0, 0, NULL, NULL), EINVAL);
	struct call c = { .pool = pool, .begin = 0, .end = 10, .grain = 1, .body = NULL };
	assert_int_equal(run_loop(FROM_RUN, &c), EINVAL);
	heist_pool_destroy(pool);
}

static void
for_each_rejects_null_pool(void **state)
{
	(void)state;
	atomic_store(&bad_input_calls, 0);
	assert_int_equal(heist_for_each(NULL, 0, 10, 0, count_body, NULL), EINVAL);
	assert_int_equal(heist_for_each(NULL, 0, 0, 0, count_body, NULL), EINVAL);
	assert_int_equal(heist_for_each(NULL, 0, 10, 0, NULL, NULL), EINVAL);
	assert_int_equal(atomic_load(&bad_input_calls), 0);
}

static void
submit_bulk_rejects_bad_input_and_clears_out(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_future *const junk = (heist_future *)(uintptr_t)0x1;
	heist_future *f;

	atomic_store(&bad_input_calls, 0);
	f = junk;
	assert_int_equal(heist_submit_bulk(pool, 1, 0, 0, count_body, NULL, &f), EINVAL);
	assert_null(f);
	f = junk;
	assert_int_equal(heist_submit_bulk(pool, SIZE_MAX, 3, 1, count_body, NULL, &f), EINVAL);
	assert_null(f);
	f = junk;
	assert_int_equal(heist_submit_bulk(pool, 0, 10, 0, NULL, NULL, &f), EINVAL);
	assert_null(f);
	f = junk;
	assert_int_equal(heist_submit_bulk(NULL, 0, 10, 0, count_body, NULL, &f), EINVAL);
	assert_null(f);
	/* and without a future */
	assert_int_equal(heist_submit_bulk(pool, 1, 0, 0, count_body, NULL, NULL), EINVAL);
	assert_int_equal(heist_submit_bulk(NULL, 0, 1, 0, count_body, NULL, NULL), EINVAL);
	assert_int_equal(heist_submit_bulk(pool, 0, 1, 0, NULL, NULL, NULL), EINVAL);
	heist_pool_destroy(pool);	/* runs anything that was queued after all */
	assert_int_equal(atomic_load(&bad_input_calls), 0);
}

/* Fire-and-forget bulk: the loop still runs to completion before destroy returns. */
static void
submit_bulk_without_future_runs_before_destroy_returns(void **state)
{
	(void)state;
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *pool = make_pool(POOL_SIZES[p]);
		size_t n = 30011;
		struct visit v = {
			.pool = pool, .begin = 0, .end = n, .grain = 3, .pool_size = POOL_SIZES[p],
			.hits = calloc(n, sizeof(atomic_uint)),
			.written = calloc(n, sizeof(uint32_t)),
		};
		assert_non_null(v.hits);
		assert_non_null(v.written);
		assert_int_equal(heist_submit_bulk(pool, 0, n, 3, visit_body, &v, NULL), 0);
		heist_pool_destroy(pool);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(atomic_load(&v.hits[i]), 1);
			assert_int_equal(v.written[i], mark(i));
		}
		assert_int_equal(atomic_load(&v.bad_range), 0);
		assert_int_equal(atomic_load(&v.bad_worker), 0);
		free(v.hits);
		free(v.written);
	}
}

/* ---------------------------------------------------------------------------------- */
/* Nesting                                                                            */

enum { NI = 17, NJ = 13, NK = 11 };

struct nest {
	heist_pool *pool;
	size_t grain;
	unsigned pool_size;
	bool caller_takes_part;	/* called from outside: its thread runs chunks (-1) */
	atomic_uint hits[NI][NJ][NK];
	atomic_uint bad;	/* a nested loop failed, or a body ran off the pool */
};

struct nest_at {
	struct nest *n;
	size_t i, j;
};

static int
nest_inner(void *arg, size_t b, size_t e)
{
	struct nest_at *at = arg;
	if (!may_run_body(at->n->pool, at->n->caller_takes_part) || e > NK || b >= e)
		atomic_fetch_add(&at->n->bad, 1);
	for (size_t k = b; k < e && k < NK; k++)
		atomic_fetch_add(&at->n->hits[at->i][at->j][k], 1);
	return 0;
}

static int
nest_middle(void *arg, size_t b, size_t e)
{
	struct nest_at *outer = arg;

	for (size_t j = b; j < e && j < NJ; j++) {
		struct nest_at at = {outer->n, outer->i, j};
		if (heist_for_each(outer->n->pool, 0, NK, outer->n->grain, nest_inner, &at))
			atomic_fetch_add(&outer->n->bad, 1);
	}
	return 0;
}

static int
nest_outer(void *arg, size_t b, size_t e)
{
	struct nest *n = arg;

	for (size_t i = b; i < e && i < NI; i++) {
		struct nest_at at = {n, i, 0};
		if (heist_for_each(n->pool, 0, NJ, n->grain, nest_middle, &at))
			atomic_fetch_add(&n->bad, 1);
	}
	return 0;
}

static void
check_nest(struct nest *n)
{
	size_t wrong = 0;
	for (size_t i = 0; i < NI; i++)
		for (size_t j = 0; j < NJ; j++)
			for (size_t k = 0; k < NK; k++)
				wrong += atomic_load(&n->hits[i][j][k]) != 1;
	assert_int_equal(wrong, 0);
	assert_int_equal(atomic_load(&n->bad), 0);
}

static void
for_each_nests_three_deep(void **state)
{
	(void)state;
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *pool = make_pool(POOL_SIZES[p]);
		for (size_t m = 0; m < NMODES; m++)
			for (size_t grain = 0; grain < 4; grain++) {
				struct nest *n = calloc(1, sizeof(*n));
				assert_non_null(n);
				n->pool = pool;
				n->grain = grain;
				n->pool_size = POOL_SIZES[p];
				n->caller_takes_part = ALL_MODES[m] == FROM_OUTSIDE;
				struct call c = {
					.pool = pool, .begin = 0, .end = NI, .grain = grain,
					.body = nest_outer, .arg = n,
				};
				assert_int_equal(run_loop(ALL_MODES[m], &c), 0);
				check_nest(n);
				free(n);
			}
		heist_pool_destroy(pool);
	}
}

/* A task submits a task that runs a nested loop, and waits for it: on one worker the
 * wait must run it (helping), on two either may. */
static int
submit_loop_and_wait(void *p)
{
	struct call *c = p;
	heist_future *f = NULL;

	if (heist_submit(c->pool, call_for_each, c, &f))
		return -1;
	int r = heist_future_wait(f);
	heist_future_release(f);
	return r;
}

static void
for_each_inside_a_task_that_another_task_waits_for(void **state)
{
	(void)state;
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *pool = make_pool(POOL_SIZES[p]);
		for (size_t grain = 0; grain < 3; grain++) {
			struct nest *n = calloc(1, sizeof(*n));
			assert_non_null(n);
			n->pool = pool;
			n->grain = grain;
			n->pool_size = POOL_SIZES[p];
			struct call c = {
				.pool = pool, .begin = 0, .end = NI, .grain = grain,
				.body = nest_outer, .arg = n,
			};
			atomic_init(&c.not_on_worker, 0);
			heist_future *f = NULL;
			assert_int_equal(heist_submit(pool, submit_loop_and_wait, &c, &f), 0);
			assert_int_equal(heist_future_wait(f), 0);
			heist_future_release(f);
			assert_int_equal(c.result, 0);
			assert_int_equal(atomic_load(&c.not_on_worker), 0);
			check_nest(n);
			free(n);
		}
		heist_pool_destroy(pool);
	}
}

/* A task of pool A runs a loop on pool B: the bodies run on B's workers, never on the
 * thread of A that called (it only waits), and every index once. */
struct cross {
	heist_pool *b;
	pthread_t a_thread;
	atomic_uint on_a;
	atomic_uint off_pool;
	atomic_uint hits[10007];
	int result;
};

static int
cross_body(void *arg, size_t b, size_t e)
{
	struct cross *x = arg;

	if (pthread_equal(pthread_self(), x->a_thread))
		atomic_fetch_add(&x->on_a, 1);
	if (!may_run_body(x->b, false))
		atomic_fetch_add(&x->off_pool, 1);
	for (size_t i = b; i < e && i < 10007; i++)
		atomic_fetch_add(&x->hits[i], 1);
	return 0;
}

static int
loop_on_other_pool(void *p)
{
	struct cross *x = p;

	x->a_thread = pthread_self();
	x->result = heist_for_each(x->b, 0, 10007, 1, cross_body, x);
	return 0;
}

static void
for_each_from_a_task_of_another_pool_runs_on_that_pool(void **state)
{
	(void)state;
	heist_pool *a = make_pool(1);
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *b = make_pool(POOL_SIZES[p]);
		struct cross *x = calloc(1, sizeof(*x));
		assert_non_null(x);
		x->b = b;
		x->result = -1;
		assert_int_equal(heist_run(a, loop_on_other_pool, x), 0);
		assert_int_equal(x->result, 0);
		assert_int_equal(atomic_load(&x->on_a), 0);
		assert_int_equal(atomic_load(&x->off_pool), 0);
		for (size_t i = 0; i < 10007; i++)
			assert_int_equal(atomic_load(&x->hits[i]), 1);
		free(x);
		heist_pool_destroy(b);
	}
	heist_pool_destroy(a);
}

/* An inner failure travels out through each level's body: the outer loop (level 2)
 * runs the middle one at index 2, the middle one (level 1) the inner one at index 3,
 * and the inner one (level 0) fails with 23 at index 5. */
struct fail_level {
	heist_pool *pool;
	int level;
};

static int
fail_nested(void *arg, size_t b, size_t e)
{
	static const size_t at[] = { 5, 3, 2 };
	const struct fail_level *l = arg;
	struct fail_level below = { l->pool, l->level - 1 };
	int r = 0;

	if (l->level == 0)
		return b <= at[0] && at[0] < e ? 23 : 0;
	for (size_t i = b; i < e && !r; i++)
		r = i == at[l->level] ? heist_for_each(l->pool, 0, 10, 1, fail_nested, &below) : 0;
	return r;
}

static void
nested_failure_is_returned_by_the_outer_loop(void **state)
{
	(void)state;
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *pool = make_pool(POOL_SIZES[p]);
		for (size_t m = 0; m < NMODES; m++) {
			struct fail_level outer = { pool, 2 };
			struct call c = {
				.pool = pool, .begin = 0, .end = 10, .grain = 1,
				.body = fail_nested, .arg = &outer,
			};
			assert_int_equal(run_loop(ALL_MODES[m], &c), 23);
		}
		heist_pool_destroy(pool);
	}
}

/* ---------------------------------------------------------------------------------- */
/* Thread accounting: an outside caller takes a parked worker's place (heist.h).      */

struct crowd {
	const heist_pool *pool;
	atomic_int inside, most;	/* bodies running now, and at most */
	atomic_int guest_bodies;	/* bodies the caller ran in the guest slot */
};

static int
crowd_body(void *arg, size_t begin, size_t end)
{
	struct crowd *c = arg;
	if (thread_role(c->pool) == ROLE_GUEST)
		atomic_fetch_add(&c->guest_bodies, 1);
	for (size_t i = begin; i < end; i++) {
		int now = atomic_fetch_add(&c->inside, 1) + 1;
		int most = atomic_load(&c->most);
		while (now > most && !atomic_compare_exchange_weak(&c->most, &most, now))
			;
		/* The gate: stay inside a while, so that every thread the pool lets run
		 * is in a body at once. */
		nap(200 * 1000);
		atomic_fetch_sub(&c->inside, 1);
	}
	return 0;
}

/* A pool of N never runs more than N of its threads at once while an outside caller
 * works in its guest slot: the caller runs bodies, and with it at most N - 1 workers.
 * The workers sleep when the loop starts (with all of them awake, the next to go to
 * sleep gives its place, and until then N + 1 may run), and the pool has no spare
 * threads: a spare stands in for a worker parked in a wait, and finishes the task it
 * runs after that worker resumes (heist.h, max_spares). */
static void
outside_loop_never_runs_more_threads_than_the_pool_has(void **state)
{
	(void)state;
	for (unsigned n = 1; n <= 3; n++) {
		struct heist_config cfg = {.threads = n, .max_spares = HEIST_SPARES_NONE};
		heist_pool *pool = make_pool_cfg(&cfg);
		for (int round = 0; round < 3; round++) {
			wait_until_parked(pool);
			struct crowd c = {.pool = pool};
			assert_int_equal(heist_for_each(pool, 0, 6 * n, 1, crowd_body, &c), 0);
			assert_true(atomic_load(&c.guest_bodies) >= 1);	/* it took part */
			if (atomic_load(&c.most) > (int)n)
				fail_msg("%d bodies ran at once in a pool of %u", atomic_load(&c.most),
					 n);
		}
		heist_pool_destroy(pool);
	}
}

/* The caller of an outside loop takes part however busy the workers are: here they
 * are still starting (searching), and then all held by other work. */
static int
hold_until_released(void *arg)
{
	atomic_bool *release = arg;
	while (!atomic_load(release))
		nap(100 * 1000);
	return 0;
}

static void
outside_caller_takes_part_when_every_worker_is_awake(void **state)
{
	(void)state;
	for (unsigned n = 1; n <= 2; n++) {
		heist_pool *pool = make_pool(n);
		struct crowd c = {.pool = pool};
		assert_int_equal(heist_for_each(pool, 0, 4, 1, crowd_body, &c), 0);
		assert_true(atomic_load(&c.guest_bodies) >= 1);
		/* Every worker busy: the caller runs the whole loop itself. */
		static atomic_bool release;
		atomic_store(&release, false);
		heist_future *f[2];
		for (unsigned i = 0; i < n; i++)
			assert_int_equal(heist_submit(pool, hold_until_released, &release, &f[i]),
					 0);
		struct crowd d = {.pool = pool};
		assert_int_equal(heist_for_each(pool, 0, 4, 1, crowd_body, &d), 0);
		assert_true(atomic_load(&d.guest_bodies) >= 1);
		atomic_store(&release, true);
		for (unsigned i = 0; i < n; i++) {
			assert_int_equal(heist_future_wait(f[i]), 0);
			heist_future_release(f[i]);
		}
		/* and the place it was owed comes back: the pool still works */
		check_pool_works(pool);
		wait_until_parked(pool);
		heist_pool_destroy(pool);
	}
}

/* A loop started inside another loop's body takes the nested automatic grain, 1/4 of
 * its range (heist.h), whatever its worker's deque holds: an inner loop of 4000 comes
 * in pieces of at most 1000 and, lazy halvings and remainders included, more than 250
 * (the flat grain would be 4000 / 16 per worker: 250 or less). */
struct inner {
	heist_pool *pool;
	atomic_uint pieces, wrong;
};

static int
inner_body(void *arg, size_t b, size_t e)
{
	struct inner *in = arg;
	atomic_fetch_add(&in->pieces, 1);
	if (e - b > 1000 || e - b <= 250)
		atomic_fetch_add(&in->wrong, 1);
	return 0;
}

static int
outer_body(void *arg, size_t b, size_t e)
{
	struct inner *in = arg;
	for (size_t i = b; i < e; i++) {
		int err = heist_for_each(in->pool, 0, 4000, 0, inner_body, in);
		if (err)
			return err;
	}
	return 0;
}

static void
loop_inside_a_body_takes_the_nested_grain(void **state)
{
	(void)state;
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *pool = make_pool(POOL_SIZES[p]);
		struct inner in = {.pool = pool};
		assert_int_equal(heist_for_each(pool, 0, 8, 1, outer_body, &in), 0);
		assert_true(atomic_load(&in.pieces) >= 8 * 4);
		assert_int_equal(atomic_load(&in.wrong), 0);
		heist_pool_destroy(pool);
	}
}

/* The first split hands each thread of the pool one contiguous share at once (heist.h):
 * on pools of 3 and 4, whichever way the loop is started, the first bodies of the
 * first N threads to run one begin where the N shares begin, k n / N, and no body
 * crosses a share's end. Each of those N first bodies waits at a gate until all N have
 * started, so no share can go to a thread that finished another one. (Halving gave
 * the third thread a quarter of the range, from a half another thread had started:
 * this test failed on that code.) Threads that come after the gate opened
 * (an awake worker beside an outside caller's N) take whatever is left. */
enum { SHARE_N = 1201, SHARE_MAX_THREADS = 8 };

struct shares {
	unsigned threads;
	size_t bounds[SHARE_MAX_THREADS + 1];	/* share k is [bounds[k], bounds[k+1]) */
	_Atomic(int) seen[SHARE_MAX_THREADS + 1];	/* by heist_thread_index() */
	/* Each thread's first body's begin, by heist_thread_index(); SIZE_MAX if none.
	 * By thread, not by arrival: once every share has started (and only then) a share
	 * may split before its runner's first body, and on a slow machine a thief's first
	 * body at the split may arrive before the runner's (seen under qemu). */
	size_t first[SHARE_MAX_THREADS + 1];
	atomic_uint arrived, crossed, bad_thread;
};

static int
share_body(void *arg, size_t b, size_t e)
{
	struct shares *s = arg;
	int ti = heist_thread_index();
	for (unsigned k = 1; k < s->threads; k++)
		if (b < s->bounds[k] && e > s->bounds[k])
			atomic_fetch_add(&s->crossed, 1);
	if (ti < 0 || ti > SHARE_MAX_THREADS) {
		atomic_fetch_add(&s->bad_thread, 1);
		return 0;
	}
	if (atomic_exchange(&s->seen[ti], 1))
		return 0;	/* not this thread's first body */
	s->first[ti] = b;	/* read after the loop returned */
	unsigned k = atomic_fetch_add(&s->arrived, 1);
	if (k >= s->threads)
		return 0;	/* after the gate opened */
	while (atomic_load(&s->arrived) < s->threads)
		spin_a_while();
	return 0;
}

static void
first_split_hands_each_thread_a_contiguous_share(void **state)
{
	(void)state;
	for (unsigned n = 3; n <= 4; n++) {
		heist_pool *pool = make_pool(n);
		for (int mode = 0; mode < MODES; mode++) {
			struct shares s = {.threads = n};
			for (unsigned t = 0; t <= SHARE_MAX_THREADS; t++)
				s.first[t] = SIZE_MAX;
			for (unsigned k = 0; k <= n; k++)
				s.bounds[k] = (size_t)SHARE_N * k / n;
			struct call c = {.pool = pool, .begin = 0, .end = SHARE_N, .grain = 0,
					 .body = share_body, .arg = &s};
			assert_int_equal(run_loop((enum mode)mode, &c), 0);
			assert_true(atomic_load(&s.arrived) >= n);
			assert_int_equal(atomic_load(&s.crossed), 0);
			assert_int_equal(atomic_load(&s.bad_thread), 0);
			/* each of the n share starts is some thread's first body (so n
			 * threads began at once, each at its own share; halving would begin
			 * them at 0, 1/2, 1/4, ...) */
			unsigned matched = 0;
			for (unsigned k = 0; k < n; k++)
				for (unsigned t = 0; t <= SHARE_MAX_THREADS; t++)
					if (s.first[t] == s.bounds[k]) {
						matched++;
						break;
					}
			if (matched != n)
				print_error("mode %s, %u threads: %u share starts are first bodies"
					    " (threads 0-3 began at %zu %zu %zu %zu)\n",
					    MODE_NAMES[mode], n, matched, s.first[0], s.first[1],
					    s.first[2], s.first[3]);
			assert_int_equal(matched, n);
		}
		heist_pool_destroy(pool);
	}
}

/* The first split's shares are public even when no worker was idle at the split: here
 * both workers are held in tasks (neither searching nor sleeping) when an outside
 * caller's loop splits, and share 0's first body releases them, then waits for a body
 * of share 1 on another thread. Shares left private (published only "if anyone is
 * idle") waited for the caller's next push or pop, which that body never reaches: the
 * workers searched, saw nothing, and slept, and the loop hung (a CI timeout of the
 * gate test above). Not timed: the wait fails only at the POLL bound. */
enum { BUSY_N = 1000 };
static struct hold busy_holds[2];

struct busy_split {
	atomic_int other_started;	/* a body of share 1 ran */
	atomic_int other_thread;	/* its heist_thread_index() */
	atomic_int first_thread;	/* share 0's runner */
	atomic_int waited_out;		/* share 0's first body gave up waiting */
};

static int
add_items_body(void *arg, size_t b, size_t e)
{
	atomic_fetch_add((atomic_uint *)arg, (unsigned)(e - b));
	return 0;
}

static int
busy_split_body(void *arg, size_t b, size_t e)
{
	struct busy_split *x = arg;
	(void)e;
	if (b == 0) {
		atomic_store(&x->first_thread, heist_thread_index());
		for (int k = 0; k < 2; k++)
			atomic_store(&busy_holds[k].open, 1);
		bool ok;
		POLL(ok, atomic_load(&x->other_started));
		if (!ok)
			atomic_store(&x->waited_out, 1);
	} else if (b >= BUSY_N / 2 && !atomic_exchange(&x->other_started, 1)) {
		atomic_store(&x->other_thread, heist_thread_index());
	}
	return 0;
}

static void
first_split_is_public_when_no_worker_is_idle(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_future *f[2] = {NULL, NULL};
	for (int k = 0; k < 2; k++) {
		busy_holds[k] = (struct hold){.ret = 0};
		hold_worker(pool, &busy_holds[k], &f[k]);
	}
	/* A loop of the caller's own first: its spawns answer the steal requests that
	 * the workers' last looks before sleeping left on the guest slot's deque (a
	 * spawn publishes to answer one), so that the loop below finds none pending. */
	atomic_uint ran = 0;
	assert_int_equal(heist_for_each(pool, 0, BUSY_N, 1, add_items_body, &ran), 0);
	assert_int_equal(atomic_load(&ran), BUSY_N);
	struct busy_split x = {.other_thread = -2, .first_thread = -2};
	assert_int_equal(heist_for_each(pool, 0, BUSY_N, 1, busy_split_body, &x), 0);
	assert_int_equal(atomic_load(&x.waited_out), 0);
	assert_int_equal(atomic_load(&x.other_started), 1);
	assert_true(atomic_load(&x.other_thread) != atomic_load(&x.first_thread));
	for (int k = 0; k < 2; k++)
		assert_int_equal(watched(f[k]), 0);
	heist_pool_destroy(pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(loop_inside_a_body_takes_the_nested_grain),
		cmocka_unit_test(first_split_hands_each_thread_a_contiguous_share),
		cmocka_unit_test(first_split_is_public_when_no_worker_is_idle),
		cmocka_unit_test(outside_loop_never_runs_more_threads_than_the_pool_has),
		cmocka_unit_test(outside_caller_takes_part_when_every_worker_is_awake),
		cmocka_unit_test(empty_range_never_calls_body_and_returns_zero),
		cmocka_unit_test(tiny_ranges_visit_each_index_once),
		cmocka_unit_test(odd_large_range_visits_each_index_once_from_outside),
		cmocka_unit_test(odd_large_range_visits_each_index_once_inside_tasks),
		cmocka_unit_test(odd_large_range_visits_each_index_once_as_bulk),
		cmocka_unit_test(million_index_range_visits_each_index_once),
		cmocka_unit_test(power_of_two_range_visits_each_index_once),
		cmocka_unit_test(range_ending_at_size_max_visits_each_index_once),
		cmocka_unit_test(subranges_are_half_open_nonempty_and_at_most_grain),
		cmocka_unit_test(body_runs_with_a_worker_index_of_the_pool),
		cmocka_unit_test(error_stops_unstarted_chunks_on_one_worker),
		cmocka_unit_test(no_body_runs_after_the_loop_returns),
		cmocka_unit_test(single_failing_chunk_value_is_returned),
		cmocka_unit_test(first_failure_wins_among_many),
		cmocka_unit_test(earlier_of_two_ordered_failures_wins),
		cmocka_unit_test(submit_bulk_future_gives_first_nonzero),
		cmocka_unit_test(for_each_rejects_begin_after_end),
		cmocka_unit_test(for_each_rejects_null_body),
		cmocka_unit_test(for_each_rejects_null_pool),
		cmocka_unit_test(submit_bulk_rejects_bad_input_and_clears_out),
		cmocka_unit_test(submit_bulk_without_future_runs_before_destroy_returns),
		cmocka_unit_test(for_each_nests_three_deep),
		cmocka_unit_test(for_each_inside_a_task_that_another_task_waits_for),
		cmocka_unit_test(for_each_from_a_task_of_another_pool_runs_on_that_pool),
		cmocka_unit_test(nested_failure_is_returned_by_the_outer_loop),
	};
	/* The large-range tests again, full size. */
	const struct CMUnitTest slow_tests[] = {
		cmocka_unit_test(odd_large_range_visits_each_index_once_from_outside),
		cmocka_unit_test(odd_large_range_visits_each_index_once_inside_tasks),
		cmocka_unit_test(odd_large_range_visits_each_index_once_as_bulk),
		cmocka_unit_test(power_of_two_range_visits_each_index_once),
		cmocka_unit_test(no_body_runs_after_the_loop_returns),
	};
	big = test_slow() ? BIG_SLOW : BIG_UNIT;
	return RUN_TESTS_OR_SLOW(tests, slow_tests);
}
