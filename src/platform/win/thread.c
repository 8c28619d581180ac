/* SPDX-License-Identifier: MIT */
/* win/thread.c - platform.h's threads, locks, once, thread-exit keys, the worker slot
 * and fork handlers on Windows (Vista and later for SRW locks, one-time initialization
 * and fiber-local storage; names through SetThreadDescription where kernel32 has it,
 * Windows 10 1607 and later). Thread-exit destructors are fiber-local storage callbacks, which
 * Windows calls on a thread's exit for each slot holding a value. There is no fork. */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include "../platform.h"

#include <errno.h>
#include <process.h>
#include <stdlib.h>
#include <limits.h>
#include <wchar.h>
#include <windows.h>
#include <winternl.h>

_Static_assert(sizeof(heist__mutex) == sizeof(SRWLOCK), "an SRWLOCK fits heist__mutex");
_Static_assert(sizeof(heist__once_flag) == sizeof(INIT_ONCE), "as an INIT_ONCE");
_Static_assert(sizeof(heist__key) >= sizeof(DWORD), "as a fiber-local storage index");

struct start {
	void (*fn)(void *);
	void *arg;
};

static unsigned __stdcall
trampoline(void *p)
{
	struct start s = *(struct start *)p;
	free(p);
	s.fn(s.arg);
	return 0;
}

int
heist__thread_start(heist__thread *t, size_t stack_bytes, void (*fn)(void *), void *arg)
{
	int saved = errno;
	struct start *s = malloc(sizeof(*s));
	if (!s) {
		errno = saved;
		return ENOMEM;
	}
	*s = (struct start){fn, arg};
	if (stack_bytes > UINT_MAX)
		stack_bytes = UINT_MAX;
	/* _beginthreadex, not CreateThread: the C library's per-thread state is set up
	 * for the new thread. The size reserves that much stack (not committing it). */
	uintptr_t h = _beginthreadex(NULL, (unsigned)stack_bytes, trampoline, s,
				     STACK_SIZE_PARAM_IS_A_RESERVATION, NULL);
	int err = 0;
	if (!h) {
		err = errno == ENOMEM ? ENOMEM : EAGAIN;
		free(s);
	}
	t->handle = (void *)h;
	errno = saved;
	return err;
}

void
heist__thread_join(heist__thread t)
{
	WaitForSingleObject(t.handle, INFINITE);
	CloseHandle(t.handle);
}

void
heist__thread_yield(void)
{
	SwitchToThread();
}

typedef HRESULT(WINAPI *set_description_fn)(HANDLE, PCWSTR);

static set_description_fn
set_description(void)
{
	static INIT_ONCE once = INIT_ONCE_STATIC_INIT;
	static set_description_fn fn;
	BOOL pending;
	if (InitOnceBeginInitialize(&once, 0, &pending, NULL) && pending) {
		HMODULE k = GetModuleHandleW(L"kernel32.dll");
		FARPROC p = k ? GetProcAddress(k, "SetThreadDescription") : NULL;
		/* a function pointer through void (*)(void): FARPROC's own type */
		fn = (set_description_fn)(void (*)(void))p;
		InitOnceComplete(&once, 0, NULL);
	}
	return fn;
}

void
heist__thread_precise_timeouts(void)
{
}

void
heist__thread_name(const char *name)
{
	set_description_fn fn = set_description();
	if (!fn)
		return;
	wchar_t wide[64];
	size_t i = 0;
	for (; name[i] && i + 1 < sizeof(wide) / sizeof(wide[0]); i++)
		wide[i] = (wchar_t)(unsigned char)name[i];	/* names are ASCII */
	wide[i] = 0;
	fn(GetCurrentThread(), wide);
}

int
heist__mutex_init(heist__mutex *m)
{
	InitializeSRWLock((SRWLOCK *)m);
	return 0;
}

void
heist__mutex_destroy(heist__mutex *m)
{
	(void)m;	/* an SRW lock holds no resource */
}

void
heist__mutex_lock(heist__mutex *m)
{
	AcquireSRWLockExclusive((SRWLOCK *)m);
}

void
heist__mutex_unlock(heist__mutex *m)
{
	ReleaseSRWLockExclusive((SRWLOCK *)m);
}

struct once_call {
	void (*fn)(void);	/* in a struct: C has no cast between function and object pointers */
};

static BOOL CALLBACK
run_once(INIT_ONCE *o, void *call, void **ctx)
{
	(void)o;
	(void)ctx;
	((struct once_call *)call)->fn();
	return TRUE;
}

void
heist__once(heist__once_flag *o, void (*fn)(void))
{
	struct once_call call = {fn};
	InitOnceExecuteOnce((INIT_ONCE *)o, run_once, &call, NULL);
}

