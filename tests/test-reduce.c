/* SPDX-License-Identifier: MIT */
/* test-reduce.c - heist_reduce and heist_reduce_deterministic: exact integer sums over
 * empty, tiny, odd and large ranges and several grains on pools of 1, 2 and 3 workers;
 * a combine that is associative but not commutative (index order); double sums that
 * are the same bit for bit across pool sizes, grains kept, and repeated runs in the
 * deterministic form; large accumulators; calls from outside (several at once), from
 * a task and nested in a body; the first nonzero body result stops the rest and leaves *result alone;
 * bad input; allocation failure. Rules and helpers: common.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "faults.h"

static const unsigned POOL_SIZES[] = {1, 2, 3};
#define NPOOLS (sizeof(POOL_SIZES) / sizeof(POOL_SIZES[0]))

/* ---- integer sums -------------------------------------------------------------- */

/* Sum of i * i over the range, counting the bodies and the indices seen. */
struct sum_ctx {
	atomic_uint calls;
	atomic_size_t indices;
	atomic_uint bad_range;
	size_t begin, end, grain;
};

static int
sum_squares(void *arg, void *acc, size_t b, size_t e)
{
	struct sum_ctx *c = arg;
	atomic_fetch_add(&c->calls, 1);
	atomic_fetch_add(&c->indices, e - b);
	if (!(b < e && b >= c->begin && e <= c->end) || (c->grain && e - b > c->grain))
		atomic_fetch_add(&c->bad_range, 1);
	uint64_t *s = acc;
	for (size_t i = b; i < e; i++)
		*s += (uint64_t)i * i;
	return 0;
}

static void
add_u64(void *arg, void *into, const void *from)
{
	(void)arg;
	*(uint64_t *)into += *(const uint64_t *)from;
}

static uint64_t
squares_expected(size_t begin, size_t end)
{
	uint64_t s = 0;
	for (size_t i = begin; i < end; i++)
		s += (uint64_t)i * i;
	return s;
}

typedef int (*reduce_call)(heist_pool *, size_t, size_t, size_t, void *, size_t,
			   const void *, heist_reduce_fn, heist_combine_fn, void *);

static const reduce_call FORMS[] = {heist_reduce, heist_reduce_deterministic};

static void
check_sum(heist_pool *pool, reduce_call form, size_t begin, size_t end, size_t grain)
{
	struct sum_ctx c = {.begin = begin, .end = end, .grain = grain};
	uint64_t identity = 0, result = 7;	/* (the span test has an identity of 1s) */
	assert_int_equal(form(pool, begin, end, grain, &result, sizeof result, &identity,
			      sum_squares, add_u64, &c), 0);
	assert_true(result == squares_expected(begin, end));
	assert_int_equal(atomic_load(&c.bad_range), 0);
	assert_int_equal(atomic_load(&c.indices), end - begin);
}

static void
integer_sums_are_exact(void **state)
{
	(void)state;
	static const size_t RANGES[][2] = {
		{0, 1}, {5, 6}, {0, 2}, {3, 20}, {0, 1000}, {17, 100003}, {1u << 20, (1u << 20) + 65536},
	};
	static const size_t GRAINS[] = {0, 1, 3, 1000};
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *pool = make_pool(POOL_SIZES[p]);
		for (size_t f = 0; f < 2; f++)
			for (size_t r = 0; r < sizeof RANGES / sizeof RANGES[0]; r++)
				for (size_t g = 0; g < sizeof GRAINS / sizeof GRAINS[0]; g++) {
					if (GRAINS[g] == 1 && RANGES[r][1] - RANGES[r][0] > 2000)
						continue;	/* a task per index: slow, not new */
					check_sum(pool, FORMS[f], RANGES[r][0], RANGES[r][1],
						  GRAINS[g]);
				}
		heist_pool_destroy(pool);
	}
}

