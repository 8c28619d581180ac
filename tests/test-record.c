/* SPDX-License-Identifier: MIT */
/* test-record.c - the record cache alone (src/record.c), white-box: records are aligned
 * to their size and that long, and none overlaps another; a thread reuses the records
 * it freed without calling malloc again; records freed on another thread go back to
 * their home cache, so that the home thread's next allocations need no malloc (calls
 * counted by faults.c); and a thread that exits with records still out leaks nothing
 * once they come home, also when they come home while it exits (AddressSanitizer's
 * leak check at exit is the judge there, and ThreadSanitizer's for the hand-over); a
 * record freed by a thread's late key destructor still goes home. Job
 * records inside pools are tested by test-submit.c's ENOMEM test. Rules and helpers:
 * common.h; the helper threads here record what they saw for the test thread.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "faults.h"
#include "record.h"

/* Records a thread holds at once: several slabs' worth (a slab is 256 today, and
 * nothing here depends on that). */
enum { MANY = 4096, EXIT_ROUNDS = 20 };

/* Every test runs on records, then again on wide records (wide_ below): its own
 * cache beside the first, with the same rules. */
static bool wide;
static size_t rec_bytes = RECORD_BYTES;

static void *
rec_alloc(void)
{
	return wide ? heist__record_alloc_wide() : heist__record_alloc();
}

static int
use_wide(void **state)
{
	(void)state;
	wide = true;
	rec_bytes = WIDE_RECORD_BYTES;
	return 0;
}

static int
use_narrow(void **state)
{
	(void)state;
	wide = false;
	rec_bytes = RECORD_BYTES;
	return 0;
}

#define ON_BOTH(test) cmocka_unit_test(test), cmocka_unit_test_setup_teardown(test, use_wide, use_narrow)

static void
records_are_aligned_and_do_not_overlap(void **state)
{
	enum { N = 1000 };
	unsigned char **r = calloc(N, sizeof *r);
	size_t wrong = 0;

	(void)state;
	assert_non_null(r);
	for (size_t i = 0; i < N; i++) {
		r[i] = rec_alloc();
		assert_non_null(r[i]);
		assert_int_equal((uintptr_t)r[i] % rec_bytes, 0);	/* whole lines, its own */
		memset(r[i], (int)(i & 0xff), rec_bytes);
	}
	/* Every byte still holds what was written to its record. */
	for (size_t i = 0; i < N; i++)
		for (size_t k = 0; k < rec_bytes; k++)
			wrong += r[i][k] != (unsigned char)(i & 0xff);
	assert_int_equal(wrong, 0);
	for (size_t i = 0; i < N; i++)
		heist__record_free(r[i]);
	heist__record_free(NULL);	/* accepted, like free(NULL) */
	free(r);
}

static void
a_thread_reuses_the_records_it_freed(void **state)
{
	void **r = calloc(MANY, sizeof *r);
	uint64_t before;

	(void)state;
	assert_non_null(r);
	void *p = rec_alloc();
	assert_non_null(p);
	heist__record_free(p);
	assert_ptr_equal(rec_alloc(), p);	/* the last freed comes first */
	heist__record_free(p);

	for (size_t i = 0; i < MANY; i++)
		r[i] = rec_alloc();
	for (size_t i = 0; i < MANY; i++)
		heist__record_free(r[i]);
	before = fault_calls_this_thread(FAULT_ALLOC);
	for (size_t i = 0; i < MANY; i++) {
		r[i] = rec_alloc();
		assert_non_null(r[i]);
	}
	assert_int_equal(fault_calls_this_thread(FAULT_ALLOC) - before, 0);
	for (size_t i = 0; i < MANY; i++)
		heist__record_free(r[i]);
	free(r);
}

/* ---------------------------------------------------------------------------------- */
/* Records that travel                                                                */

struct batch {
	void **r;
	size_t n;
};

