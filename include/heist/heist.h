/* SPDX-License-Identifier: MIT */
/* heist.h - the public API of heist, a work-stealing task scheduler.
 *
 * Everything a user needs is here: pools, submitted tasks and their futures, fork-join
 * (spawn, sync, join, run) and statistics. The profiler lives in heist/profile.h.
 *
 * Conventions: a function that can fail returns int, 0 on success or a positive errno
 * value (EINVAL, ENOMEM, EAGAIN, ECANCELED, ESHUTDOWN); constructors fill an
 * out-parameter and set it to NULL on failure; destructors accept NULL. A NULL config
 * means defaults, and a zero field in a config means that field's default. No call
 * changes errno, whether it succeeds or fails (what the library's own system calls
 * and allocations set is put back), so a caller may keep an errno across heist calls.
 * A task's own writes to errno are the task's: they happen on the thread that ran it.
 * The header compiles as C11 and as C++.
 *
 * Threads. Every function may be called from any thread, at the same time as any
 * other, on the same objects, with three exceptions, each stated where it is
 * declared: an object may not be used after its destroy or release (heist_pool_destroy,
 * heist_future_release, heist_cancel_release, heist_group_destroy), and its destroy or
 * release must not race with another call on it; heist_spawn and heist_sync belong to
 * the thread (and the stack frame) that spawned; heist_profile_report and its kin read
 * a pool's profile while none of its tasks run (heist/profile.h). Waiting calls
 * (heist_future_wait, heist_group_wait, heist_for_each, heist_run, heist_sync,
 * heist_pool_wait_idle, heist_pool_destroy) never block a worker: on one of the pool's
 * threads they run other tasks meanwhile. Each call that waits for a task makes that
 * task's writes visible to the caller when it returns.
 *
 * Results and errors. Where a function runs the caller's task and returns its int
 * (heist_future_wait, heist_sync, heist_join, heist_run, heist_for_each, heist_reduce,
 * heist_group_wait), one int carries both: 0, the task's own nonzero value, or one of
 * heist's errors (EINVAL, ENOMEM, ESHUTDOWN, ECANCELED, as each @returns lists). A task
 * that wants its errors told apart from heist's returns values heist never returns
 * (negative ones, say), or keeps its result in its argument and returns 0.
 *
 * Memory. Job records (futures, submitted tasks; 128 bytes each, 256 for a when_all
 * future of up to three inputs or a dependent task of none, two or three outside a
 * group) come from caches of the thread that submits, so that a submit calls no malloc
 * in steady state. A cache grows to what its thread has in flight at once, and is cut
 * back to a reserve of 256 KiB (the slabs of records all back home beyond one, for
 * each size) after a burst drains: on the calling thread when heist_pool_wait_idle
 * returns and when heist_pool_destroy does, and on a worker (for jobs submitted from
 * tasks) once it is idle and its cache's last new slab is 10 s old, as a malloc lets
 * its free pages decay, so that bursts made more often reuse the same pages rather
 * than fault in new ones each time (the worker's deque, grown by such a burst,
 * goes back to its first size whenever the worker goes to sleep). The rest goes when
 * the thread exits. A thread that submits
 * a burst and never calls either keeps the burst's records until it does or exits, and
 * reuses them meanwhile. Slabs and grown deques are whole pages from the system,
 * unmapped when freed, so what a burst took leaves the process's resident size (RSS)
 * too, not only heist's books. Fork-join tasks (heist_spawn) use no heap memory.
 *
 * fork(). A child process gets a copy of each pool that existed at the fork, but not
 * its threads (fork copies only the thread that called it). In the child, every call
 * that would need an inherited pool's threads returns ESHUTDOWN at once, never hangs:
 * heist_submit and every other submit form, heist_run, heist_for_each and the loops,
 * heist_pool_wait_idle, heist_group_submit; heist_future_wait and heist_group_wait for
 * work that only those threads could finish (a job queued or running at the fork, a
 * continuation or when_all that waits for one, whichever pool it was made on), and
 * heist_future_wait_for returns false for it at once. What was done before the fork
 * stays done. Releasing futures, cancelling, statistics and destroying groups work.
 * heist_pool_destroy of an inherited pool returns at once: it waits for nothing and
 * frees nothing of the pool in the child (its queues and locks are as the lost threads
 * left them). New pools work in the child, as many as wanted. A thread that calls
 * fork() inside a task (or a heist_for_each body) is an outside thread in the child and
 * may go on with that task, make pools and run work, but the task must not return there
 * (end the child with exec or _exit): nothing is left to return to, and heist aborts
 * the child with a message if it does; a heist_sync there of a task spawned before the
 * fork aborts the same way. The parent is not affected. POSIX systems (pthread_atfork);
 * Windows has no fork.
 */
#ifndef HEIST_HEIST_H
#define HEIST_HEIST_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* HEIST_VERSION, HEIST_VERSION_MAJOR, _MINOR, _PATCH, HEIST_VERSION_NUMBER and
 * HEIST_VERSION_AT_LEAST(), generated from the project version. */
