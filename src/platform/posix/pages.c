/* SPDX-License-Identifier: MIT */
/* posix/pages.c - platform.h's pages: mmap and munmap. An alignment above the page
 * size is had by mapping that much more and unmapping the ends. MAP_ANON is the older
 * spelling of MAP_ANONYMOUS (the BSDs, macOS); a system that has neither gets its
 * pages from aligned_alloc, and freed ones go back to the C library rather than to
 * the system. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
/* MAP_ANONYMOUS is POSIX.1-2024's; older headers show it with their own extensions,
 * which these documented macros ask for beside strict POSIX.1-2008 (glibc and musl,
 * macOS). A system that hides it otherwise gets the aligned_alloc fallback below. */
#define _DEFAULT_SOURCE 1
#define _DARWIN_C_SOURCE 1
#include "../platform.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if !defined(MAP_ANONYMOUS) && defined(MAP_ANON)
#define MAP_ANONYMOUS MAP_ANON
#endif

size_t
heist__os_page_size(void)
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

#ifdef MAP_ANONYMOUS
void *
heist__os_pages_map(size_t bytes, size_t align)
{
	size_t extra = align - heist__os_page_size();	/* room to find an aligned start */
	if (bytes + extra < bytes)
		return NULL;
	int saved = errno;
	unsigned char *p = mmap(NULL, bytes + extra, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		errno = saved;
		return NULL;
	}
	if (extra) {
		uintptr_t a = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
		unsigned char *start = (unsigned char *)a;
		size_t head = (size_t)(start - p), tail = extra - head;
		if (head)
			munmap(p, head);
		if (tail)
			munmap(start + bytes, tail);
		p = start;
	}
	errno = saved;
	return p;
}

void
heist__os_pages_unmap(void *p, size_t bytes)
{
	int saved = errno;
	munmap(p, bytes);
	errno = saved;
}

void
heist__os_pages_prefault(void *p, size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
	/* One call for what would be a fault per page, each a trap (and on a VM
	 * whose page tables the host shadows, an exit too): a new slab of records
	 * (record.c) came 1.5x faster on a 2-vCPU KVM guest. An older kernel says
	 * EINVAL, and the pages fault in one by one as before. */
	int saved = errno;
	(void)madvise(p, bytes, MADV_POPULATE_WRITE);
	errno = saved;
#else
	(void)p, (void)bytes;
#endif
}
#else
void *
heist__os_pages_map(size_t bytes, size_t align)
{
	int saved = errno;
	void *p = aligned_alloc(align, bytes);
	errno = saved;
	if (p)
		memset(p, 0, bytes);
	return p;
}

void
heist__os_pages_unmap(void *p, size_t bytes)
{
	(void)bytes;
	free(p);
}

void
heist__os_pages_prefault(void *p, size_t bytes)
{
	(void)p, (void)bytes;	/* aligned_alloc's memset touched them */
}
#endif

void *
heist__os_aligned_alloc(size_t align, size_t size)
{
	/* C11 asks for a size that is a multiple of the alignment. */
	return aligned_alloc(align, (size + align - 1) & ~(align - 1));
}

void
heist__os_aligned_free(void *p)
{
	free(p);
}
