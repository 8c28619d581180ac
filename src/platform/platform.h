/* SPDX-License-Identifier: MIT */
/* platform.h - everything heist needs from the system, behind one interface: waiting
 * on a 32-bit word, threads (create, join, name, yield), locks, once-only calls,
 * thread-exit destructors, fork handlers, CPU count and pinning, clocks, whole pages,
 * and the process's id and name. Each system implements it in its own folder, and the
 * build (meson.build, CMakeLists.txt, from src/platform/sources-*.txt) compiles one:
 *
 *   linux/  + posix/   Linux: futex waits (FUTEX_WAIT_BITSET), sched_getaffinity,
 *                      pthread_setname_np, /proc/self/comm
 *   posix/ alone       any POSIX.1-2008 system (macOS, the BSDs, -Dportable=true on
 *                      Linux): waits in a parking lot (a hashed table of queues, each
 *                      waiter on its own semaphore, or mutex + condition variable where
 *                      there are no unnamed semaphores: macOS), sysconf's CPU count, no
 *                      pinning without hwloc, no names
 *   win/               Windows 8 and later: WaitOnAddress, CreateThread, SRW locks,
 *                      fiber-local storage destructors, QueryPerformanceCounter
 *
 * No file outside src/platform/ includes a system header (CI greps for it); the types
 * below come from the one header of the system being built (posix/types.h or
 * win/types.h), as libuv's uv.h picks uv/unix.h or uv/win.h. Every call keeps errno
 * (heist.h: no public call changes it). */
#ifndef HEIST_PLATFORM_H
#define HEIST_PLATFORM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(_WIN32)
#include "win/types.h"
#else
#include "posix/types.h"
#endif

/* Thread-local storage for the library's own variables. On ELF initial-exec: one
 * thread-pointer-relative access (the library is linked at start-up, or dlopen'd while
 * static TLS space is left, as glibc keeps some). Elsewhere the compiler's default
 * (MinGW gcc: emulated TLS, a call per access; clang: the PE TLS directory). */
#if defined(__ELF__)
#define HEIST__TLS __thread __attribute__((tls_model("initial-exec")))
#else
#define HEIST__TLS __thread
#endif

/* Whether a library's thread-local variable can be read by its users' code: heist/inline.h
 * reads heist__self_v2 where it can (ELF), and calls heist__self_get on Windows, whose
 * DLLs export no thread-local variable. The same test as that header's. */
#if defined(_WIN32) || defined(__CYGWIN__)
#define HEIST__TLS_EXPORTED 0
#else
#define HEIST__TLS_EXPORTED 1
#endif

/* Whether a thread's HEIST__TLS variables may be gone when its heist__key destructors
 * run. On Windows with MinGW gcc they are emulated (blocks of the C heap), and a thread
 * started by winpthreads frees them when its function returns, before Windows calls
 * the fiber-local storage callbacks that run the destructors; so no destructor there
 * may be given, or touch, a thread-local variable (hold.c and record.c keep what their
 * destructors get on the heap, and its address in a slot: heist__thread_slot_get). */
#if defined(_WIN32) || defined(__CYGWIN__)
#define HEIST__TLS_FREED_BEFORE_KEYS 1
#else
#define HEIST__TLS_FREED_BEFORE_KEYS 0
#endif

/* ---- waiting on a word (the futex class) ------------------------------------------ */

/* Sleep while *word == expected, for at most timeout_ns (0: no limit). Returns on a
 * wake, on a change, on timeout or spuriously: callers re-check their condition. A
 * wake that follows a change of the word is never lost: the check and the sleep are
 * one step against wakers on every backend (the kernel's compare on Linux and Windows;
 * the bucket lock, which every waker takes, in the generic backend). */
void heist__futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns);

/* Wake up to n threads sleeping on word (INT32_MAX: all): the n a Linux futex would
 * (the generic backend's oldest n), never fewer. */
void heist__futex_wake(_Atomic uint32_t *word, int n);

