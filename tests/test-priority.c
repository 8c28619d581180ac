/* SPDX-License-Identifier: MIT */
/* test-priority.c - priorities (enum heist_priority): queued high tasks start before
 * queued normal and low ones, whatever order they were queued in and from whichever
 * thread (a high task submitted by a task goes ahead of that worker's own deque);
 * low tasks start last but are never starved, under a stream of normal or of high
 * work (the bound of heist.h: a look at the low queue every 64 task starts); groups,
 * bulk loops, dependent tasks and timed tasks carry their priority into the queue; a high task
 * waiting for a queued low one runs it at once (no inversion); every task of every
 * priority runs once, from many threads, through destroy and heist_pool_wait_idle;
 * heist_pool_pending counts them; bad input. Order is checked on one-worker pools
 * whose worker a hold keeps busy while the queues fill, so that nothing here depends
 * on timing: the order a single worker takes queued work in is the scheduler's rule. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "common.h"

/* Each task takes the next start number; started[] says which it got. */
static atomic_uint next_start;

struct job {
	unsigned start;		/* its start number, once it has run */
	atomic_uint runs;
};

static int
job_task(void *arg)
{
	struct job *j = arg;
	j->start = atomic_fetch_add(&next_start, 1);
	atomic_fetch_add(&j->runs, 1);
	return 0;
}

static void
jobs_reset(struct job *j, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		j[i].start = 0;
		atomic_store(&j[i].runs, 0);
	}
}

static void
expect_ran_once(struct job *j, size_t n)
{
	for (size_t i = 0; i < n; i++)
		assert_int_equal(atomic_load(&j[i].runs), 1);
}

static unsigned
latest(const struct job *j, size_t n)
{
	unsigned m = 0;
	for (size_t i = 0; i < n; i++)
		if (j[i].start > m)
			m = j[i].start;
	return m;
}

static unsigned
earliest(const struct job *j, size_t n)
{
	unsigned m = UINT32_MAX;
	for (size_t i = 0; i < n; i++)
		if (j[i].start < m)
			m = j[i].start;
	return m;
}

/* The queue's order within a priority: each started after the one queued before it. */
static void
expect_fifo(const struct job *j, size_t n)
{
	for (size_t i = 1; i < n; i++)
		assert_true(j[i].start > j[i - 1].start);
}

/* A one-worker pool whose worker sits in hold h until the test opens it. */
static heist_pool *
held_pool(struct hold *h, heist_future **held)
{
	heist_pool *pool = make_pool(1);
	atomic_store(&h->open, 0);
	atomic_store(&h->entered, 0);
	atomic_store(&h->left, 0);
	hold_worker(pool, h, held);
	atomic_store(&next_start, 0);
	return pool;
}

static void
open_and_finish(heist_pool *pool, struct hold *h, heist_future *held)
{
	atomic_store(&h->open, 1);
	assert_int_equal(watched(held), 0);
	assert_int_equal(heist_pool_wait_idle(pool), 0);
}

static void
high_before_normal_before_low_from_outside(void **state)
{
	(void)state;
	enum { N = 20 };
	static struct hold h;
	static struct job low[N], normal[N], high[N];
	jobs_reset(low, N), jobs_reset(normal, N), jobs_reset(high, N);
	heist_future *held;
	heist_pool *pool = held_pool(&h, &held);
	for (int i = 0; i < N; i++) {	/* interleaved, low first */
		assert_int_equal(heist_submit_priority(pool, HEIST_PRIORITY_LOW, job_task,
						       &low[i], NULL), 0);
		assert_int_equal(heist_submit(pool, job_task, &normal[i], NULL), 0);
		assert_int_equal(heist_submit_priority(pool, HEIST_PRIORITY_HIGH, job_task,
						       &high[i], NULL), 0);
	}
	assert_int_equal(heist_pool_pending(pool), 3 * N);
	open_and_finish(pool, &h, held);
	expect_ran_once(low, N), expect_ran_once(normal, N), expect_ran_once(high, N);
	/* Every high first; then the normal ones, but for the low task the starvation
	 * bound may let in (one per 64 task starts: at most one in these 61). */
	assert_true(latest(high, N) < earliest(normal, N));
	assert_true(latest(high, N) < earliest(low, N));
	unsigned lows_early = 0;
	for (int i = 0; i < N; i++)
		lows_early += low[i].start < latest(normal, N);
	assert_true(lows_early <= 1);
	expect_fifo(high, N), expect_fifo(normal, N), expect_fifo(low, N);
	heist_pool_destroy(pool);
}

/* A task queues normal work on its own deque, then a high task: the high one runs
 * next, ahead of the worker's own deque. */
