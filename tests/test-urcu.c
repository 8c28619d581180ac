/* SPDX-License-Identifier: MIT */
/* test-urcu.c - heist inside an application that uses liburcu itself (docs/guide.md,
 * "Beside an application that uses liburcu"): two pools, one whose threads the
 * application registers with urcu-memb through the worker hooks, one with urcu-qsbr
 * (registered and offline but while they read). Tasks of both read RCU-protected
 * configurations while the main thread replaces them, retiring each old one after
 * synchronize_rcu() or through call_rcu(). Every read runs, no reader ever sees a
 * retired configuration, every retirement happens (the grace periods end: a QSBR
 * worker asleep in heist's futex while online would hang synchronize_rcu here), and
 * both pools drain and stop with their threads unregistered. */
#include "common.h"
#include "app-rcu.h"

enum { ROUNDS = 40, READS_PER_ROUND = 50 };

static heist_pool *
flavor_pool(void (*start)(void *, unsigned), void (*stop)(void *, unsigned))
{
	struct heist_config cfg = {.threads = 2, .on_worker_start = start,
				   .on_worker_stop = stop};
	return make_pool_cfg(&cfg);
}

static void
memb_and_qsbr_applications_beside_two_pools(void **state)
{
	(void)state;
	assert_int_equal(memb_setup(), 0);
	assert_int_equal(qsbr_setup(), 0);
	heist_pool *memb = flavor_pool(memb_start_hook, memb_stop_hook);
	heist_pool *qsbr = flavor_pool(qsbr_start_hook, qsbr_stop_hook);
	for (unsigned r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < READS_PER_ROUND; i++) {
			assert_int_equal(heist_submit(memb, memb_read_task, NULL, NULL), 0);
			assert_int_equal(heist_submit(qsbr, qsbr_read_task, NULL, NULL), 0);
		}
		assert_int_equal(memb_update(r), 0);
		assert_int_equal(qsbr_update(r), 0);
	}
	/* An idle pool, then grace periods: no sleeping worker may hold one up. */
	assert_int_equal(heist_pool_wait_idle(memb), 0);
	assert_int_equal(heist_pool_wait_idle(qsbr), 0);
	assert_int_equal(memb_update(ROUNDS), 0);
	assert_int_equal(qsbr_update(ROUNDS), 0);
	heist_pool_destroy(memb);	/* the stop hooks unregister the threads */
	heist_pool_destroy(qsbr);
	struct urcu_result m, q;
	memb_finish(&m);
	qsbr_finish(&q);
	assert_int_equal(m.reads, ROUNDS * READS_PER_ROUND);
	assert_int_equal(q.reads, ROUNDS * READS_PER_ROUND);
	assert_int_equal(m.violations, 0);
	assert_int_equal(q.violations, 0);
	assert_int_equal(m.retirements, ROUNDS + 1);
	assert_int_equal(q.retirements, ROUNDS + 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(memb_and_qsbr_applications_beside_two_pools),
	};
	return RUN_TESTS(tests);
}
