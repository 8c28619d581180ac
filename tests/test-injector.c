/* SPDX-License-Identifier: MIT */
/* test-injector.c - the injector alone (src/injector.c), white-box: FIFO order from one
 * producer; a batch take of at most max; take gives nothing on an empty queue, while
 * another consumer holds the flag, or when the last producer is between its exchange
 * and its link; the last node is handed out by putting the sentinel behind it; many
 * producers, one or two consumers, every item taken exactly once; and back-pressure:
 * with depth at the limit a reserve blocks until a take makes room, and the depth never
 * passes the limit. The injector inside a pool is tested by test-submit.c. Rules and
 * helpers: common.h; here helper threads are the producers and consumers, and they
 * record what they saw for the test thread to check.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <pthread.h>
#include <stdlib.h>

#include "common.h"
#include "injector.h"

/* Items each producer pushes in the concurrent tests, ten times fewer through a
 * limited queue (where nearly every push waits on a futex); ThreadSanitizer runs them
 * about 10x slower. */
#ifdef TEST_TSAN
enum { PER_PRODUCER = 5000 };
#else
enum { PER_PRODUCER = 50000 };
#endif
enum { PER_PRODUCER_LIMITED = PER_PRODUCER / 10 };
enum { PRODUCERS = 4, BATCH_MAX = 32, LIMIT = 4 };

/* Items are tasks whose arg is their id; the injector only links them. */
static struct task *
make_items(size_t n)
{
	struct task *items = calloc(n, sizeof *items);

	assert_non_null(items);
	for (size_t i = 0; i < n; i++)
		items[i].arg = (void *)(uintptr_t)i;
	return items;
}

static uintptr_t
id_of(const struct task *t)
{
	return (uintptr_t)t->arg;
}

/* What every producer does: a place, then the push. */
static void
submit(struct injector *q, struct task *t)
{
	heist__injector_reserve(q);
	heist__injector_push(q, t);
}

/* Aligned like the pool's: its fields are CACHE_ALIGNED. */
static struct injector *
new_injector(size_t limit)
{
	struct injector *q = test_aligned_alloc(CACHE_LINE, sizeof *q);

	assert_non_null(q);
	heist__injector_init(q, limit);
	return q;
}

/* An unlimited queue holding n fresh items, submitted in order. */
static struct injector *
filled_injector(size_t n, struct task **items)
{
	struct injector *q = new_injector(0);

	*items = make_items(n);
	for (size_t i = 0; i < n; i++)
		submit(q, &(*items)[i]);
	return q;
}

/* ---------------------------------------------------------------------------------- */
/* One thread                                                                         */

static void
take_from_an_empty_queue_gets_nothing(void **state)
{
	struct injector *q = new_injector(0);
	struct task *items = make_items(2), *out[4];

	(void)state;
	assert_int_equal(heist__injector_take(q, out, 4), 0);
	assert_int_equal(heist__injector_depth(q), 0);
	submit(q, &items[0]);
	submit(q, &items[1]);
	assert_int_equal(heist__injector_take(q, out, 4), 2);
	/* Drained: empty again, and the depth says so. */
	assert_int_equal(heist__injector_take(q, out, 4), 0);
	assert_int_equal(heist__injector_depth(q), 0);
	free(items);
	test_aligned_free(q);
}

static void
one_producer_is_taken_in_fifo_order(void **state)
{
	enum { N = 1000, MAX = 7 };
	struct task *items, *out[MAX];
	struct injector *q = filled_injector(N, &items);
	size_t next = 0;

	(void)state;
	assert_int_equal(heist__injector_depth(q), N);
	while (next < N) {
		size_t n = heist__injector_take(q, out, MAX);
		if (n == 0)
			fail_msg("take gave nothing with %zu of %d items left", N - next, N);
		for (size_t k = 0; k < n; k++, next++)
			if (id_of(out[k]) != next)
				fail_msg("item %zu taken where %zu was due", (size_t)id_of(out[k]),
					 next);
		assert_int_equal(heist__injector_depth(q), N - next);
	}
	assert_int_equal(heist__injector_take(q, out, MAX), 0);
	free(items);
	test_aligned_free(q);
}