struct from_task {
	heist_pool *pool;
	struct job *normal, *high;
	int n;
};

static int
submit_from_task(void *arg)
{
	struct from_task *ft = arg;
	for (int i = 0; i < ft->n; i++)
		if (heist_submit(ft->pool, job_task, &ft->normal[i], NULL))
			return 1;
	return heist_submit_priority(ft->pool, HEIST_PRIORITY_HIGH, job_task, ft->high, NULL);
}

static void
high_from_a_task_goes_ahead_of_its_own_deque(void **state)
{
	(void)state;
	enum { N = 10 };
	static struct job normal[N], high[1];
	jobs_reset(normal, N), jobs_reset(high, 1);
	atomic_store(&next_start, 0);
	heist_pool *pool = make_pool(1);
	struct from_task ft = {pool, normal, high, N};
	heist_future *f;
	assert_int_equal(heist_submit(pool, submit_from_task, &ft, &f), 0);
	assert_int_equal(watched(f), 0);
	assert_int_equal(heist_pool_wait_idle(pool), 0);
	expect_ran_once(normal, N), expect_ran_once(high, 1);
	assert_true(high[0].start < earliest(normal, N));
	heist_pool_destroy(pool);
}

/* One low task behind a stream of n tasks of priority p, all queued while the worker
 * is held: the low one starts within 64 task starts (heist.h's bound). */
