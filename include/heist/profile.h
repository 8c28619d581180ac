/* SPDX-License-Identifier: MIT */
/* profile.h - heist's latency profiler: how long tasks wait before a worker starts
 * them (dispatch latency) and how long they take from creation to end (end-to-end),
 * at every percentile, measured with the CPU's time-stamp counter.
 *
 * Turn it on per pool with heist_config.profile. Then every task (submitted, spawned,
 * or a half of a for_each range) records its creation time, and workers record when
 * they start and end it, into preallocated per-worker buffers and log-linear
 * histograms (no lock, no allocation while tasks run). Percentiles are exact while
 * every sample fits the buffers, and within 1% when they overflowed; counts, min, max
 * and mean are always exact. With the profiler off the scheduler pays one predictable
 * branch per task; built with -Dprofiler=false it pays nothing, and these calls
 * return ENOTSUP.
 *
 * Read or reset a pool's profile while none of its tasks run (after waiting for
 * them): the workers write without locks, so a report taken meanwhile is a snapshot
 * whose parts may disagree.
 */
#ifndef HEIST_PROFILE_H
#define HEIST_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "heist.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The counter behind the profiler's timestamps. */
struct heist_profile_clock {
	const char *name;	/**< "tsc" (x86 rdtsc), "cntvct" (aarch64 virtual counter)
				     or "clock_gettime" (CLOCK_MONOTONIC, in ns) */
	double cycles_per_ns;	/**< calibrated once per process; 1.0 for clock_gettime */
	int invariant;		/**< 1 if the counter ticks at a constant rate in every
				     power state (CPUID 0x80000007 on x86); else 0 */
	int calibration;	/**< 1: from CPUID leaf 0x15; 2: measured against
				     CLOCK_MONOTONIC_RAW; 0: not needed */
};

/** One latency distribution: counter cycles, and the same in nanoseconds. */
struct heist_latency {
	uint64_t count;
	uint64_t min, max;		/**< cycles */
	double mean;			/**< cycles */
	uint64_t p50, p90, p99, p999, p9999;	/**< cycles */
	double min_ns, max_ns, mean_ns;
	double p50_ns, p90_ns, p99_ns, p999_ns, p9999_ns;
};

/**
 * How a task reached the thread that ran it (heist_profile_path_report). A task synced
 * or claimed by the thread that waits for it is INLINE whatever thread that is; of the
 * rest, what the guest slot ran is GUEST, what a thread ran inside a wait (heist_sync
 * of a stolen child, a future or group wait) is HELPING, and the others say where the
 * scheduler took them from.
 * @since 0.1
 */
enum heist_dispatch_path {
	HEIST_PATH_INLINE = 0,	 /**< synced by its parent, or claimed by its waiter */
	HEIST_PATH_OWN = 1,	 /**< popped from the runner's own deque by its loop (the
				      rest of an injector batch, a job a task submitted) */
	HEIST_PATH_STOLEN = 2,	 /**< stolen from another thread's deque by an idle worker */
	HEIST_PATH_INJECTOR = 3, /**< taken from the injector (submitted from outside) */
	HEIST_PATH_HELPING = 4,	 /**< run by a thread waiting for another task */
	HEIST_PATH_GUEST = 5,	 /**< run by the guest slot (an outside heist_for_each) */
	HEIST_PATHS = 6
};

/** A profile report: dispatch (start - created) and end-to-end (end - created). */
struct heist_latency_report {
	struct heist_latency dispatch;
	struct heist_latency end_to_end;
	struct heist_profile_clock clock;
	uint64_t samples_kept;	/**< samples still in the buffers (for traces) */
	uint64_t samples_dropped; /**< samples counted only in the histograms */
	int exact;		/**< 1 if the percentiles come from every sample */
	uint64_t buffer_samples; /**< samples each worker's buffer keeps before it
				      overflows into the histograms (@since 0.1) */
	uint64_t sampled_every;	/**< one task in this many was recorded
				     (heist_config.profile_every); 1: every task.
				     Counts are of recorded tasks (@since 0.1) */
	/** Steal latency: for tasks another thread stole (paths STOLEN, and HELPING
	 * when the helper stole it), from the moment the task became stealable (its
	 * owner published it) to its start: the scheduler's own delay in getting
	 * idle work to an idle thread. @since 0.1 */
	struct heist_latency steal;
	uint64_t path_count[HEIST_PATHS]; /**< recorded tasks by path (@since 0.1) */
};

/** Which distribution heist_profile_percentiles reads. */
enum heist_latency_kind {
	HEIST_LATENCY_DISPATCH = 0,
	HEIST_LATENCY_END_TO_END = 1,
	HEIST_LATENCY_STEAL = 2		/**< published -> started, stolen tasks (@since 0.1) */
};