/* The same, for a subset of a word's sleepers: a sleeper whose bits share one with the
 * waker's is woken (Linux's FUTEX_WAIT_BITSET and FUTEX_WAKE_BITSET; the generic
 * backend keeps them too). Windows has no bitsets: there a bits wake wakes sleepers on
 * the word whatever their bits, so no wake-up is lost; the others re-check and sleep
 * again (wait.c's sleepers on a job's state: walkers and other waiters). */
void heist__futex_wait_bits(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns,
			    uint32_t bits);
void heist__futex_wake_bits(_Atomic uint32_t *word, int n, uint32_t bits);

/* ---- threads ------------------------------------------------------------------------ */

/* Start fn(arg) on a new thread with a stack of stack_bytes (0: the system's default).
 * 0, or EAGAIN / ENOMEM / EINVAL as pthread_create gives them. */
int heist__thread_start(heist__thread *t, size_t stack_bytes, void (*fn)(void *), void *arg);

/* Wait for t's function to return, and free what the thread held. */
void heist__thread_join(heist__thread t);

/* Name the calling thread for debuggers and top (at most 15 bytes are kept on Linux);
 * nothing where the system has no names. */
void heist__thread_name(const char *name);

/* Ask that the calling thread's timed waits end close to their deadlines (a worker,
 * which may sleep as its pool's timer keeper, timer.h): Linux lowers the thread's timer
 * slack (50 us by default, by which the kernel may defer a timed wake to batch it) to
 * 1 ns; nothing elsewhere (Windows: the system timer's period bounds it, 15.6 ms unless
 * some program has lowered it with timeBeginPeriod). */
void heist__thread_precise_timeouts(void);

/* Give the CPU to another runnable thread, if any. */
void heist__thread_yield(void);

/* ---- locks and once ---------------------------------------------------------------- */

/* A mutex: HEIST__MUTEX_INIT for a static one, or heist__mutex_init (0 or an errno
 * value) and heist__mutex_destroy. Not recursive. lock happens-before the next unlock's
 * holder's lock, as pthread mutexes. */
int heist__mutex_init(heist__mutex *m);
void heist__mutex_destroy(heist__mutex *m);
void heist__mutex_lock(heist__mutex *m);
void heist__mutex_unlock(heist__mutex *m);

/* fn runs once, whichever threads call; every caller returns after it did. */
void heist__once(heist__once_flag *o, void (*fn)(void));

/* ---- thread-exit destructors ------------------------------------------------------- */

/* A key whose destructor runs, on a thread that exits, with the value that thread set
 * (when not NULL). 0 or an errno value; heist__key_set: 0, or nonzero if the value
 * could not be recorded (the destructor will then not run for this thread). */
int heist__key_create(heist__key *k, void (*destructor)(void *));
int heist__key_set(heist__key k, void *value);

/* ---- the thread's worker ---------------------------------------------------------- */

/* Pointers per thread, NULL until the thread sets them: the worker running on it
 * (worker.h), the job it runs (cancel.h), its stack of jobs (future.h), its record
 * cache and the records of other caches it holds (record.c) and its hold cell
 * (hold.h). Only where a library's thread-local variable cannot be read by its users'
 * code (!HEIST__TLS_EXPORTED), which is where HEIST__TLS variables may be gone before
 * thread-exit destructors run (HEIST__TLS_FREED_BEFORE_KEYS): Windows; elsewhere
 * HEIST__TLS variables, one thread-pointer-relative load each, and these are not built.
 * On Windows TLS slots read from the thread's own block: MinGW gcc emulates
 * HEIST__TLS, a call and a lookup per access, and every heist_spawn and heist_sync
 * reads the worker, every job run the job's two, every submit and finish the record
 * cache's, every outside submit the hold cell; and a slot lasts until the thread's
 * destructors are done. heist__thread_slot_init before any set (0, or EAGAIN when the
 * process has no slot left); a get before it answers NULL. Neither changes the thread's
 * last-error code. */
