/* SPDX-License-Identifier: MIT */
/* test-env.c - configuration from the environment (src/env.c): HEIST_NUM_THREADS,
 * HEIST_PIN and HEIST_MAX_SPARES fill the fields a program leaves at 0, a field it
 * sets wins, ignore_environment turns them off, and a bad value is ignored with one
 * line on stderr, the pool then made as if the variable were unset. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static void
clear_env(void)
{
	unsetenv("HEIST_NUM_THREADS");
	unsetenv("HEIST_PIN");
	unsetenv("HEIST_MAX_SPARES");
}

static int
setup(void **state)
{
	(void)state;
	clear_env();
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	clear_env();
	return 0;
}

/* One pool made from cfg (NULL: defaults) with stderr captured: its size, its
 * heist_pool_threads, the CPUs its first worker may run on, and what it said. */
struct made {
	const struct heist_config *cfg;
	unsigned size, threads;
	int worker_cpus;
	char said[512];
};

static void
record_cpus(void *ctx, unsigned index)
{
	cpu_set_t set;
	if (index == 0 && !sched_getaffinity(0, sizeof(set), &set))
		*(int *)ctx = CPU_COUNT(&set);
}

static void
make_and_destroy(void *arg)
{
	struct made *m = arg;
	struct heist_config cfg = m->cfg ? *m->cfg : (struct heist_config){0};
	m->worker_cpus = -1;
	cfg.on_worker_start = record_cpus;
	cfg.hook_ctx = &m->worker_cpus;
	heist_pool *pool = NULL;
	int err = heist_pool_create(&pool, &cfg);
	if (err) {
		m->size = 0;
		return;
	}
	m->size = heist_pool_size(pool);
	m->threads = heist_pool_threads(pool);
	check_pool_works(pool);
	heist_pool_destroy(pool);	/* joins: the start hook has run */
}

static struct made
made(const struct heist_config *cfg)
{
	struct made m = {.cfg = cfg};
	capture_stderr(make_and_destroy, &m, m.said, sizeof(m.said));
	assert_true(m.size > 0);
	return m;
}

static unsigned
lines(const char *s)
{
	unsigned n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static int
process_cpus(void)
{
	cpu_set_t set;
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	return CPU_COUNT(&set);
}

static void
num_threads_fills_threads_left_at_zero(void **state)
{
	(void)state;
	unsigned dflt = made(NULL).size;
	setenv("HEIST_NUM_THREADS", "3", 1);
	struct made m = made(NULL);
	assert_int_equal(m.size, 3);
	assert_string_equal(m.said, "");
	struct heist_config zero = {0};
	assert_int_equal(made(&zero).size, 3);
	struct heist_config one = {.threads = 1};
	assert_int_equal(made(&one).size, 1);	/* the program's field wins */
	struct heist_config off = {.ignore_environment = true};
	assert_int_equal(made(&off).size, dflt);
}

static void
bad_thread_counts_are_ignored_with_one_line(void **state)
{
	(void)state;
	unsigned dflt = made(NULL).size;
	static const char *const bad[] = {"", "0", "-1", "+2", " 2", "2 ", "2x", "two",
					  "4097", "99999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("HEIST_NUM_THREADS", bad[i], 1);
		struct made m = made(NULL);
		assert_int_equal(m.size, dflt);
		assert_int_equal(lines(m.said), 1);
		assert_non_null(strstr(m.said, "HEIST_NUM_THREADS"));
		assert_non_null(strstr(m.said, "ignored"));
	}
	/* ignore_environment: not even read, so nothing is said. */
	struct heist_config off = {.ignore_environment = true};
	struct made m = made(&off);
	assert_int_equal(m.size, dflt);
	assert_string_equal(m.said, "");
}

static void
max_spares_fills_max_spares_left_at_zero(void **state)
{
	(void)state;
	struct heist_config two = {.threads = 2};
	unsigned dflt = made(&two).threads;
	assert_int_equal(dflt, 2 + 1 + 256);	/* workers, guest slot, 256 spares */
	static const struct {
		const char *value;
		unsigned spares;
	} good[] = {{"none", 0}, {"NONE", 0}, {"0", 0}, {"5", 5}, {"4096", 4096}};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		setenv("HEIST_MAX_SPARES", good[i].value, 1);
		struct made m = made(&two);
		assert_int_equal(m.threads, 3 + good[i].spares);
		assert_string_equal(m.said, "");
	}
	setenv("HEIST_MAX_SPARES", "5", 1);
	struct heist_config seven = {.threads = 2, .max_spares = 7};
	assert_int_equal(made(&seven).threads, 3 + 7);	/* the program's field wins */
	struct heist_config off = {.threads = 2, .ignore_environment = true};
	assert_int_equal(made(&off).threads, dflt);
	static const char *const bad[] = {"", "-1", "4097", "some", "5 "};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("HEIST_MAX_SPARES", bad[i], 1);
		struct made m = made(&two);
		assert_int_equal(m.threads, dflt);
		assert_int_equal(lines(m.said), 1);
		assert_non_null(strstr(m.said, "HEIST_MAX_SPARES"));
	}
}

