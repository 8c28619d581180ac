/* SPDX-License-Identifier: MIT */
/* test-deque.c - the deque alone: LIFO pop, FIFO steal, publishing the private
 * region, growth across several doublings, the hazard cells that keep a retired array
 * alive while a thief reads it, the helper's conditional steal (floor and keep), and
 * an owner pushing, popping and growing while three thieves steal, every item taken
 * exactly once (suite 'slow' runs that with ten times the items). Deques inside pools
 * are tested through test-fork.c and friends. Helpers: common.h. */
#include <pthread.h>
#include <stdlib.h>

#include "common.h"
#include "deque.h"

/* Items of the stress test: sanitizer builds take a tenth of the slow suite's, and the
 * unit suite as many there, since with fewer the thieves often find nothing to steal
 * (100,000 under ASan: stolen == 0 in about one run in twenty). */
#ifdef TEST_SANITIZED
enum { STRESS_ITEMS_SLOW = 1000000, STRESS_ITEMS_UNIT = 1000000 };
#else
enum { STRESS_ITEMS_SLOW = 10000000, STRESS_ITEMS_UNIT = 1000000 };
#endif
enum { THIEVES = 3 };

/* One hazard cell per thief (the test thread is thief 0 in the single-thread tests). */
static struct hazard hazards[THIEVES + 1];

/* The deque never dereferences its tasks, so numbers stand in for them. */
static struct task *item(uintptr_t i) { return (struct task *)(i + 1); }
static uintptr_t index_of(struct task *t) { return (uintptr_t)t - 1; }

static int
setup(void **state)
{
	struct deque *dq = aligned_alloc(CACHE_LINE, sizeof(*dq));
	/* tiny, so tests also grow it */
	if (!dq || heist__deque_init(dq, 2, hazards, THIEVES + 1))
		return -1;
	*state = dq;
	return 0;
}

static int
teardown(void **state)
{
	heist__deque_fini(*state);
	free(*state);
	return 0;
}

static void
pop_is_lifo(void **state)
{
	struct deque *dq = *state;
	for (uintptr_t i = 0; i < 5; i++)
		assert_int_equal(heist__deque_push(dq, item(i)), 0);
	for (uintptr_t i = 5; i-- > 0;)
		assert_ptr_equal(heist__deque_pop(dq), item(i));
	assert_null(heist__deque_pop(dq));
	assert_int_equal(heist__deque_size(dq), 0);
}

static void
private_tasks_cannot_be_stolen(void **state)
{
	struct deque *dq = *state;
	struct task *t = NULL;
	assert_int_equal(heist__deque_push(dq, item(7)), 0);
	assert_int_equal(heist__deque_steal(dq, &t, &hazards[0]), STEAL_EMPTY);
	/* The failed steal asked the owner to publish. */
	assert_true(heist__deque_split_requested(dq));
	heist__deque_publish(dq, 0);
	assert_false(heist__deque_split_requested(dq));
	assert_int_equal(heist__deque_steal(dq, &t, &hazards[0]), STEAL_OK);
	assert_ptr_equal(t, item(7));
	assert_null(heist__deque_pop(dq));
}

/* Push items 0..n-1 and publish them all. */
static void
push_public(struct deque *dq, uintptr_t n)
{
	for (uintptr_t i = 0; i < n; i++)
		assert_int_equal(heist__deque_push(dq, item(i)), 0);
	heist__deque_publish(dq, 0);
}

/* The next steal takes item i. */
static void
steal_expect(struct deque *dq, uintptr_t i)
{
	struct task *t = NULL;
	assert_int_equal(heist__deque_steal(dq, &t, &hazards[0]), STEAL_OK);
	assert_ptr_equal(t, item(i));
}

static void
steal_is_fifo(void **state)
{
	struct deque *dq = *state;
	push_public(dq, 6);
	struct task *t;
	for (uintptr_t i = 0; i < 3; i++) {
		assert_int_equal(heist__deque_steal(dq, &t, &hazards[0]), STEAL_OK);
		assert_ptr_equal(t, item(i));
	}
	/* The owner takes the other end; public pops go through the CAS protocol. */
	assert_ptr_equal(heist__deque_pop(dq), item(5));
	assert_ptr_equal(heist__deque_pop(dq), item(4));
	assert_int_equal(heist__deque_steal(dq, &t, &hazards[0]), STEAL_OK);
	assert_ptr_equal(t, item(3));
	assert_null(heist__deque_pop(dq));
	assert_int_equal(heist__deque_steal(dq, &t, &hazards[0]), STEAL_EMPTY);
}

