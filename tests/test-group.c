/* SPDX-License-Identifier: MIT */
/* test-group.c - task groups (src/group.c): results and the first error, the rest
 * cancelled after it (never run, or heist_cancelled() inside), explicit cancel, groups
 * that grow from their own tasks, a group waited inside a task of another group, a
 * group waited inside one of its own tasks (EDEADLK, not a hang), many
 * waiters on one group while others submit, outside waiters asleep while the group
 * grows (round after round: none returns early, none sleeps through), destroy with tasks still running, bad
 * input, allocation failures, and no allocation per task in steady state. Helpers:
 * common.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "common.h"
#include "faults.h"

enum { MANY = 2000, WAITERS = 4, SUBMITTERS = 4, PER_SUBMITTER = 500 };

static heist_group *
make_group(heist_pool *pool)
{
	heist_group *g = SENTINEL;
	assert_int_equal(heist_group_create(pool, &g), 0);
	assert_non_null(g);
	return g;
}

static void
results_of_zero_give_zero_and_every_task_runs(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_group *g = make_group(pool);
	static atomic_uint runs;
	atomic_store(&runs, 0);
	for (int i = 0; i < MANY; i++)
		assert_int_equal(heist_group_submit(g, count_task, &runs), 0);
	assert_int_equal(heist_group_wait(g), 0);
	assert_int_equal(atomic_load(&runs), MANY);
	/* Waiting again, and after more submits. */
	assert_int_equal(heist_group_wait(g), 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(heist_group_submit(g, count_task, &runs), 0);
	assert_int_equal(heist_group_wait(g), 0);
	assert_int_equal(atomic_load(&runs), MANY + 10);
	heist_group_destroy(g);
	heist_pool_destroy(pool);
}

/* One worker held: the group's tasks queue behind the one that fails first. */
struct failing {
	atomic_uint ran_after_error;
	atomic_bool error_returned;
};

static int
fail_with_7(void *arg)
{
	struct failing *f = arg;
	atomic_store(&f->error_returned, true);
	return 7;
}

static int
late_task(void *arg)
{
	struct failing *f = arg;
	if (atomic_load(&f->error_returned))
		atomic_fetch_add(&f->ran_after_error, 1);
	return 0;
}

static void
first_error_is_returned_and_the_rest_never_run(void **state)
{
	(void)state;
	static struct hold hold;
	struct failing f = {0};
	hold = (struct hold){0};
	heist_pool *pool = make_pool(1);
	heist_group *g = make_group(pool);
	heist_future *hf;
	hold_worker(pool, &hold, &hf);	/* the only worker is busy: all queue */
	assert_int_equal(heist_group_submit(g, fail_with_7, &f), 0);
	for (int i = 0; i < 100; i++)
		assert_int_equal(heist_group_submit(g, late_task, &f), 0);
	atomic_store(&hold.open, 1);
	/* FIFO from outside: the failing task runs first, the token cancels the rest
	 * before the worker takes them. */
	assert_int_equal(heist_group_wait(g), 7);
	assert_int_equal(atomic_load(&f.ran_after_error), 0);
	/* Later submits are cancelled too: the group stays cancelled. */
	assert_int_equal(heist_group_submit(g, late_task, &f), 0);
	assert_int_equal(heist_group_wait(g), 7);
	assert_int_equal(atomic_load(&f.ran_after_error), 0);
	assert_int_equal(heist_future_wait(hf), 0);
	heist_future_release(hf);
	heist_group_destroy(g);
	heist_pool_destroy(pool);
}

/* A task that runs until the group is cancelled by another task's error. */
struct watch {
	atomic_bool running;
	atomic_int saw;
};

static int
watch_until_cancelled(void *arg)
{
	struct watch *w = arg;
	bool ok;
	atomic_store(&w->running, true);
	POLL(ok, heist_cancelled());
	atomic_store(&w->saw, ok);
	return 0;
}

static int
fail_once_watcher_runs(void *arg)
{
	struct watch *w = arg;
	bool ok;
	POLL(ok, atomic_load(&w->running));
	return ok ? 9 : -1;
}

static void
error_turns_cancelled_true_in_running_tasks(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_group *g = make_group(pool);
	struct watch w = {.saw = -1};
	assert_int_equal(heist_group_submit(g, watch_until_cancelled, &w), 0);
	assert_int_equal(heist_group_submit(g, fail_once_watcher_runs, &w), 0);
	assert_int_equal(heist_group_wait(g), 9);
	assert_int_equal(atomic_load(&w.saw), 1);
	heist_group_destroy(g);
	heist_pool_destroy(pool);
}

