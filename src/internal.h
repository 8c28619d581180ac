/* SPDX-License-Identifier: MIT */
/* internal.h - what every source file needs: cache-line size, branch hints, the
 * pause instruction and the back-off built on it, and owner-only statistics
 * counters. Nothing here is installed. */
#ifndef HEIST_INTERNAL_H
#define HEIST_INTERNAL_H

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "heist/heist.h"
#include "platform/platform.h"

/* 128, not 64: x86's adjacent-line prefetcher pulls cache lines in pairs, so two
 * hot fields 64 bytes apart still slow each other down. */
#define CACHE_LINE 128
#define CACHE_ALIGNED _Alignas(CACHE_LINE)

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define noinline __attribute__((noinline))

/* The store of a Dekker pair: one thread stores x and then loads y, the other writes y
 * and then loads x, and one of them must see the other's write. In C11 a seq_cst store
 * followed by a seq_cst load is enough, and so it is on aarch64 hardware (STLR, then
 * LDAR, which may not pass it). But qemu-user (7.2, on an x86 host, where .ci/run
 * runs the aarch64 build) translates STLR as a fence and then a plain store, and LDAR
 * as a load and then a fence: nothing between the two, so the x86 store buffer lets
 * the load pass the store. Measured with a store-buffering litmus test of 100,000
 * rounds (the shape tests/test-dekker.c runs): with a seq_cst store and load, 10.6% of
 * the rounds saw neither write under qemu; with an exchange, none. So such a store is
 * a seq_cst exchange: the same in C11, a locked instruction under qemu, and on x86
 * the very xchg gcc emits for the seq_cst store (the library's x86 code is unchanged).
 * Every store of a pair uses this; the plain seq_cst stores left (the pool's stop,
 * the spare slots' high-water mark, the idle epoch) are no store of a pair: no load
 * of another word relies on them coming first. */
#define dekker_store(obj, v) \
	((void)atomic_exchange_explicit((obj), (v), memory_order_seq_cst))

static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* Between empty looks for work: a few pauses, never long (a pause is up to ~65 cycles
 * on recent x86), so that a looker sees new work within a few hundred nanoseconds. */
static inline void
heist__backoff(unsigned round)
{
	unsigned n = round < 3 ? 1u << round : 8;
	for (unsigned i = 0; i < n; i++)
		cpu_relax();
}

/* After `patience` empty looks: give the core to a thread that may be what we wait
 * for (a preempted thief, a submitter on an oversubscribed machine). */
static inline void
heist__backoff_long(unsigned round, unsigned patience)
{
	if (round < patience)
		heist__backoff(round);
	else
		heist__thread_yield();
}

/* malloc and its kin, keeping errno. A failed allocation sets errno to ENOMEM, and
 * heist reports ENOMEM by its return values only: no public call changes errno
 * (heist.h). Only on allocation paths, which cost far more than two errno reads.
 * clang takes malloc for a function that never writes errno and drops the store of
 * the saved value as redundant; the empty asm that may write memory keeps it. */
#define ERRNO_MAY_HAVE_CHANGED() __asm__ __volatile__("" ::: "memory")
static inline void *
heist__malloc(size_t size)
{
	int saved = errno;
	void *p = malloc(size);
	ERRNO_MAY_HAVE_CHANGED();
	errno = saved;
	return p;
}

static inline void *
heist__calloc(size_t n, size_t size)
{
	int saved = errno;
	void *p = calloc(n, size);
	ERRNO_MAY_HAVE_CHANGED();
	errno = saved;
	return p;
}

/* Freed with heist__aligned_free, never free (Windows keeps such blocks apart). */
static inline void *
heist__aligned_alloc(size_t align, size_t size)
{
	int saved = errno;
	void *p = heist__os_aligned_alloc(align, size);
	ERRNO_MAY_HAVE_CHANGED();
	errno = saved;
	return p;
}

static inline void
heist__aligned_free(void *p)
{
	heist__os_aligned_free(p);
}

static inline void *
heist__realloc(void *old, size_t size)
{
	int saved = errno;
	void *p = realloc(old, size);
	ERRNO_MAY_HAVE_CHANGED();
	errno = saved;
	return p;
}

/* A statistics counter: written only by the worker that owns it, read by any thread
 * through heist_pool_stats. Relaxed is enough: readers want a recent value, not an
 * ordering, and one writer means load + store cannot lose an increment. */
typedef _Atomic uint64_t counter;

static inline void
counter_add(counter *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

static inline uint64_t
counter_read(const counter *c)
{
	return atomic_load_explicit((counter *)c, memory_order_relaxed);
}

#endif