/** What a task was (heist_profile_sample.kind). @since 0.1 */
enum heist_task_kind {
	HEIST_TASK_SPAWNED = 0,	  /**< heist_spawn (heist_join's second task included) */
	HEIST_TASK_SUBMITTED = 1, /**< a job: heist_submit and its kin, group tasks,
				       continuations */
	HEIST_TASK_RANGE = 2	  /**< a piece of a heist_for_each, heist_submit_bulk or
				       heist_reduce range that the loop split off */
};

/** One task as the profiler saw it: counter values, and the thread that ran it. */
struct heist_profile_sample {
	uint64_t created, started, ended;
	unsigned worker;	/**< the runner's heist_thread_index(): a worker below
				     heist_pool_size(), the guest slot at it, a spare above */
	unsigned path;		/**< enum heist_dispatch_path (@since 0.1) */
	uint64_t published;	/**< when it became stealable, for a stolen task; else 0
				     (@since 0.1) */
	unsigned kind;		/**< enum heist_task_kind (@since 0.1) */
	int victim;		/**< for a stolen task (published != 0), the
				     heist_thread_index() of the deque it was stolen from;
				     else -1 (@since 0.1) */
};

/**
 * The profiler's clock; calibrates it on first use (about 20 ms). Any thread.
 * @returns 0; EINVAL if out is NULL; ENOTSUP if the profiler was compiled out.
 * @since 0.1
 */
#if defined(__cplusplus) && defined(__GNUC__)
/* As stat() and struct stat: in C++ the function hides the struct's name (say struct
 * heist_profile_clock), which -Wshadow reports in the user's build. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
HEIST_EXPORT int heist_profile_clock(struct heist_profile_clock *out);
#if defined(__cplusplus) && defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/**
 * The profiler's counter now, in the units of heist_profile_sample's timestamps (see
 * heist_profile_clock for its rate), for marking phases of a run: a sample created
 * at or after a mark belongs to what came after it. Any thread; cheap (one counter
 * read), but the process's first call may calibrate the counter first (about 20 ms,
 * once, as a profiling pool's creation does), so that marks and samples are in one
 * unit. 0 if the profiler was compiled out.
 * @since 0.1
 */
HEIST_EXPORT uint64_t heist_profile_now(void);

/**
 * Read the pool's profile, all workers merged.
 * @returns 0; EINVAL if pool or out is NULL or the pool does not profile; ENOTSUP if
 *          the profiler was compiled out.
 * @since 0.1
 */
HEIST_EXPORT int heist_profile_report(heist_pool *pool, struct heist_latency_report *out);

/**
 * Read one thread's profile (the tasks it ran), by heist_thread_index(): a worker, the
 * guest slot at heist_pool_size(pool), or a spare above.
 * @returns as heist_profile_report; EINVAL also if index >= heist_pool_threads(pool).
 * @since 0.1
 */
HEIST_EXPORT int heist_profile_worker_report(heist_pool *pool, unsigned index,
					     struct heist_latency_report *out);

/**
 * The latency at each of n quantiles q[i] (0 <= q[i] <= 1), in cycles, all workers
 * merged: enough for a full percentile distribution (HdrHistogram's .hgrm).
 * @returns as heist_profile_report; EINVAL also for an unknown kind, a NULL q or out
 *          with n > 0, or a quantile outside [0, 1] (NaN included).
 * @since 0.1
 */
HEIST_EXPORT int heist_profile_percentiles(heist_pool *pool, enum heist_latency_kind kind,
					   const double *q, uint64_t *out, size_t n);

/**
 * The report of the tasks of one path (enum heist_dispatch_path), all threads merged.
 * Counts are exact; percentiles come from the samples kept in the buffers, so they are
 * exact (exact = 1) unless samples of that path overflowed into the histograms, which
 * keep no path (then exact = 0 and they describe the kept samples only).
 * @returns as heist_profile_report; EINVAL also for a path >= HEIST_PATHS.
 * @since 0.1
 */
HEIST_EXPORT int heist_profile_path_report(heist_pool *pool, enum heist_dispatch_path path,
					   struct heist_latency_report *out);

/**
 * Call fn(ctx, sample) for every sample still in the buffers, worker by worker, in the
 * order each worker finished them (a child synced inline finishes, and comes,
 * before its parent), for a trace of the schedule.
 * @returns as heist_profile_report; EINVAL also for a NULL fn.
 * @since 0.1
 */
HEIST_EXPORT int heist_profile_samples(heist_pool *pool,
				       void (*fn)(void *ctx,
						  const struct heist_profile_sample *s),
				       void *ctx);

/**
 * Forget every sample and count, so that the next report covers only what runs after.
 * NULL or a pool that does not profile: no-op.
 * @since 0.1
 */
HEIST_EXPORT void heist_profile_reset(heist_pool *pool);

#ifdef __cplusplus
}
#endif

#endif /* HEIST_PROFILE_H */