static void
take_gets_at_most_max(void **state)
{
	static const size_t got[] = { 4, 4, 2, 0 };	/* ten items, four at a time */
	struct task *items, *out[10];
	struct injector *q = filled_injector(10, &items);
	size_t next = 0;

	(void)state;
	for (size_t k = 0; k < sizeof got / sizeof *got; k++) {
		assert_int_equal(heist__injector_take(q, out, 4), got[k]);
		for (size_t i = 0; i < got[k]; i++, next++)
			assert_int_equal(id_of(out[i]), next);
		assert_int_equal(heist__injector_depth(q), 10 - next);
	}
	free(items);
	test_aligned_free(q);
}

static void
take_fails_fast_while_another_consumer_holds_the_flag(void **state)
{
	struct task *items, *out[3];
	struct injector *q = filled_injector(3, &items);

	(void)state;
	atomic_store(&q->consuming, true);	/* as a worker in the middle of its take */
	assert_int_equal(heist__injector_take(q, out, 3), 0);
	assert_int_equal(heist__injector_depth(q), 3);
	atomic_store(&q->consuming, false);
	assert_int_equal(heist__injector_take(q, out, 3), 3);
	assert_false(atomic_load(&q->consuming));	/* the take gave the flag back */
	free(items);
	test_aligned_free(q);
}

/* The consumer may not hand out the last linked node while it is the tail (a producer
 * would link behind it); it pushes the sentinel behind it first, and the queue is back
 * where init left it: head and tail at the sentinel. */
static void
last_node_is_handed_out_by_putting_the_sentinel_behind_it(void **state)
{
	enum { ROUNDS = 100 };
	struct injector *q = new_injector(0);
	struct task *items = make_items(2 * ROUNDS), *out[2];

	(void)state;
	for (size_t r = 0; r < ROUNDS; r++) {
		struct task *a = &items[2 * r], *b = &items[2 * r + 1];

		/* One item: it is the last node and the tail. */
		submit(q, a);
		assert_int_equal(heist__injector_take(q, out, 2), 1);
		assert_ptr_equal(out[0], a);
		assert_ptr_equal(q->head, &q->sentinel);
		assert_ptr_equal(atomic_load(&q->tail), &q->sentinel);
		/* Two, taken one at a time: only the second needs the sentinel. */
		submit(q, a);
		submit(q, b);
		assert_int_equal(heist__injector_take(q, out, 1), 1);
		assert_ptr_equal(out[0], a);
		assert_ptr_equal(atomic_load(&q->tail), b);
		assert_int_equal(heist__injector_take(q, out, 1), 1);
		assert_ptr_equal(out[0], b);
		assert_ptr_equal(q->head, &q->sentinel);
		assert_ptr_equal(atomic_load(&q->tail), &q->sentinel);
		assert_int_equal(heist__injector_take(q, out, 2), 0);
	}
	free(items);
	test_aligned_free(q);
}

/* heist__injector_push in two halves, as a producer preempted between them would be. */
static void
push_exchange_only(struct injector *q, struct task *t, struct task **prev)
{
	heist__injector_reserve(q);
	atomic_store_explicit(&t->next, NULL, memory_order_relaxed);
	*prev = atomic_exchange_explicit(&q->tail, t, memory_order_acq_rel);
}

static void
push_link(struct task *prev, struct task *t)
{
	atomic_store_explicit(&prev->next, t, memory_order_release);
}

/* A producer that has exchanged the tail but not linked yet leaves a gap: take stops
 * in front of it (the depth still counts its item) and gets everything once linked. */
static void
take_stops_at_a_producer_between_exchange_and_link(void **state)
{
	struct injector *q = new_injector(0);
	struct task *items = make_items(3), *out[4], *prev;

	(void)state;
	/* Behind an empty queue's sentinel. */
	push_exchange_only(q, &items[0], &prev);
	assert_ptr_equal(prev, &q->sentinel);
	assert_int_equal(heist__injector_take(q, out, 4), 0);
	assert_int_equal(heist__injector_depth(q), 1);
	push_link(prev, &items[0]);
	assert_int_equal(heist__injector_take(q, out, 4), 1);
	assert_ptr_equal(out[0], &items[0]);

	/* Behind a linked item that is the last node: neither may be handed out. */
	submit(q, &items[1]);
	push_exchange_only(q, &items[2], &prev);
	assert_ptr_equal(prev, &items[1]);
	assert_int_equal(heist__injector_take(q, out, 4), 0);
	assert_int_equal(heist__injector_depth(q), 2);
	push_link(prev, &items[2]);
	assert_int_equal(heist__injector_take(q, out, 4), 2);
	assert_ptr_equal(out[0], &items[1]);
	assert_ptr_equal(out[1], &items[2]);
	assert_int_equal(heist__injector_depth(q), 0);
	free(items);
	test_aligned_free(q);
}