/* Frees a batch of records allocated elsewhere, and the batch. */
static void *
free_batch_main(void *arg)
{
	struct batch *b = arg;

	for (size_t i = 0; i < b->n; i++)
		heist__record_free(b->r[i]);
	free(b->r);
	free(b);
	return NULL;
}

static struct batch *
alloc_batch(size_t n)
{
	struct batch *b = calloc(1, sizeof *b);
	void **r = calloc(n, sizeof *r);

	if (!b || !r) {
		free(b);
		free(r);
		return NULL;
	}
	b->r = r;
	b->n = n;
	for (size_t i = 0; i < n; i++)
		if (!(r[i] = rec_alloc())) {
			b->n = i;	/* out of memory: the caller sees n short */
			break;
		}
	return b;
}

/* A fresh thread (its cache starts empty) allocates MANY records, another thread frees
 * them all, and the first allocates MANY again without calling malloc. (Which records
 * it gets is not checked: with a slab size that does not divide MANY, some come from
 * the rest of its last slab.) */
struct home {
	uint64_t first_mallocs, second_mallocs;
	int errors;		/* out of memory, or no thread */
};

static void *
home_main(void *arg)
{
	struct home *h = arg;
	struct batch *b = calloc(1, sizeof *b);
	void **again = calloc(MANY, sizeof *again);
	pthread_t t;
	uint64_t before;

	if (b)
		b->r = calloc(MANY, sizeof *b->r);
	if (!b || !b->r || !again) {
		h->errors++;
		if (b)
			free(b->r);
		free(b);
		free(again);
		return NULL;
	}
	before = fault_calls_this_thread(FAULT_ALLOC);
	for (b->n = 0; b->n < MANY && (b->r[b->n] = rec_alloc()); b->n++)
		;
	h->first_mallocs = fault_calls_this_thread(FAULT_ALLOC) - before;
	h->errors += b->n != MANY;
	if (pthread_create(&t, NULL, free_batch_main, b) != 0) {
		h->errors++;
		free_batch_main(b);
	} else {
		pthread_join(t, NULL);
	}
	before = fault_calls_this_thread(FAULT_ALLOC);
	for (size_t i = 0; i < MANY; i++)
		again[i] = rec_alloc();
	h->second_mallocs = fault_calls_this_thread(FAULT_ALLOC) - before;
	for (size_t i = 0; i < MANY; i++)
		heist__record_free(again[i]);
	free(again);
	return NULL;
}

static void
records_freed_on_another_thread_go_back_to_their_home_cache(void **state)
{
	struct home h = { 0 };
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, home_main, &h), 0);
	pthread_join(t, NULL);
	assert_int_equal(h.errors, 0);
	assert_true(h.first_mallocs > 0);	/* a fresh cache had to get memory */
	assert_int_equal(h.second_mallocs, 0);
}

/* A thread allocates records, frees some itself, and exits with the rest out; they are
 * freed later, on another thread. The cache must be freed when the last one comes
 * home: LeakSanitizer at exit reports it otherwise. The freeing thread holds the only
 * pointers to the records, and frees the array that held them, so that nothing left
 * on a stack keeps a leaked cache reachable. */
static void *
exit_with_records_out_main(void *arg)
{
	struct batch **out = arg;
	struct batch *b = alloc_batch(MANY);

	if (b)
		for (size_t i = 0; i < b->n; i += 3)	/* a third comes home before the exit */
			heist__record_free(b->r[i]), b->r[i] = NULL;
	*out = b;
	return NULL;
}

static void
a_thread_that_exits_with_records_out_leaks_nothing(void **state)
{
	(void)state;
	for (int round = 0; round < EXIT_ROUNDS; round++) {
		struct batch *b = NULL;
		pthread_t t;

		assert_int_equal(pthread_create(&t, NULL, exit_with_records_out_main, &b), 0);
		pthread_join(t, NULL);
		assert_non_null(b);
		assert_int_equal(b->n, MANY);
		assert_int_equal(pthread_create(&t, NULL, free_batch_main, b), 0);
		pthread_join(t, NULL);
	}
}