static void
cancel_stops_queued_tasks_and_is_seen_by_running_ones(void **state)
{
	(void)state;
	static struct hold hold;
	hold = (struct hold){0};
	heist_pool *pool = make_pool(1);
	heist_group *g = make_group(pool);
	static atomic_uint runs;
	atomic_store(&runs, 0);
	heist_future *hf;
	hold_worker(pool, &hold, &hf);
	for (int i = 0; i < 50; i++)
		assert_int_equal(heist_group_submit(g, count_task, &runs), 0);
	heist_group_cancel(g);
	heist_group_cancel(g);	/* idempotent */
	atomic_store(&hold.open, 1);
	assert_int_equal(heist_group_wait(g), ECANCELED);
	assert_int_equal(atomic_load(&runs), 0);
	heist_group_cancel(NULL);
	assert_int_equal(heist_future_wait(hf), 0);
	heist_future_release(hf);
	heist_group_destroy(g);
	heist_pool_destroy(pool);
}

/* A group that grows from its own tasks: a binary tree of group submits. */
struct grow {
	heist_group *g;
	atomic_uint nodes;
};

struct grow_node {
	struct grow *gr;
	unsigned depth;
};

static int
grow_task(void *arg)
{
	struct grow_node *n = arg;
	atomic_fetch_add(&n->gr->nodes, 1);
	if (n->depth) {
		for (int i = 0; i < 2; i++) {
			struct grow_node *k = malloc(sizeof(*k));
			if (!k)
				return ENOMEM;
			*k = (struct grow_node){n->gr, n->depth - 1};
			if (heist_group_submit(n->gr->g, grow_task, k))
				return -1;
		}
	}
	free(n);
	return 0;
}

static void
group_grows_from_its_own_tasks(void **state)
{
	(void)state;
	enum { DEPTH = 10 };
	heist_pool *pool = make_pool(2);
	struct grow gr = {make_group(pool), 0};
	struct grow_node *root = malloc(sizeof(*root));
	assert_non_null(root);
	*root = (struct grow_node){&gr, DEPTH};
	assert_int_equal(heist_group_submit(gr.g, grow_task, root), 0);
	assert_int_equal(heist_group_wait(gr.g), 0);
	assert_int_equal(atomic_load(&gr.nodes), (1u << (DEPTH + 1)) - 1);
	heist_group_destroy(gr.g);
	heist_pool_destroy(pool);
}

/* A task of group A creates group B, fills it, and waits for it: the waiter runs B's
 * tasks from its own deque, and on one worker nothing else could. */
struct nest {
	heist_pool *pool;
	atomic_uint inner_runs;
};

static int
inner_task(void *arg)
{
	atomic_fetch_add(&((struct nest *)arg)->inner_runs, 1);
	return 0;
}

static int
outer_task(void *arg)
{
	struct nest *n = arg;
	heist_group *b;
	if (heist_group_create(n->pool, &b))
		return -1;
	for (int i = 0; i < 10; i++)
		if (heist_group_submit(b, inner_task, n))
			return -1;
	int r = heist_group_wait(b);
	heist_group_destroy(b);
	return r;
}

static void
group_waited_inside_a_task_of_another_group(void **state)
{
	(void)state;
	for (unsigned threads = 1; threads <= 2; threads++) {
		struct heist_config cfg = {.threads = threads, .max_spares = HEIST_SPARES_NONE};
		heist_pool *pool = make_pool_cfg(&cfg);
		struct nest n = {pool, 0};
		heist_group *a = make_group(pool);
		for (int i = 0; i < 8; i++)
			assert_int_equal(heist_group_submit(a, outer_task, &n), 0);
		assert_int_equal(heist_group_wait(a), 0);
		assert_int_equal(atomic_load(&n.inner_runs), 80);
		heist_group_destroy(a);
		heist_pool_destroy(pool);
	}
}

/* A task of the group waits for the group: it would wait for itself, and gets EDEADLK
 * at once; it returns 0, so the group's wait from outside returns 0 once every other
 * task ran. So does a task running inside one of the group's tasks on the same
 * thread: a job its helping wait ran (one worker, no spares: the only thread that can
 * run it), and a fork-join child synced inline. */
struct self_wait {
	heist_group *g;
	heist_pool *pool;
	atomic_int got_self, got_helped, got_child;
	atomic_uint runs;
};

static int
wait_for_own_group(void *arg)
{
	struct self_wait *sw = arg;
	atomic_store(&sw->got_self, heist_group_wait(sw->g));
	return 0;
}