/* ---------------------------------------------------------------------------------- */
/* Many threads                                                                       */

struct traffic {
	struct injector *q;
	size_t per_producer;
	struct task *items;		/* producer p pushes [p * per_producer, +per_producer) */
	atomic_uint *taken;		/* per item: times taken */
	atomic_size_t total;		/* items taken, all consumers */
	atomic_size_t max_depth;	/* the most a producer saw queued after its reserve */
	atomic_uint out_of_order;	/* one consumer only: a producer's items reordered */
	atomic_uint gave_up;		/* a consumer found nothing for POLL_MAX naps */
	size_t *last_seen;		/* one consumer only: per producer, next id due */
};

struct producer {
	struct traffic *tr;
	unsigned p;
};

static void
note_max(atomic_size_t *max, size_t v)
{
	size_t seen = atomic_load(max);

	while (v > seen && !atomic_compare_exchange_weak(max, &seen, v))
		;
}

static void *
producer_main(void *arg)
{
	struct producer *pr = arg;
	struct traffic *tr = pr->tr;

	for (size_t i = 0; i < tr->per_producer; i++) {
		heist__injector_reserve(tr->q);
		/* Our reserved place is counted until a consumer takes our item. */
		note_max(&tr->max_depth, heist__injector_depth(tr->q));
		heist__injector_push(tr->q, &tr->items[pr->p * tr->per_producer + i]);
	}
	return NULL;
}

/* Takes until every item of every producer is taken. An empty take spins; every 1024
 * empty takes in a row it naps, and POLL_MAX naps without an item mean a lost item. */
static void *
consumer_main(void *arg)
{
	struct traffic *tr = arg;
	const size_t all = PRODUCERS * tr->per_producer;
	struct task *out[BATCH_MAX];
	long empty = 0;

	while (atomic_load(&tr->total) < all) {
		size_t n = heist__injector_take(tr->q, out, BATCH_MAX);
		if (n == 0) {
			if (++empty % 1024 == 0)
				nap(NAP_NS);
			if (empty == 1024L * POLL_MAX) {
				atomic_fetch_add(&tr->gave_up, 1);
				return NULL;
			}
			continue;
		}
		empty = 0;
		for (size_t k = 0; k < n; k++) {
			uintptr_t id = id_of(out[k]);
			atomic_fetch_add(&tr->taken[id], 1);
			if (tr->last_seen) {
				size_t p = id / tr->per_producer;
				if (id != tr->last_seen[p])
					atomic_fetch_add(&tr->out_of_order, 1);
				tr->last_seen[p] = id + 1;
			}
		}
		atomic_fetch_add(&tr->total, n);
	}
	return NULL;
}

/* PRODUCERS producer threads and `consumers` consumer threads over one queue. */
static void
run_traffic(size_t limit, unsigned consumers)
{
	enum { MAX_CONSUMERS = 2 };
	const size_t per_producer = limit ? PER_PRODUCER_LIMITED : PER_PRODUCER;
	const size_t all = PRODUCERS * per_producer;
	struct traffic tr = { .q = new_injector(limit), .per_producer = per_producer,
			      .items = make_items(all) };
	struct producer pr[PRODUCERS];
	pthread_t pt[PRODUCERS], ct[MAX_CONSUMERS];
	size_t last_seen[PRODUCERS];

	assert_true(consumers >= 1 && consumers <= MAX_CONSUMERS);
	tr.taken = calloc(all, sizeof *tr.taken);
	assert_non_null(tr.taken);
	for (unsigned p = 0; p < PRODUCERS; p++)
		last_seen[p] = p * per_producer;
	tr.last_seen = consumers == 1 ? last_seen : NULL;
	for (unsigned c = 0; c < consumers; c++)
		assert_int_equal(pthread_create(&ct[c], NULL, consumer_main, &tr), 0);
	for (unsigned p = 0; p < PRODUCERS; p++) {
		pr[p] = (struct producer){ &tr, p };
		assert_int_equal(pthread_create(&pt[p], NULL, producer_main, &pr[p]), 0);
	}
	for (unsigned p = 0; p < PRODUCERS; p++)
		pthread_join(pt[p], NULL);
	for (unsigned c = 0; c < consumers; c++)
		pthread_join(ct[c], NULL);

	assert_int_equal(atomic_load(&tr.gave_up), 0);
	assert_int_equal(atomic_load(&tr.total), all);
	for (size_t i = 0; i < all; i++)
		if (atomic_load(&tr.taken[i]) != 1)
			fail_msg("item %zu taken %u times", i, atomic_load(&tr.taken[i]));
	assert_int_equal(atomic_load(&tr.out_of_order), 0);
	assert_int_equal(heist__injector_depth(tr.q), 0);
	if (limit)
		assert_true(atomic_load(&tr.max_depth) <= limit);
	free(tr.taken);
	free(tr.items);
	test_aligned_free(tr.q);
}

