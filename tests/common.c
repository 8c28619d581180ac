/* SPDX-License-Identifier: MIT */
/* common.c - the helpers common.h declares, linked into every cmocka test. Only what
 * two or more test files use lives here; see common.h for the rules they follow. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include "common.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(_WIN32)
#include <direct.h>
#include <io.h>
#include <malloc.h>
#include <windows.h>
#else
#include <sched.h>
#endif

char test_sentinel_byte;
atomic_uint *ids;

void
nap(long ns)
{
#if defined(_WIN32)
	/* winpthreads' nanosleep rounds a nap below a millisecond down to none, which
	 * would shrink POLL's bound from 30 s to a fraction: Windows sleeps in whole
	 * milliseconds, so a nap is one at least (rounded up). */
	Sleep((DWORD)((ns + 999999) / 1000000));
#else
	struct timespec ts = { 0, ns };
	nanosleep(&ts, NULL);
#endif
}

heist_pool *
make_pool_cfg(const struct heist_config *cfg)
{
	heist_pool *pool = NULL;

	assert_int_equal(heist_pool_create(&pool, cfg), 0);
	assert_non_null(pool);
	if (cfg && cfg->threads)
		assert_int_equal(heist_pool_size(pool), cfg->threads);
	return pool;
}

heist_pool *
make_pool(unsigned threads)
{
	struct heist_config cfg = { .threads = threads };

	return make_pool_cfg(&cfg);
}

int
watched(heist_future *f)
{
	if (!heist_future_wait_for(f, LONG_WAIT_NS))
		fail_msg("a wait did not finish in 30 s: deadlock");
	int r = heist_future_wait(f);
	heist_future_release(f);
	return r;
}

int
ret_int(void *arg)
{
	return (int)(intptr_t)arg;
}

void
check_pool_works(heist_pool *pool)
{
	heist_future *f[8];

	for (uintptr_t i = 0; i < 8; i++)
		assert_int_equal(heist_submit(pool, ret_int, (void *)(i + 1), &f[i]), 0);
	for (uintptr_t i = 0; i < 8; i++) {
		assert_int_equal(heist_future_wait(f[i]), (int)i + 1);
		heist_future_release(f[i]);
	}
}

static bool
all_workers_parked(const heist_pool *pool)
{
	for (unsigned i = 0; i < heist_pool_size(pool); i++) {
		struct heist_worker_stats s;
		assert_int_equal(heist_pool_worker_stats(pool, i, &s), 0);
		if (s.sleeps == s.wakes)
			return false;
	}
	return true;
}

void
wait_until_parked(const heist_pool *pool)
{
	bool ok;
	POLL(ok, all_workers_parked(pool));
	if (!ok)
		fail_msg("the pool's workers never went to sleep");
}

int
count_task(void *arg)
{
	atomic_fetch_add((atomic_uint *)arg, 1);
	return 0;
}

int
fib_spawn(void *arg)
{
	struct fib *f = arg, a, b;
	heist_task t;
	int rc;

	if (f->n < 2) {
		f->r = f->n;
		return 0;
	}
	a.n = f->n - 1;
	b.n = f->n - 2;
	heist_spawn(&t, fib_spawn, &a);
	rc = fib_spawn(&b);
	rc |= heist_sync(&t);
	f->r = a.r + b.r;
	return rc;
}

long
fib_serial(int n)
{
	long a = 0, b = 1;

	for (int i = 0; i < n; i++) {
		long c = a + b;
		a = b;
		b = c;
	}
	return a;
}

void
hold_pass(struct hold *h)
{
	atomic_fetch_add(&h->entered, 1);
	while (!atomic_load(&h->open))
		nap(NAP_NS / 4);
}

int
hold_task(void *arg)
{
	struct hold *h = arg;

	hold_pass(h);
	atomic_fetch_add(&h->left, 1);
	return h->ret;
}

void
hold_worker(heist_pool *pool, struct hold *h, heist_future **out)
{
	bool ok;

	assert_int_equal(heist_submit(pool, hold_task, h, out), 0);
	POLL(ok, atomic_load(&h->entered) > 0);
	assert_true(ok);
}

void
ids_alloc(size_t n)
{
	ids = calloc(n, sizeof *ids);
	assert_non_null(ids);
}

void
ids_expect(size_t begin, size_t end, unsigned runs)
{
	for (size_t i = begin; i < end; i++) {
		unsigned n = atomic_load(&ids[i]);
		if (n != runs)
			fail_msg("task %zu ran %u times, expected %u", i, n, runs);
	}
}

void
ids_free(void)
{
	free(ids);
	ids = NULL;
}

int
id_task(void *arg)
{
	uintptr_t id = (uintptr_t)arg;

	atomic_fetch_add(&ids[id], 1);
	return (int)(id % 1000) + 1;
}

bool
test_slow(void)
{
	const char *s = getenv("TEST_SLOW");

	return s && strcmp(s, "0") != 0 && *s;
}