static void
empty_range_gives_the_identity_and_calls_nothing(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	for (size_t f = 0; f < 2; f++) {
		struct sum_ctx c = {0};
		uint64_t identity = 42, result = 1;
		assert_int_equal(FORMS[f](pool, 9, 9, 0, &result, sizeof result, &identity,
					  sum_squares, add_u64, &c), 0);
		assert_true(result == 42);
		result = 1;	/* NULL identity: zero bytes */
		assert_int_equal(FORMS[f](pool, 9, 9, 0, &result, sizeof result, NULL,
					  sum_squares, add_u64, &c), 0);
		assert_true(result == 0);
		assert_int_equal(atomic_load(&c.calls), 0);
	}
	heist_pool_destroy(pool);
}

/* ---- index order: a combine that is not commutative ----------------------------- */

/* The accumulator is the first and last index seen and whether the ranges met end
 * to begin: combining [a, b) with [b, c) gives [a, c); any other order breaks it. */
struct span {
	uint64_t first, last;	/* last + 1 == the end; first == UINT64_MAX when empty */
	uint64_t broken;
};

static int
span_body(void *arg, void *acc, size_t b, size_t e)
{
	(void)arg;
	struct span *s = acc;
	if (s->first == UINT64_MAX)
		s->first = b;
	else if (s->last + 1 != b)
		s->broken++;
	s->last = e - 1;
	return 0;
}

static void
span_combine(void *arg, void *into, const void *from)
{
	(void)arg;
	struct span *a = into;
	const struct span *b = from;
	a->broken += b->broken;
	if (b->first == UINT64_MAX)
		return;
	if (a->first == UINT64_MAX) {
		*a = *b;
		return;
	}
	if (a->last + 1 != b->first)
		a->broken++;
	a->last = b->last;
}

static void
ranges_combine_in_index_order(void **state)
{
	(void)state;
	const struct span empty = {UINT64_MAX, 0, 0};
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *pool = make_pool(POOL_SIZES[p]);
		for (size_t f = 0; f < 2; f++)
			for (int round = 0; round < 20; round++) {
				struct span s;
				assert_int_equal(FORMS[f](pool, 3, 50003, 7, &s, sizeof s, &empty,
							  span_body, span_combine, NULL), 0);
				assert_true(s.first == 3);
				assert_true(s.last == 50002);
				assert_true(s.broken == 0);
			}
		heist_pool_destroy(pool);
	}
}

/* ---- deterministic floating point ------------------------------------------------ */

/* Terms of very different magnitudes, so that any change of association changes
 * the rounding of the sum. */
static double
term(size_t i)
{
	return (i % 3 == 0 ? 1e10 : 1.0) / (double)(i + 1) * (i % 2 ? -1.0 : 1.0);
}

static int
sum_terms(void *arg, void *acc, size_t b, size_t e)
{
	(void)arg;
	double *s = acc;
	for (size_t i = b; i < e; i++)
		*s += term(i);
	return 0;
}

static void
add_double(void *arg, void *into, const void *from)
{
	(void)arg;
	*(double *)into += *(const double *)from;
}

static void
deterministic_double_sums_are_identical_for_every_pool_size(void **state)
{
	(void)state;
	enum { N = 200003, ROUNDS = 8 };
	static const size_t GRAINS[] = {0, 64, 5000};
	for (size_t g = 0; g < sizeof GRAINS / sizeof GRAINS[0]; g++) {
		double first = 0;
		bool have = false;
		for (size_t p = 0; p < NPOOLS; p++) {
			heist_pool *pool = make_pool(POOL_SIZES[p]);
			for (int round = 0; round < ROUNDS; round++) {
				double s = -1;
				assert_int_equal(heist_reduce_deterministic(pool, 0, N, GRAINS[g], &s,
									    sizeof s, NULL, sum_terms,
									    add_double, NULL), 0);
				if (!have) {
					first = s;
					have = true;
				}
				/* bit for bit, not within a tolerance */
				assert_memory_equal(&s, &first, sizeof s);
			}
			heist_pool_destroy(pool);
		}
	}
}

/* The plain form gives the same sum up to rounding. */
static void
plain_double_sums_are_close(void **state)
{
	(void)state;
	enum { N = 200003 };
	double serial = 0;
	sum_terms(NULL, &serial, 0, N);
	heist_pool *pool = make_pool(2);
	for (int round = 0; round < 8; round++) {
		double s = 0;
		assert_int_equal(heist_reduce(pool, 0, N, 0, &s, sizeof s, NULL, sum_terms,
					      add_double, NULL), 0);
		double d = s > serial ? s - serial : serial - s;
		assert_true(d <= 1e-9 * (serial > 0 ? serial : -serial));
	}
	heist_pool_destroy(pool);
}