static void
grows_across_doublings(void **state)
{
	struct deque *dq = *state;
	enum { N = 5000 };	/* from 2 slots: twelve doublings */
	for (uintptr_t i = 0; i < N; i++) {
		assert_int_equal(heist__deque_push(dq, item(i)), 0);
		if (i == N / 2)
			heist__deque_publish(dq, 0);	/* grow with public and private parts */
	}
	assert_true(dq->array->mask + 1 >= 8192);	/* twelve doublings */
	assert_int_equal(heist__deque_size(dq), N);
	struct task *t;
	assert_int_equal(heist__deque_steal(dq, &t, &hazards[0]), STEAL_OK);
	assert_ptr_equal(t, item(0));
	for (uintptr_t i = N; i-- > 1;)
		assert_ptr_equal(heist__deque_pop(dq), item(i));
	assert_null(heist__deque_pop(dq));
	assert_null(dq->retired);	/* no thief held any of the old arrays */
}

static unsigned
retired_count(const struct deque *dq)
{
	unsigned n = 0;
	for (const struct deque_array *a = dq->retired; a; a = a->retired_next)
		n++;
	return n;
}

static void
retired_array_stays_while_a_thief_holds_it(void **state)
{
	struct deque *dq = *state;
	struct deque_array *first = dq->array;
	/* Thief 2 is inside a steal of the first array. */
	atomic_store(&hazards[2].array, first);
	for (uintptr_t i = 0; i < 3; i++)	/* 2 slots: the third push grows */
		assert_int_equal(heist__deque_push(dq, item(i)), 0);
	assert_ptr_not_equal(dq->array, first);
	assert_int_equal(retired_count(dq), 1);
	assert_ptr_equal(dq->retired, first);
	/* It lets go; the next growth frees what nobody holds. */
	atomic_store(&hazards[2].array, NULL);
	for (uintptr_t i = 3; i < 5; i++)	/* 4 slots: the fifth push grows */
		assert_int_equal(heist__deque_push(dq, item(i)), 0);
	assert_int_equal(retired_count(dq), 0);
	for (uintptr_t i = 5; i-- > 0;)
		assert_ptr_equal(heist__deque_pop(dq), item(i));
}

static bool keep_yes(const void *ctx) { (void)ctx; return true; }
static bool keep_no(const void *ctx) { (void)ctx; return false; }

static void
steal_above_takes_only_at_or_above_the_floor(void **state)
{
	struct deque *dq = *state;
	push_public(dq, 4);
	struct task *t = NULL;
	/* Items 0 and 1 are below floor 2: not the helper's to take. */
	assert_int_equal(heist__deque_steal_above(dq, 2, keep_yes, NULL, &t, &hazards[0]),
			 STEAL_EMPTY);
	assert_int_equal(heist__deque_size(dq), 4);
	steal_expect(dq, 0);
	steal_expect(dq, 1);
	/* The top is at the floor now, but the awaited task is done: nothing taken. */
	assert_int_equal(heist__deque_steal_above(dq, 2, keep_no, NULL, &t, &hazards[0]),
			 STEAL_EMPTY);
	assert_int_equal(heist__deque_size(dq), 2);
	assert_int_equal(heist__deque_steal_above(dq, 2, keep_yes, NULL, &t, &hazards[0]),
			 STEAL_OK);
	assert_ptr_equal(t, item(2));
	assert_null(atomic_load(&hazards[0].array));	/* every steal lets go */
	assert_ptr_equal(heist__deque_pop(dq), item(3));
	assert_null(heist__deque_pop(dq));
}

struct stress {
	struct deque *dq;
	uintptr_t items;
	_Atomic unsigned char *taken;	/* per item: how many times it was taken */
	_Atomic bool owner_done;
	_Atomic uint64_t stolen, stolen_sum;
	_Atomic uint64_t out_of_range;	/* thieves never call cmocka: checked after */
	_Atomic unsigned thieves_running;
};

static void
take(struct stress *s, struct task *t, uint64_t *sum)
{
	uintptr_t i = index_of(t);
	if (i >= s->items) {
		atomic_fetch_add(&s->out_of_range, 1);
		return;
	}
	atomic_fetch_add_explicit(&s->taken[i], 1, memory_order_relaxed);
	*sum += i;
}

