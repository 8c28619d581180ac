/* SPDX-License-Identifier: MIT */
/* faults.c - the __wrap_ functions behind faults.h: count calls, fail the armed ones,
 * pass the rest to the real functions (__real_*, resolved by the linker's --wrap).
 *
 * Arming writes the owner thread and the countdown first, then publishes the mode with
 * a release store; a wrapped call reads the mode with an acquire load before it reads
 * the rest, so it never sees a new mode with an old countdown. Disarming while calls
 * are in flight is fine: a call that already read the old mode may still fail, which
 * is what a test that arms and disarms around one library call expects anyway.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* pthread_equal and friends; meson passes it too */
#endif
#include "faults.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/types.h>
#if defined(_WIN32)
#include <windows.h>

#include "platform/platform.h"
#else
#include <sys/mman.h>
#endif

enum mode { MODE_OFF, MODE_NTH, MODE_ALL };

struct fault_switch {
	_Atomic int mode;
	_Atomic int scope;
	/* The arming thread, as the address of its thread_calls (unique among live
	 * threads). Atomic: a thread that read the mode of an earlier arming may read
	 * it while another thread re-arms. */
	_Atomic uintptr_t owner;
	_Atomic int64_t countdown;	/* calls left to let through before the failure */
	_Atomic uint64_t failed;
	_Atomic uint64_t calls;
};

static struct fault_switch switches[FAULT_KINDS];

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);

#if defined(_WIN32)
/* Windows (tests/meson.build's wraps there): the library takes its aligned blocks,
 * pages and threads from its platform layer (src/platform/win: _aligned_malloc,
 * VirtualAlloc, _beginthreadex), whose calls into the system --wrap cannot reach (the
 * system's functions are DLL imports). The platform layer's own functions are
 * wrapped instead: the library calls them from its other objects, which --wrap does
 * redirect. There are no mmap, aligned_alloc, posix_memalign or pthread_create calls
 * from the library to fail, so those wrappers are not built. */
void *__real_heist__os_aligned_alloc(size_t align, size_t size);
void *__real_heist__os_pages_map(size_t bytes, size_t align);
int __real_heist__thread_start(heist__thread *t, size_t stack_bytes, void (*fn)(void *),
			       void *arg);
void *__wrap_heist__os_aligned_alloc(size_t align, size_t size);
void *__wrap_heist__os_pages_map(size_t bytes, size_t align);
int __wrap_heist__thread_start(heist__thread *t, size_t stack_bytes, void (*fn)(void *),
			       void *arg);

/* The per-thread counts live in a block in a native TLS slot, not in a _Thread_local:
 * MinGW's gcc emulates thread-local variables with a malloc on a thread's first use,
 * which would come back here (malloc is wrapped) before the variable exists. */
static DWORD calls_slot = TLS_OUT_OF_INDEXES;
static INIT_ONCE calls_once = INIT_ONCE_STATIC_INIT;

static BOOL CALLBACK
calls_slot_init(INIT_ONCE *o, void *p, void **ctx)
{
	(void)o;
	(void)p;
	(void)ctx;
	calls_slot = TlsAlloc();
	return calls_slot != TLS_OUT_OF_INDEXES;
}

/* This thread's counts (one block a thread, kept to the process's end: a thread's
 * few bytes, which also keeps the block's address unique among threads). */
static uint64_t *
thread_calls_block(void)
{
	static uint64_t fallback[FAULT_KINDS];
	if (!InitOnceExecuteOnce(&calls_once, calls_slot_init, NULL, NULL))
		return fallback;
	DWORD last = GetLastError();
	uint64_t *b = TlsGetValue(calls_slot);
	if (!b) {
		b = __real_calloc(FAULT_KINDS, sizeof(*b));
		if (!b || !TlsSetValue(calls_slot, b))
			b = fallback;
	}
	SetLastError(last);
	return b;
}
#define thread_calls (thread_calls_block())

/* libgcc's emulated TLS allocates a thread's copy of a thread-local variable on its
 * first use, through the wrapped malloc, calloc and realloc (libgcc is linked in
 * statically), and aborts the process if that fails. On Linux those copies are part
 * of the thread and never fail: neither do they here. Its allocations are told apart
 * by their caller, __emutls_get_address (which calls the three directly), found
 * through the unwind table's function entries. */
void *__emutls_get_address(void *object);

static bool
from_emutls(void *ret)
{
	DWORD64 base;
	PRUNTIME_FUNCTION caller = RtlLookupFunctionEntry((DWORD64)(uintptr_t)ret, &base, NULL);
	PRUNTIME_FUNCTION emutls =
		RtlLookupFunctionEntry((DWORD64)(uintptr_t)__emutls_get_address, &base, NULL);
	return caller && caller == emutls;
}
#define EXEMPT(ret) from_emutls(ret)
#else
static _Thread_local uint64_t thread_calls[FAULT_KINDS];
#define EXEMPT(ret) ((void)(ret), false)

void *__real_aligned_alloc(size_t align, size_t size);
int __real_posix_memalign(void **p, size_t align, size_t size);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __real_pthread_create(pthread_t *t, const pthread_attr_t *attr,
			  void *(*fn)(void *), void *arg);

