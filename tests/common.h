/* SPDX-License-Identifier: MIT */
/* common.h - what the cmocka tests share: cmocka's headers, sanitizer detection, polling
 * with a bound, a sentinel pointer, pool creation, small tasks (a constant, a counter,
 * fib), the hold that keeps a worker busy until the test lets it go, per-id run
 * counters, and main()'s filter and slow switches. Defined in common.c, which every
 * test executable links (tests/meson.build). Fault injection is faults.h's; helpers
 * that one file alone uses stay in that file.
 *
 * Rules every test keeps: nothing passes or fails because something was fast. A test
 * waits for a condition by polling it, with a bound (POLL_MAX naps, at least 30 s)
 * that only a broken library reaches; a sleep is only ever a chance for a bug to show.
 * Tasks and helper threads never call cmocka (its asserts longjmp, and tasks run on
 * workers): they record what they saw in atomics, and the test thread checks. Every
 * task counts its runs. A concurrent test has a fixed iteration count; one that takes
 * more than a fraction of a second has a short variant in suite 'unit' and its long
 * one in suite 'slow' (test_slow()).
 */
#ifndef HEIST_TESTS_COMMON_H
#define HEIST_TESTS_COMMON_H

#include <stdatomic.h>
#include <stdbool.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>	/* cmocka 1.1 needs the four headers above */

#include "heist/heist.h"

/* MinGW's gcc checks a format(printf) attribute, cmocka's on print_error and
 * print_message, as Microsoft's printf, which has no %zu: on Windows these go through
 * wrappers checked as C99's printf (gnu_printf) that format with MinGW's own C99
 * printf (__mingw_vsnprintf) and hand cmocka the text. cmocka's macros (fail_msg, ...)
 * expand to them too. Other systems keep cmocka's own functions. */
#if defined(_WIN32) && defined(__GNUC__)
void test_print_message(const char *format, ...) __attribute__((format(gnu_printf, 1, 2)));
void test_print_error(const char *format, ...) __attribute__((format(gnu_printf, 1, 2)));
#define print_message test_print_message
#define print_error test_print_error
#endif

/* Skip the current test, saying why on the test's output first: a case that needs
 * something this system lacks (fork, signals, per-thread CPU affinity, allocator
 * statistics) is skipped by this visibly, never passed silently. */
#define skip_because(reason)                                                   \
	do {                                                                   \
		print_message("# %s skipped: %s\n", __func__, (reason));          \
		skip();                                                        \
	} while (0)

/* Where the system has no fork() (Windows), the tests that need it skip with this. */
#if defined(_WIN32)
#define TEST_NO_FORK 1
#define SKIP_WITHOUT_FORK() skip_because("needs fork(), which Windows does not have")
#else
#define SKIP_WITHOUT_FORK() ((void)0)
#endif

/* Sanitizer builds run 5-20x slower: tests shrink their sizes there. */
#if defined(__SANITIZE_THREAD__)
#define TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#if defined(TEST_TSAN) || defined(TEST_ASAN)
#define TEST_SANITIZED 1
#endif

/* ---------------------------------------------------------------------------------- */
/* Waiting                                                                            */

/* Polling: look, nap NAP_NS, look again, at most POLL_MAX times (30 s of naps at
 * least). Reaching the bound means the library is broken, never that it was slow. */
enum { NAP_NS = 100 * 1000, POLL_MAX = 300 * 1000 };
#define LONG_WAIT_NS (30ull * 1000 * 1000 * 1000)	/* a timed wait that never expires */

void nap(long ns);

/* Sets ok to whether cond became true within the bound. */
#define POLL(ok, cond)                                                        \
	do {                                                                  \
		(ok) = false;                                                 \
		for (long poll_i_ = 0; poll_i_ < POLL_MAX; poll_i_++) {       \
			if (cond) {                                           \
				(ok) = true;                                  \
				break;                                        \
			}                                                     \
			nap(NAP_NS);                                          \
		}                                                             \
	} while (0)

/* A non-NULL pointer no library call may leave in an out-parameter on failure. */
extern char test_sentinel_byte;
#define SENTINEL ((void *)&test_sentinel_byte)

/* ---------------------------------------------------------------------------------- */
/* Pools and tasks                                                                    */

/* Create a pool or fail the test; with cfg->threads set, check it has that many. */
heist_pool *make_pool_cfg(const struct heist_config *cfg);
heist_pool *make_pool(unsigned threads);

/* Submits a few tasks with futures and checks their results. */
void check_pool_works(heist_pool *pool);