#include <heist/version.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library's exports. On Windows the DLL exports what its own sources mark
 * (HEIST_BUILDING: set by heist's meson.build and CMakeLists.txt only); a program needs
 * no dllimport, since every export is a function, reached through the import library
 * (DLL) or linked directly (static library): the same headers serve both. */
#if defined(_WIN32) || defined(__CYGWIN__)
#if defined(HEIST_BUILDING)
#define HEIST_EXPORT __declspec(dllexport)
#else
#define HEIST_EXPORT
#endif
#elif defined(__GNUC__)
#define HEIST_EXPORT __attribute__((visibility("default")))
#else
#define HEIST_EXPORT
#endif

/* The error names heist returns exist on every system: where the C library's errno.h
 * lacks one (ESHUTDOWN in MinGW-w64's and MSVC's), it is defined here with a value no
 * errno code of those libraries uses (theirs end at 140; strerror knows no name for
 * it). ECANCELED, ETIMEDOUT and EDEADLK are POSIX's, present in both. */
#ifndef ESHUTDOWN
#define ESHUTDOWN 4058	/* not a system value: see above */
#endif
#ifndef ECANCELED
#define ECANCELED 4059
#endif
#ifndef ETIMEDOUT
#define ETIMEDOUT 4060
#endif
#ifndef EDEADLK
#define EDEADLK 4061
#endif

/**
 * The version of the library the program runs with, "MAJOR.MINOR.PATCH"; HEIST_VERSION
 * is the version of the headers it was compiled with. docs/abi.md says which
 * differences are compatible.
 * @returns A string with static storage; never NULL. Any thread may call this.
 * @since 0.1
 */
HEIST_EXPORT const char *heist_version(void);

/**
 * The same version as one number, MAJOR * 1000000 + MINOR * 1000 + PATCH (0.1.0 is
 * 1000), to compare with HEIST_VERSION_NUMBER. Any thread may call this.
 * @returns The number; never fails.
 * @since 0.1
 */
HEIST_EXPORT unsigned heist_version_number(void);

/** The largest worker count a pool accepts. */
#define HEIST_MAX_THREADS 4096

/** A pool of worker threads. Opaque. */
typedef struct heist_pool heist_pool;

/** The result of a submitted task. Opaque, reference counted between pool and caller. */
typedef struct heist_future heist_future;

/** A cancellation token. Opaque, reference counted. */
typedef struct heist_cancel heist_cancel;

/**
 * A task's function. Returns 0, or an error code that travels to whoever waits for it
 * (C's stand-in for an exception).
 */
typedef int (*heist_fn)(void *arg);

/** Where workers run. */
enum heist_pin {
	HEIST_PIN_NONE = 0,	/**< let the kernel place workers (default) */
	HEIST_PIN_CORE,		/**< one worker per core, bound to the whole core */
	HEIST_PIN_PU		/**< each worker bound to one processing unit */
};

/**
 * How to build a pool. Zero-fill it (or pass NULL) for defaults; set what you need.
 *
 * The environment. heist_pool_create reads the variables below, once per pool, so
 * that a program built on heist can be tuned and profiled without a rebuild, as
 * OMP_NUM_THREADS tunes an OpenMP one. The rule, the same for each: **a field the
 * program sets wins; a variable fills only a field left at its default (0), and
 * ignore_environment turns them all off.** A value that is not one of those below is
 * ignored, with one line on stderr naming the variable, its value (escaped as in C:
 * \n, \t, \\, \xHH and so on, so that the line stays one whatever the value holds)
 * and what it wants; the pool is then made as if it were unset.
 * - HEIST_NUM_THREADS=n (1 to HEIST_MAX_THREADS): threads, the number of workers.
 * - HEIST_PIN=none|core|pu (any case): pin, HEIST_PIN_NONE, _CORE or _PU.
 * - HEIST_MAX_SPARES=n|none (0 to HEIST_MAX_THREADS; 0 and none: HEIST_SPARES_NONE):
 *   max_spares.
 * - HEIST_PROFILE=file: profile (the pool records with the profiler), and when the
 *   pool is destroyed (or at exit, if it never is) it writes to file the report
 *   heist-latency --json prints: dispatch and end-to-end percentiles, the split by
 *   path, the steal latency, per-thread statistics (docs/profiler.md). In file, %p
 *   stands for the process id and %% for %; the process's second pool that reports
 *   writes file with ".2" before its extension (out.json, out.2.json), the third
 *   ".3", and so on. Each file is written whole (beside its name, then renamed); a
 *   forked child writes only the pools it made, numbered from 1 in it, and where file
 *   has no %p its names carry its pid ("-pid" before the extension: out-4242.json,
 *   out-4242.2.json), so that they do not replace its parent's. A child forked
 *   before its parent (or an ancestor) made its first pool, or a program it execs,
 *   names its files as a separate program would: give such programs %p. One that
 *   cannot be written gets one line on stderr. A report written at exit while tasks
 *   still run is a snapshot (profile.h).
 * - HEIST_PROFILE_EVERY=n (1 to 1048576): profile_every, with HEIST_PROFILE or
 *   HEIST_TRACE. Unset, a pool that they turned profile on for records one task in
 *   4 (measured: every task costs W8 12% on 2 workers, one in 4 costs 5%); a pool
 *   whose program turned profile on itself records as that program asked.
 * - HEIST_TRACE=file: as HEIST_PROFILE, but writes the Chrome/Perfetto trace
 *   heist-latency --trace writes (the kept samples, one event per task).
 * With -Dprofiler=false, HEIST_PROFILE and HEIST_TRACE are ignored with their line; so
 * are they in a set-user-ID or set-group-ID program, whose environment is its caller's
 * (as secure_getenv does): it writes no file they name.
 */
struct heist_config {
	unsigned threads;	/**< workers; 0: one per core the process may run on (with
				     hwloc; without it, one per CPU of its affinity
				     mask: see docs/topology.md), but no more than its
				     CPU quota rounded up where the system sets one (a
				     Linux cgroup's cpu.max or cfs quota, as `docker
				     --cpus` does; a Windows job's hard CPU rate cap);
				     at most HEIST_MAX_THREADS.
				     Also the most threads of the pool that run tasks at
				     once: an outside caller of heist_for_each (or
				     heist_reduce) that takes part does so in the place
				     of a sleeping worker, which sleeps until it leaves
				     (see heist_for_each for the exceptions). Spare
				     threads stand in for workers parked in waits; one
				     finishes its task after the worker resumes */
	enum heist_pin pin;	/**< HEIST_PIN_NONE (0, the default), HEIST_PIN_CORE,
				     HEIST_PIN_PU. Not pinned by default: measured on 2
				     cores, pinning changed fork-join by 0-7% and made
				     loops called from outside up to 21% slower (the
				     unpinned caller shares a pinned worker's core), and
				     a pinned pool cannot move away from other processes
				     or a shrinking cgroup (docs/benchmarks.md) */
	size_t injector_limit;	/**< 0: unbounded; else an outside submit blocks while this
				     many outside submissions are queued (since 0.2 a
				     continuation or dependent task made runnable never
				     waits for room: it was accepted when it was made,
				     and the thread that makes it runnable may hold a
				     lock the workers need) */
	unsigned spin;		/**< idle steal rounds before a worker sleeps; 0: default
				     (1024, about 0.3 ms: half with pauses, half yielding).
				     A round tries every other worker: above 9 workers a
				     search makes spin x 8 / (threads - 1) rounds (at
				     least 1), so its cost does not grow with the pool.
				     Under a light load (work from outside coming to an
				     idle pool 30 us apart or more on average, none of
				     its tasks running) a search ends after about 2 us
				     whatever spin says, so that idle workers sleep
				     (docs/architecture.md, "Sleeping and waking") */
	bool profile;		/**< record TSC timestamps for every task (or one in
				     profile_every) */
	const char *name;	/**< thread-name prefix; NULL: "heist" */
	size_t stack_size;	/**< worker stack bytes; 0: 64 MiB, deep enough for recursion
				     thousands of levels deep (mapped lazily); 8 MiB
				     where pointers have 32 bits, whose address space
				     holds only 48 threads of 64 MiB */
	unsigned max_spares;	/**< spare threads the pool may run at once, standing in
				     for threads parked in waits while work waits that no
				     thread of the pool can run (see heist_future_wait); 0:
				     256; HEIST_SPARES_NONE: none; at most
				     HEIST_MAX_THREADS. When a stand-in is needed and all
				     are in use (or, since 0.2, one could not be started:
				     no memory, no thread), the pool counts it
				     (heist_stats.spares_exhausted) and prints one line on
				     stderr, once, naming the pool and this field or the
				     failure; with HEIST_SPARES_NONE it only counts
				     (@since 0.1) */
	/** Called on each of the pool's threads (workers and spare threads) before it
	 * runs its first task, with hook_ctx and its heist_thread_index(); NULL: none.
	 * A hook runs outside any task: a submit from it is a submit from outside the
	 * pool (to the injector), accepted unless heist_pool_destroy has begun, when it
	 * gets ESHUTDOWN. So a worker's start hook (at heist_pool_create) and a spare's
	 * (when it is called, while the pool lives) may submit; a worker's stop hook
	 * always runs during destroy, and its submits get ESHUTDOWN; a spare's stop hook
	 * runs when its keep-alive ends (its submits are accepted) or during destroy
	 * (ESHUTDOWN). A hook must not wait for the pool's tasks.
	 * @since 0.1 */
	void (*on_worker_start)(void *ctx, unsigned index);
	/** Called on each of the pool's threads after its last task, before it exits
	 * (see on_worker_start for what a submit from it does). A worker's stop hook,
	 * and a spare's that destroy ends, see all the pool's tasks' writes and what
	 * the thread that called heist_pool_destroy wrote before the call (a spare
	 * whose keep-alive ends by itself meanwhile is not ordered with that thread).
	 * @since 0.1 */
	void (*on_worker_stop)(void *ctx, unsigned index);
	void *hook_ctx;		/**< passed to the two hooks */
	unsigned profile_every;	/**< with profile: record one task in this many (each
				     thread counts the tasks it creates), rounded up to a
				     power of two, at most 2^20; 0 or 1: every task. A
				     counter read costs 10-25 ns and a task three of them,
				     so sampling is how a profile of tiny tasks stays
				     cheap (@since 0.1) */
	size_t profile_buffer;	/**< with profile: samples each thread keeps in its
				     buffer (48 bytes each, allocated at pool creation)
				     before the rest go only into histograms; 0: 262,144;
				     at most 2^26 (@since 0.1) */
	bool ignore_environment; /**< true: the environment variables below change
				     nothing in this pool (for programs that must not
				     be tuned from outside) (@since 0.1) */
};

/** heist_config.max_spares: never start a spare thread. */
#define HEIST_SPARES_NONE 0xffffffffu

/* ---------------------------------------------------------------------------------- */
/* Pool                                                                               */

/**
 * Create a pool and start its workers.
 * @param[out] out  Receives the pool; set to NULL on failure.
 * @param[in]  cfg  The configuration, or NULL for defaults. Not kept after the call.
 * @returns 0; EINVAL if out is NULL, threads > HEIST_MAX_THREADS, max_spares >
 *          HEIST_MAX_THREADS (HEIST_SPARES_NONE aside), pin is unknown, or the system
 *          refuses stack_size (below its minimum, PTHREAD_STACK_MIN where there is
 *          one); ENOMEM; or pthread_create's error. On failure nothing is leaked and every
 *          worker already started has been stopped and joined.
 * @since 0.1
 */
HEIST_EXPORT int heist_pool_create(heist_pool **out, const struct heist_config *cfg);

/**
 * Drain and destroy a pool: run every task that was accepted (tasks running during the
 * drain may still submit and spawn, and that work runs too), satisfy every future, then
 * join the workers and any spare threads. From the moment it starts, submits from
 * outside threads get ESHUTDOWN. Futures outlive the pool: they may be waited on and
 * released afterwards. It waits for this pool's tasks only: never for tasks of other
 * pools, nor for other threads of the process.
 * Misuse aborts with a message: calling it from one of the pool's own tasks (it would
 * wait for itself), or on a pointer that is not a live pool (destroyed already, say).
 * A pool destroyed twice whose memory was meanwhile reused by a new pool destroys that
 * one: the check cannot tell them apart.
 * @param[in] pool  The pool, or NULL (no-op).
 * @since 0.1
 */
HEIST_EXPORT void heist_pool_destroy(heist_pool *pool);

/**
 * The number of workers.
 * @returns The count, fixed at heist_pool_create; 0 for a NULL pool.
 * @since 0.1
 */
HEIST_EXPORT unsigned heist_pool_size(const heist_pool *pool);

/**
 * Tasks queued and not yet started: in the injector and in the workers' deques
 * (spawned fork-join tasks included). A snapshot: it may be stale by the time it
 * returns.
 * @returns The count; 0 for a NULL pool.
 * @since 0.1
 */
HEIST_EXPORT size_t heist_pool_pending(const heist_pool *pool);

/**
 * Wait until every task accepted before the call, and everything those tasks spawned
 * or submitted (and the continuations of either), has finished. Tasks that other
 * threads submit from outside while it waits are not waited for (they are counted in
 * a later idle epoch), so it returns however busy the pool stays. Any number of
 * threads may wait at once, and others may submit meanwhile.
 * @returns 0; EINVAL if pool is NULL; EDEADLK when called from one of the pool's own
 *          tasks (it would wait for itself); ESHUTDOWN if the pool's destroy has begun
 *          on another thread (destroy drains it; a wait that began first finishes,
 *          and destroy waits for it to return), or in a child forked from the
 *          process that made the pool. As for a submit, the call must begin before
 *          heist_pool_destroy returns.
 * What those tasks wrote is visible to the caller once it returns.
 * A task submitted from a fork-join child (stolen or not) counts as its parent job's;
 * a continuation counts as the job whose end (or cancellation) queued it, and one
 * linked to a future that is done already is queued by heist_future_then itself: from
 * outside the pool, it counts as a submission from outside at that moment.
 * @since 0.1
 */
HEIST_EXPORT int heist_pool_wait_idle(heist_pool *pool);

/**
 * The calling thread's index in its pool, 0..size-1, when it is one of the pool's
 * workers; -1 otherwise. -1 also in a heist_for_each body that runs on the calling
 * thread of an outside for_each (the guest slot), and on a spare thread standing in
 * for a parked worker (see heist_future_wait): code that indexes per-worker data by
 * it must handle -1 (or use heist_thread_index()).
 * @returns The index, or -1; never fails.
 * @since 0.1
 */
HEIST_EXPORT int heist_worker_index(void);

/**
 * The calling thread's index among every thread that may run a task of its pool:
 * 0..size-1 for the workers (as heist_worker_index), size for the guest slot of an
 * outside heist_for_each, and above for spare threads, below heist_pool_threads();
 * -1 on a thread that is none of these. Unique among the threads running the pool's
 * tasks at any moment, so it can index per-thread scratch data.
 * @returns The index, or -1; never fails.
 * @since 0.1
 */
HEIST_EXPORT int heist_thread_index(void);

/**
 * The number of distinct heist_thread_index() values a pool's threads can have:
 * its workers, its guest slot and its spare slots (heist_config.max_spares).
 * @returns heist_pool_size + 1 + the spare slots; 0 for a NULL pool.
 * @since 0.1
 */
HEIST_EXPORT unsigned heist_pool_threads(const heist_pool *pool);

/** Per-thread scratch for a pool's tasks, as oneTBB's enumerable_thread_specific: a
 * slot for each thread that asks, made on its first heist_local_get, zero-filled (then
 * init), on cache lines of its own. Where an array of heist_pool_threads() slots
 * would hold one for every spare slot the pool could ever start (259 for two workers
 * by default), this makes only the slots of the threads that used it. Opaque. */
typedef struct heist_local heist_local;

/**
 * Create per-thread scratch of size bytes for the tasks of pool.
 * @param[in] init  Called with ctx on each slot when it is made (zero-filled before),
 *                  on the thread that asked; or NULL.
 * @returns 0; EINVAL if pool or out is NULL, or size is 0 or too large to round up
 *          to whole cache lines; ENOMEM.
 * @since 0.2
 */
HEIST_EXPORT int heist_local_create(heist_pool *pool, size_t size,
				    void (*init)(void *slot, void *ctx), void *ctx,
				    heist_local **out);

/**
 * The calling thread's slot, made on first use: for a thread with a heist_thread_index()
 * in l's pool (a worker, a spare, the guest of an outside heist_for_each). A slot
 * belongs to its index: no other thread uses it at the same time, and a spare thread
 * that takes over an index takes over its slot, contents and all.
 * @returns The slot; NULL on any other thread, if l is NULL, or when out of memory.
 * @since 0.2
 */
HEIST_EXPORT void *heist_local_get(heist_local *l);

/**
 * Call fn(slot, ctx) for every slot made so far, in index order: to combine them once
 * the tasks that used them are waited for (the wait orders their writes before). A
 * NULL l or fn does nothing.
 * @since 0.2
 */
HEIST_EXPORT void heist_local_each(heist_local *l, void (*fn)(void *slot, void *ctx),
				   void *ctx);

/** Free the scratch and every slot; no task may use it any more. NULL: no-op.
 * @since 0.2 */
HEIST_EXPORT void heist_local_destroy(heist_local *l);

/* ---------------------------------------------------------------------------------- */
/* Tasks and futures                                                                  */

/**
 * Submit fn(arg) to run on the pool.
 * @param[out] out  Receives the future, or NULL for fire-and-forget (no future is made).
 * @returns 0; EINVAL if pool or fn is NULL; ENOMEM (nothing was queued); ESHUTDOWN if
 *          called from outside the pool after heist_pool_destroy started.
 * From a worker of the same pool the task goes on the worker's own deque (other workers
 * may steal it); from any other thread it goes through the pool's injector queue, where
 * injector_limit applies: the call blocks while the injector is full.
 * @since 0.1
 */
HEIST_EXPORT int heist_submit(heist_pool *pool, heist_fn fn, void *arg, heist_future **out);

/**
 * Submit fn(copy of arg): the size bytes at arg are copied at the call, so the caller
 * may reuse or free them at once. Copies of up to 48 bytes live in the task record (no
 * allocation); larger ones take one allocation, freed after the task.
 * @returns 0; EINVAL if pool or fn is NULL, or arg is NULL with size > 0 (size 0 passes
 *          a valid pointer to no bytes); ENOMEM; ESHUTDOWN, as heist_submit.
 * @since 0.1
 */
HEIST_EXPORT int heist_submit_copy(heist_pool *pool, heist_fn fn, const void *arg,
				   size_t size, heist_future **out);

/** How soon a queued task runs beside other queued tasks (heist_submit_priority, and
 * the priority fields of groups, dependent and timed tasks). Zero, the default of every
 * zero-filled struct, is normal.
 *
 * Each pool keeps one queue per priority. A worker, whenever it is between two tasks,
 * takes the oldest high task first (before its own deque); then its own deque and the
 * normal queue, as heist_submit's tasks; then what it can steal; only then the oldest
 * low task. So a high task waits for no queued task of lower priority: it starts as
 * soon as any worker finishes what it is running (a task, not a whole loop: a worker
 * inside a heist_for_each or a fork-join computation reaches "between two tasks" only
 * when that returns). Starvation bound: a worker that has started 64 tasks since it
 * last looked at the low queue takes the oldest low task next, if one waits, so low
 * tasks advance even under an endless stream of other work (the oldest waits for at
 * most 64 task starts of a worker). Within a priority, tasks queued from outside start
 * in the order they were queued.
 * No inversion through waits: a thread that waits for a future runs only what that
 * future needs (heist_future_wait), so a high task that waits for a low one runs it
 * at once if it is still queued (priority inheritance), and a waiter never picks
 * unrelated low work. A task of high or low priority never goes on a worker's own
 * deque (even when submitted from a worker, where normal tasks do), so every worker
 * sees it; fork-join spawns are not prioritised and keep their inline paths.
 * injector_limit bounds each queue on its own. */
enum heist_priority {
	HEIST_PRIORITY_LOW = -1,
	HEIST_PRIORITY_NORMAL = 0,
	HEIST_PRIORITY_HIGH = 1,
};

/**
 * heist_submit at a priority (enum heist_priority): fn(arg) is queued in the pool's
 * queue of that priority. HEIST_PRIORITY_NORMAL is heist_submit exactly.
 * @returns as heist_submit; EINVAL also for a priority that is not one of the three.
 * @since 0.2
 */
HEIST_EXPORT int heist_submit_priority(heist_pool *pool, int priority, heist_fn fn,
				       void *arg, heist_future **out);

/**
 * Wait until a future's task has finished or was cancelled.
 * @param[in] f  The future; the caller still owns it and releases it later.
 * @returns The task's own return value, or ECANCELED if it was cancelled before it ran;
 *          EINVAL if f is NULL.
 * Any thread may call this, any number of times. All the task's writes are visible to
 * the caller once it returns.
 * On another thread it spins briefly, then sleeps. On a worker it never runs work that
 * could in turn wait for the task that waits: only work the awaited task needs. It runs
 * the awaited task itself if that is still queued in the worker's own pool (so a task
 * may wait for a task it submitted, even on a one-worker pool); helps with the awaited
 * task's own fork-join children while another worker runs it; and follows the chain of
 * what the awaited task waits for, to any depth: a continuation's antecedent, a
 * when_all's inputs, and what the thread running the awaited task is itself waiting
 * for, in this pool or another. It runs whatever job of its own pool it finds at the
 * end of that chain; a job of another pool it leaves to that pool's threads. When it
 * can help with nothing it parks.
 * What this means: waits inside tasks always finish, whatever waits for what, as long
 * as the waits themselves form no cycle (a task waiting, directly or through others,
 * for itself). Within a pool this needs no thread beyond the workers; so does a chain
 * of waits across pools (a task of A waiting for a job of B whose task waits for a
 * job of A, and so on, to any depth). Where queued work needs a thread that the pool
 * cannot give (a task of A and a task of B each waiting for the other pool's queued
 * job, or a loop of timed waits), a spare thread stands in, up to
 * heist_config.max_spares; docs/architecture.md states the bound and proves it.
 * @since 0.1
 */
HEIST_EXPORT int heist_future_wait(heist_future *f);

/**
 * Wait at most timeout_ns nanoseconds for a future.
 * @returns true if the task is done (heist_future_wait then returns at once), false on
 *          timeout or if f is NULL.
 * A timeout too large to add to the current time (UINT64_MAX, say) means forever. On a
 * worker it runs nothing meanwhile, not even the awaited task (which may need the
 * caller to go on after the deadline, to cancel it say), and other waits do not follow
 * it: it returns by its deadline. If work is waiting that no thread of the pool is
 * free to run, it calls a spare thread at once to stand in, and its thread counts as
 * parked until it moves on (this wait succeeds, the task returns, or it waits without
 * a deadline), so a loop of short timed waits on a job of its own pool makes
 * progress, with one spare. With HEIST_SPARES_NONE a timed wait is only a sleep: the
 * awaited task runs when another thread of the pool is free, which on a pool whose
 * every thread polls may be never; heist_future_wait runs it.
 * @since 0.1
 */
HEIST_EXPORT bool heist_future_wait_for(heist_future *f, uint64_t timeout_ns);

/**
 * heist_future_wait_for with an int, so that a NULL future and a timeout differ: the
 * same wait, the same deadline, the same rules on a worker.
 * @returns 0 if the task is done (its result is heist_future_wait's, which then returns
 *          at once); ETIMEDOUT if it is not done by the deadline (0 ns: not done now);
 *          EINVAL if f is NULL. The task's own result never comes through here.
 * It is inline over heist_future_wait_for, so it adds no symbol: a program that uses
 * it runs with every 0.1.y library.
 * @since 0.2
 */
static inline int
heist_future_wait_timeout(heist_future *f, uint64_t timeout_ns)
{
	if (!f)
		return EINVAL;
	return heist_future_wait_for(f, timeout_ns) ? 0 : ETIMEDOUT;
}

/**
 * Run fn(arg) on f's pool once f is done, without any thread blocking meanwhile: the
 * worker that finishes f queues it (at once if f is done already). The call holds its
 * own reference to f, so the caller may release f right after it; what f's task wrote
 * is visible to fn. fn gets only arg: to read f's result there, keep f (pass it as
 * arg, say) and release it once fn is done with it.
 * @param[out] out  Receives the continuation's future (fn's result; ECANCELED, fn never
 *                  run, if f was cancelled before it ran or if the continuation itself
 *                  is cancelled before f is done), or NULL for fire-and-forget. A task
 *                  that ran and returned ECANCELED was not cancelled: fn runs.
 *                  A when_all future is never cancelled but by its own future: its
 *                  continuations run, and see its result (ECANCELED for a cancelled
 *                  input).
 * @returns 0; EINVAL if f or fn is NULL; ENOMEM; ESHUTDOWN if f is done and its pool is
 *          destroyed or being destroyed (nothing was queued). A continuation of a job
 *          that finishes during heist_pool_destroy's drain still runs, as submits from
 *          tasks do. A waiter of the continuation's future never runs it early.
 * @since 0.1
 */
HEIST_EXPORT int heist_future_then(heist_future *f, heist_fn fn, void *arg,
				   heist_future **out);

/** What heist_future_on_done calls: arg as given, and the future's result (as
 * heist_future_wait would return it: the task's own, or ECANCELED). */
typedef void (*heist_done_fn)(void *arg, int result);

/**
 * Call fn(arg, result) once f is done, whichever way: the task ran, or it was cancelled
 * or ended without running (a continuation whose pool was destroyed, say), on the
 * thread that made it so, right after its waiters see it done; or at once, on the
 * caller's thread, if f is done already. Nothing is queued: fn runs inside that
 * thread's finishing of f, so it should be short and must not wait for anything (it
 * may submit, set a promise, release futures). For what must follow a job's end however
 * it ends (freeing what its argument holds, say), where heist_future_then's
 * continuation would not run for a cancelled job. The call holds its own reference to
 * f until fn has run; what f's task wrote is visible to fn. A waiter of f may return
 * before fn has run (fn follows the waiters' wake-up): to wait for fn itself, have it
 * set a promise (heist_promise_set).
 * @returns 0; EINVAL if f or fn is NULL; ENOMEM (fn will not be called).
 * @since 0.2
 */
HEIST_EXPORT int heist_future_on_done(heist_future *f, heist_done_fn fn, void *arg);

/**
 * A future that is done when all n futures are, giving the first nonzero result among
 * them in array order (ECANCELED for one cancelled), or 0. n = 0: done at once. It
 * needs none of the caller's references to them: the caller may release them at once.
 * No thread waits or polls for it. Cancelling it (heist_future_cancel) makes it give
 * ECANCELED at once; the futures it waits for go on. Its continuations run on pool;
 * they can read its result through the future, if whoever linked them keeps it until
 * they have run. If pool is destroyed first (it does not wait for a when_all, which
 * never runs), the future still completes when its inputs end; a continuation of it
 * that becomes runnable then ends with ESHUTDOWN, never run.
 * @param[out] out  Receives the future; required.
 * @returns 0; EINVAL if pool or out is NULL, fs is NULL with n > 0, or an fs[i] is
 *          NULL; ENOMEM. The futures may come from any pools.
 * @since 0.1
 */
HEIST_EXPORT int heist_when_all(heist_pool *pool, heist_future *const *fs, size_t n,
				heist_future **out);

/**
 * Whether the task has finished or was cancelled; never blocks. When it returns true,
 * the task's writes are visible to the caller.
 * @returns true once the task finished or was cancelled; false before, and for NULL.
 * @since 0.1
 */
HEIST_EXPORT bool heist_future_done(const heist_future *f);

/**
 * Cancel a future's task. If it has not started it never runs and the future gives
 * ECANCELED; if it is running, heist_cancelled() turns true inside it and its own
 * return value is delivered; if it is done, nothing changes. NULL is a no-op.
 * @since 0.1
 */
HEIST_EXPORT void heist_future_cancel(heist_future *f);

/**
 * Release the caller's reference. A future released before it was waited for is
 * detached: its task still runs. NULL is a no-op. Releasing a future twice is misuse:
 * it aborts with a message while the record is still the same future's (queued,
 * running, or freed and not yet reused); once the record was reused by a later
 * submit, a second release is undefined.
 * @since 0.1
 */
HEIST_EXPORT void heist_future_release(heist_future *f);

/* ---------------------------------------------------------------------------------- */
/* Cancellation (cooperative, as .NET's CancellationToken)                            */

/**
 * Create a token, with one reference held by the caller.
 * @returns 0; EINVAL if out is NULL; ENOMEM.
 * @since 0.1
 */
HEIST_EXPORT int heist_cancel_create(heist_cancel **out);

/**
 * Cancel every task submitted with this token: those not yet taken by a worker never
 * run (their futures give ECANCELED); those running see heist_cancelled() turn true.
 * Any thread; idempotent; NULL is a no-op. What the caller wrote before this call is
 * visible to a task that sees the cancellation.
 * @since 0.1
 */
HEIST_EXPORT void heist_cancel_request(heist_cancel *c);

/**
 * Whether heist_cancel_request was called on the token. Any thread.
 * @returns true once it was; false before, and for NULL.
 * @since 0.1
 */
HEIST_EXPORT bool heist_cancel_requested(const heist_cancel *c);

/**
 * Release the caller's reference. Queued tasks hold their own, so a token may be
 * released while they wait. NULL is a no-op.
 * @since 0.1
 */
HEIST_EXPORT void heist_cancel_release(heist_cancel *c);

/**
 * heist_submit with a token. The token is checked when a worker takes the task,
 * before it runs.
 * @returns as heist_submit; EINVAL also if c is NULL.
 * @since 0.1
 */
HEIST_EXPORT int heist_submit_cancellable(heist_pool *pool, heist_cancel *c, heist_fn fn,
					  void *arg, heist_future **out);

/**
 * Inside a submitted task: whether its future or its token was cancelled. false
 * elsewhere (also inside fork-join children that another worker stole).
 * @returns true once the running task's future or token is cancelled; false when it
 *          is not, or outside a submitted task.
 * @since 0.1
 */
HEIST_EXPORT bool heist_cancelled(void);

/* ---------------------------------------------------------------------------------- */
/* Task groups: submitted jobs waited for as a whole (oneTBB's task_group)             */

/** A set of submitted tasks waited for as a whole, as oneTBB's task_group: any number,
 * from any thread, each queued as heist_submit's are. Opaque. Not the C++
 * heist::task_group of heist.hpp, which is a fork-join scope of at most N spawned
 * children in the caller's frame (heist_spawn/heist_sync); heist.hpp has no wrapper
 * of this one yet (docs/cxx.md, "Two kinds of group"). */
typedef struct heist_group heist_group;

/**
 * Create an empty group whose tasks run on pool. The group counts its tasks on one
 * cache line per worker (up to 16), so that submits and finishes on different
 * threads write no common line: it takes a few KiB at most, allocated here, and none
 * per task.
 * @returns 0; EINVAL if pool or out is NULL; ENOMEM.
 * @since 0.1
 */
HEIST_EXPORT int heist_group_create(heist_pool *pool, heist_group **out);

/**
 * Submit fn(arg) to the group: it runs on the group's pool, as heist_submit's tasks
 * do (no allocation in steady state), and the group waits for it. Any thread may
 * submit, a task of the group included, so a group can grow recursively.
 * @returns 0; EINVAL if g or fn is NULL; ENOMEM or ESHUTDOWN, as heist_submit (the task
 *          is then not part of the group).
 * @since 0.1
 */
HEIST_EXPORT int heist_group_submit(heist_group *g, heist_fn fn, void *arg);

/**
 * Set the priority (enum heist_priority) of the tasks submitted to the group from now
 * on, by heist_group_submit and as dependent tasks of the group (heist_after.priority
 * overrides it when not normal); tasks already queued keep theirs. A new group's is
 * HEIST_PRIORITY_NORMAL. The caller orders the call with the submits it should affect.
 * @returns 0; EINVAL if g is NULL or priority is not one of the three.
 * @since 0.2
 */
HEIST_EXPORT int heist_group_set_priority(heist_group *g, int priority);

/**
 * Wait until every task submitted to the group so far, and every task they submit to
 * it, has finished. What they wrote is visible to the caller once it returns. On a
 * worker of the group's pool it runs the group's tasks it finds at the bottom of its
 * own deque (those it submitted, say) and those still queued from other threads (the
 * pool's injector), and otherwise parks as heist_future_wait does: group tasks queued
 * on another thread's deque are run by that thread, by other workers or by a spare
 * thread standing in.
 * Any number of threads may wait at once.
 * @returns 0, or the first nonzero result of a task of the group (ECANCELED for one
 *          cancelled before it ran); EINVAL if g is NULL; EDEADLK, at once and
 *          without touching the group, when a task of the group is running on the
 *          calling thread's stack: the caller is one of the group's tasks, or runs
 *          inside one on the same thread (a task that one ran while it waited, a
 *          fork-join child it synced on this thread), so the group cannot finish
 *          before the caller returns (as heist_pool_wait_idle from a task of its
 *          pool). The task that gets it should not return it unless it means the
 *          group to fail: it would be the group's first nonzero result. A cycle
 *          through another thread (a child a group task spawned, stolen by another
 *          worker, that waits for the group) is not detected, and never returns.
 *          After the first nonzero result the group's tasks that have not started
 *          never run, and heist_cancelled() turns true in those running. That lasts:
 *          tasks submitted to the group later are cancelled too; use a new group to
 *          start over.
 * @since 0.1; EDEADLK since 0.2 (0.1 waited forever).
 */
HEIST_EXPORT int heist_group_wait(heist_group *g);

/**
 * Cancel the group: its tasks that have not started never run (and give ECANCELED),
 * those running see heist_cancelled() turn true. Idempotent; NULL is a no-op.
 * @since 0.1
 */
HEIST_EXPORT void heist_group_cancel(heist_group *g);

/**
 * Wait for the group's tasks (as heist_group_wait, its result dropped), then free the
 * group. Cancel it first to drop the tasks that have not started. NULL is a no-op.
 * The group's own tasks may still submit to it meanwhile (destroy waits for those
 * too); no other thread may submit to it or wait on it, during or after the call.
 * @since 0.1
 */
HEIST_EXPORT void heist_group_destroy(heist_group *g);

/* ---------------------------------------------------------------------------------- */
/* Dependent tasks: a task that runs once other tasks are done (a task graph's node)   */

/** heist_after.flags: run the task even when an input failed or was cancelled; it may
 * then read each input's result through its future (which the caller keeps for it). */
#define HEIST_AFTER_ALWAYS 1u

/** How a dependent task is submitted (heist_submit_after). A zero-filled struct, or a
 * NULL pointer, means: no token, no group, run only if every input succeeded. */
struct heist_after {
	heist_cancel *cancel;	/* a token that cancels the task (a reference is
				   taken), or NULL; not with group, which has its own */
	heist_group *group;	/* the group the task belongs to, or NULL: the group's
				   wait covers it from the call on, and its result is one
				   of the group's (the group's first error cancels it) */
	unsigned flags;		/* 0, or HEIST_AFTER_ALWAYS */
	int priority;		/* enum heist_priority, once runnable; normal (0): the
				   group's, if it has one (heist_group_set_priority) */
};

/**
 * Submit fn(arg) to run on pool once all n input futures are done, in one job record
 * (one allocation besides it for more than 3 inputs): no thread blocks or polls
 * meanwhile, and no intermediate future is made. The inputs may be any futures, of any
 * pools: submits, continuations, when_alls, other dependent tasks (with the group's
 * tasks, a task graph). The task needs none of the caller's references to its inputs:
 * the caller may release them at once; what the inputs' tasks wrote is visible to fn.
 * If an input failed (a nonzero result) or was cancelled, the task does not run: its
 * future gives the first such input's result in array order (ECANCELED for one that was
 * cancelled), and a group it belongs to counts that as its error. With
 * HEIST_AFTER_ALWAYS it runs anyway, and its own result is its future's. Cancelled
 * before it runs (by its future, its token or its group), it never runs and gives
 * ECANCELED; the inputs go on. n = 0: runnable at once, as heist_submit.
 * A waiter of its future never runs it early; a waiting worker may run its inputs.
 * Once runnable it is queued as a continuation is (heist_future_then): by the thread
 * that finished the last input, counted as that input's work by heist_pool_wait_idle;
 * if its pool is destroyed before then, it ends with ESHUTDOWN, never run (a group's
 * destroy waits for it first).
 * @param[in] pool  The pool fn runs on; NULL to use opt->group's pool.
 * @param[in] inputs  n futures, each not NULL; the caller keeps its own references.
 * @param[in] opt  Token, group and flags, or NULL for none.
 * @param[out] out  Receives the task's future, or NULL for fire-and-forget.
 * @returns 0; EINVAL if fn is NULL, there is no pool, inputs is NULL with n > 0 or holds
 *          a NULL, opt->group's pool is not pool, opt has both a token and a group, or
 *          opt->flags has an unknown bit or opt->priority is not a heist_priority;
 *          ENOMEM; ESHUTDOWN if every input is done and the pool is destroyed or being
 *          destroyed (nothing was queued).
 * @since 0.2
 */
HEIST_EXPORT int heist_submit_after(heist_pool *pool, heist_future *const *inputs, size_t n,
				    heist_fn fn, void *arg, const struct heist_after *opt,
				    heist_future **out);

/* ---------------------------------------------------------------------------------- */
/* Promises: futures the program completes (std::promise, CompletableFuture.complete)  */

/** The writing end of a future that no task completes: the program sets its result
 * once, from any thread (an I/O callback, another event loop, an MPI request's test),
 * and the future is done. The future is a heist_future like any other: wait on it,
 * chain heist_future_then on it, give it to heist_when_all or heist_submit_after (and
 * through a dependent task of it, to a group). Opaque. */
typedef struct heist_promise heist_promise;

/**
 * Create a promise and its future, unset.
 * @param[in] pool  The pool its continuations and dependent tasks run on by default
 *                  (heist_future_then queues on it); nothing of the promise runs there.
 * @param[out] out  Receives the promise, which the caller sets (heist_promise_set) and
 *                  releases (heist_promise_release).
 * @param[out] future  Receives its future, which the caller waits on and releases as
 *                     any other (heist_future_release); it may outlive the promise.
 * @returns 0; EINVAL if pool, out or future is NULL; ENOMEM. On failure both out and
 *          future are set to NULL.
 * @since 0.2
 */
HEIST_EXPORT int heist_promise_create(heist_pool *pool, heist_promise **out,
				      heist_future **future);

/**
 * Set the promise's result: its future is done and gives result (0 or an error code,
 * as a task's return value), its waiters wake and what waits for it runs. Any thread,
 * once. Everything the caller wrote before the call is visible to whoever sees the
 * future done, as a task's writes are. A worker waiting on the future meanwhile runs
 * other work or parks with a spare thread standing in (the waiting rule of
 * heist_future_wait), so a task queued behind the waiter may be the one that sets it;
 * with HEIST_SPARES_NONE it may not, as on any fixed-size pool.
 * @returns 0; EINVAL if p is NULL or was set already; ECANCELED if its future was
 *          cancelled first (heist_future_cancel), which the result then does not change.
 * @since 0.2
 */
HEIST_EXPORT int heist_promise_set(heist_promise *p, int result);

/**
 * Release the caller's promise. A promise released unset is broken: its future is
 * cancelled (it gives ECANCELED, and its continuations do not run), so that no waiter
 * waits forever. NULL is a no-op; a promise may not be used after its release.
 * @since 0.2
 */
HEIST_EXPORT void heist_promise_release(heist_promise *p);

/* ---------------------------------------------------------------------------------- */
/* Timers: tasks due later, and periodic ones (ScheduledExecutorService, uv_timer)      */

/**
 * The clock that timed tasks are due on: monotonic nanoseconds from an arbitrary start
 * (CLOCK_MONOTONIC; QueryPerformanceCounter on Windows). Any thread.
 * @since 0.2
 */
HEIST_EXPORT uint64_t heist_now_ns(void);

/** When a timed task is due (heist_submit_timed). A zero-filled struct means: now. */
struct heist_timing {
	uint64_t delay_ns;	/* due this long after the call; or, not both: */
	uint64_t at_ns;		/* due at this heist_now_ns() time (0: use delay_ns) */
	uint64_t period_ns;	/* 0: run once; else run again every period_ns */
	heist_cancel *cancel;	/* a token that cancels it (a reference is taken), or NULL */
	int priority;		/* enum heist_priority, once due (0: normal) */
};

/**
 * Submit fn(arg) to run on pool once it is due, then (with a period) again every
 * period_ns. No thread is made or blocked for it: the pool keeps its timed tasks in one
 * heap, and its workers queue each one as it comes due (a sleeping worker wakes for the
 * earliest; a busy one looks between its tasks), as an outside submit; so a due task
 * starts once a worker is free, and may start late behind tasks that hold every
 * worker. Until it is due, no waiter runs it and heist_pool_wait_idle and
 * heist_pool_pending do not count it; a worker that waits for its future runs other
 * work or parks with a stand-in (the waiting rule), fires it when it is due and, if it
 * is of its own pool, runs it. A periodic task is never run by a waiter of its future
 * (each run puts it back in the heap): as for a promise, on a pool made with
 * HEIST_SPARES_NONE a task that waits for one of its own pool's periodic tasks may
 * wait forever once every worker waits so.
 * Periodic: the runs are on the grid of the first due time plus multiples of the
 * period, never two at once; a run that would start more than a period late is skipped
 * (the next starts on the grid), never made up in a burst. The future is done when a run
 * returns nonzero (that value), when it is cancelled (ECANCELED), or with ESHUTDOWN
 * when the pool is destroyed (or ENOMEM if the next run could not be queued).
 * Cancel: heist_future_cancel ends a task not yet due at once (ECANCELED, never run) and
 * a periodic one after its current run; a token's request is seen when the task comes
 * due (it does not run then) and after each periodic run. heist_pool_destroy does not
 * wait for timed tasks: those not yet due end with ESHUTDOWN, never run.
 * A task due now or earlier (and not periodic) is submitted at once, as heist_submit.
 * @param[in] when  When it is due, its period and token; not NULL.
 * @param[out] out  Receives its future, or NULL for fire-and-forget (a periodic task
 *                  is then stopped only by its token, a nonzero result, or destroy).
 * @returns 0; EINVAL if pool, when or fn is NULL, when has both at_ns and delay_ns, or
 *          when->priority is not a heist_priority;
 *          ENOMEM; ESHUTDOWN once the pool's destroy has begun.
 * @since 0.2
 */
HEIST_EXPORT int heist_submit_timed(heist_pool *pool, const struct heist_timing *when,
				    heist_fn fn, void *arg, heist_future **out);

/**
 * heist_submit_timed with only a delay: fn(arg) runs once, delay_ns from now.
 * @since 0.2
 */
HEIST_EXPORT int heist_submit_delayed(heist_pool *pool, uint64_t delay_ns, heist_fn fn,
				      void *arg, heist_future **out);

/* ---------------------------------------------------------------------------------- */
/* Data dependencies: tasks that name what they read and write (OpenMP's depend)       */

/** A history of the addresses tasks read and write, from which each new task's inputs
 * are derived: it runs after the last task that wrote an address it reads or writes
 * (read after write, write after write) and after every task that read, since, an
 * address it writes (write after read), as OpenMP's depend(in/out/inout) orders
 * sibling tasks. Each task is a dependent task (heist_submit_after) of those, and one
 * of the dataflow's group, so that heist_dataflow_wait covers them. Opaque. */
typedef struct heist_dataflow heist_dataflow;

/** heist_access.mode: the task reads the datum, writes it, or both. */
#define HEIST_IN 1u
#define HEIST_OUT 2u
#define HEIST_INOUT 3u

/** One datum a task reads or writes: an address names it (as OpenMP's list items do;
 * two different addresses never conflict, even if the data they start overlap, and
 * heist never reads them). */
struct heist_access {
	const void *addr;	/* not NULL */
	unsigned mode;		/* HEIST_IN, HEIST_OUT or HEIST_INOUT */
};

/**
 * Create an empty dataflow whose tasks run on pool.
 * @returns 0; EINVAL if pool or out is NULL; ENOMEM.
 * @since 0.2
 */
HEIST_EXPORT int heist_dataflow_create(heist_pool *pool, heist_dataflow **out);

/**
 * Submit fn(arg), which reads and writes the n data of acc, to run once the tasks it
 * depends on by those (see heist_dataflow) are done. Submits are ordered by the call:
 * any thread may submit, a task of the dataflow included, and the edges follow the
 * order in which the calls took the dataflow's lock. An address may appear more than
 * once (IN and OUT: INOUT). If a task it depends on failed or was cancelled, it ends
 * unrun with that result, as heist_submit_after's tasks do, and the dataflow's first
 * error cancels its tasks that have not started, until heist_dataflow_wait.
 * @param[out] out  The task's future, or NULL for none (the dataflow keeps its own).
 * @returns 0; EINVAL if df or fn is NULL, acc is NULL with n > 0, or an access has a
 *          NULL address or a mode other than the three; ENOMEM (nothing submitted, the
 *          history unchanged); ESHUTDOWN once the pool is being destroyed and every
 *          input is done.
 * @since 0.2
 */
HEIST_EXPORT int heist_dataflow_submit(heist_dataflow *df, const struct heist_access *acc,
				       size_t n, heist_fn fn, void *arg, heist_future **out);

/**
 * Wait until every task submitted to the dataflow so far (and those they submit to it)
 * has finished, helping as heist_group_wait does. Later tasks still follow the
 * history (an address written before the wait is read after it in order), and start
 * with no error: a new group takes the dataflow's tasks from here on.
 * One thread at a time may wait on a dataflow (or destroy it); any may submit.
 * @returns 0, or the first nonzero result of a task since the last wait (ECANCELED for
 *          a cancelled one); EINVAL if df is NULL; EDEADLK from one of its own tasks.
 * @since 0.2
 */
HEIST_EXPORT int heist_dataflow_wait(heist_dataflow *df);

/**
 * Cancel the dataflow's tasks that have not started (they give ECANCELED), until the
 * next heist_dataflow_wait. NULL: no-op.
 * @since 0.2
 */
HEIST_EXPORT void heist_dataflow_cancel(heist_dataflow *df);

/**
 * Wait for every task of the dataflow, then free it. The futures it handed out stay
 * valid. NULL: no-op.
 * @since 0.2
 */
HEIST_EXPORT void heist_dataflow_destroy(heist_dataflow *df);

/* ---------------------------------------------------------------------------------- */
/* Data parallelism                                                                   */

/** A loop body: runs on the half-open range [begin, end); nonzero stops the loop. */
typedef int (*heist_range_fn)(void *arg, size_t begin, size_t end);

/**
 * Run body over [begin, end) in parallel, in sub-ranges of about grain indices (0: an
 * automatic grain: 1/16 of a worker's share, or 1/4 of the range for a nested loop, one
 * called inside another loop's body on this pool or by a worker whose deque still
 * holds work for thieves, so that a nest makes about as many body calls as the flat
 * loop; at most 2048 indices either way). A loop that is not nested is first cut
 * into one contiguous share per worker (k (end - begin) / threads on, as OpenMP's
 * static schedule; fewer when the range holds fewer grains than workers), handed out
 * at once: the caller runs the first, the other workers take the others as soon as
 * they are free (even if none was free at the split, and however long the caller's
 * first body runs). Each share is
 * then split lazily: a worker splits off half of what it has left only when its
 * deque is empty or a thief asks, else it runs the next grain itself, so a worker
 * whose share runs out early takes over part of another's. On a worker, the
 * call forks in place, so it nests inside tasks and inside other bodies on any pool
 * size. The calling thread takes part: from outside the pool
 * it occupies the pool's guest slot for the call (a worker record without a thread of
 * its own), runs sub-ranges itself and lets the workers steal the rest; in those
 * bodies heist_worker_index() is -1. It takes the place of a sleeping worker, which
 * sleeps on until the call returns, so that the pool runs no more than `threads`
 * threads (and a series of outside loops wakes nobody for the place): with the caller
 * inside, at most threads - 1 workers run. When no worker sleeps (all are busy, or
 * still searching right after other work), the caller takes part at once all the
 * same, and the next worker to find no work in a whole search gives its place. A job
 * queued (heist_submit and its kin) while nobody searches or sleeps wakes the lent
 * worker, as the body waiting for it may need a thread; the place is then owed
 * again. One outside caller at a time has the slot; others, and worker threads of
 * other pools, enter as heist_run does and wait. The
 * first nonzero body result stops the sub-ranges not yet started,
 * waits for those running, and is returned; no body runs after the call returns.
 * @returns 0; the first nonzero body result; EINVAL if pool or body is NULL or
 *          begin > end (an empty range returns 0 and never calls body); ENOMEM;
 *          ESHUTDOWN.
 * @since 0.1
 */
HEIST_EXPORT int heist_for_each(heist_pool *pool, size_t begin, size_t end, size_t grain,
				heist_range_fn body, void *arg);

/**
 * The non-blocking heist_for_each: the loop runs on the pool, the caller goes on, and
 * the future gives 0 or the first nonzero body result. arg must stay valid until then.
 * @returns as heist_submit; EINVAL also for begin > end or a NULL body.
 * @since 0.1
 */
HEIST_EXPORT int heist_submit_bulk(heist_pool *pool, size_t begin, size_t end, size_t grain,
				   heist_range_fn body, void *arg, heist_future **out);

/**
 * heist_submit_bulk at a priority (enum heist_priority): the loop is queued as one task
 * of that priority, and starts when a worker takes it by heist_priority's rule. Once
 * started it is split by fork-join as any loop: its pieces are run by the worker that
 * started it and stolen by idle ones, and a worker inside it finishes its share before
 * it looks at the queues again (a high task queued meanwhile waits for a worker that
 * is not in the loop, or for the loop's end). Cut a long low-priority loop into several
 * bulk submits to let high tasks in between.
 * @returns as heist_submit_bulk; EINVAL also for a priority that is not one of the three.
 * @since 0.2
 */
HEIST_EXPORT int heist_submit_bulk_priority(heist_pool *pool, int priority, size_t begin,
					    size_t end, size_t grain, heist_range_fn body,
					    void *arg, heist_future **out);

/**
 * A reduce body: accumulate [begin, end) into acc, an accumulator of heist_reduce's
 * size bytes that already holds a value (the identity, or what earlier ranges left
 * in it); nonzero stops the reduction.
 */
typedef int (*heist_reduce_fn)(void *arg, void *acc, size_t begin, size_t end);

/**
 * A combine: into = into (+) from, where into holds the reduction of lower indices
 * than from. It must be associative, with the identity as its neutral element; it
 * need not be commutative (the order of the operands is always the index order).
 */
typedef void (*heist_combine_fn)(void *arg, void *into, const void *from);

/**
 * Reduce [begin, end) in parallel: result = identity (+) body's accumulation of every
 * sub-range, combined in index order. size is the accumulator's size in bytes (any
 * size; up to 64 bytes they live in the callers' frames, above that one allocation
 * per split); identity is size bytes, or NULL for all-zero bytes. The range is
 * split lazily, as each share of heist_for_each: a thread accumulates it a grain at a
 * time (0: an automatic grain of about 1/16 of a worker's share) and splits off the
 * upper half of what it has left, with an accumulator of its own, only when its deque
 * is empty or a thief asks. A half that no other worker has started when its
 * splitter gets back to it is accumulated on into the splitter's value, with no
 * identity and no combine; so where the combines fall depends on the schedule, and a
 * floating-point result may differ in its last bits from run to run (use
 * heist_reduce_deterministic for that). Runs where heist_for_each would: in place
 * on a worker of the pool, so it nests inside tasks, loops and other reductions; an
 * outside caller takes part in the pool's guest slot, in a sleeping worker's place
 * as heist_for_each says (or, if the slot is taken, enters as heist_run does and
 * waits). The first nonzero body result stops the
 * sub-ranges not yet started, waits for those running, and is returned.
 * *result is written only when the call returns 0; it may be identity itself.
 * @returns 0; the first nonzero body result; EINVAL if pool, result, body or combine
 *          is NULL, size is 0 or begin > end (an empty range gives the identity and
 *          never calls body); ENOMEM; ESHUTDOWN.
 * @since 0.1
 */
HEIST_EXPORT int heist_reduce(heist_pool *pool, size_t begin, size_t end, size_t grain,
			      void *result, size_t size, const void *identity,
			      heist_reduce_fn body, heist_combine_fn combine, void *arg);

/**
 * heist_reduce with a result that is the same bit for bit for every pool size and
 * every schedule (as oneTBB's parallel_deterministic_reduce): the range is always
 * halved down to grain (0: an automatic grain of 1/32 of the range, whatever the
 * pool), every leaf starts from the identity, and every pair is combined, so the
 * tree of operations depends on begin, end and grain alone. Floating-point sums
 * reproduce. It costs a combine per split where heist_reduce claims unstolen
 * halves. ENOMEM also when an accumulator above 64 bytes cannot be allocated
 * (heist_reduce then goes on without splitting).
 * @returns as heist_reduce.
 * @since 0.1
 */
HEIST_EXPORT int heist_reduce_deterministic(heist_pool *pool, size_t begin, size_t end,
					    size_t grain, void *result, size_t size,
					    const void *identity, heist_reduce_fn body,
					    heist_combine_fn combine, void *arg);

/* ---------------------------------------------------------------------------------- */
/* Graphs built once and run many times (Taskflow's taskflow, OpenMP's taskgraph)      */

/** A graph of nodes (a function, a loop, another graph) and the edges between them,
 * built once and run on a pool as often as wanted. A run starts the nodes that have
 * no predecessor, and each other node once all its predecessors have finished; a run
 * allocates nothing per node (its nodes run as fork-join tasks whose records live in
 * the graph) and one job record, its future. Runs of one graph follow each other in
 * the order of their heist_graph_run calls, each with its own future, result and
 * cancellation. Opaque. */
typedef struct heist_graph heist_graph;

/** A node of a graph: valid until the graph is destroyed. Opaque. */
typedef struct heist_graph_node heist_graph_node;

/**
 * Create an empty graph.
 * @returns 0; EINVAL if out is NULL; ENOMEM.
 * @since 0.2
 */
HEIST_EXPORT int heist_graph_create(heist_graph **out);

/**
 * Add a node that calls fn(arg); its return value is the node's result.
 * Nodes and edges are added while no run of the graph is pending (queued or
 * running), by one thread at a time; nor while a graph that holds this one as a
 * node runs (not detected).
 * @param[out] out  The node, or NULL if the caller names it no further.
 * @returns 0; EINVAL if g or fn is NULL; EBUSY if a run of g is pending; ENOMEM.
 * @since 0.2
 */
HEIST_EXPORT int heist_graph_add_task(heist_graph *g, heist_fn fn, void *arg,
				      heist_graph_node **out);

/**
 * Add a node that runs heist_for_each(pool, begin, end, grain, body, arg) on the
 * run's pool: its result is the loop's.
 * @returns As heist_graph_add_task; EINVAL also if body is NULL or end < begin.
 * @since 0.2
 */
HEIST_EXPORT int heist_graph_add_loop(heist_graph *g, size_t begin, size_t end, size_t grain,
				      heist_range_fn body, void *arg, heist_graph_node **out);

/**
 * Add a node that runs the graph sub (a whole run of it, inside this run: its first
 * error or this run's cancellation stops it; its result is the node's). sub must
 * outlive g's runs, and may be a node of several graphs, or of one graph more than
 * once, if no two of its uses can run at once (they are ordered by edges, or the runs
 * that hold them follow each other): a use that finds sub running already gives
 * EBUSY.
 * @returns As heist_graph_add_task; EINVAL also if sub is NULL, is g, or holds g as a
 *          node (directly or through its own subgraphs): a graph may not hold itself.
 * @since 0.2
 */
HEIST_EXPORT int heist_graph_add_graph(heist_graph *g, heist_graph *sub,
				       heist_graph_node **out);

/**
 * Make node after run only once node before has finished (in every run). Both must
 * be nodes of the same graph; an edge given twice counts once per call, harmlessly.
 * A cycle is found by heist_graph_run.
 * @returns 0; EINVAL if either is NULL, they are the same node, or of different
 *          graphs; EBUSY if a run of their graph is pending; ENOMEM.
 * @since 0.2
 */
HEIST_EXPORT int heist_graph_edge(heist_graph_node *before, heist_graph_node *after);

/**
 * Run g on pool: once the previous run of g (from any pool) has ended, every node
 * runs after its predecessors, each on whatever worker is free. The first nonzero
 * result of a node is the run's, and nodes that have not started by then do not run
 * (nor their successors); so does a cancellation (the token, or heist_future_cancel of
 * the run's future, heist_cancelled() true in the nodes running then), and the run
 * gives ECANCELED unless a node failed first; a cancellation that comes once every
 * node has started stops nothing, and the run gives its nodes' result. Nodes run as
 * fork-join tasks of the run: heist_cancelled() answers for the run in each. The
 * graph's writes to what its nodes touch, and everything before the call, are visible
 * to the nodes; everything a node wrote is visible to its successors and to whoever
 * waits for the run.
 * Any thread may call this, a task included (but a node of g, whose run would wait
 * for its own: misuse, not detected).
 * @param[in] cancel  A token that cancels this run, or NULL (a reference is taken).
 * @param[out] out  The run's future, or NULL for none (heist_graph_destroy waits).
 * @returns 0; EINVAL if pool or g is NULL; EDEADLK if the graph (or a subgraph) has a
 *          cycle; ENOMEM; ESHUTDOWN once pool is being destroyed (nothing is run).
 * @since 0.2
 */
HEIST_EXPORT int heist_graph_run(heist_pool *pool, heist_graph *g, heist_cancel *cancel,
				 heist_future **out);

/**
 * Wait for the graph's runs to end, then free it and its nodes. The run futures it
 * handed out stay valid. Not while a graph that holds it as a node may still run.
 * NULL: no-op.
 * @since 0.2
 */
HEIST_EXPORT void heist_graph_destroy(heist_graph *g);

/* ---------------------------------------------------------------------------------- */
/* Fork-join                                                                          */

/**
 * A fork-join task record, declared by the caller in its own stack frame and passed to
 * heist_spawn and then heist_sync. Its size is part of the ABI; its contents are the
 * scheduler's: do not read or write them.
 */
typedef struct heist_task {
	heist_fn heist__fn;		/* the fields of the library's struct task (src/task.h); */
	void *heist__arg;		/* heist/inline.h's fast paths write the first ones */
	uint32_t heist__state;
	int heist__result;
	void *heist__thief;
	uint64_t heist__tsc;
	int64_t heist__link;
} heist_task;

/**
 * Spawn fn(arg) as a child of the running task: push t on the current worker's deque,
 * where an idle worker may steal it. No allocation, no lock, no system call.
 * t must stay alive, untouched, until heist_sync(t) returns.
 * Outside a worker, the task runs at once, inline, and sync returns its result.
 *
 * When thieves can see it: a spawn goes first to a part of the deque only its worker
 * touches (which is what makes it cost a few instructions), and is published, made
 * stealable, at once while another worker of the pool is idle (a thief asked, or the
 * worker's last publish found one idle), unless the spawns it published lately came
 * back to its own syncs untaken (then it waits to be asked again). Otherwise a worker
 * that goes idle asks, and this worker publishes at its next spawn or sync. So a child
 * spawned while every other worker is busy, followed by a long stretch of code that
 * neither spawns nor syncs, waits for the stretch to end if a worker frees up
 * meanwhile (as in Lace, whose split deque this is). Long pieces of work that must
 * overlap whatever the timing are better submitted (heist_submit publishes at once)
 * or made nodes of a graph (heist_graph publishes a node's siblings before the node
 * runs).
 *
 * heist_spawn and heist_sync are macros over inline fast paths (heist/inline.h) with
 * gcc and clang: the common case runs in the caller's code, with no call into the
 * library, and the rest goes to these functions. Same semantics either way. Define
 * HEIST_NO_INLINE before including this header to call the functions always (as
 * other languages do); (heist_spawn) and &heist_spawn name the function in any case.
 * t and fn must not be NULL: the fast path checks nothing (debug builds of the library
 * assert it on its own paths), so either is undefined, as in Cilk and Lace.
 * @since 0.1
 */
HEIST_EXPORT void heist_spawn(heist_task *t, heist_fn fn, void *arg);

/**
 * Wait for a spawned task and return fn's value. If nobody stole it, it runs now,
 * inline. If it was stolen, the caller helps with the stolen task's own children (it
 * steals them back from the thief) until it is done, and parks when there are none,
 * as heist_future_wait does. Syncs must come in the reverse order of their spawns
 * (strict fork-join, as in Cilk); debug builds check this with an assertion.
 * t must not be NULL (undefined, as for heist_spawn). A record that holds no spawned
 * task (never spawned, zeroed) aborts with a message;
 * debug builds (the caller's, NDEBUG not defined; and the library's, -Db_ndebug=false,
 * for the syncs it makes itself or with HEIST_NO_INLINE) also abort on a second sync of
 * the same spawn.
 * In release builds a second sync of a task that had been stolen returns its result
 * again, and one of a task that ran inline is undefined (it may wait forever).
 * @returns fn's own return value, whatever it is: heist_sync adds no error of its own,
 *          so a task that returns an errno value delivers it unchanged (see
 *          "Results and errors" at the top of this file).
 * @since 0.1
 */
HEIST_EXPORT int heist_sync(heist_task *t);

/**
 * Run a(arg_a) and b(arg_b) in parallel: spawn b, run a, sync b.
 * @returns a's value if nonzero, else b's; EINVAL if a or b is NULL (neither runs).
 * @since 0.1
 */
HEIST_EXPORT int heist_join(heist_fn a, void *arg_a, heist_fn b, void *arg_b);

/**
 * Run fn(arg) on the pool and wait for it: how an outside thread enters the pool to
 * run a fork-join computation. On a worker of the same pool, fn runs inline.
 * @returns fn's value; EINVAL if pool or fn is NULL; ENOMEM; ESHUTDOWN.
 * @since 0.1
 */
HEIST_EXPORT int heist_run(heist_pool *pool, heist_fn fn, void *arg);

/* ---------------------------------------------------------------------------------- */
/* Typed fork-join tasks                                                              */

/**
 * HEIST_TASK_1(name, R, fn, A1) ... HEIST_TASK_4(name, R, fn, A1, A2, A3, A4) declare,
 * at file scope, a fork-join task type for a function `R fn(A1, ...)` declared before:
 *
 *     struct name;                          the record, in the caller's frame
 *     void name_spawn(struct name *t, A1 a1, ...);
 *     R    name_sync(struct name *t);       fn's value
 *
 * name_spawn copies the arguments into t and spawns fn on them, as heist_spawn does;
 * name_sync waits for it and returns its value, as heist_sync does. Where nobody
 * stole the task (the common case), name_sync calls fn itself, directly, with the
 * arguments from t and its value in a register: no call through a pointer and no
 * argument struct, which is most of what a spawn+sync pair of heist_spawn and
 * heist_sync costs over a plain call (W1: 30 instructions over serial fib, where a
 * heist_spawn of an argument struct costs 47; in time 3.0 ns against 5.5 per spawn;
 * docs/benchmarks.md). The same rules hold: t stays alive and untouched until
 * name_sync returns, syncs come in the reverse order of their spawns, and outside a
 * worker fn runs at once, inside name_spawn. Every function is static inline; R must not be void (HEIST_VOID_TASK_n
 * is the form for a void fn, whose name_sync returns nothing), and neither R nor an
 * argument type may have a comma outside parentheses (a typedef names one that does).
 * In C++ they compile too, but fn must not throw: a stolen task runs under the C
 * library's frames (heist.hpp's join and task_group carry exceptions).
 *
 *     long fib(int n);
 *     HEIST_TASK_1(fib_task, long, fib, int)
 *
 *     long fib(int n)
 *     {
 *             if (n < 2)
 *                     return n;
 *             struct fib_task t;
 *             fib_task_spawn(&t, n - 1);
 *             long b = fib(n - 2);
 *             return fib_task_sync(&t) + b;
 *     }
 * @since 0.2
 */
/* The four lists every typed-task macro takes for n arguments (internal): the
 * record's fields, the spawn's parameters, its stores into the record, and the
 * call's arguments from it; HEIST__CALL expands them into the macro's arguments. */
#define HEIST__CALL(m, args) m args
#define HEIST__ARGS_1(A1)                                                              \
	(A1 heist__a1;), (A1 heist__a1), (t->heist__a1 = heist__a1;), (t->heist__a1)
#define HEIST__ARGS_2(A1, A2)                                                          \
	(A1 heist__a1; A2 heist__a2;), (A1 heist__a1, A2 heist__a2),                          \
	(t->heist__a1 = heist__a1; t->heist__a2 = heist__a2;), (t->heist__a1, t->heist__a2)
#define HEIST__ARGS_3(A1, A2, A3)                                                      \
	(A1 heist__a1; A2 heist__a2; A3 heist__a3;),                                          \
	(A1 heist__a1, A2 heist__a2, A3 heist__a3),                                           \
	(t->heist__a1 = heist__a1; t->heist__a2 = heist__a2; t->heist__a3 = heist__a3;),      \
	(t->heist__a1, t->heist__a2, t->heist__a3)
#define HEIST__ARGS_4(A1, A2, A3, A4)                                                  \
	(A1 heist__a1; A2 heist__a2; A3 heist__a3; A4 heist__a4;),                            \
	(A1 heist__a1, A2 heist__a2, A3 heist__a3, A4 heist__a4),                             \
	(t->heist__a1 = heist__a1; t->heist__a2 = heist__a2; t->heist__a3 = heist__a3;        \
	 t->heist__a4 = heist__a4;),                                                          \
	(t->heist__a1, t->heist__a2, t->heist__a3, t->heist__a4)
#define HEIST_TASK_1(name, R, fn, A1)                                                  \
	HEIST__CALL(HEIST__TASK, (name, R, fn, HEIST__ARGS_1(A1)))
#define HEIST_TASK_2(name, R, fn, A1, A2)                                              \
	HEIST__CALL(HEIST__TASK, (name, R, fn, HEIST__ARGS_2(A1, A2)))
#define HEIST_TASK_3(name, R, fn, A1, A2, A3)                                          \
	HEIST__CALL(HEIST__TASK, (name, R, fn, HEIST__ARGS_3(A1, A2, A3)))
#define HEIST_TASK_4(name, R, fn, A1, A2, A3, A4)                                      \
	HEIST__CALL(HEIST__TASK, (name, R, fn, HEIST__ARGS_4(A1, A2, A3, A4)))

/** HEIST_VOID_TASK_1(name, fn, A1) ... HEIST_VOID_TASK_4: HEIST_TASK_n for a function
 * `void fn(A1, ...)`; name_sync returns nothing. @since 0.2 */
#define HEIST_VOID_TASK_1(name, fn, A1)                                                \
	HEIST__CALL(HEIST__VOID_TASK, (name, fn, HEIST__ARGS_1(A1)))
#define HEIST_VOID_TASK_2(name, fn, A1, A2)                                            \
	HEIST__CALL(HEIST__VOID_TASK, (name, fn, HEIST__ARGS_2(A1, A2)))
#define HEIST_VOID_TASK_3(name, fn, A1, A2, A3)                                        \
	HEIST__CALL(HEIST__VOID_TASK, (name, fn, HEIST__ARGS_3(A1, A2, A3)))
#define HEIST_VOID_TASK_4(name, fn, A1, A2, A3, A4)                                    \
	HEIST__CALL(HEIST__VOID_TASK, (name, fn, HEIST__ARGS_4(A1, A2, A3, A4)))

/* The typed tasks' common body (internal). The record: heist_task first, then the
 * arguments and the value. name_heist__run is what the library calls when the task
 * is stolen or run by the library's sync; the sync's own fast path calls fn itself
 * (HEIST__POP: heist/inline.h's pop, or 0 where the fast paths are not inline). */
#define HEIST__ID(...) __VA_ARGS__
#define HEIST__TASK_SPAWN(name, params, stores)                                         \
	HEIST__TYPED void name##_spawn(struct name *t, HEIST__ID params)                \
	{                                                                               \
		HEIST__ID stores                                                        \
		heist_spawn(&t->heist__task, name##_heist__run, t);                     \
	}
#define HEIST__TASK(name, R, fn, fields, params, stores, args)                          \
	struct name {                                                                   \
		heist_task heist__task;                                                 \
		HEIST__ID fields                                                        \
		R heist__r;                                                             \
	};                                                                              \
	static inline int name##_heist__run(void *heist__p)                             \
	{                                                                               \
		struct name *t = HEIST__STATIC(struct name *, heist__p);                \
		t->heist__r = fn(HEIST__ID args);                                       \
		return 0;                                                               \
	}                                                                               \
	HEIST__TASK_SPAWN(name, params, stores)                                         \
	HEIST__TYPED R name##_sync(struct name *t)                                      \
	{                                                                               \
		if (HEIST__POP(&t->heist__task))                                        \
			return fn(HEIST__ID args);                                      \
		(heist_sync)(HEIST__HERE(&t->heist__task));                             \
		return t->heist__r;                                                     \
	}
#define HEIST__VOID_TASK(name, fn, fields, params, stores, args)                        \
	struct name {                                                                   \
		heist_task heist__task;                                                 \
		HEIST__ID fields                                                        \
	};                                                                              \
	static inline int name##_heist__run(void *heist__p)                             \
	{                                                                               \
		struct name *t = HEIST__STATIC(struct name *, heist__p);                \
		fn(HEIST__ID args);                                                     \
		return 0;                                                               \
	}                                                                               \
	HEIST__TASK_SPAWN(name, params, stores)                                         \
	HEIST__TYPED void name##_sync(struct name *t)                                   \
	{                                                                               \
		if (HEIST__POP(&t->heist__task)) {                                      \
			fn(HEIST__ID args);                                             \
			return;                                                         \
		}                                                                       \
		(heist_sync)(HEIST__HERE(&t->heist__task));                             \
	}

/* ---------------------------------------------------------------------------------- */
/* Fork-join tasks that receive their worker                                          */

/** The worker a fork-join computation runs on, passed down its recursion so that a
 * spawn and a sync need not look it up (Lace's hidden worker argument, made
 * explicit). Opaque. */
typedef struct heist_worker heist_worker;

/**
 * The calling thread's worker, for the worker-passing tasks below: on a worker (or a
 * spare, or the caller of heist_for_each inside its loop), that worker; on any other
 * thread a stand-in, never NULL, with which a spawn runs its task at once as
 * heist_spawn does there.
 * The value belongs to the calling thread and to the frame that asked for it: pass
 * it down to the calls this frame makes, never to another thread, and do not keep it
 * past the task (or loop body) that asked. A worker-passing task's body receives the
 * worker it runs on; a task run by the library (stolen, or synced by it) receives
 * the worker of the thread that runs it.
 * Any thread may call this; it is one thread-local read.
 * @since 0.2
 */
HEIST_EXPORT heist_worker *heist_worker_self(void);

/**
 * HEIST_WORKER_TASK_1(name, R, fn, A1) ... HEIST_WORKER_TASK_4 declare, as HEIST_TASK_n
 * does, a fork-join task type for a function whose first parameter is the worker:
 * `R fn(heist_worker *w, A1, ...)`:
 *
 *     struct name;
 *     void name_spawn(heist_worker *w, struct name *t, A1 a1, ...);
 *     R    name_sync(heist_worker *w, struct name *t);
 *
 * w is the worker the calling function received (or heist_worker_self()'s value).
 * Spawn and sync then read no thread-local variable: the common case of a spawn+sync
 * pair is the deque's own loads, stores and compares, and the direct call of fn(w,
 * ...) that a typed task's sync makes. It is HEIST_TASK_n's form otherwise, with its
 * rules (t stays alive and untouched until name_sync returns, syncs in the reverse
 * order of their spawns, fn must not throw in C++), and it mixes freely with
 * heist_spawn, heist_sync and typed tasks in one frame: all push on the same deque.
 * A task a thief steals runs with the thief's worker as w.
 *
 *     long fib(heist_worker *w, int n);
 *     HEIST_WORKER_TASK_1(fib_task, long, fib, int)
 *
 *     long fib(heist_worker *w, int n)
 *     {
 *             if (n < 2)
 *                     return n;
 *             struct fib_task t;
 *             fib_task_spawn(w, &t, n - 1);
 *             long b = fib(w, n - 2);
 *             return fib_task_sync(w, &t) + b;
 *     }
 *
 *     static int root(void *arg)     // entered with heist_run(pool, root, &n)
 *     {
 *             int *n = arg;
 *             return fib(heist_worker_self(), *n) == 832040 ? 0 : EINVAL;
 *     }
 * @since 0.2
 */
#define HEIST_WORKER_TASK_1(name, R, fn, A1)                                           \
	HEIST__CALL(HEIST__WTASK, (name, R, fn, HEIST__ARGS_1(A1)))
#define HEIST_WORKER_TASK_2(name, R, fn, A1, A2)                                       \
	HEIST__CALL(HEIST__WTASK, (name, R, fn, HEIST__ARGS_2(A1, A2)))
#define HEIST_WORKER_TASK_3(name, R, fn, A1, A2, A3)                                   \
	HEIST__CALL(HEIST__WTASK, (name, R, fn, HEIST__ARGS_3(A1, A2, A3)))
#define HEIST_WORKER_TASK_4(name, R, fn, A1, A2, A3, A4)                               \
	HEIST__CALL(HEIST__WTASK, (name, R, fn, HEIST__ARGS_4(A1, A2, A3, A4)))

/** HEIST_WORKER_VOID_TASK_1(name, fn, A1) ... HEIST_WORKER_VOID_TASK_4: the same for
 * `void fn(heist_worker *w, A1, ...)`; name_sync returns nothing. @since 0.2 */
#define HEIST_WORKER_VOID_TASK_1(name, fn, A1)                                         \
	HEIST__CALL(HEIST__WVOID_TASK, (name, fn, HEIST__ARGS_1(A1)))
#define HEIST_WORKER_VOID_TASK_2(name, fn, A1, A2)                                     \
	HEIST__CALL(HEIST__WVOID_TASK, (name, fn, HEIST__ARGS_2(A1, A2)))
#define HEIST_WORKER_VOID_TASK_3(name, fn, A1, A2, A3)                                 \
	HEIST__CALL(HEIST__WVOID_TASK, (name, fn, HEIST__ARGS_3(A1, A2, A3)))
#define HEIST_WORKER_VOID_TASK_4(name, fn, A1, A2, A3, A4)                             \
	HEIST__CALL(HEIST__WVOID_TASK, (name, fn, HEIST__ARGS_4(A1, A2, A3, A4)))

/* The worker-passing tasks' common body (internal): HEIST__TASK's, with w given to
 * the spawn and sync fast paths (HEIST__SPAWN_ON, HEIST__POP_ON) and to fn. The
 * library's run of a stolen task asks for its own thread's worker. */
#define HEIST__WTASK_SPAWN(name, params, stores)                                        \
	HEIST__TYPED void name##_spawn(heist_worker *heist__w, struct name *t,          \
				       HEIST__ID params)                                \
	{                                                                               \
		HEIST__ID stores                                                        \
		HEIST__SPAWN_ON(heist__w, &t->heist__task, name##_heist__run, t);       \
	}
#define HEIST__WTASK(name, R, fn, fields, params, stores, args)                         \
	struct name {                                                                   \
		heist_task heist__task;                                                 \
		HEIST__ID fields                                                        \
		R heist__r;                                                             \
	};                                                                              \
	static inline int name##_heist__run(void *heist__p)                             \
	{                                                                               \
		struct name *t = HEIST__STATIC(struct name *, heist__p);                \
		t->heist__r = fn(heist_worker_self(), HEIST__ID args);                  \
		return 0;                                                               \
	}                                                                               \
	HEIST__WTASK_SPAWN(name, params, stores)                                        \
	HEIST__TYPED R name##_sync(heist_worker *heist__w, struct name *t)              \
	{                                                                               \
		if (HEIST__POP_ON(heist__w, &t->heist__task))                           \
			return fn(heist__w, HEIST__ID args);                            \
		(heist_sync)(HEIST__HERE(&t->heist__task));                             \
		return t->heist__r;                                                     \
	}
#define HEIST__WVOID_TASK(name, fn, fields, params, stores, args)                       \
	struct name {                                                                   \
		heist_task heist__task;                                                 \
		HEIST__ID fields                                                        \
	};                                                                              \
	static inline int name##_heist__run(void *heist__p)                             \
	{                                                                               \
		struct name *t = HEIST__STATIC(struct name *, heist__p);                \
		fn(heist_worker_self(), HEIST__ID args);                                \
		return 0;                                                               \
	}                                                                               \
	HEIST__WTASK_SPAWN(name, params, stores)                                        \
	HEIST__TYPED void name##_sync(heist_worker *heist__w, struct name *t)           \
	{                                                                               \
		if (HEIST__POP_ON(heist__w, &t->heist__task)) {                         \
			fn(heist__w, HEIST__ID args);                                   \
			return;                                                         \
		}                                                                       \
		(heist_sync)(HEIST__HERE(&t->heist__task));                             \
	}

/* ---------------------------------------------------------------------------------- */
/* Statistics                                                                         */

/** One worker's counters, or the pool's totals. Counters only grow. */
struct heist_worker_stats {
	uint64_t executed;	  /**< tasks run: submitted, stolen, or synced inline */
	uint64_t spawned;	  /**< heist_spawn calls on this worker, each counted
				       when its heist_sync starts: a snapshot taken
				       inside a computation leaves out the spawns not
				       yet synced (one counter per pair, not two, on
				       the inline fast path) */
	uint64_t stolen;	  /**< tasks taken from another worker's deque */
	uint64_t steal_attempts;  /**< victims tried, successful or not */
	uint64_t injector_pops;	  /**< tasks taken from the injector */
	uint64_t sleeps;	  /**< times the worker went to sleep */
	uint64_t wakes;		  /**< times it was woken with work to find */
};

/** A pool's statistics: totals over its workers. */
struct heist_stats {
	unsigned workers;	  /**< heist_pool_size() */
	uint64_t executed;
	uint64_t spawned;
	uint64_t stolen;
	uint64_t steal_attempts;
	uint64_t injector_pops;
	uint64_t sleeps;
	uint64_t wakes;
	unsigned bind_failures;	  /**< workers that asked to be pinned and could not be */
	unsigned spares;	  /**< spare threads alive now (see max_spares); their
				       work is in the totals above */
	uint64_t spares_started;  /**< spare threads started since the pool was created */
	uint64_t parks;		  /**< waits in which a worker parked, helping with nothing */
	uint64_t spares_exhausted; /**< times queued work needed a stand-in while every
				       spare was in use (or max_spares was
				       HEIST_SPARES_NONE, or, since 0.2, one could not
				       be started): the first is also reported on
				       stderr (see max_spares) (@since 0.1) */
};

/**
 * Read the pool's totals. Each counter is read atomically; the set is not a snapshot.
 * @returns 0; EINVAL if pool or out is NULL.
 * @since 0.1
 */
HEIST_EXPORT int heist_pool_stats(const heist_pool *pool, struct heist_stats *out);

/**
 * Read one thread's counters, by heist_thread_index(): a worker below
 * heist_pool_size(pool), the guest slot (an outside heist_for_each's caller) at it,
 * spare threads above (zeros for a slot never used). Summed over every index below
 * heist_pool_threads(pool) they give heist_pool_stats's totals.
 * @returns 0; EINVAL if pool or out is NULL or index >= heist_pool_threads(pool).
 * @since 0.1
 */
HEIST_EXPORT int heist_pool_worker_stats(const heist_pool *pool, unsigned index,
					 struct heist_worker_stats *out);

/** Where one worker runs (see heist_pool_placement). */
struct heist_placement {
	int bound;		/**< 1: bound to cpus; 0: not pinned; -1: binding failed */
	int error;		/**< the errno of a failed binding, else 0 */
	char cpus[64];		/**< the CPUs it is bound to, as a list ("0-3,8"); "" if
				     not pinned */
	unsigned nranks;	/**< its victim ranks: 1 when victims are chosen uniformly */
};

/**
 * Report where a worker runs and whom it steals from: its victims, nearest rank
 * first (rank 0: SMT siblings or the closest shared cache; the last: the rest of the
 * machine). Within a rank, victims are tried in a random order chosen afresh on each
 * steal round. Without hwloc, or with HEIST_PIN_NONE, there is one rank.
 * @param[out] victims  cap entries, or NULL: victims[k] is a worker index.
 * @param[out] ranks    cap entries, or NULL: ranks[k] is the rank of victims[k].
 * @returns 0; EINVAL if pool or out is NULL or index >= heist_pool_size(pool).
 * Fills min(cap, size - 1) entries. Workers bind themselves before heist_pool_create
 * returns, so the report is final from then on.
 * @since 0.1
 */
HEIST_EXPORT int heist_pool_placement(const heist_pool *pool, unsigned index,
				      struct heist_placement *out, unsigned *victims,
				      unsigned *ranks, size_t cap);

/* Casts a strict C++ build accepts (-Wold-style-cast): named casts in C++, plain ones
 * in C. Internal. */
#ifdef __cplusplus
#define HEIST__STATIC(type, x) static_cast<type>(x)
#define HEIST__REINTERPRET(type, x) reinterpret_cast<type>(x)
#else
#define HEIST__STATIC(type, x) ((type)(x))
#define HEIST__REINTERPRET(type, x) ((type)(x))
#endif

/* The fast paths of heist_spawn and heist_sync, inline in the caller (heist/inline.h);
 * define HEIST_NO_INLINE to call the library's functions instead. */
#if defined(__GNUC__) && !defined(HEIST_NO_INLINE)
#include <heist/inline.h>
#define HEIST__POP(t) heist__pop_inline(t)
#define HEIST__HERE(t) heist__here(t)
#define HEIST__TYPED HEIST__FAST
#define HEIST__VIEW(w) HEIST__REINTERPRET(struct heist__worker_view *, w)
#define HEIST__SPAWN_ON(w, t, fn, arg) heist__spawn_on(HEIST__VIEW(w), t, fn, arg)
#define HEIST__POP_ON(w, t) heist__pop_on(HEIST__VIEW(w), t)
#define heist_worker_self() HEIST__REINTERPRET(heist_worker *, heist__self())
#else
#define HEIST__POP(t) 0
#define HEIST__HERE(t) (t)
#define HEIST__TYPED static inline
#define HEIST__SPAWN_ON(w, t, fn, arg) ((void)(w), (heist_spawn)(t, fn, arg))
#define HEIST__POP_ON(w, t) ((void)(w), (void)(t), 0)
#endif

#ifdef __cplusplus
}
#endif

#endif /* HEIST_HEIST_H */