int
run_tests_(const char *name, const struct CMUnitTest *tests, size_t n)
{
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return _cmocka_run_group_tests(name, tests, n, NULL, NULL);
}

/* Capture what the library writes on stderr while fn runs. */
void
capture_stderr(void (*fn)(void *), void *arg, char *out, size_t cap)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/heist-test-stderr-XXXXXX", test_tmpdir());
	int fd = mkstemp(path);
	assert_true(fd >= 0);
#if !defined(_WIN32)
	unlink(path);	/* Windows removes no open file: below, once closed */
#endif
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_true(dup2(fd, STDERR_FILENO) >= 0);
	fn(arg);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
#if defined(_WIN32)
	/* No pread: read from the start through the descriptor's own offset. */
	long n = lseek(fd, 0, SEEK_SET) == 0 ? (long)read(fd, out, (unsigned)(cap - 1)) : -1;
#else
	ssize_t n = pread(fd, out, cap - 1, 0);
#endif
	out[n > 0 ? n : 0] = '\0';
	close(fd);
#if defined(_WIN32)
	unlink(path);
#endif
}

const char *
test_tmpdir(void)
{
#if defined(_WIN32)
	static char dir[MAX_PATH + 1];
	if (!dir[0]) {
		DWORD n = GetTempPathA(sizeof(dir), dir);
		if (!n || n >= sizeof(dir))
			snprintf(dir, sizeof(dir), ".");
		else if (dir[n - 1] == '\\' || dir[n - 1] == '/')
			dir[n - 1] = '\0';
	}
	return dir;
#else
	return "/tmp";
#endif
}

long
cpus_online(void)
{
#if defined(_WIN32)
	SYSTEM_INFO si;
	GetSystemInfo(&si);
	return (long)si.dwNumberOfProcessors;
#else
	return sysconf(_SC_NPROCESSORS_ONLN);
#endif
}

long
cpus_allowed(void)
{
#if defined(_WIN32)
	DWORD_PTR process, system;
	if (!GetProcessAffinityMask(GetCurrentProcess(), &process, &system))
		return -1;
	long n = 0;
	for (; process; process &= process - 1)
		n++;
	return n;
#elif defined(__linux__)
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return -1;
	return CPU_COUNT(&set);
#else
	return -1;
#endif
}

void *
test_aligned_alloc(size_t align, size_t size)
{
#if defined(_WIN32)
	return _aligned_malloc(size, align);
#else
	return aligned_alloc(align, size);
#endif
}

void
test_aligned_free(void *p)
{
#if defined(_WIN32)
	_aligned_free(p);
#else
	free(p);
#endif
}

#if defined(_WIN32)
int
setenv(const char *name, const char *value, int overwrite)
{
	if (!overwrite && getenv(name))
		return 0;
	return _putenv_s(name, value) ? -1 : 0;
}

int
unsetenv(const char *name)
{
	return _putenv_s(name, "") ? -1 : 0;
}

char *
mkdtemp(char *template_)
{
	size_t len = strlen(template_);
	if (len < 6 || strcmp(template_ + len - 6, "XXXXXX"))
		return NULL;
	char *x = template_ + len - 6;
	for (unsigned tries = 0; tries < 100; tries++) {
		unsigned v = (unsigned)GetTickCount() * 2654435761u + GetCurrentProcessId() + tries * 40503u;
		for (int i = 0; i < 6; i++, v /= 36)
			x[i] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
		if (_mkdir(template_) == 0)
			return template_;
	}
	return NULL;
}

/* cmocka's print_message and print_error, through MinGW's C99 printf (common.h). */
void
test_print_message(const char *format, ...)
{
	char buf[4096];
	va_list ap;
	va_start(ap, format);
	__mingw_vsnprintf(buf, sizeof(buf), format, ap);
	va_end(ap);
#undef print_message
	print_message("%s", buf);
}

void
test_print_error(const char *format, ...)
{
	char buf[4096];
	va_list ap;
	va_start(ap, format);
	__mingw_vsnprintf(buf, sizeof(buf), format, ap);
	va_end(ap);
#undef print_error
	print_error("%s", buf);
}
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HEAP_FROM_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HEAP_FROM_SANITIZER 1
#endif
#endif
#include "pages.h"	/* the library's own pages count as its heap */

#ifdef HEAP_FROM_SANITIZER
/* In every sanitizer's runtime; gcc ships no header for it (allocator_interface.h is
 * clang's). */
size_t __sanitizer_get_current_allocated_bytes(void);

size_t
heap_in_use(void)
{
	return __sanitizer_get_current_allocated_bytes() + heist__pages_in_use();
}
#elif defined(__GLIBC__)
#include <malloc.h>
size_t
heap_in_use(void)
{
	struct mallinfo2 m = mallinfo2();
	return m.uordblks + m.hblkhd + heist__pages_in_use();
}
#else
size_t
heap_in_use(void)
{
	return 0;
}
#endif
