/* SPDX-License-Identifier: MIT */
/* test-local.c - per-thread scratch (src/local.c): a loop's bodies sum into their
 * thread's slot and the slots combine to the total; only the threads that asked have
 * slots (not one per spare slot); init sees a zeroed slot, once per slot; threads that
 * are not the pool's get NULL; bad input. Helpers: common.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum { ITEMS = 1000000 };

struct scratch {
	uint64_t sum;
	uint64_t inits;	/* init's mark: 1 */
	char pad[100];	/* more than fits a cache line's rest: slots stay apart */
};

static atomic_int inits, dirty;	/* dirty: init saw a slot not zero-filled */

static void
init_slot(void *slot, void *ctx)
{
	struct scratch *s = slot;
	if (s->sum || s->inits)	/* zero-filled first (no cmocka on a worker) */
		atomic_store(&dirty, 1);
	s->inits = (uint64_t)(uintptr_t)ctx;
	atomic_fetch_add(&inits, 1);
}

static int
body(void *arg, size_t begin, size_t end)
{
	struct scratch *s = heist_local_get(arg);
	if (!s)
		return ENOMEM;
	for (size_t i = begin; i < end; i++)
		s->sum += i;
	return 0;
}

struct totals {
	uint64_t sum;
	unsigned slots;
	bool marked;
};

static void
add_up(void *slot, void *ctx)
{
	struct scratch *s = slot;
	struct totals *t = ctx;
	t->sum += s->sum;
	t->slots++;
	t->marked &= s->inits == 1;
}

static void
a_loop_sums_into_its_threads_slots(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_local *l;
	atomic_store(&inits, 0);
	assert_int_equal(heist_local_create(pool, sizeof(struct scratch), init_slot, (void *)1,
					    &l),
			 0);
	for (int round = 0; round < 3; round++)
		assert_int_equal(heist_for_each(pool, 0, ITEMS, 100, body, l), 0);
	struct totals t = {0, 0, true};
	heist_local_each(l, add_up, &t);
	assert_true(t.sum == 3 * ((uint64_t)ITEMS * (ITEMS - 1) / 2));
	assert_true(t.marked);
	assert_int_equal(atomic_load(&dirty), 0);
	/* The two workers and the calling thread's guest slot at most, of 259. */
	assert_true(t.slots >= 1 && t.slots <= 3);
	assert_int_equal(atomic_load(&inits), (int)t.slots);
	assert_true(heist_pool_threads(pool) > 3);
	heist_local_destroy(l);
	heist_pool_destroy(pool);
}

static int
get_slot(void *arg)
{
	return heist_local_get(arg) ? 1 : 0;
}

static void
other_threads_get_null(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1), *other = make_pool(1);
	heist_local *l;
	assert_int_equal(heist_local_create(pool, 8, NULL, NULL, &l), 0);
	assert_null(heist_local_get(l));	/* the main thread is no thread of the pool */
	heist_future *f;
	assert_int_equal(heist_submit(other, get_slot, l, &f), 0);
	assert_int_equal(watched(f), 0);	/* a worker of another pool */
	assert_int_equal(heist_submit(pool, get_slot, l, &f), 0);
	assert_int_equal(watched(f), 1);
	assert_null(heist_local_get(NULL));
	heist_local_destroy(l);
	heist_pool_destroy(other);
	heist_pool_destroy(pool);
}

static void
bad_input_is_rejected(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_local *l = SENTINEL;
	assert_int_equal(heist_local_create(NULL, 8, NULL, NULL, &l), EINVAL);
	assert_null(l);
	l = SENTINEL;
	assert_int_equal(heist_local_create(pool, 0, NULL, NULL, &l), EINVAL);
	assert_null(l);
	assert_int_equal(heist_local_create(pool, 8, NULL, NULL, NULL), EINVAL);
	heist_local_each(NULL, NULL, NULL);
	heist_local_destroy(NULL);
	heist_pool_destroy(pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_loop_sums_into_its_threads_slots),
		cmocka_unit_test(other_threads_get_null),
		cmocka_unit_test(bad_input_is_rejected),
	};
	return RUN_TESTS(tests);
}