/* The same with the frees racing the exit: the owner hands its records over and
 * exits at once, while the other thread frees them. */
struct hand_over {
	pthread_t freer;
	bool started;		/* the freer runs, and is the test's to join */
};

static void *
hand_over_and_exit_main(void *arg)
{
	struct hand_over *ho = arg;
	struct batch *b = alloc_batch(MANY);

	if (!b)
		return NULL;
	ho->started = pthread_create(&ho->freer, NULL, free_batch_main, b) == 0;
	if (!ho->started)
		free_batch_main(b);
	return NULL;
}

static void
records_freed_while_their_thread_exits_leak_nothing(void **state)
{
	(void)state;
	for (int round = 0; round < EXIT_ROUNDS; round++) {
		struct hand_over ho = { .started = false };
		pthread_t owner;

		assert_int_equal(pthread_create(&owner, NULL, hand_over_and_exit_main, &ho), 0);
		pthread_join(owner, NULL);
		assert_true(ho.started);
		pthread_join(ho.freer, NULL);
	}
}

/* A record freed from a thread's key destructor that runs after the record cache's own
 * (a later key's, as a user's thread-local cleanup is), on a thread that held records
 * of another cache before: it still goes home. The home is a fresh thread, whose one
 * slab runs out within MANY allocations; after that they come from its remote stack,
 * where the late record must be. */
struct late_free {
	void *first, *late;
	pthread_key_t key;
	int found;		/* allocations until the late record came back; -1: never */
};

static void
late_destructor(void *p)
{
	heist__record_free(p);
}

static void *
late_freer_main(void *arg)
{
	struct late_free *lf = arg;
	heist__record_free(lf->first);	/* held: this thread now holds records */
	pthread_setspecific(lf->key, lf->late);
	return NULL;
}

static void *
late_home_main(void *arg)
{
	struct late_free *lf = arg;
	lf->found = -1;
	lf->first = rec_alloc();
	lf->late = rec_alloc();
	/* After the cache's keys exist (the first allocation made them): a higher
	 * index, so its destructor runs after theirs. */
	if (!lf->first || !lf->late || pthread_key_create(&lf->key, late_destructor))
		return NULL;
	pthread_t t;
	if (pthread_create(&t, NULL, late_freer_main, lf))
		return NULL;
	pthread_join(t, NULL);
	void **r = calloc(4 * MANY, sizeof *r);
	int n = 0;
	while (r && n < 4 * MANY && (r[n] = rec_alloc())) {
		if (r[n++] == lf->late) {
			lf->found = n;
			break;
		}
	}
	while (n > 0)
		heist__record_free(r[--n]);
	free(r);
	pthread_key_delete(lf->key);
	return NULL;
}

static void
a_record_freed_by_a_late_destructor_goes_home(void **state)
{
	(void)state;
	struct late_free lf = {0};
	pthread_t home;
	assert_int_equal(pthread_create(&home, NULL, late_home_main, &lf), 0);
	pthread_join(home, NULL);
	assert_true(lf.found > 0);
}

/* ---------------------------------------------------------------------------------- */
/* The high-water mark                                                                */

static void *
free_half_main(void *arg)
{
	struct batch *b = arg;
	for (size_t i = 0; i < b->n; i += 2)
		heist__record_free(b->r[i]);
	return NULL;
}

/* A burst of records, freed half here and half on another thread, is given back by a
 * trim but for a reserve of a few slabs; the cache still works after it. */
