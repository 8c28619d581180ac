/* SPDX-License-Identifier: MIT */
/* pages.c - whole pages from the system, given back at once when freed: mmap and
 * munmap, which POSIX systems have (MAP_ANON is the older spelling of MAP_ANONYMOUS
 * on the BSDs and macOS). An alignment above the page size is had by mapping that
 * much more and unmapping the ends. */
#include "pages.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#if !defined(MAP_ANONYMOUS) && defined(MAP_ANON)
#define MAP_ANONYMOUS MAP_ANON
#endif

/* relaxed: a statistic, read by tests when nothing allocates. */
static _Atomic size_t in_use;

static size_t
page_size(void)
{
	static _Atomic size_t cached;
	/* relaxed: every thread computes the same value. */
	size_t p = atomic_load_explicit(&cached, memory_order_relaxed);
	if (!p) {
		long s = sysconf(_SC_PAGESIZE);
		p = s > 0 ? (size_t)s : 4096;
		atomic_store_explicit(&cached, p, memory_order_relaxed);
	}
	return p;
}

static size_t
round_up(size_t n, size_t to)
{
	return (n + to - 1) & ~(to - 1);
}

void *
heist__pages_alloc(size_t bytes, size_t align)
{
	size_t page = page_size();
	if (align < page)
		align = page;
	bytes = round_up(bytes, page);
	size_t extra = align - page;	/* enough to find an aligned start in */
	if (bytes == 0 || bytes + extra < bytes)
		return NULL;
	int saved = errno;
	unsigned char *p = mmap(NULL, bytes + extra, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		errno = saved;
		return NULL;
	}
	if (extra) {
		unsigned char *start = (unsigned char *)round_up((uintptr_t)p, align);
		size_t head = (size_t)(start - p), tail = extra - head;
		if (head)
			munmap(p, head);
		if (tail)
			munmap(start + bytes, tail);
		p = start;
	}
	errno = saved;
	atomic_fetch_add_explicit(&in_use, bytes, memory_order_relaxed);
	return p;
}

void
heist__pages_free(void *p, size_t bytes)
{
	if (!p)
		return;
	bytes = round_up(bytes, page_size());
	int saved = errno;
	munmap(p, bytes);
	errno = saved;
	atomic_fetch_sub_explicit(&in_use, bytes, memory_order_relaxed);
}

size_t
heist__pages_in_use(void)
{
	return atomic_load_explicit(&in_use, memory_order_relaxed);
}