static void
low_starts_within_the_bound_behind(int p)
{
	enum { N = 1000, BOUND = 64 };
	static struct hold h;
	static struct job stream[N], low[1];
	jobs_reset(stream, N), jobs_reset(low, 1);
	heist_future *held;
	heist_pool *pool = held_pool(&h, &held);
	assert_int_equal(heist_submit_priority(pool, HEIST_PRIORITY_LOW, job_task, low, NULL),
			 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(heist_submit_priority(pool, p, job_task, &stream[i], NULL), 0);
	open_and_finish(pool, &h, held);
	expect_ran_once(stream, N), expect_ran_once(low, 1);
	assert_true(low[0].start <= BOUND);
	heist_pool_destroy(pool);
}

static void
low_is_not_starved_by_normal_work(void **state)
{
	(void)state;
	low_starts_within_the_bound_behind(HEIST_PRIORITY_NORMAL);
}

static void
low_is_not_starved_by_high_work(void **state)
{
	(void)state;
	low_starts_within_the_bound_behind(HEIST_PRIORITY_HIGH);
}

static void
a_group_of_high_priority_goes_first(void **state)
{
	(void)state;
	enum { N = 10 };
	static struct hold h;
	static struct job normal[N], grouped[N];
	jobs_reset(normal, N), jobs_reset(grouped, N);
	heist_future *held;
	heist_pool *pool = held_pool(&h, &held);
	heist_group *g;
	assert_int_equal(heist_group_create(pool, &g), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(heist_submit(pool, job_task, &normal[i], NULL), 0);
	assert_int_equal(heist_group_set_priority(g, HEIST_PRIORITY_HIGH), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(heist_group_submit(g, job_task, &grouped[i]), 0);
	atomic_store(&h.open, 1);
	assert_int_equal(heist_group_wait(g), 0);
	assert_int_equal(watched(held), 0);
	assert_int_equal(heist_pool_wait_idle(pool), 0);
	expect_ran_once(normal, N), expect_ran_once(grouped, N);
	assert_true(latest(grouped, N) < earliest(normal, N));
	heist_group_destroy(g);
	heist_pool_destroy(pool);
}

/* A bulk loop's body records each element's start. */
static int
bulk_body(void *arg, size_t begin, size_t end)
{
	struct job *j = arg;
	for (size_t i = begin; i < end; i++)
		job_task(&j[i]);
	return 0;
}

/* A high bulk loop starts before queued normal work, a low one after it. */
static void
bulk_loops_start_by_priority(void **state)
{
	(void)state;
	enum { N = 10, M = 8 };
	static struct hold h;
	static struct job normal[N], high[M], low[M];
	jobs_reset(normal, N), jobs_reset(high, M), jobs_reset(low, M);
	heist_future *held;
	heist_pool *pool = held_pool(&h, &held);
	heist_future *fl, *fh;
	assert_int_equal(heist_submit_bulk_priority(pool, HEIST_PRIORITY_LOW, 0, M, 1,
						    bulk_body, low, &fl), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(heist_submit(pool, job_task, &normal[i], NULL), 0);
	assert_int_equal(heist_submit_bulk_priority(pool, HEIST_PRIORITY_HIGH, 0, M, 1,
						    bulk_body, high, &fh), 0);
	open_and_finish(pool, &h, held);
	assert_int_equal(watched(fl), 0);
	assert_int_equal(watched(fh), 0);
	expect_ran_once(normal, N), expect_ran_once(high, M), expect_ran_once(low, M);
	assert_true(latest(high, M) < earliest(normal, N));
	assert_true(latest(normal, N) < earliest(low, M));
	heist_future *f = SENTINEL;
	assert_int_equal(heist_submit_bulk_priority(pool, 5, 0, 1, 1, bulk_body, low, &f),
			 EINVAL);
	assert_null(f);
	heist_pool_destroy(pool);
}

/* Dependent tasks: queued at their own priority, or their group's, once runnable. */
static void
dependent_tasks_are_queued_at_their_priority(void **state)
{
	(void)state;
	enum { N = 10 };
	static struct hold h;
	static struct job normal[N], after[2];
	jobs_reset(normal, N), jobs_reset(after, 2);
	heist_future *held;
	heist_pool *pool = held_pool(&h, &held);
	heist_promise *p;
	heist_future *input;
	assert_int_equal(heist_promise_create(pool, &p, &input), 0);
	heist_group *g;
	assert_int_equal(heist_group_create(pool, &g), 0);
	assert_int_equal(heist_group_set_priority(g, HEIST_PRIORITY_HIGH), 0);
	struct heist_after own = {.priority = HEIST_PRIORITY_HIGH}, of_group = {.group = g};
	heist_future *f;
	assert_int_equal(heist_submit_after(pool, &input, 1, job_task, &after[0], &own, &f), 0);
	assert_int_equal(heist_submit_after(pool, &input, 1, job_task, &after[1], &of_group,
					    NULL), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(heist_submit(pool, job_task, &normal[i], NULL), 0);
	assert_int_equal(heist_promise_set(p, 0), 0);	/* both runnable, behind the rest */
	heist_promise_release(p);
	heist_future_release(input);
	open_and_finish(pool, &h, held);
	assert_int_equal(watched(f), 0);
	assert_int_equal(heist_group_wait(g), 0);
	expect_ran_once(normal, N), expect_ran_once(after, 2);
	assert_true(latest(after, 2) < earliest(normal, N));
	heist_group_destroy(g);
	heist_pool_destroy(pool);
}

/* A timed high task that comes due while normal work is queued goes ahead of it. */
static void
a_due_timed_task_keeps_its_priority(void **state)
{
	(void)state;
	enum { N = 10 };
	static struct hold h;
	static struct job normal[N], timed[1];
	jobs_reset(normal, N), jobs_reset(timed, 1);
	heist_future *held;
	heist_pool *pool = held_pool(&h, &held);
	for (int i = 0; i < N; i++)
		assert_int_equal(heist_submit(pool, job_task, &normal[i], NULL), 0);
	uint64_t due = heist_now_ns() + 1000 * 1000;
	struct heist_timing when = {.at_ns = due, .priority = HEIST_PRIORITY_HIGH};
	heist_future *f;
	assert_int_equal(heist_submit_timed(pool, &when, job_task, timed, &f), 0);
	while (heist_now_ns() <= due)	/* due before the worker is free */
		nap(NAP_NS);
	open_and_finish(pool, &h, held);
	assert_int_equal(watched(f), 0);
	expect_ran_once(normal, N), expect_ran_once(timed, 1);
	assert_true(timed[0].start < earliest(normal, N));
	heist_pool_destroy(pool);
}

/* A high task waits for a low one queued behind normal work: its worker runs the low
 * one at once (the waiting rule), before the normal work. */
struct waits_for {
	heist_future *low;
	struct job *self;
};

static int
high_waiting_for_low(void *arg)
{
	struct waits_for *wf = arg;
	job_task(wf->self);
	return heist_future_wait(wf->low);
}

static void
a_high_task_waiting_for_a_low_one_runs_it_first(void **state)
{
	(void)state;
	enum { N = 10 };
	static struct hold h;
	static struct job normal[N], low[1], high[1];
	jobs_reset(normal, N), jobs_reset(low, 1), jobs_reset(high, 1);
	heist_future *held;
	heist_pool *pool = held_pool(&h, &held);
	for (int i = 0; i < N; i++)
		assert_int_equal(heist_submit(pool, job_task, &normal[i], NULL), 0);
	struct waits_for wf = {NULL, high};
	assert_int_equal(heist_submit_priority(pool, HEIST_PRIORITY_LOW, job_task, low,
					       &wf.low), 0);
	heist_future *f;
	assert_int_equal(heist_submit_priority(pool, HEIST_PRIORITY_HIGH, high_waiting_for_low,
					       &wf, &f), 0);
	open_and_finish(pool, &h, held);
	assert_int_equal(watched(f), 0);
	heist_future_release(wf.low);
	expect_ran_once(normal, N), expect_ran_once(low, 1), expect_ran_once(high, 1);
	assert_true(high[0].start < low[0].start);
	assert_true(low[0].start < earliest(normal, N));
	heist_pool_destroy(pool);
}

/* Many threads queue tasks of every priority, and tasks queue more; destroy comes
 * while they are queued. Every one runs exactly once. */
enum { STRESS_THREADS = 3, STRESS_PER = 2000 };
static heist_pool *stress_pool;

static int
fan_out(void *arg)
{
	size_t id = (size_t)(uintptr_t)arg;
	/* A child of a priority chosen by id, from a worker; it counts id + 1. */
	int p = (int)(id % 3) - 1;
	if (heist_submit_priority(stress_pool, p, id_task,
				  (void *)(uintptr_t)(id + 1), NULL))
		return 1;
	return id_task(arg);
}

struct stress {
	heist_pool *pool;
	size_t first;
	atomic_int failed;
};

static void *
stress_thread(void *arg)
{
	struct stress *s = arg;
	for (size_t i = 0; i < STRESS_PER; i++) {
		size_t id = s->first + 2 * i;	/* even: fan_out counts id and id + 1 */
		int p = (int)((id / 2) % 3) - 1;
		if (heist_submit_priority(s->pool, p, fan_out, (void *)(uintptr_t)id, NULL))
			atomic_fetch_add(&s->failed, 1);
	}
	return NULL;
}

static void
every_task_of_every_priority_runs_once(void **state)
{
	(void)state;
	size_t n = (size_t)STRESS_THREADS * STRESS_PER * 2;
	ids_alloc(n);
	heist_pool *pool = make_pool(2);
	stress_pool = pool;
	struct stress s[STRESS_THREADS];
	pthread_t t[STRESS_THREADS];
	for (int i = 0; i < STRESS_THREADS; i++) {
		s[i] = (struct stress){pool, (size_t)i * STRESS_PER * 2, 0};
		assert_int_equal(pthread_create(&t[i], NULL, stress_thread, &s[i]), 0);
	}
	for (int i = 0; i < STRESS_THREADS; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(atomic_load(&s[i].failed), 0);
	}
	heist_pool_destroy(pool);	/* runs what is still queued */
	ids_expect(0, n, 1);
	ids_free();
}

static void
bad_input(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_future *f = SENTINEL;
	assert_int_equal(heist_submit_priority(pool, 2, ret_int, NULL, &f), EINVAL);
	assert_null(f);
	f = SENTINEL;
	assert_int_equal(heist_submit_priority(pool, -2, ret_int, NULL, &f), EINVAL);
	assert_null(f);
	assert_int_equal(heist_submit_priority(NULL, 0, ret_int, NULL, NULL), EINVAL);
	assert_int_equal(heist_submit_priority(pool, 1, NULL, NULL, NULL), EINVAL);
	heist_group *g;
	assert_int_equal(heist_group_create(pool, &g), 0);
	assert_int_equal(heist_group_set_priority(g, 3), EINVAL);
	assert_int_equal(heist_group_set_priority(NULL, 0), EINVAL);
	heist_group_destroy(g);
	struct heist_after bad_after = {.priority = 9};
	assert_int_equal(heist_submit_after(pool, NULL, 0, ret_int, NULL, &bad_after, NULL),
			 EINVAL);
	struct heist_timing bad_when = {.delay_ns = 1000, .priority = -7};
	assert_int_equal(heist_submit_timed(pool, &bad_when, ret_int, NULL, NULL), EINVAL);
	heist_pool_destroy(pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(high_before_normal_before_low_from_outside),
		cmocka_unit_test(high_from_a_task_goes_ahead_of_its_own_deque),
		cmocka_unit_test(low_is_not_starved_by_normal_work),
		cmocka_unit_test(low_is_not_starved_by_high_work),
		cmocka_unit_test(a_group_of_high_priority_goes_first),
		cmocka_unit_test(bulk_loops_start_by_priority),
		cmocka_unit_test(dependent_tasks_are_queued_at_their_priority),
		cmocka_unit_test(a_due_timed_task_keeps_its_priority),
		cmocka_unit_test(a_high_task_waiting_for_a_low_one_runs_it_first),
		cmocka_unit_test(every_task_of_every_priority_runs_once),
		cmocka_unit_test(bad_input),
	};
	return RUN_TESTS(tests);
}