static int
helped_waits_for_group(void *arg)
{
	struct self_wait *sw = arg;
	atomic_store(&sw->got_helped, heist_group_wait(sw->g));
	return 0;
}

static int
child_waits_for_group(void *arg)
{
	struct self_wait *sw = arg;
	atomic_store(&sw->got_child, heist_group_wait(sw->g));
	return 0;
}

/* A group task that waits for a job it submitted (run by its wait, on top of it),
 * then syncs a child that nobody can steal on one worker. */
static int
nest_waits_for_group(void *arg)
{
	struct self_wait *sw = arg;
	heist_future *f;
	if (heist_submit(sw->pool, helped_waits_for_group, sw, &f))
		return -1;
	int r = heist_future_wait(f);
	heist_future_release(f);
	heist_task t;
	heist_spawn(&t, child_waits_for_group, sw);
	return r ? r : heist_sync(&t);
}

static void
group_waited_by_its_own_task_is_edeadlk(void **state)
{
	(void)state;
	for (unsigned threads = 1; threads <= 2; threads++) {
		struct heist_config cfg = {.threads = threads, .max_spares = HEIST_SPARES_NONE};
		heist_pool *pool = make_pool_cfg(&cfg);
		struct self_wait sw = {.g = make_group(pool), .pool = pool};
		atomic_store(&sw.got_self, -1);
		for (int i = 0; i < 50; i++)
			assert_int_equal(heist_group_submit(sw.g, count_task, &sw.runs), 0);
		assert_int_equal(heist_group_submit(sw.g, wait_for_own_group, &sw), 0);
		for (int i = 0; i < 50; i++)
			assert_int_equal(heist_group_submit(sw.g, count_task, &sw.runs), 0);
		assert_int_equal(heist_group_wait(sw.g), 0);
		assert_int_equal(atomic_load(&sw.got_self), EDEADLK);
		assert_int_equal(atomic_load(&sw.runs), 100);
		/* The group is not spoiled: it runs and waits as before. */
		assert_int_equal(heist_group_submit(sw.g, count_task, &sw.runs), 0);
		assert_int_equal(heist_group_wait(sw.g), 0);
		assert_int_equal(atomic_load(&sw.runs), 101);
		heist_group_destroy(sw.g);
		heist_pool_destroy(pool);
	}

	/* Nested on one worker's stack. */
	struct heist_config cfg = {.threads = 1, .max_spares = HEIST_SPARES_NONE};
	heist_pool *pool = make_pool_cfg(&cfg);
	struct self_wait sw = {.g = make_group(pool), .pool = pool};
	atomic_store(&sw.got_helped, -1);
	atomic_store(&sw.got_child, -1);
	assert_int_equal(heist_group_submit(sw.g, count_task, &sw.runs), 0);
	assert_int_equal(heist_group_submit(sw.g, nest_waits_for_group, &sw), 0);
	assert_int_equal(heist_group_submit(sw.g, count_task, &sw.runs), 0);
	assert_int_equal(heist_group_wait(sw.g), 0);
	assert_int_equal(atomic_load(&sw.got_helped), EDEADLK);
	assert_int_equal(atomic_load(&sw.got_child), EDEADLK);
	assert_int_equal(atomic_load(&sw.runs), 2);
	/* A task of the pool that is not inside one of the group's waits for it. */
	heist_future *f;
	assert_int_equal(heist_group_submit(sw.g, count_task, &sw.runs), 0);
	assert_int_equal(heist_submit(pool, helped_waits_for_group, &sw, &f), 0);
	assert_int_equal(heist_future_wait(f), 0);
	heist_future_release(f);
	assert_int_equal(atomic_load(&sw.got_helped), 0);
	assert_int_equal(atomic_load(&sw.runs), 3);
	heist_group_destroy(sw.g);
	heist_pool_destroy(pool);
}

/* WAITERS threads wait on one group while SUBMITTERS threads submit to it. */
struct crowd {
	heist_group *g;
	atomic_uint runs;
	atomic_int submitted_all;
	atomic_int bad_waits;
};

static void *
submitter_main(void *arg)
{
	struct crowd *c = arg;
	for (int i = 0; i < PER_SUBMITTER; i++)
		if (heist_group_submit(c->g, count_task, &c->runs))
			atomic_fetch_add(&c->bad_waits, 1);
	atomic_fetch_add(&c->submitted_all, 1);
	return NULL;
}

static void *
waiter_main(void *arg)
{
	struct crowd *c = arg;
	if (heist_group_wait(c->g) != 0)
		atomic_fetch_add(&c->bad_waits, 1);
	return NULL;
}