/* Polls (POLL) until every worker of the pool sleeps (its statistics count a sleep
 * not yet followed by a wake), so that an outside heist_for_each borrows a sleeping
 * worker's place at once (heist.h) rather than wait for one to give it. */
void wait_until_parked(const heist_pool *pool);

/* Wait for f with a bound of LONG_WAIT_NS (a hang fails the test), release it, and
 * return its result. */
int watched(heist_future *f);

/* Returns its argument as an int (NULL: 0). */
int ret_int(void *arg);
/* Bumps the atomic_uint its argument points to; returns 0. */
int count_task(void *arg);

/* W1 fib with spawn and sync, every call above the leaves a task, no cutoff. Returns
 * 0, or what a sync returned that was not 0. */
struct fib {
	int n;
	long r;
};

int fib_spawn(void *arg);
long fib_serial(int n);

/* A hold keeps a task, and so its worker, until the test opens it. A worker held
 * there runs nothing else (it naps, it does not help), which is what lets tests pin
 * work in queues. Tests declare holds static: a failed test leaves tasks that use
 * them. (test-cancel.c has its own, `struct occupant`, which also waits for its task.) */
struct hold {
	atomic_int open;
	atomic_int entered;
	atomic_int left;
	int ret;		/* what hold_task returns */
};

/* Count ourselves in, then nap until the hold is opened. For tasks that do more. */
void hold_pass(struct hold *h);
/* hold_pass, count ourselves out, return h->ret. */
int hold_task(void *arg);
/* Submit hold_task and wait until a worker is inside it. */
void hold_worker(heist_pool *pool, struct hold *h, heist_future **out);

/* Per-id run counters: id_task(id) bumps ids[id] and returns id % 1000 + 1. */
extern atomic_uint *ids;

void ids_alloc(size_t n);
/* Fails the test unless every id in [begin, end) ran exactly `runs` times. */
void ids_expect(size_t begin, size_t end, unsigned runs);
void ids_free(void);
int id_task(void *arg);

/* The CPUs the system has online, and those this process may run on (its affinity
 * mask: sched_getaffinity on Linux, GetProcessAffinityMask on Windows); -1 where the
 * system does not say. */
long cpus_online(void);
long cpus_allowed(void);

/* Bytes the process's allocator has handed out and not had back (glibc's mallinfo2,
 * or the sanitizer's allocator); 0 where neither is there (tests then skip). */
size_t heap_in_use(void);

/* ---------------------------------------------------------------------------------- */
/* Output                                                                             */

/* Runs fn(arg) with stderr sent to a file, and puts what was written in out (at most
 * cap - 1 bytes, NUL-terminated). */
void capture_stderr(void (*fn)(void *), void *arg, char *out, size_t cap);

/* ---------------------------------------------------------------------------------- */
/* What Windows lacks (MinGW-w64's C library): POSIX's environment setters, mkdtemp and
 * C11's aligned_alloc, with the meanings the tests need. Elsewhere the C library's. */

#if defined(_WIN32)
/* _putenv_s; an empty value unsets the variable there (Windows keeps no empty ones). */
int setenv(const char *name, const char *value, int overwrite);
int unsetenv(const char *name);
/* A new directory named from template (ending in XXXXXX), as POSIX's. */
char *mkdtemp(char *template_);
#endif

/* Memory aligned to align, freed with test_aligned_free: aligned_alloc and free, or
 * _aligned_malloc and _aligned_free on Windows. */
void *test_aligned_alloc(size_t align, size_t size);
void test_aligned_free(void *p);

/* A directory for temporary files, without a trailing slash: /tmp, or Windows'
 * GetTempPath. */
const char *test_tmpdir(void);

/* ---------------------------------------------------------------------------------- */
/* main()                                                                             */

/* True when TEST_SLOW=1 is set (suite 'slow'): tests with a long variant run it. */
bool test_slow(void);

/* main()'s last line. TEST_FILTER=pattern (cmocka's * and ? wildcards) runs only the
 * matching tests. With TEST_SLOW=1, RUN_TESTS_OR_SLOW runs the second list: the tests
 * that have a long variant, and only those. */
#define RUN_TESTS(tests) run_tests_(#tests, tests, sizeof(tests) / sizeof((tests)[0]))
#define RUN_TESTS_OR_SLOW(tests, slow_tests) \
	(test_slow() ? RUN_TESTS(slow_tests) : RUN_TESTS(tests))

int run_tests_(const char *name, const struct CMUnitTest *tests, size_t n);

#endif /* HEIST_TESTS_COMMON_H */