void *__wrap_aligned_alloc(size_t align, size_t size);
int __wrap_posix_memalign(void **p, size_t align, size_t size);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr,
			  void *(*fn)(void *), void *arg);
#endif

static void
arm(enum fault_kind kind, int mode, int64_t skip, enum fault_scope scope)
{
	struct fault_switch *s = &switches[kind];

	atomic_store_explicit(&s->mode, MODE_OFF, memory_order_relaxed);
	atomic_store_explicit(&s->owner, (uintptr_t)thread_calls, memory_order_relaxed);
	atomic_store_explicit(&s->scope, (int)scope, memory_order_relaxed);
	atomic_store_explicit(&s->countdown, skip, memory_order_relaxed);
	atomic_store_explicit(&s->failed, 0, memory_order_relaxed);
	/* Publishes owner, scope and countdown; pairs with the acquire in should_fail(). */
	atomic_store_explicit(&s->mode, mode, memory_order_release);
}

void
fault_fail_nth(enum fault_kind kind, uint64_t skip, enum fault_scope scope)
{
	arm(kind, MODE_NTH, (int64_t)skip, scope);
}

void
fault_fail_all(enum fault_kind kind, enum fault_scope scope)
{
	arm(kind, MODE_ALL, 0, scope);
}

uint64_t
fault_disarm(enum fault_kind kind)
{
	atomic_store_explicit(&switches[kind].mode, MODE_OFF, memory_order_seq_cst);
	return atomic_load_explicit(&switches[kind].failed, memory_order_seq_cst);
}

uint64_t
fault_failed(enum fault_kind kind)
{
	return atomic_load_explicit(&switches[kind].failed, memory_order_seq_cst);
}

uint64_t
fault_calls(enum fault_kind kind)
{
	return atomic_load_explicit(&switches[kind].calls, memory_order_seq_cst);
}

uint64_t
fault_calls_this_thread(enum fault_kind kind)
{
	return thread_calls[kind];
}

/* Count the call; true when it must fail. */
static bool
should_fail(enum fault_kind kind)
{
	struct fault_switch *s = &switches[kind];
	int mode;

	atomic_fetch_add_explicit(&s->calls, 1, memory_order_relaxed);
	thread_calls[kind]++;
	/* Pairs with the release store in arm(): owner and countdown are current. */
	mode = atomic_load_explicit(&s->mode, memory_order_acquire);
	if (mode == MODE_OFF)
		return false;
	if (atomic_load_explicit(&s->scope, memory_order_relaxed) == FAULT_THIS_THREAD &&
	    atomic_load_explicit(&s->owner, memory_order_relaxed) != (uintptr_t)thread_calls)
		return false;
	if (mode == MODE_NTH &&
	    atomic_fetch_sub_explicit(&s->countdown, 1, memory_order_relaxed) != 0)
		return false;	/* not yet, or the one failure already happened */
	atomic_fetch_add_explicit(&s->failed, 1, memory_order_seq_cst);
	return true;
}

/* An armed allocation switch fails the call as a real allocator would. ret: the
 * caller's address (EXEMPT: one whose allocations never fail). */
static bool
alloc_fails_from(void *ret)
{
	if (EXEMPT(ret) || !should_fail(FAULT_ALLOC))
		return false;
	errno = ENOMEM;
	return true;
}

#define alloc_fails() alloc_fails_from(__builtin_return_address(0))

void *
__wrap_malloc(size_t size)
{
	return alloc_fails() ? NULL : __real_malloc(size);
}

void *
__wrap_calloc(size_t n, size_t size)
{
	return alloc_fails() ? NULL : __real_calloc(n, size);
}

void *
__wrap_realloc(void *p, size_t size)
{
	/* A failure leaves p valid, as a real one does. */
	return alloc_fails() ? NULL : __real_realloc(p, size);
}

#if defined(_WIN32)
void *
__wrap_heist__os_aligned_alloc(size_t align, size_t size)
{
	return alloc_fails() ? NULL : __real_heist__os_aligned_alloc(align, size);
}

/* The library's pages (src/pages.c): an allocation like the others. */
void *
__wrap_heist__os_pages_map(size_t bytes, size_t align)
{
	return should_fail(FAULT_ALLOC) ? NULL : __real_heist__os_pages_map(bytes, align);
}

int
__wrap_heist__thread_start(heist__thread *t, size_t stack_bytes, void (*fn)(void *), void *arg)
{
	if (should_fail(FAULT_THREAD))
		return EAGAIN;
	return __real_heist__thread_start(t, stack_bytes, fn, arg);
}
#else
void *
__wrap_aligned_alloc(size_t align, size_t size)
{
	return alloc_fails() ? NULL : __real_aligned_alloc(align, size);
}

/* The library's pages (src/pages.c): an allocation like the others. */
void *
__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (alloc_fails()) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	return __real_mmap(addr, len, prot, flags, fd, off);
}

int
__wrap_posix_memalign(void **p, size_t align, size_t size)
{
	/* ENOMEM is returned, not set in errno; *p stays untouched, as POSIX says. */
	if (should_fail(FAULT_ALLOC))
		return ENOMEM;
	return __real_posix_memalign(p, align, size);
}

int
__wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
		      void *arg)
{
	if (should_fail(FAULT_THREAD))
		return EAGAIN;
	return __real_pthread_create(t, attr, fn, arg);
}
#endif