/* One consumer also sees each producer's items in the order it pushed them. */
static void
many_producers_one_consumer_take_each_item_once_in_order(void **state)
{
	(void)state;
	run_traffic(0, 1);
}

/* Two consumers take turns at the flag. */
static void
many_producers_two_consumers_take_each_item_once(void **state)
{
	(void)state;
	run_traffic(0, 2);
}

static void
limited_queue_never_holds_more_than_its_limit(void **state)
{
	(void)state;
	run_traffic(LIMIT, 1);
}

/* ---------------------------------------------------------------------------------- */
/* Back-pressure                                                                      */

struct blocked {
	struct injector *q;
	struct task *item;
	atomic_int reserved;	/* the reserve returned */
	atomic_int pushed;
};

static void *
blocked_main(void *arg)
{
	struct blocked *b = arg;

	heist__injector_reserve(b->q);
	atomic_store(&b->reserved, 1);
	heist__injector_push(b->q, b->item);
	atomic_store(&b->pushed, 1);
	return NULL;
}

/* With depth at the limit a reserve blocks: its thread announces itself in
 * room_waiters, and that is what the test waits for (never a clock). A take makes
 * room, and the reserve returns. */
static void
reserve_blocks_at_the_limit_until_a_take_makes_room(void **state)
{
	struct injector *q = new_injector(LIMIT);
	struct task *items = make_items(LIMIT + 1), *out[LIMIT + 1];
	static struct blocked b;
	pthread_t t;
	bool ok;

	(void)state;
	for (size_t i = 0; i < LIMIT; i++)
		submit(q, &items[i]);
	assert_int_equal(heist__injector_depth(q), LIMIT);
	b = (struct blocked){ .q = q, .item = &items[LIMIT] };
	assert_int_equal(pthread_create(&t, NULL, blocked_main, &b), 0);
	POLL(ok, atomic_load(&q->room_waiters) == 1);
	assert_true(ok);
	/* It announced itself with depth at the limit, which nothing has changed. */
	assert_int_equal(atomic_load(&b.reserved), 0);
	assert_int_equal(heist__injector_depth(q), LIMIT);
	assert_int_equal(heist__injector_take(q, out, 1), 1);
	assert_int_equal(id_of(out[0]), 0);
	POLL(ok, atomic_load(&b.pushed));
	assert_true(ok);
	pthread_join(t, NULL);
	assert_int_equal(atomic_load(&q->room_waiters), 0);
	assert_int_equal(heist__injector_depth(q), LIMIT);
	assert_int_equal(heist__injector_take(q, out, LIMIT + 1), LIMIT);
	for (size_t k = 0; k < LIMIT; k++)
		assert_int_equal(id_of(out[k]), k + 1);
	free(items);
	test_aligned_free(q);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(take_from_an_empty_queue_gets_nothing),
		cmocka_unit_test(one_producer_is_taken_in_fifo_order),
		cmocka_unit_test(take_gets_at_most_max),
		cmocka_unit_test(take_fails_fast_while_another_consumer_holds_the_flag),
		cmocka_unit_test(last_node_is_handed_out_by_putting_the_sentinel_behind_it),
		cmocka_unit_test(take_stops_at_a_producer_between_exchange_and_link),
		cmocka_unit_test(many_producers_one_consumer_take_each_item_once_in_order),
		cmocka_unit_test(many_producers_two_consumers_take_each_item_once),
		cmocka_unit_test(limited_queue_never_holds_more_than_its_limit),
		cmocka_unit_test(reserve_blocks_at_the_limit_until_a_take_makes_room),
	};
	return RUN_TESTS(tests);
}
