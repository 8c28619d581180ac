/* SPDX-License-Identifier: MIT */
/* test-memory.c - memory a burst used goes back to the system once the burst drains
 * (issue 43): resident memory (RSS, as users judge it) after a burst of a million jobs
 * drains, and after the pool is destroyed, stays within a few MB of where it started.
 * Each shape of burst has its test: submitted by a worker, submitted from outside and
 * followed by destroy, submitted from outside while every worker is held, and with
 * futures waited for and released. Linux (RSS from /proc/self/statm) and Windows (the
 * working set, GetProcessMemoryInfo's: what Task Manager shows as memory); native
 * plain builds only (the sanitizers keep freed memory in quarantine on purpose, and an
 * emulator's RSS is its own as well as the program's). */


#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#if defined(_WIN32)
#include <windows.h>
#include <psapi.h>
#endif

#include "common.h"
#include "record.h"	/* white-box: heist__record_idle_ns */

enum {
	BURST = 1000 * 1000,
	SLACK_MB = 8,	/* the bound: RSS within 8 MB of the start */
};
#define IDLE_NS (100 * 1000 * 1000)

/* Resident bytes now, or -1 where /proc says nothing. */
static long
rss_bytes(void)
{
#if defined(_WIN32)
	/* K32GetProcessMemoryInfo: kernel32's (Windows 7 and later), no psapi.dll. */
	PROCESS_MEMORY_COUNTERS c = {.cb = sizeof(c)};
	if (!K32GetProcessMemoryInfo(GetCurrentProcess(), &c, sizeof(c)))
		return -1;
	return c.WorkingSetSize > (SIZE_T)LONG_MAX ? LONG_MAX : (long)c.WorkingSetSize;
#else
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return -1;
	long pages_total, pages_resident;
	int n = fscanf(f, "%ld %ld", &pages_total, &pages_resident);
	fclose(f);
	return n == 2 ? pages_resident * sysconf(_SC_PAGESIZE) : -1;
#endif
}

static long rss_start;

/* Once per process: a pool made, used and destroyed, so that the C library's arenas
 * and the threads' first stack pages are part of the start, as in any program. */
static int
setup(void **state)
{
	(void)state;
#if defined(TEST_SANITIZED)
	return 0;
#else
	heist_pool *pool = make_pool(2);
	check_pool_works(pool);
	heist_pool_destroy(pool);
	rss_start = rss_bytes();
	return 0;
#endif
}

static void
skip_unless_measurable(void)
{
#if defined(TEST_SANITIZED)
	skip();	/* sanitizers hold freed memory in quarantine */
#endif
#if defined(TEST_UNDER_EMULATOR)
	skip();	/* the RSS is qemu's too: its code cache grows as the test runs */
#endif
	if (rss_start < 0)
		skip_because("no resident size here (/proc/self/statm)");
}

/* RSS is back within SLACK_MB of the start: polled, since workers give back their
 * caches once idle, heist__record_idle_ns after their last new slab (10 s; main
 * lowers it to IDLE_NS, so that the test does not sit out the default). */
static void
expect_rss_back(const char *when)
{
	long now = rss_bytes();
	bool ok;
	POLL(ok, (now = rss_bytes()) - rss_start <= (long)SLACK_MB << 20);
	printf("# RSS %s: %.1f MB above the start (%.1f MB)\n", when,
	       (double)(now - rss_start) / (1 << 20), (double)rss_start / (1 << 20));
	assert_true(ok);
}

static atomic_long ran;

static int
count_run(void *arg)
{
	(void)arg;
	atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
	return 0;
}

static int
submit_burst(void *arg)
{
	heist_pool *pool = arg;
	for (long i = 0; i < BURST; i++)
		if (heist_submit(pool, count_run, NULL, NULL))
			return -1;
	return 0;
}

static void
a_burst_submitted_by_a_worker_is_given_back(void **state)
{
	(void)state;
	skip_unless_measurable();
	atomic_store(&ran, 0);
	heist_pool *pool = make_pool(2);
	heist_future *f;
	assert_int_equal(heist_submit(pool, submit_burst, pool, &f), 0);
	assert_int_equal(heist_future_wait(f), 0);
	heist_future_release(f);
	assert_int_equal(heist_pool_wait_idle(pool), 0);
	assert_int_equal(atomic_load(&ran), BURST);
	expect_rss_back("after a worker's burst drained");
	heist_pool_destroy(pool);
	expect_rss_back("after destroy");
}

static void
a_burst_followed_by_destroy_is_given_back(void **state)
{
	(void)state;
	skip_unless_measurable();
	atomic_store(&ran, 0);
	heist_pool *pool = make_pool(2);
	assert_int_equal(submit_burst(pool), 0);
	heist_pool_destroy(pool);
	assert_int_equal(atomic_load(&ran), BURST);
	expect_rss_back("after a burst and destroy");
}

static void
a_burst_queued_behind_held_workers_is_given_back(void **state)
{
	(void)state;
	skip_unless_measurable();
	static struct hold holds[2];
	atomic_store(&ran, 0);
	heist_pool *pool = make_pool(2);
	heist_future *held[2];
	for (int i = 0; i < 2; i++) {
		holds[i] = (struct hold){0};
		hold_worker(pool, &holds[i], &held[i]);
	}
	assert_int_equal(submit_burst(pool), 0);	/* all of it in the injector */
	for (int i = 0; i < 2; i++)
		atomic_store(&holds[i].open, 1);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(heist_future_wait(held[i]), 0);
		heist_future_release(held[i]);
	}
	assert_int_equal(heist_pool_wait_idle(pool), 0);
	assert_int_equal(atomic_load(&ran), BURST);
	expect_rss_back("after a held burst drained");
	heist_pool_destroy(pool);
	expect_rss_back("after destroy");
}

static void
a_burst_of_futures_released_is_given_back(void **state)
{
	(void)state;
	skip_unless_measurable();
	enum { FUTURES = BURST / 4 };
	atomic_store(&ran, 0);
	heist_pool *pool = make_pool(2);
	heist_future **fs = malloc(sizeof(*fs) * FUTURES);
	assert_non_null(fs);
	for (long i = 0; i < FUTURES; i++)
		assert_int_equal(heist_submit(pool, count_run, NULL, &fs[i]), 0);
	for (long i = 0; i < FUTURES; i++) {
		assert_int_equal(heist_future_wait(fs[i]), 0);
		heist_future_release(fs[i]);
	}
	free(fs);
	assert_int_equal(heist_pool_wait_idle(pool), 0);
	expect_rss_back("after a burst of futures was released");
	heist_pool_destroy(pool);
	expect_rss_back("after destroy");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_burst_submitted_by_a_worker_is_given_back),
		cmocka_unit_test(a_burst_followed_by_destroy_is_given_back),
		cmocka_unit_test(a_burst_queued_behind_held_workers_is_given_back),
		cmocka_unit_test(a_burst_of_futures_released_is_given_back),
	};
	heist__record_idle_ns = IDLE_NS;	/* before any pool's threads start */
	return setup(NULL) ? 1 : RUN_TESTS(tests);
}