static void
many_waiters_and_submitters_at_once(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	struct crowd c = {make_group(pool), 0, 0, 0};
	pthread_t s[SUBMITTERS], w[WAITERS];
	for (int i = 0; i < SUBMITTERS; i++)
		assert_int_equal(pthread_create(&s[i], NULL, submitter_main, &c), 0);
	for (int i = 0; i < WAITERS; i++)
		assert_int_equal(pthread_create(&w[i], NULL, waiter_main, &c), 0);
	for (int i = 0; i < SUBMITTERS; i++)
		pthread_join(s[i], NULL);
	for (int i = 0; i < WAITERS; i++)
		pthread_join(w[i], NULL);
	/* Every submit is done: a last wait sees them all. */
	assert_int_equal(heist_group_wait(c.g), 0);
	assert_int_equal(atomic_load(&c.runs), SUBMITTERS * PER_SUBMITTER);
	assert_int_equal(atomic_load(&c.bad_waits), 0);
	heist_group_destroy(c.g);
	heist_pool_destroy(pool);
}

/* Round after round, WAITERS outside threads sleep on a group whose tasks are still
 * running and submit one more task each (the group grows while they sleep): each must
 * return only when every task of the round has run, and none may sleep through the
 * end (a lost wake hangs the test). Several sleepers at once take turns arming the
 * group's countdown (group.c); a task that spins a little keeps them asleep. */
enum { SLEEP_ROUNDS = 150, SLEEP_TASKS = 48 };

struct sleepers {
	heist_group *g;
	atomic_uint runs;
	unsigned want;		/* runs by the end of this round */
	atomic_int early;	/* waits that returned before every run */
};

static int
busy_leaf(void *arg)
{
	struct sleepers *sl = arg;
	for (volatile int i = 0; i < 2000; i++)
		;
	atomic_fetch_add(&sl->runs, 1);
	return 0;
}

static int
busy_parent(void *arg)
{
	struct sleepers *sl = arg;
	for (volatile int i = 0; i < 2000; i++)
		;
	int err = heist_group_submit(sl->g, busy_leaf, sl);
	atomic_fetch_add(&sl->runs, 1);
	return err;
}

static void *
sleeper_main(void *arg)
{
	struct sleepers *sl = arg;
	if (heist_group_wait(sl->g) != 0 || atomic_load(&sl->runs) != sl->want)
		atomic_fetch_add(&sl->early, 1);
	return NULL;
}

static void
sleeping_waiters_wake_only_when_all_is_done(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	struct sleepers sl = {make_group(pool), 0, 0, 0};
	for (unsigned round = 0; round < SLEEP_ROUNDS; round++) {
		sl.want = (round + 1) * 2 * SLEEP_TASKS;
		pthread_t w[WAITERS];
		for (int i = 0; i < SLEEP_TASKS; i++)
			assert_int_equal(heist_group_submit(sl.g, busy_parent, &sl), 0);
		for (int i = 0; i < WAITERS; i++)
			assert_int_equal(pthread_create(&w[i], NULL, sleeper_main, &sl), 0);
		for (int i = 0; i < WAITERS; i++)
			pthread_join(w[i], NULL);
		assert_int_equal(atomic_load(&sl.early), 0);
	}
	assert_int_equal(atomic_load(&sl.runs), SLEEP_ROUNDS * 2 * SLEEP_TASKS);
	heist_group_destroy(sl.g);
	heist_pool_destroy(pool);
}

static int
slow_count(void *arg)
{
	nap(200 * 1000);
	return count_task(arg);
}

static void
destroy_waits_for_the_tasks_still_running(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_group *g = make_group(pool);
	static atomic_uint runs;
	atomic_store(&runs, 0);
	for (int i = 0; i < 20; i++)
		assert_int_equal(heist_group_submit(g, slow_count, &runs), 0);
	heist_group_destroy(g);	/* no wait first */
	assert_int_equal(atomic_load(&runs), 20);
	heist_pool_destroy(pool);
}

static void
bad_input_is_rejected(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_group *g = SENTINEL;
	assert_int_equal(heist_group_create(NULL, &g), EINVAL);
	assert_null(g);
	assert_int_equal(heist_group_create(pool, NULL), EINVAL);
	g = make_group(pool);
	assert_int_equal(heist_group_submit(NULL, count_task, NULL), EINVAL);
	assert_int_equal(heist_group_submit(g, NULL, NULL), EINVAL);
	assert_int_equal(heist_group_wait(NULL), EINVAL);
	heist_group_destroy(NULL);
	assert_int_equal(heist_group_wait(g), 0);	/* empty */
	heist_group_destroy(g);
	heist_pool_destroy(pool);
}