static void
pin_fills_pin_left_at_none(void **state)
{
	(void)state;
	int cpus = process_cpus();
	if (cpus < 2)
		skip();	/* a worker bound to one CPU looks like one that is not */
	struct heist_config two = {.threads = 2};
	assert_int_equal(made(&two).worker_cpus, cpus);	/* unpinned */
	setenv("HEIST_PIN", "pu", 1);
	struct made m = made(&two);
	assert_int_equal(m.worker_cpus, 1);
	assert_string_equal(m.said, "");
	/* Bound to its core's CPUs: as many as the field itself gives (all of them on a
	 * machine of one core). */
	struct heist_config core = {.threads = 2, .pin = HEIST_PIN_CORE};
	int core_cpus = made(&core).worker_cpus;
	setenv("HEIST_PIN", "Core", 1);
	m = made(&two);
	assert_int_equal(m.worker_cpus, core_cpus);
	assert_string_equal(m.said, "");
	setenv("HEIST_PIN", "none", 1);
	m = made(&two);
	assert_int_equal(m.worker_cpus, cpus);
	assert_string_equal(m.said, "");
	setenv("HEIST_PIN", "pu", 1);
	struct heist_config off = {.threads = 2, .ignore_environment = true};
	assert_int_equal(made(&off).worker_cpus, cpus);
	static const char *const bad[] = {"", "socket", "1", "pu "};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("HEIST_PIN", bad[i], 1);
		m = made(&two);
		assert_int_equal(m.worker_cpus, cpus);
		assert_int_equal(lines(m.said), 1);
		assert_non_null(strstr(m.said, "HEIST_PIN"));
	}
}

static void
every_bad_variable_says_its_own_line(void **state)
{
	(void)state;
	setenv("HEIST_NUM_THREADS", "many", 1);
	setenv("HEIST_PIN", "everywhere", 1);
	setenv("HEIST_MAX_SPARES", "lots", 1);
	struct made m = made(NULL);
	assert_int_equal(lines(m.said), 3);
	assert_non_null(strstr(m.said, "HEIST_NUM_THREADS=\"many\""));
	assert_non_null(strstr(m.said, "HEIST_PIN=\"everywhere\""));
	assert_non_null(strstr(m.said, "HEIST_MAX_SPARES=\"lots\""));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(num_threads_fills_threads_left_at_zero, setup,
						teardown),
		cmocka_unit_test_setup_teardown(bad_thread_counts_are_ignored_with_one_line,
						setup, teardown),
		cmocka_unit_test_setup_teardown(max_spares_fills_max_spares_left_at_zero, setup,
						teardown),
		cmocka_unit_test_setup_teardown(pin_fills_pin_left_at_none, setup, teardown),
		cmocka_unit_test_setup_teardown(every_bad_variable_says_its_own_line, setup,
						teardown),
	};
	return RUN_TESTS(tests);
}