struct thief_arg {
	struct stress *s;
	struct hazard *hazard;	/* the thief's own cell */
};

static void *
thief(void *arg)
{
	struct thief_arg *ta = arg;
	struct stress *s = ta->s;
	uint64_t n = 0, sum = 0;
	atomic_fetch_add(&s->thieves_running, 1);
	for (;;) {
		struct task *t;
		enum steal_result r = heist__deque_steal(s->dq, &t, ta->hazard);
		if (r == STEAL_OK) {
			take(s, t, &sum);
			n++;
		} else if (r == STEAL_EMPTY &&
			   atomic_load_explicit(&s->owner_done, memory_order_acquire)) {
			break;
		}
	}
	atomic_fetch_add(&s->stolen, n);
	atomic_fetch_add(&s->stolen_sum, sum);
	return NULL;
}

static void
owner_and_three_thieves_take_each_item_once(void **state)
{
	const uintptr_t items = test_slow() ? STRESS_ITEMS_SLOW : STRESS_ITEMS_UNIT;
	struct stress s = {.dq = *state, .items = items};
	s.taken = calloc(items, 1);
	assert_non_null(s.taken);
	pthread_t th[THIEVES];
	struct thief_arg ta[THIEVES];
	for (int i = 0; i < THIEVES; i++) {
		ta[i] = (struct thief_arg){&s, &hazards[i + 1]};
		assert_int_equal(pthread_create(&th[i], NULL, thief, &ta[i]), 0);
	}
	/* Push only once every thief runs, so that they can take part however short the
	 * run (the unit suite's is a tenth of the slow one's). */
	bool ok;
	POLL(ok, atomic_load(&s.thieves_running) == THIEVES);
	assert_true(ok);

	uint64_t popped = 0, popped_sum = 0, rng = 88172645463325252ULL;
	uintptr_t next = 0;
	while (next < items) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		unsigned burst = 1 + (unsigned)(rng % 64), pops = (unsigned)(rng >> 32) % 48;
		for (unsigned k = 0; k < burst && next < items; k++) {
			assert_int_equal(heist__deque_push(s.dq, item(next++)), 0);
			if (heist__deque_split_requested(s.dq))
				heist__deque_publish(s.dq, 0);
		}
		for (unsigned k = 0; k < pops; k++) {
			struct task *t = heist__deque_pop(s.dq);
			if (!t)
				break;
			take(&s, t, &popped_sum);
			popped++;
		}
	}
	for (struct task *t; (t = heist__deque_pop(s.dq));) {
		take(&s, t, &popped_sum);
		popped++;
	}
	atomic_store_explicit(&s.owner_done, true, memory_order_release);
	for (int i = 0; i < THIEVES; i++)
		pthread_join(th[i], NULL);

	uint64_t n = (uint64_t)items;
	assert_int_equal(atomic_load(&s.out_of_range), 0);
	assert_int_equal(popped + s.stolen, n);
	assert_int_equal(popped_sum + s.stolen_sum, n * (n - 1) / 2);
	for (uintptr_t i = 0; i < items; i++)
		if (atomic_load_explicit(&s.taken[i], memory_order_relaxed) != 1)
			fail_msg("item %zu taken %u times", (size_t)i, (unsigned)s.taken[i]);
	assert_true(s.stolen > 0);	/* the thieves did take part */
	assert_true(s.dq->array->mask > 1);	/* it grew while thieves stole */
	free((void *)s.taken);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(pop_is_lifo, setup, teardown),
		cmocka_unit_test_setup_teardown(private_tasks_cannot_be_stolen, setup, teardown),
		cmocka_unit_test_setup_teardown(steal_is_fifo, setup, teardown),
		cmocka_unit_test_setup_teardown(grows_across_doublings, setup, teardown),
		cmocka_unit_test_setup_teardown(retired_array_stays_while_a_thief_holds_it,
						setup, teardown),
		cmocka_unit_test_setup_teardown(steal_above_takes_only_at_or_above_the_floor,
						setup, teardown),
		cmocka_unit_test_setup_teardown(owner_and_three_thieves_take_each_item_once,
						setup, teardown),
	};
	const struct CMUnitTest slow_tests[] = {
		cmocka_unit_test_setup_teardown(owner_and_three_thieves_take_each_item_once,
						setup, teardown),
	};
	return RUN_TESTS_OR_SLOW(tests, slow_tests);
}