enum heist__slot {
	HEIST__SLOT_WORKER,
	HEIST__SLOT_JOB,
	HEIST__SLOT_FRAMES,
	HEIST__SLOT_RECORDS,
	HEIST__SLOT_HELD,
	HEIST__SLOT_HOLD,
	HEIST__SLOTS
};
int heist__thread_slot_init(void);
void *heist__thread_slot_get(enum heist__slot which);
/* false if the value could not be stored (no memory for the thread's block of slots
 * past the first 64: a thread's first set of such a slot only); the slot is as it was. */
bool heist__thread_slot_set(enum heist__slot which, void *p);

/* ---- fork ------------------------------------------------------------------------- */

/* Handlers around fork() (pthread_atfork): 0, or ENOSYS where the system has no fork
 * (Windows), where none of them will ever run. */
int heist__fork_handlers(void (*prepare)(void), void (*parent)(void), void (*child)(void));

/* ---- CPUs ---------------------------------------------------------------------------- */

/* The CPUs this process may run on: how many. At least 1. */
unsigned heist__cpu_count(void);

/* The CPU time the process may use, as a number of CPUs rounded up, where the system
 * caps it below the CPUs it may run on (Linux: the cgroup quota of the process's
 * cgroup and its ancestors, what `docker --cpus` sets; Windows: a job object's hard
 * CPU rate cap); 0 where nothing caps it. Reads files: for pool creation, not hot. */
unsigned heist__cpu_quota(void);

/* Up to max of the system's numbers for those CPUs, ascending, into cpus; how many
 * were written. 0 where the system cannot name them (no pinning without hwloc). */
unsigned heist__cpu_list(int *cpus, unsigned max);

/* Pin the calling thread to one CPU of heist__cpu_list: 0 or an errno value (ENOSYS
 * where the system has no way). */
int heist__cpu_pin(int cpu);

/* ---- clocks -------------------------------------------------------------------------- */

/* Monotonic nanoseconds from an arbitrary start: deadlines and timed waits. */
uint64_t heist__clock_ns(void);

/* The steadiest monotonic clock, for calibrating the profiler's counter: one that no
 * time adjustment slews (Linux CLOCK_MONOTONIC_RAW); heist__clock_ns elsewhere. */
uint64_t heist__clock_raw_ns(void);

/* ---- pages ----------------------------------------------------------------------------- */

/* The page size: what heist__os_pages_map rounds to. */
size_t heist__os_page_size(void);

/* bytes (a multiple of the page size) of zeroed memory aligned to align (a power of
 * two, at least the page size), straight from the system; NULL when out of memory. */
void *heist__os_pages_map(size_t bytes, size_t align);

/* Give back what heist__os_pages_map(bytes, align) returned. */
void heist__os_pages_unmap(void *p, size_t bytes);

/* A hint: the caller is about to write all of these bytes of heist__os_pages_map's
 * memory, so fault them in now, in one call, where the system has one (Linux 5.14's
 * MADV_POPULATE_WRITE); else nothing, and each page faults in at its first write. */
void heist__os_pages_prefault(void *p, size_t bytes);

/* size bytes aligned to align (a power of two) from the C library's heap, or NULL;
 * freed with heist__os_aligned_free only. C11's aligned_alloc and free where the C
 * library has them; _aligned_malloc and _aligned_free on Windows, whose C libraries
 * have no aligned_alloc. */
void *heist__os_aligned_alloc(size_t align, size_t size);
void heist__os_aligned_free(void *p);

/* ---- the process ------------------------------------------------------------------- */

/* The process's id: a forked child's differs from its parent's. */
unsigned long heist__process_id(void);

/* Whether the process runs with a user or group it was not started by (a set-user-ID
 * or set-group-ID program), whose environment is its caller's to choose: it then
 * writes no file the environment names. false where the system has no such thing. */
bool heist__process_setid(void);

/* A new file at path, opened for writing as fopen's "w" does, or NULL with errno set
 * (EEXIST if anything is there already, a symbolic link included: none is followed,
 * so a name another user guessed cannot point the write elsewhere). For the
 * profiler's files (report.c), which FILE * is all they need. */
FILE *heist__file_create(const char *path);

/* The program's short name into buf (at most size - 1 bytes and a NUL); "" if unknown. */
void heist__program_name(char *buf, size_t size);

#endif