static void
trim_gives_back_what_a_burst_left(void **state)
{
	enum { BURST = 20000, SLAB = 64 * 1024, SLACK = 4 * SLAB };
	(void)state;
	heist__record_trim();
	size_t before = heap_in_use();
	if (!before)
		skip_because("no allocator statistics here (common.c, heap_in_use)");
	void **r = calloc(BURST, sizeof *r);
	assert_non_null(r);
	for (size_t i = 0; i < BURST; i++)
		assert_non_null(r[i] = rec_alloc());
	/* At least half the burst in new slabs: the reserve a trim keeps (a slab of
	 * 2,047 records, or 1,023 wide ones) may hold the rest. */
	size_t full = heap_in_use();
	assert_true(full >= before + (size_t)BURST / 2 * rec_bytes);
	struct batch b = {r, BURST};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, free_half_main, &b), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	for (size_t i = 1; i < BURST; i += 2)
		heist__record_free(r[i]);
	size_t home = heap_in_use();
	assert_true(home >= before + (size_t)BURST / 2 * rec_bytes);	/* kept until trim */
	heist__record_trim();
	size_t after = heap_in_use();
	if (after > before + SLACK)
		print_error("before %zu, full %zu, after trim %zu bytes\n", before, full, after);
	assert_true(after <= before + SLACK);
	for (size_t i = 0; i < BURST; i++)
		assert_non_null(r[i] = rec_alloc());
	for (size_t i = 0; i < BURST; i++)
		heist__record_free(r[i]);
	heist__record_trim();
	free(r);
}

/* Records of both sizes from one thread, in turn: none overlaps another, and the
 * thread exits with them all out; freed afterwards on this thread, each goes to its
 * own orphaned cache, and the last of each frees that cache (ASan's leak check). */
static void *
alloc_mixed_main(void *arg)
{
	struct batch *b = arg;
	for (size_t i = 0; i < b->n; i++) {
		size_t bytes = i & 1 ? WIDE_RECORD_BYTES : RECORD_BYTES;
		b->r[i] = i & 1 ? heist__record_alloc_wide() : heist__record_alloc();
		if (!b->r[i] || (uintptr_t)b->r[i] % bytes) {
			b->n = i;	/* the test sees it short */
			break;
		}
		memset(b->r[i], (int)(i & 0xff), bytes);
	}
	return NULL;
}

static void
both_sizes_mixed_go_home_and_are_trimmed(void **state)
{
	(void)state;
	struct batch b = {calloc(2 * MANY, sizeof(void *)), 2 * MANY};
	assert_non_null(b.r);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, alloc_mixed_main, &b), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(b.n, 2 * MANY);
	size_t wrong = 0;
	for (size_t i = 0; i < b.n; i++) {
		size_t bytes = i & 1 ? WIDE_RECORD_BYTES : RECORD_BYTES;
		for (size_t k = 0; k < bytes; k++)
			wrong += ((unsigned char *)b.r[i])[k] != (unsigned char)(i & 0xff);
	}
	assert_int_equal(wrong, 0);
	for (size_t i = 0; i < b.n; i++)
		heist__record_free(b.r[i]);
	/* This thread's own, of both sizes, trimmed together. */
	for (size_t i = 0; i < b.n; i++)
		assert_non_null(b.r[i] = i & 1 ? heist__record_alloc_wide() : heist__record_alloc());
	for (size_t i = 0; i < b.n; i++)
		heist__record_free(b.r[i]);
	heist__record_trim();
	free(b.r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		ON_BOTH(records_are_aligned_and_do_not_overlap),
		ON_BOTH(a_thread_reuses_the_records_it_freed),
		ON_BOTH(records_freed_on_another_thread_go_back_to_their_home_cache),
		ON_BOTH(a_thread_that_exits_with_records_out_leaks_nothing),
		ON_BOTH(records_freed_while_their_thread_exits_leak_nothing),
		ON_BOTH(a_record_freed_by_a_late_destructor_goes_home),
		ON_BOTH(trim_gives_back_what_a_burst_left),
		cmocka_unit_test(both_sizes_mixed_go_home_and_are_trimmed),
	};
	return RUN_TESTS(tests);
}