/* From a new thread, whose record cache is empty: a submit that cannot allocate its
 * record is ENOMEM and leaves nothing for the group to wait for. */
struct cold {
	heist_group *g;
	atomic_uint runs;
	int first, second;
};

static void *
cold_submitter(void *arg)
{
	struct cold *c = arg;
	fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	c->first = heist_group_submit(c->g, count_task, &c->runs);
	fault_disarm(FAULT_ALLOC);
	c->second = heist_group_submit(c->g, count_task, &c->runs);
	return NULL;
}

static void
allocation_failures_are_enomem_and_lose_nothing(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_group *g = SENTINEL;
	fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	assert_int_equal(heist_group_create(pool, &g), ENOMEM);
	fault_disarm(FAULT_ALLOC);
	assert_null(g);
	struct cold c = {make_group(pool), 0, -1, -1};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, cold_submitter, &c), 0);
	pthread_join(th, NULL);
	assert_int_equal(c.first, ENOMEM);
	assert_int_equal(c.second, 0);
	assert_int_equal(heist_group_wait(c.g), 0);
	assert_int_equal(atomic_load(&c.runs), 1);
	heist_group_destroy(c.g);
	heist_pool_destroy(pool);
}

/* Steady state: once this thread's record cache is warm, a group of many tasks
 * allocates nothing per task. */
static void
no_allocation_per_task_in_steady_state(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_group *g = make_group(pool);
	static atomic_uint runs;
	atomic_store(&runs, 0);
	for (int round = 0; round < 3; round++) {
		uint64_t before = fault_calls(FAULT_ALLOC);
		for (int i = 0; i < MANY; i++)
			assert_int_equal(heist_group_submit(g, count_task, &runs), 0);
		assert_int_equal(heist_group_wait(g), 0);
		uint64_t calls = fault_calls(FAULT_ALLOC) - before;
		if (round == 2 && calls > MANY / 256 + 4)	/* slabs of 256 at the most */
			fail_msg("%llu allocations for %d tasks", (unsigned long long)calls, MANY);
	}
	heist_group_destroy(g);
	heist_pool_destroy(pool);
}

/* A group outlives its pool: a dependent task of the group, on a pool destroyed while
 * its input (a job of another pool) still runs, ends with ESHUTDOWN once the input is
 * done, and the group's wait and destroy, after the pool is gone, see it so without
 * reading the freed pool (AddressSanitizer reports such a read). */
static void
a_group_outlives_its_pool(void **state)
{
	(void)state;
	heist_pool *other = make_pool(1), *pool = make_pool(1);
	heist_group *g = make_group(pool);
	static struct hold h;
	atomic_store(&h.open, 0);
	heist_future *input, *d;
	hold_worker(other, &h, &input);
	struct heist_after opt = {.group = g};
	assert_int_equal(heist_submit_after(pool, &input, 1, ret_int, NULL, &opt, &d), 0);
	heist_pool_destroy(pool);
	atomic_store(&h.open, 1);
	assert_int_equal(heist_group_wait(g), ESHUTDOWN);
	heist_group_destroy(g);
	assert_int_equal(watched(d), ESHUTDOWN);
	assert_int_equal(watched(input), 0);
	heist_pool_destroy(other);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(results_of_zero_give_zero_and_every_task_runs),
		cmocka_unit_test(first_error_is_returned_and_the_rest_never_run),
		cmocka_unit_test(error_turns_cancelled_true_in_running_tasks),
		cmocka_unit_test(cancel_stops_queued_tasks_and_is_seen_by_running_ones),
		cmocka_unit_test(group_grows_from_its_own_tasks),
		cmocka_unit_test(group_waited_inside_a_task_of_another_group),
		cmocka_unit_test(group_waited_by_its_own_task_is_edeadlk),
		cmocka_unit_test(many_waiters_and_submitters_at_once),
		cmocka_unit_test(sleeping_waiters_wake_only_when_all_is_done),
		cmocka_unit_test(destroy_waits_for_the_tasks_still_running),
		cmocka_unit_test(bad_input_is_rejected),
		cmocka_unit_test(allocation_failures_are_enomem_and_lose_nothing),
		cmocka_unit_test(no_allocation_per_task_in_steady_state),
		cmocka_unit_test(a_group_outlives_its_pool),
	};
	return RUN_TESTS(tests);
}