/* ---- large accumulators ----------------------------------------------------------- */

enum { BUCKETS = 100 };	/* 800 bytes: above the accumulators kept in frames */

static int
histogram_body(void *arg, void *acc, size_t b, size_t e)
{
	(void)arg;
	uint64_t *h = acc;
	for (size_t i = b; i < e; i++)
		h[(i * 2654435761u) % BUCKETS]++;
	return 0;
}

static void
histogram_combine(void *arg, void *into, const void *from)
{
	(void)arg;
	uint64_t *a = into;
	const uint64_t *b = from;
	for (int k = 0; k < BUCKETS; k++)
		a[k] += b[k];
}

static void
large_accumulators_are_exact(void **state)
{
	(void)state;
	enum { N = 100000 };
	uint64_t want[BUCKETS] = {0};
	histogram_body(NULL, want, 0, N);
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *pool = make_pool(POOL_SIZES[p]);
		for (size_t f = 0; f < 2; f++) {
			uint64_t got[BUCKETS];
			assert_int_equal(FORMS[f](pool, 0, N, 97, got, sizeof got, NULL,
						  histogram_body, histogram_combine, NULL), 0);
			assert_memory_equal(got, want, sizeof got);
		}
		heist_pool_destroy(pool);
	}
}

/* ---- where it is called from -------------------------------------------------------- */

struct call {
	heist_pool *pool;
	size_t f;
	int result;
	uint64_t sum;
};

static int
reduce_in_task(void *arg)
{
	struct call *c = arg;
	struct sum_ctx sc = {.begin = 0, .end = 30011};
	c->result = FORMS[c->f](c->pool, 0, 30011, 0, &c->sum, sizeof c->sum, NULL,
				sum_squares, add_u64, &sc);
	return c->result;
}

/* A body that runs a reduction of its own over [0, i) for each of its indices. */
static int
nested_body(void *arg, void *acc, size_t b, size_t e)
{
	struct call *c = arg;
	for (size_t i = b; i < e; i++) {
		struct sum_ctx sc = {.begin = 0, .end = i};
		uint64_t inner;
		int r = FORMS[c->f](c->pool, 0, i, 2, &inner, sizeof inner, NULL, sum_squares,
				    add_u64, &sc);
		if (r)
			return r;
		*(uint64_t *)acc += inner;
	}
	return 0;
}

static void
reduces_from_a_task_and_nested_in_a_body(void **state)
{
	(void)state;
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *pool = make_pool(POOL_SIZES[p]);
		for (size_t f = 0; f < 2; f++) {
			struct call c = {.pool = pool, .f = f, .result = -1};
			heist_future *fu;
			assert_int_equal(heist_submit(pool, reduce_in_task, &c, &fu), 0);
			assert_int_equal(heist_future_wait(fu), 0);
			heist_future_release(fu);
			assert_int_equal(c.result, 0);
			assert_true(c.sum == squares_expected(0, 30011));

			uint64_t sum = 0, want = 0;
			for (size_t i = 0; i < 300; i++)
				want += squares_expected(0, i);
			assert_int_equal(FORMS[f](pool, 0, 300, 5, &sum, sizeof sum, NULL,
						  nested_body, add_u64, &c), 0);
			assert_true(sum == want);
		}
		heist_pool_destroy(pool);
	}
}

/* Outside callers at once: one has the guest slot, the others enter and wait. */
struct outside {
	heist_pool *pool;
	size_t f;
	atomic_uint wrong;
};

static void *
reduce_from_a_thread(void *arg)
{
	struct outside *o = arg;
	for (int round = 0; round < 50; round++) {
		struct sum_ctx sc = {.begin = 0, .end = 20011};
		uint64_t s = 0;
		if (FORMS[o->f](o->pool, 0, 20011, 0, &s, sizeof s, NULL, sum_squares, add_u64,
				&sc) ||
		    s != squares_expected(0, 20011))
			atomic_fetch_add(&o->wrong, 1);
	}
	return NULL;
}

