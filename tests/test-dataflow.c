/* SPDX-License-Identifier: MIT */
/* test-dataflow.c - data dependencies (src/dataflow.c): random programs of tasks that
 * read some variables and write one, with every access declared, give the serial
 * program's values (a missing read-after-write, write-after-read or write-after-write
 * edge shows as a wrong value), submitted from outside and from a task; a wait returns
 * the first error and the next tasks start clean; cancel; duplicate addresses; bad
 * input; allocation failures leave the history unchanged. Helpers: common.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "faults.h"

enum { VARS = 8, TASKS = 3000, MAX_READS = 3 };

static uint64_t vars[VARS];

struct op {
	int reads[MAX_READS];
	int nreads;
	int write;	/* -1: a reader only, whose sum goes to out */
	uint64_t k;
	uint64_t out;
};

static struct op ops[TASKS];

static uint64_t
spin(uint64_t x)
{
	for (int i = 0; i < 200; i++)	/* long enough for the other worker to race */
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

static int
op_run(void *arg)
{
	struct op *o = arg;
	uint64_t sum = o->k;
	for (int i = 0; i < o->nreads; i++)
		sum = sum * 31 + vars[o->reads[i]];
	sum = spin(sum);
	if (o->write >= 0)
		vars[o->write] = sum;
	else
		o->out = sum;
	return 0;
}

static uint64_t
rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static void
make_program(uint64_t seed)
{
	for (int t = 0; t < TASKS; t++) {
		struct op *o = &ops[t];
		o->nreads = (int)(rnd(&seed) % (MAX_READS + 1));
		for (int i = 0; i < o->nreads; i++)
			o->reads[i] = (int)(rnd(&seed) % VARS);
		o->write = rnd(&seed) % 4 == 0 ? -1 : (int)(rnd(&seed) % VARS);
		o->k = (uint64_t)t;
		o->out = 0;
	}
}

/* The program run in order: the expected variables and reader outputs. */
static void
run_serially(uint64_t expect_vars[VARS], uint64_t *expect_out)
{
	memset(vars, 0, sizeof vars);
	for (int t = 0; t < TASKS; t++) {
		op_run(&ops[t]);
		expect_out[t] = ops[t].out;
	}
	memcpy(expect_vars, vars, sizeof vars);
	memset(vars, 0, sizeof vars);
	for (int t = 0; t < TASKS; t++)
		ops[t].out = 0;
}

static int
submit_program(heist_dataflow *df)
{
	for (int t = 0; t < TASKS; t++) {
		struct op *o = &ops[t];
		struct heist_access acc[MAX_READS + 1];
		size_t n = 0;
		for (int i = 0; i < o->nreads; i++)
			acc[n++] = (struct heist_access){&vars[o->reads[i]], HEIST_IN};
		if (o->write >= 0)
			acc[n++] = (struct heist_access){&vars[o->write], HEIST_OUT};
		int err = heist_dataflow_submit(df, acc, n, op_run, o, NULL);
		if (err)
			return err;
	}
	return 0;
}

static uint64_t expect_vars[VARS], expect_out[TASKS];

static void
check_program(void)
{
	assert_memory_equal(vars, expect_vars, sizeof vars);
	for (int t = 0; t < TASKS; t++)
		assert_true(ops[t].out == expect_out[t]);
}

static int
program_from_a_task(void *arg)
{
	heist_dataflow *df = arg;
	return submit_program(df);
}

static void
random_programs_give_the_serial_values(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	for (uint64_t seed = 1; seed <= 4; seed++) {
		make_program(seed);
		run_serially(expect_vars, expect_out);
		heist_dataflow *df;
		assert_int_equal(heist_dataflow_create(pool, &df), 0);
		assert_int_equal(submit_program(df), 0);
		assert_int_equal(heist_dataflow_wait(df), 0);
		check_program();
		heist_dataflow_destroy(df);
	}
	/* From a task of the pool, and waited for by destroy. */
	make_program(9);
	run_serially(expect_vars, expect_out);
	heist_dataflow *df;
	assert_int_equal(heist_dataflow_create(pool, &df), 0);
	heist_future *z;
	assert_int_equal(heist_submit(pool, program_from_a_task, df, &z), 0);
	assert_int_equal(watched(z), 0);
	heist_dataflow_destroy(df);
	check_program();
	heist_pool_destroy(pool);
}

/* ---------------------------------------------------------------------------------- */

static atomic_int order_seq;

struct stamp {
	int ret;
	atomic_int at;	/* order_seq when it ran, + 1; 0: never ran */
};

static int
stamp_task(void *arg)
{
	struct stamp *s = arg;
	atomic_store(&s->at, atomic_fetch_add(&order_seq, 1) + 1);
	return s->ret;
}

static void
a_wait_returns_the_first_error_and_the_next_tasks_start_clean(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_dataflow *df;
	assert_int_equal(heist_dataflow_create(pool, &df), 0);
	int x;
	struct stamp writer = {.ret = 6}, reader = {0}, other = {0}, after = {0};
	struct heist_access w = {&x, HEIST_OUT}, r = {&x, HEIST_IN};
	heist_future *rf;
	assert_int_equal(heist_dataflow_submit(df, &w, 1, stamp_task, &writer, NULL), 0);
	assert_int_equal(heist_dataflow_submit(df, &r, 1, stamp_task, &reader, &rf), 0);
	assert_int_equal(heist_dataflow_wait(df), 6);
	assert_int_equal(heist_future_wait(rf), 6);	/* its input failed: never run */
	assert_int_equal(atomic_load(&reader.at), 0);
	heist_future_release(rf);
	/* After the wait the failed writer is done history: a reader of x waits for
	 * nothing, and the dataflow's new group has no error. */
	assert_int_equal(heist_dataflow_submit(df, &r, 1, stamp_task, &other, NULL), 0);
	assert_int_equal(heist_dataflow_wait(df), 0);
	assert_int_not_equal(atomic_load(&other.at), 0);
	/* Cancel reaches the tasks not started. */
	static struct hold busy;
	heist_future *held;
	heist_pool *one = make_pool(1);
	hold_worker(one, &busy, &held);
	heist_dataflow *df1;
	assert_int_equal(heist_dataflow_create(one, &df1), 0);
	assert_int_equal(heist_dataflow_submit(df1, &w, 1, stamp_task, &after, NULL), 0);
	heist_dataflow_cancel(df1);
	atomic_store(&busy.open, 1);
	assert_int_equal(heist_dataflow_wait(df1), ECANCELED);
	assert_int_equal(atomic_load(&after.at), 0);
	assert_int_equal(watched(held), 0);
	heist_dataflow_destroy(df1);
	heist_pool_destroy(one);
	heist_dataflow_destroy(df);
	heist_pool_destroy(pool);
}

static void
repeated_addresses_and_write_after_read(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_dataflow *df;
	assert_int_equal(heist_dataflow_create(pool, &df), 0);
	int x;
	enum { READERS = 40 };
	struct stamp readers[READERS] = {0}, writer = {0}, both = {0};
	static struct hold gate;
	memset(&gate, 0, sizeof gate);
	struct heist_access first = {&x, HEIST_OUT};
	heist_future *gf;
	assert_int_equal(heist_dataflow_submit(df, &first, 1, hold_task, &gate, &gf), 0);
	struct heist_access r = {&x, HEIST_IN};
	for (int i = 0; i < READERS; i++)
		assert_int_equal(heist_dataflow_submit(df, &r, 1, stamp_task, &readers[i], NULL),
				 0);
	/* IN and OUT of one address in one task: INOUT. */
	struct heist_access twice[3] = {{&x, HEIST_IN}, {&x, HEIST_OUT}, {&x, HEIST_IN}};
	assert_int_equal(heist_dataflow_submit(df, twice, 3, stamp_task, &both, NULL), 0);
	struct heist_access w = {&x, HEIST_OUT};
	assert_int_equal(heist_dataflow_submit(df, &w, 1, stamp_task, &writer, NULL), 0);
	atomic_store(&gate.open, 1);
	assert_int_equal(heist_dataflow_wait(df), 0);
	for (int i = 0; i < READERS; i++) {
		assert_int_not_equal(atomic_load(&readers[i].at), 0);
		assert_true(atomic_load(&readers[i].at) < atomic_load(&both.at));
	}
	assert_true(atomic_load(&both.at) < atomic_load(&writer.at));
	assert_int_equal(watched(gf), 0);
	heist_dataflow_destroy(df);
	heist_pool_destroy(pool);
}

static void
bad_input_is_rejected(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_dataflow *df = SENTINEL;
	assert_int_equal(heist_dataflow_create(NULL, &df), EINVAL);
	assert_null(df);
	assert_int_equal(heist_dataflow_create(pool, NULL), EINVAL);
	assert_int_equal(heist_dataflow_create(pool, &df), 0);
	int x;
	struct heist_access null_addr = {NULL, HEIST_IN}, no_mode = {&x, 0}, bad_mode = {&x, 4},
			   ok = {&x, HEIST_INOUT};
	heist_future *out = SENTINEL;
	assert_int_equal(heist_dataflow_submit(NULL, &ok, 1, ret_int, NULL, &out), EINVAL);
	assert_null(out);
	assert_int_equal(heist_dataflow_submit(df, &ok, 1, NULL, NULL, NULL), EINVAL);
	assert_int_equal(heist_dataflow_submit(df, NULL, 1, ret_int, NULL, NULL), EINVAL);
	assert_int_equal(heist_dataflow_submit(df, &null_addr, 1, ret_int, NULL, NULL), EINVAL);
	assert_int_equal(heist_dataflow_submit(df, &no_mode, 1, ret_int, NULL, NULL), EINVAL);
	assert_int_equal(heist_dataflow_submit(df, &bad_mode, 1, ret_int, NULL, NULL), EINVAL);
	assert_int_equal(heist_dataflow_submit(df, NULL, 0, ret_int, NULL, NULL), 0);
	assert_int_equal(heist_dataflow_wait(NULL), EINVAL);
	assert_int_equal(heist_dataflow_wait(df), 0);
	heist_dataflow_cancel(NULL);
	heist_dataflow_destroy(NULL);
	heist_dataflow_destroy(df);
	heist_pool_destroy(pool);
}

static void
allocation_failures_change_nothing(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_dataflow *df;
	fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	assert_int_equal(heist_dataflow_create(pool, &df), ENOMEM);
	fault_disarm(FAULT_ALLOC);
	assert_int_equal(heist_dataflow_create(pool, &df), 0);
	int x;
	struct stamp a = {0}, b = {0};
	struct heist_access w = {&x, HEIST_OUT};
	fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	/* The first access allocates the history's table. */
	assert_int_equal(heist_dataflow_submit(df, &w, 1, stamp_task, &a, NULL), ENOMEM);
	fault_disarm(FAULT_ALLOC);
	assert_int_equal(heist_dataflow_submit(df, &w, 1, stamp_task, &b, NULL), 0);
	assert_int_equal(heist_dataflow_wait(df), 0);
	assert_int_equal(atomic_load(&a.at), 0);
	assert_int_not_equal(atomic_load(&b.at), 0);
	heist_dataflow_destroy(df);
	heist_pool_destroy(pool);
}

/* A wait allocates nothing: one whose thread cannot allocate still gives the next
 * tasks a clean start (it kept the failed group, whose error cancelled them all, and
 * returned that error again at the next wait). And a cancel between a wait and the
 * next submit reaches that submit's task, until the next wait. */
static void
a_wait_without_memory_still_starts_the_next_tasks_clean(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_dataflow *df;
	assert_int_equal(heist_dataflow_create(pool, &df), 0);
	int x;
	struct stamp failing = {.ret = 11}, next = {0}, cancelled = {0}, last = {0};
	struct heist_access w = {&x, HEIST_OUT};
	assert_int_equal(heist_dataflow_submit(df, &w, 1, stamp_task, &failing, NULL), 0);
	fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	assert_int_equal(heist_dataflow_wait(df), 11);
	fault_disarm(FAULT_ALLOC);
	heist_future *f;
	assert_int_equal(heist_dataflow_submit(df, &w, 1, stamp_task, &next, &f), 0);
	assert_int_equal(heist_future_wait(f), 0);
	heist_future_release(f);
	assert_int_not_equal(atomic_load(&next.at), 0);
	assert_int_equal(heist_dataflow_wait(df), 0);
	assert_int_equal(heist_dataflow_wait(df), 0);	/* nothing since: no group */

	heist_dataflow_cancel(df);	/* no task since the wait */
	assert_int_equal(heist_dataflow_submit(df, &w, 1, stamp_task, &cancelled, NULL), 0);
	assert_int_equal(heist_dataflow_wait(df), ECANCELED);
	assert_int_equal(atomic_load(&cancelled.at), 0);
	assert_int_equal(heist_dataflow_submit(df, &w, 1, stamp_task, &last, NULL), 0);
	assert_int_equal(heist_dataflow_wait(df), 0);	/* the cancel lasted one wait */
	assert_int_not_equal(atomic_load(&last.at), 0);
	heist_dataflow_destroy(df);
	heist_pool_destroy(pool);
}

/* With the pool's injector_limit reached, a dataflow task whose inputs are done is
 * queued past it (it was accepted at the call): heist_dataflow_submit queues it with
 * its dataflow's lock held, and waiting there for room would keep out the workers,
 * which need that lock to submit to the dataflow from its tasks. Here the one worker
 * is held until the call returns, so a wait for room would never end. */
static void
a_dataflow_task_does_not_wait_for_room_in_a_full_injector(void **state)
{
	(void)state;
	struct heist_config cfg = {.threads = 1, .injector_limit = 1};
	heist_pool *pool;
	assert_int_equal(heist_pool_create(&pool, &cfg), 0);
	static struct hold h;
	atomic_store(&h.open, 0);
	heist_future *held, *queued, *f;
	hold_worker(pool, &h, &held);
	assert_int_equal(heist_submit(pool, ret_int, NULL, &queued), 0);	/* full now */
	heist_dataflow *df;
	assert_int_equal(heist_dataflow_create(pool, &df), 0);
	static int x;
	static atomic_uint ran;
	atomic_store(&ran, 0);
	struct heist_access w = {&x, HEIST_OUT};
	assert_int_equal(heist_dataflow_submit(df, &w, 1, count_task, &ran, &f), 0);
	atomic_store(&h.open, 1);
	assert_int_equal(watched(f), 0);
	assert_int_equal(atomic_load(&ran), 1);
	assert_int_equal(watched(queued), 0);
	assert_int_equal(watched(held), 0);
	heist_dataflow_destroy(df);
	heist_pool_destroy(pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(random_programs_give_the_serial_values),
		cmocka_unit_test(a_wait_returns_the_first_error_and_the_next_tasks_start_clean),
		cmocka_unit_test(repeated_addresses_and_write_after_read),
		cmocka_unit_test(bad_input_is_rejected),
		cmocka_unit_test(allocation_failures_change_nothing),
		cmocka_unit_test(a_wait_without_memory_still_starts_the_next_tasks_clean),
		cmocka_unit_test(a_dataflow_task_does_not_wait_for_room_in_a_full_injector),
	};
	return RUN_TESTS(tests);
}
