/* SPDX-License-Identifier: MIT */
/* test-deque.c - the deque alone: LIFO pop, FIFO steal, publishing the private
 * region, the owner's window past the array's end, a thief's request closing the
 * fast paths' bounds, growth across several doublings, the hazard cells that keep a retired array
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
setup_with(void **state, size_t capacity)
{
	struct deque *dq = test_aligned_alloc(CACHE_LINE, sizeof(*dq));
	if (!dq || heist__deque_init(dq, capacity, hazards, THIEVES + 1))
		return -1;
	*state = dq;
	return 0;
}

/* tiny, so tests also grow it */
static int setup(void **state) { return setup_with(state, 2); }

static int
teardown(void **state)
{
	heist__deque_fini(*state);
	test_aligned_free(*state);
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

/* A burst grows the deque to 64K slots (pages from the system); once it is empty a
 * trim brings it back to its first size, keeps an array a thief holds until the thief
 * lets go, and leaves a deque that still holds tasks as it is. */
static void
trim_brings_an_empty_deque_back_to_its_first_size(void **state)
{
	struct deque *dq = *state;
	enum { N = 50000 };
	for (uintptr_t i = 0; i < N; i++)
		assert_int_equal(heist__deque_push(dq, item(i)), 0);
	heist__deque_publish(dq, N / 2);	/* half public, half private */
	heist__deque_trim(dq, 2);		/* not empty: nothing changes */
	assert_true(dq->array->mask + 1 >= N);
	assert_int_equal(heist__deque_size(dq), N);
	struct task *t;
	assert_int_equal(heist__deque_steal(dq, &t, &hazards[0]), STEAL_OK);
	assert_ptr_equal(t, item(0));
	for (uintptr_t i = N; i-- > 1;)
		assert_ptr_equal(heist__deque_pop(dq), item(i));
	assert_null(heist__deque_pop(dq));
	struct deque_array *big = dq->array;
	atomic_store(&hazards[1].array, big);	/* a thief inside a steal of it */
	heist__deque_trim(dq, 2);
	assert_int_equal(dq->array->mask + 1, 2);
	assert_int_equal(retired_count(dq), 1);
	atomic_store(&hazards[1].array, NULL);
	heist__deque_trim(dq, 2);		/* already small: frees the retired one */
	assert_int_equal(retired_count(dq), 0);
	/* Works as before: LIFO for the owner, FIFO for thieves, and grows again. */
	for (uintptr_t i = 0; i < 10; i++)
		assert_int_equal(heist__deque_push(dq, item(i)), 0);
	heist__deque_publish(dq, 0);
	assert_int_equal(heist__deque_steal(dq, &t, &hazards[0]), STEAL_OK);
	assert_ptr_equal(t, item(0));
	for (uintptr_t i = 10; i-- > 1;)
		assert_ptr_equal(heist__deque_pop(dq), item(i));
	assert_null(heist__deque_pop(dq));
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

/* A deque of 8 slots and 2 more for the owner's window (deque.h). */
static int setup_8(void **state) { return setup_with(state, 8); }

/* heist/inline.h's fast paths, as the deque sees them: a push between split and limit,
 * a pop above split, nothing else. */
static bool
fast_push(struct deque *dq, struct task *t)
{
	dq_slot *h = atomic_load_explicit(&dq->head, memory_order_relaxed);
	if ((uintptr_t)h >= atomic_load_explicit(&dq->limit, memory_order_relaxed) ||
	    (uintptr_t)h < atomic_load_explicit(&dq->split, memory_order_relaxed))
		return false;
	atomic_store_explicit(h, t, memory_order_relaxed);
	atomic_store_explicit(&dq->head, h + 1, memory_order_relaxed);
	return true;
}

static struct task *
fast_pop(struct deque *dq)
{
	dq_slot *h = atomic_load_explicit(&dq->head, memory_order_relaxed);
	if ((uintptr_t)h <= atomic_load_explicit(&dq->split, memory_order_relaxed))
		return NULL;
	struct task *t = atomic_load_explicit(h - 1, memory_order_relaxed);
	atomic_store_explicit(&dq->head, h - 1, memory_order_relaxed);
	return t;
}

/* Private tasks past the array's end (the overhang) reach their own slots when they
 * are published and when the window moves on; popping below the window's start moves
 * it back. Every task comes out once, in LIFO order at the bottom and FIFO at the
 * top, whichever slot the owner kept it in. */
static void
window_moves_on_and_back_across_the_arrays_end(void **state)
{
	struct deque *dq = *state;
	assert_int_equal(dq->array->mask + 1, 8);
	assert_int_equal(dq->array->overhang, 2);
	push_public(dq, 4);
	for (uintptr_t i = 0; i < 4; i++)
		steal_expect(dq, i);	/* top 4: room up to index 12 */
	/* 4..7 in the array, 8 and 9 in the overhang, 10 moves the window on. */
	for (uintptr_t i = 4; i < 12; i++)
		assert_int_equal(heist__deque_push(dq, item(i)), 0);
	assert_int_equal(dq->origin, 8);
	assert_int_equal(dq->array->mask + 1, 8);	/* it moved, it did not grow */
	assert_int_equal(heist__deque_size(dq), 8);
	/* Back down: 11..8 in the window, 7..4 below it, private (low). */
	for (uintptr_t i = 12; i-- > 6;)
		assert_ptr_equal(heist__deque_pop(dq), item(i));
	assert_int_equal(dq->origin, 0);	/* moved back at 7 */
	/* Up again into the overhang, then a publish copies 8 and 9 to their own slots,
	 * where thieves find them after 4 and 5. */
	for (uintptr_t i = 6; i < 10; i++)
		assert_int_equal(heist__deque_push(dq, item(i)), 0);
	assert_int_equal(dq->origin, 0);
	heist__deque_publish(dq, 0);
	for (uintptr_t i = 4; i < 10; i++)
		steal_expect(dq, i);
	assert_null(heist__deque_pop(dq));
	assert_int_equal(heist__deque_size(dq), 0);
}

/* A thief's request closes both fast paths until a publish answers it, and a slow
 * path of the owner in between (one that moves the bounds) keeps them closed. */
static void
a_request_keeps_the_fast_paths_out_until_a_publish(void **state)
{
	struct deque *dq = *state;
	assert_true(fast_push(dq, item(0)));
	assert_ptr_equal(fast_pop(dq), item(0));
	assert_true(fast_push(dq, item(0)));
	struct task *t;
	assert_int_equal(heist__deque_steal(dq, &t, &hazards[0]), STEAL_EMPTY);
	assert_true(heist__deque_split_requested(dq));
	assert_false(fast_push(dq, item(1)));
	assert_null(fast_pop(dq));
	/* The library's push has room: no bound moves, the ring stays. */
	assert_int_equal(heist__deque_push(dq, item(1)), 0);
	/* Past the capacity: the slow path grows and sets the bounds; still rung. */
	for (uintptr_t i = 2; i < 12; i++)
		assert_int_equal(heist__deque_push(dq, item(i)), 0);
	assert_true(dq->array->mask + 1 > 8);
	assert_false(fast_push(dq, item(12)));
	assert_null(fast_pop(dq));
	heist__deque_publish(dq, 2);
	assert_false(heist__deque_split_requested(dq));
	assert_ptr_equal(fast_pop(dq), item(11));	/* kept private */
	assert_ptr_equal(fast_pop(dq), item(10));
	assert_null(fast_pop(dq));			/* 9 is public now */
	steal_expect(dq, 0);
	assert_ptr_equal(heist__deque_pop(dq), item(9));
	/* A public pop leaves split above the private region (no locked instruction
	 * per pop): the fast push and pop go to the library, whose heist_spawn and
	 * heist_sync set it again (heist__deque_reopen). */
	assert_true(atomic_load(&dq->split) > (uintptr_t)dq->floor);
	assert_false(fast_push(dq, item(9)));
	assert_int_equal(heist__deque_push(dq, item(9)), 0);
	assert_null(fast_pop(dq));
	heist__deque_reopen(dq);
	assert_ptr_equal(fast_pop(dq), item(9));
	assert_true(fast_push(dq, item(9)));
	assert_ptr_equal(heist__deque_peek_private(dq), item(9));
	heist__deque_set_bounds(dq);
	assert_ptr_equal(fast_pop(dq), item(9));
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

/* The owner pushes and pops with the library's calls, or (fast) first with the inline
 * fast paths' compares, as a worker running fork-join code does. */
static void
owner_and_thieves(void **state, bool fast)
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
			if (fast && fast_push(s.dq, item(next))) {
				next++;
				continue;
			}
			assert_int_equal(heist__deque_push(s.dq, item(next++)), 0);
			if (heist__deque_split_requested(s.dq))
				heist__deque_publish(s.dq, 0);
			else if (fast)
				heist__deque_reopen(s.dq);	/* as heist_spawn */
		}
		/* The fast owner keeps its deque shallow, as fork-join does: the array
		 * stays small, and as the thieves raise top the window moves on often. */
		if (fast) {
			int64_t leave = 8 + (int64_t)(rng >> 40) % 32;
			int64_t n = heist__deque_count(s.dq);
			pops = n > leave ? (unsigned)(n - leave) : 0;
			/* Every other round the owner hands out all but 4 and takes two
			 * from the top itself, so that top rises however the thieves
			 * are scheduled. */
			if (rng & 1) {
				heist__deque_publish(s.dq, 4);
				for (int k = 0; k < 2; k++) {
					struct task *t;
					if (heist__deque_steal(s.dq, &t, &hazards[0]) == STEAL_OK)
						take(&s, t, &popped_sum), popped++;
				}
			}
		}
		for (unsigned k = 0; k < pops; k++) {
			struct task *t = fast ? fast_pop(s.dq) : NULL;
			if (!t) {
				/* As heist__worker_pop answers a request. */
				heist__deque_reopen(s.dq);	/* as heist_sync */
				if (heist__deque_split_requested(s.dq) &&
				    heist__deque_private_count(s.dq) > 1)
					heist__deque_publish(s.dq, 1);
				t = heist__deque_pop(s.dq);
			}
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
	/* The fast owner's indices went round the array many times (its own steals
	 * alone raise top past 31,000, at 128 slots): its window moved on as often,
	 * and back (about 2,500 times on and 2,100 back, in three runs). */
	assert_true(!fast || atomic_load(&s.dq->top) > 100 * (s.dq->array->mask + 1));
	free((void *)s.taken);
}

static void
owner_and_three_thieves_take_each_item_once(void **state)
{
	owner_and_thieves(state, false);
}

/* The same with the fast paths: their bounds, the rings, the owner's window moving on
 * and back as the thieves raise top, every item taken once. */
static void
owner_fast_and_three_thieves_take_each_item_once(void **state)
{
	owner_and_thieves(state, true);
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
		cmocka_unit_test_setup_teardown(trim_brings_an_empty_deque_back_to_its_first_size,
						setup, teardown),
		cmocka_unit_test_setup_teardown(steal_above_takes_only_at_or_above_the_floor,
						setup, teardown),
		cmocka_unit_test_setup_teardown(window_moves_on_and_back_across_the_arrays_end,
						setup_8, teardown),
		cmocka_unit_test_setup_teardown(a_request_keeps_the_fast_paths_out_until_a_publish,
						setup_8, teardown),
		cmocka_unit_test_setup_teardown(owner_and_three_thieves_take_each_item_once,
						setup, teardown),
		cmocka_unit_test_setup_teardown(owner_fast_and_three_thieves_take_each_item_once,
						setup, teardown),
	};
	const struct CMUnitTest slow_tests[] = {
		cmocka_unit_test_setup_teardown(owner_and_three_thieves_take_each_item_once,
						setup, teardown),
		cmocka_unit_test_setup_teardown(owner_fast_and_three_thieves_take_each_item_once,
						setup, teardown),
	};
	return RUN_TESTS_OR_SLOW(tests, slow_tests);
}
