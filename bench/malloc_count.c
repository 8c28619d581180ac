/* SPDX-License-Identifier: MIT */
/* malloc_count.c - a malloc interposer for the heist-bench executable (see
 * malloc_count.h). The executable defines malloc and friends; the dynamic linker binds
 * every library's calls (libheist.so's included) to the first definition in the global
 * scope, which is the executable's, and these forward to glibc's __libc_* entry points,
 * so no dlsym bootstrapping is needed. Built only for glibc and without sanitizers
 * (which interpose malloc themselves); elsewhere the counter is a stub. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <stdlib.h>	/* defines __GLIBC__ through features.h */

#include "malloc_count.h"

#if defined(__has_feature)	/* clang's spelling of "built with a sanitizer" */
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define HEIST_BENCH_NO_MALLOC_COUNT 1
#endif
#endif

#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) && \
	!defined(HEIST_BENCH_NO_MALLOC_COUNT)

#include <malloc.h>
#include <stdatomic.h>

extern void *__libc_malloc(size_t size);
extern void __libc_free(void *p);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);

/* Relaxed both: the count is read after the measured work was joined (a
 * happens-before edge of its own), and the flag only has to be seen eventually. */
static atomic_bool counting;
static atomic_ullong count;

static inline void
counted(void)
{
	if (atomic_load_explicit(&counting, memory_order_relaxed))
		atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
}

bool malloc_count_available(void) { return true; }

void
malloc_count_start(void)
{
	atomic_store_explicit(&count, 0, memory_order_relaxed);
	atomic_store_explicit(&counting, true, memory_order_relaxed);
}

uint64_t
malloc_count_stop(void)
{
	atomic_store_explicit(&counting, false, memory_order_relaxed);
	return atomic_load_explicit(&count, memory_order_relaxed);
}

void *
malloc(size_t size)
{
	counted();
	return __libc_malloc(size);
}

void
free(void *p)
{
	__libc_free(p);
}

void *
calloc(size_t n, size_t size)
{
	counted();
	return __libc_calloc(n, size);
}

void *
realloc(void *p, size_t size)
{
	counted();
	return __libc_realloc(p, size);
}

void *
memalign(size_t align, size_t size)
{
	counted();
	return __libc_memalign(align, size);
}

void *
aligned_alloc(size_t align, size_t size)
{
	counted();
	return __libc_memalign(align, size);
}

int
posix_memalign(void **out, size_t align, size_t size)
{
	if (align < sizeof(void *) || (align & (align - 1)) != 0)
		return EINVAL;
	counted();
	void *p = __libc_memalign(align, size);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *
valloc(size_t size)
{
	counted();
	return __libc_valloc(size);
}

void *
pvalloc(size_t size)
{
	counted();
	return __libc_pvalloc(size);
}

#else /* no interposer */

bool malloc_count_available(void) { return false; }
void malloc_count_start(void) {}
uint64_t malloc_count_stop(void) { return 0; }

#endif