/* The fiber-local callbacks run on the program's threads whenever they exit, after
 * heist's DLL may have been unloaded: it pins itself in the process, once, when it
 * first makes one (as -z nodelete does for the ELF library: meson.build). */
static const char in_this_module;	/* an address of ours, to name the module by */

static void
pin_module(void)
{
	HMODULE self;
	GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_PIN,
			   (LPCWSTR)(const void *)&in_this_module, &self);
}

static heist__once_flag pin_once = HEIST__ONCE_INIT;

int
heist__key_create(heist__key *k, void (*destructor)(void *))
{
	heist__once(&pin_once, pin_module);
	/* A fiber-local storage callback has the destructor's shape (void WINAPI f(PVOID));
	 * on x86-64 WINAPI is the one calling convention. */
	DWORD i = FlsAlloc((PFLS_CALLBACK_FUNCTION)(void (*)(void))destructor);
	if (i == FLS_OUT_OF_INDEXES)
		return EAGAIN;
	*k = i;
	return 0;
}

int
heist__key_set(heist__key k, void *value)
{
	return FlsSetValue((DWORD)k, value) ? 0 : ENOMEM;
}

/* The slots' indices: written once, under slot_once, before the first set of any slot
 * on any thread (every setter calls heist__thread_slot_init first: a pool's creation
 * before it starts a thread or takes a job, record.c and hold.c before their first
 * set); relaxed: a thread that reads one before then has set none, and NULL is its
 * answer whichever value it sees. */
static _Atomic DWORD slot_index[HEIST__SLOTS] = {TLS_OUT_OF_INDEXES, TLS_OUT_OF_INDEXES,
						 TLS_OUT_OF_INDEXES, TLS_OUT_OF_INDEXES,
						 TLS_OUT_OF_INDEXES, TLS_OUT_OF_INDEXES};
static heist__once_flag slot_once = HEIST__ONCE_INIT;
_Static_assert(HEIST__SLOTS == 6, "an initial value for every slot");

static void
alloc_slots(void)
{
	for (int i = 0; i < HEIST__SLOTS; i++)
		atomic_store_explicit(&slot_index[i], TlsAlloc(), memory_order_relaxed);
}

int
heist__thread_slot_init(void)
{
	heist__once(&slot_once, alloc_slots);
	for (int i = 0; i < HEIST__SLOTS; i++)
		if (atomic_load_explicit(&slot_index[i], memory_order_relaxed) ==
		    TLS_OUT_OF_INDEXES)
			return EAGAIN;
	return 0;
}

/* The thread's own block. On x86-64 its address is at %gs:0x30 (NT_TIB's Self), on
 * x86 at %fs:0x18, read here rather than with NtCurrentTeb, whose __readgsqword (and
 * __readfsdword) gcc 12 takes for an access out of an array's bounds (-Warray-bounds). */
static inline TEB *
own_teb(void)
{
#if defined(__x86_64__)
	TEB *teb;
	__asm__("movq %%gs:0x30, %0" : "=r"(teb));
	return teb;
#elif defined(__i386__)
	TEB *teb;
	__asm__("movl %%fs:0x18, %0" : "=r"(teb));
	return teb;
#else
	return NtCurrentTeb();
#endif
}

void *
heist__thread_slot_get(enum heist__slot which)
{
	DWORD i = atomic_load_explicit(&slot_index[which], memory_order_relaxed);
	/* The first 64 slots sit in the thread's own block, where TlsGetValue reads them
	 * too (winternl.h's TEB); later ones in a block it allocates. */
	if (i < 64)
		return own_teb()->TlsSlots[i];
	if (i == TLS_OUT_OF_INDEXES)
		return NULL;
	DWORD last = GetLastError();	/* TlsGetValue clears it: the caller's is kept */
	void *p = TlsGetValue(i);
	SetLastError(last);
	return p;
}

bool
heist__thread_slot_set(enum heist__slot which, void *p)
{
	DWORD i = atomic_load_explicit(&slot_index[which], memory_order_relaxed);
	if (i < 64) {
		own_teb()->TlsSlots[i] = p;	/* what TlsSetValue stores, without the call */
		return true;
	}
	if (i == TLS_OUT_OF_INDEXES)
		return false;
	/* A thread's first set of an index past 64 allocates the block those live in,
	 * which can fail (ERROR_NOT_ENOUGH_MEMORY); later sets cannot. */
	DWORD last = GetLastError();
	bool ok = TlsSetValue(i, p);
	SetLastError(last);
	return ok;
}

int
heist__fork_handlers(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
	(void)prepare;
	(void)parent;
	(void)child;
	return ENOSYS;
}