static void
outside_callers_at_once_each_get_their_sum(void **state)
{
	(void)state;
	enum { THREADS = 3 };
	heist_pool *pool = make_pool(2);
	for (size_t f = 0; f < 2; f++) {
		struct outside o = {.pool = pool, .f = f};
		pthread_t t[THREADS];
		for (int k = 0; k < THREADS; k++)
			assert_int_equal(pthread_create(&t[k], NULL, reduce_from_a_thread, &o), 0);
		for (int k = 0; k < THREADS; k++)
			assert_int_equal(pthread_join(t[k], NULL), 0);
		assert_int_equal(atomic_load(&o.wrong), 0);
	}
	heist_pool_destroy(pool);
}

/* ---- errors ----------------------------------------------------------------------- */

struct fail_ctx {
	size_t bad;	/* the index whose range fails */
	atomic_uint after;	/* bodies started after the failing one returned */
	atomic_bool failed;
};

static int
fail_at(void *arg, void *acc, size_t b, size_t e)
{
	struct fail_ctx *c = arg;
	(void)acc;
	if (atomic_load(&c->failed))
		atomic_fetch_add(&c->after, 1);
	if (c->bad >= b && c->bad < e) {
		atomic_store(&c->failed, true);
		return 77;
	}
	return 0;
}

struct fail_call {
	heist_pool *pool;
	size_t f;
	struct fail_ctx c;
	uint64_t result;
	int r;
};

static int
fail_in_task(void *arg)
{
	struct fail_call *fc = arg;
	fc->r = FORMS[fc->f](fc->pool, 0, 100000, 10, &fc->result, sizeof fc->result, NULL,
			     fail_at, add_u64, &fc->c);
	return 0;
}

static void
the_first_error_stops_the_rest_and_leaves_the_result_alone(void **state)
{
	(void)state;
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *pool = make_pool(POOL_SIZES[p]);
		for (size_t f = 0; f < 2; f++)
			for (int inside = 0; inside < 2; inside++) {
				struct fail_call fc = {.pool = pool, .f = f, .result = 12345,
						       .c = {.bad = 0}};
				if (inside)
					assert_int_equal(heist_run(pool, fail_in_task, &fc), 0);
				else
					fail_in_task(&fc);
				assert_int_equal(fc.r, 77);
				assert_true(fc.result == 12345);
				/* The failing range is the first. On the one worker of a pool,
				 * from a task, nothing starts after it (the rest are in its own
				 * frames); otherwise at most what other threads had started,
				 * never the other 9,999 leaves. */
				if (POOL_SIZES[p] == 1 && inside)
					assert_int_equal(atomic_load(&fc.c.after), 0);
				assert_true(atomic_load(&fc.c.after) < 9000);
			}
		heist_pool_destroy(pool);
	}
}

static int
fail_always(void *arg, void *acc, size_t b, size_t e)
{
	(void)arg, (void)acc, (void)b, (void)e;
	return 77;
}

/* The first failure stops the splitting too, not only the bodies: a range of SIZE_MAX
 * indices at grain 1 that fails at its first leaf returns, in both forms (the
 * deterministic tree went on halving to the grain, for good). */
static void
a_failure_stops_a_huge_range(void **state)
{
	(void)state;
	for (size_t p = 0; p < NPOOLS; p++) {
		heist_pool *pool = make_pool(POOL_SIZES[p]);
		for (size_t f = 0; f < 2; f++) {
			uint64_t result = 12345;
			assert_int_equal(FORMS[f](pool, 0, SIZE_MAX, 1, &result, sizeof result,
						  NULL, fail_always, add_u64, NULL),
					 77);
			assert_true(result == 12345);
		}
		heist_pool_destroy(pool);
	}
}

static void
bad_input_is_rejected(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	uint64_t r = 5;
	struct sum_ctx c = {0};
	for (size_t f = 0; f < 2; f++) {
		assert_int_equal(FORMS[f](NULL, 0, 1, 0, &r, sizeof r, NULL, sum_squares,
					  add_u64, &c), EINVAL);
		assert_int_equal(FORMS[f](pool, 0, 1, 0, NULL, sizeof r, NULL, sum_squares,
					  add_u64, &c), EINVAL);
		assert_int_equal(FORMS[f](pool, 0, 1, 0, &r, 0, NULL, sum_squares, add_u64, &c),
				 EINVAL);
		assert_int_equal(FORMS[f](pool, 0, 1, 0, &r, sizeof r, NULL, NULL, add_u64, &c),
				 EINVAL);
		assert_int_equal(FORMS[f](pool, 0, 1, 0, &r, sizeof r, NULL, sum_squares, NULL,
					  &c), EINVAL);
		assert_int_equal(FORMS[f](pool, 2, 1, 0, &r, sizeof r, NULL, sum_squares,
					  add_u64, &c), EINVAL);
	}
	assert_true(r == 5);
	assert_int_equal(atomic_load(&c.calls), 0);
	heist_pool_destroy(pool);
}

/* Without memory for large accumulators: the plain form goes on without splitting
 * and is exact; the deterministic one reports ENOMEM and leaves *result alone. */
/* Under wine, failing the nth allocation of any thread ends the process now and then
 * (exit status 5, no message, 1 run in 6 to 16, at dada0dd too, before heist_graph): some thread
 * of the C runtime or of wine allocates through the wrapped malloc, and its failure is
 * not one heist could report. There the failures are the calling thread's only (the
 * outside caller's share and the root's accumulator); Linux keeps every thread's. */
#if defined(_WIN32)
#define ANY_THREAD_BUT_ON_WINDOWS FAULT_THIS_THREAD
#else
#define ANY_THREAD_BUT_ON_WINDOWS FAULT_ANY_THREAD
#endif

static void
allocation_failures_lose_nothing(void **state)
{
	(void)state;
	enum { N = 20000 };
	uint64_t want[BUCKETS] = {0};
	histogram_body(NULL, want, 0, N);
	heist_pool *pool = make_pool(2);
	for (uint64_t skip = 0; skip < 6; skip++) {
		uint64_t got[BUCKETS];
		fault_fail_nth(FAULT_ALLOC, skip, ANY_THREAD_BUT_ON_WINDOWS);
		int r = heist_reduce(pool, 0, N, 50, got, sizeof got, NULL, histogram_body,
				     histogram_combine, NULL);
		fault_disarm(FAULT_ALLOC);
		if (r == 0)
			assert_memory_equal(got, want, sizeof got);
		else
			assert_int_equal(r, ENOMEM);	/* the root's own accumulator */
	}
	uint64_t got[BUCKETS];
	memset(got, 0xab, sizeof got);
	uint64_t before[BUCKETS];
	memcpy(before, got, sizeof got);
	fault_fail_all(FAULT_ALLOC, ANY_THREAD_BUT_ON_WINDOWS);
	int r = heist_reduce_deterministic(pool, 0, N, 50, got, sizeof got, NULL,
					   histogram_body, histogram_combine, NULL);
	fault_disarm(FAULT_ALLOC);
	assert_int_equal(r, ENOMEM);
	assert_memory_equal(got, before, sizeof got);
	heist_pool_destroy(pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(integer_sums_are_exact),
		cmocka_unit_test(empty_range_gives_the_identity_and_calls_nothing),
		cmocka_unit_test(ranges_combine_in_index_order),
		cmocka_unit_test(deterministic_double_sums_are_identical_for_every_pool_size),
		cmocka_unit_test(plain_double_sums_are_close),
		cmocka_unit_test(large_accumulators_are_exact),
		cmocka_unit_test(reduces_from_a_task_and_nested_in_a_body),
		cmocka_unit_test(outside_callers_at_once_each_get_their_sum),
		cmocka_unit_test(the_first_error_stops_the_rest_and_leaves_the_result_alone),
		cmocka_unit_test(a_failure_stops_a_huge_range),
		cmocka_unit_test(bad_input_is_rejected),
		cmocka_unit_test(allocation_failures_lose_nothing),
	};
	return RUN_TESTS(tests);
}
