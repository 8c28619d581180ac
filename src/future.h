/* SPDX-License-Identifier: MIT */
/* future.h - a submitted job: its task record and its future in one record from the
 * per-thread caches (record.h). The pool holds one reference until the job has run
 * or been dropped as cancelled; the caller holds one if it asked for a future.
 * Submitting is submit.c's, cancelling cancel.c's, waiting wait.c's. */
#ifndef HEIST_FUTURE_H
#define HEIST_FUTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"
#include "task.h"
#include "platform/platform.h"

enum { JOB_INLINE_COPY = 48 };	/* heist_submit_copy arguments up to this size */

/* heist_future.state: one of these, plus FUT_WAITERS while a thread sleeps on it,
 * FUT_WALKERS while one of those is a worker that waits for something this job's
 * runner may come to wait for (wait.c wakes it alone when that happens), and
 * FUT_CANCEL_ASKED once heist_future_cancel was called (for heist_cancelled). */
enum {
	FUT_QUEUED = 0,
	FUT_RUNNING = 1,
	FUT_DONE = 2,
	FUT_CANCELLED = 3,
	FUT_MASK = 3,
	FUT_WAITERS = 4,
	FUT_CANCEL_ASKED = 8,
	FUT_TAKEN = 16,	/* with CANCELLED: a worker took it, then found its token cancelled */
	FUT_WALKERS = 32,
};

/* refs: a count of references (the queue's 1, and one for each when_all waiting on it,
 * continuation list or continuation holding it) plus REF_USER while the caller holds
 * its future; the record is freed when none is left. Flags ride along, set before the
 * job can be seen by another thread (heist__job_set_flag) unless said otherwise:
 * REF_HEAP, task.arg is heist_submit_copy's heap copy; REF_EPOCH, the job was admitted
 * in an odd idle epoch (submit.c; a continuation's is set when it is queued, by
 * heist__job_admit_shared); REF_UNQUEUED, a job that may not run yet (a continuation
 * whose antecedent is not done, a when_all future, which never runs): no waiter may
 * claim it (cleared by heist__job_admit_shared); REF_LENT, the token is lent, not
 * referenced: a group's jobs use the group's token, which outlives them (group.c),
 * without touching its count; REF_DEPS, a continuation or when_all future, whose
 * inline_copy says what it waits for (then.c), for its waiters to help with;
 * REF_TIMED, a job made by heist_submit_timed, REF_UNQUEUED until it is due (timer.c);
 * REF_PERIODIC, one that comes back to the timer heap after each run, which only a
 * queue's taker may run, never a waiter (its run puts it back, and a queue entry it
 * left behind would run it again); REF_HIGH or REF_LOW, a job of that priority
 * (heist_priority), queued in the pool's queue of that priority, never on a deque
 * (submit.c). The count below the flags has 22 bits. */
#define REF_USER ((uint32_t)1 << 31)
#define REF_HEAP ((uint32_t)1 << 30)
#define REF_EPOCH ((uint32_t)1 << 29)
#define REF_UNQUEUED ((uint32_t)1 << 28)
#define REF_LENT ((uint32_t)1 << 27)
#define REF_DEPS ((uint32_t)1 << 26)
#define REF_TIMED ((uint32_t)1 << 25)
#define REF_PERIODIC ((uint32_t)1 << 24)
#define REF_HIGH ((uint32_t)1 << 23)
#define REF_LOW ((uint32_t)1 << 22)
#define REF_FLAGS                                                                          \
	(REF_HEAP | REF_EPOCH | REF_UNQUEUED | REF_LENT | REF_DEPS | REF_TIMED | REF_PERIODIC | \
	 REF_HIGH | REF_LOW)

/* Something to do once a job is final (DONE or CANCELLED): a continuation to queue,
 * a when_all or a group to tell (then.c, group.c). Lives in the record or structure
 * of whoever waits; linked into the job's `thens` until the job is final. */
struct heist__then {
	struct heist__then *next;
	/* Called once, on the thread that made j final, after the final state is
	 * stored; j is alive (that thread holds a reference) until it returns. */
	void (*fire)(struct heist__then *self, struct heist_future *j);
};

struct heist_future {
	/* task.state == TASK_JOB; result in task.result; task.pool is the pool it was
	 * submitted to; task.floor is set with runner. */
	struct task task;
	/* The job's life: QUEUED -> RUNNING -> DONE, or QUEUED -> CANCELLED. The
	 * final store is a release that publishes task.result and the task's writes;
	 * waiters load it with acquire. Also the futex word waiters sleep on. */
	_Atomic uint32_t state;
	_Atomic uint32_t refs;
	/* The worker running it, stored with release once it has won the job (and,
	 * when it took it from a queue, after task.floor, like a stolen task's thief),
	 * so that the job's waiters may help it and follow what it waits for
	 * (wait.c). RUNNER_CLAIMED is set in it when a waiter claimed the job: its
	 * task.floor is then still the queue's link, not a deque floor. NULL until
	 * then. Read with heist__job_runner. */
	_Atomic(struct worker *) runner;
	struct heist_cancel *token;	/* a reference, or NULL (cancel.c) */
	/* What to do once final: a stack of struct heist__then, or THENS_CLOSED once
	 * taken to be fired, by the finisher or a pusher that came after the final
	 * state (future.c: a Dekker pair with state); a pusher that finds it closed
	 * fires its own node. */
	struct heist__then *_Atomic thens;
	_Alignas(16) unsigned char inline_copy[JOB_INLINE_COPY];
};

#define THENS_CLOSED ((struct heist__then *)1)
#define RUNNER_CLAIMED ((uintptr_t)1)

/* The worker running j, or NULL if none is known yet; *floor_known tells whether
 * j->task.floor is that worker's deque floor for j (it took j from a queue). acquire:
 * pairs with the runner's release store, made after the floor and after the runner
 * stopped being blocked in any wait (wait.c), so a look at what the runner is blocked
 * in that follows this load sees nothing older than j's start. */
static inline struct worker *
heist__job_runner(const struct heist_future *j, bool *floor_known)
{
	uintptr_t r = (uintptr_t)atomic_load_explicit(
		(_Atomic(struct worker *) *)&j->runner, memory_order_acquire);
	*floor_known = !(r & RUNNER_CLAIMED);
	return (struct worker *)(r & ~RUNNER_CLAIMED);
}

static_assert(sizeof(struct heist_future) <= RECORD_BYTES, "a job fits its record");

/* A job running on this thread, linked to the job whose run it is nested in (a job
 * that a helping wait of that one ran on top of it, say): the thread's stack of jobs,
 * innermost first. Lives in run_won's frame (future.c). Unlike heist__current_job
 * (cancel.h), a stolen fork-join task does not hide the jobs below it: for what a wait
 * may need of this thread's stack, they are there (heist_group_wait's EDEADLK). */
struct heist__job_frame {
	struct heist_future *job;
	const struct heist__job_frame *outer;
};

/* The innermost job running on this thread, or NULL. initial-exec, as
 * heist__current_job (on Windows a slot, as it). Owner thread only. */
#if HEIST__TLS_EXPORTED
extern HEIST__TLS const struct heist__job_frame *heist__job_frames;

static inline const struct heist__job_frame *
heist__job_frames_get(void)
{
	return heist__job_frames;
}

static inline void
heist__job_frames_set(const struct heist__job_frame *f)
{
	heist__job_frames = f;
}
#else
static inline const struct heist__job_frame *
heist__job_frames_get(void)
{
	return (const struct heist__job_frame *)heist__thread_slot_get(HEIST__SLOT_FRAMES);
}

static inline void
heist__job_frames_set(const struct heist__job_frame *f)
{
	heist__thread_slot_set(HEIST__SLOT_FRAMES, (void *)(uintptr_t)f);
}
#endif

/* A queued job with refs = 1 (the pool's) + 1 if with_future. NULL: out of memory. */
struct heist_future *heist__job_new(heist_fn fn, void *arg, bool with_future);

/* The same for pool, not runnable yet and waiting for other jobs (REF_UNQUEUED |
 * REF_DEPS), in a wide record (record.h): its inline_copy goes on for JOB_WIDE_BYTES,
 * which only its maker uses (what it waits for, then.c), through heist__job_wide. */
struct heist_future *heist__job_new_waiting(struct heist_pool *pool, heist_fn fn, void *arg,
					    bool with_future);

enum { JOB_WIDE_BYTES = WIDE_RECORD_BYTES - offsetof(struct heist_future, inline_copy) };

/* The bytes of a wide job from its inline_copy on, JOB_WIDE_BYTES of them (a pointer
 * into the record, not the array, which is shorter). */
static inline unsigned char *
heist__job_wide(struct heist_future *j)
{
	return (unsigned char *)j + offsetof(struct heist_future, inline_copy);
}

/* Copy size bytes of arg into the job (inline or in one allocation) and point its
 * argument at the copy. Returns 0 or ENOMEM. */
int heist__job_copy_arg(struct heist_future *j, const void *arg, size_t size);

/* Run a job taken from a queue (or skip it if it was cancelled, or a waiter claimed
 * it), then drop the queue's reference. Worker w only; when it profiles, the sample
 * is recorded before the future is satisfied, so a waiter's report includes it;
 * counts it in w's executed only if it ran here. */
void heist__job_run(struct heist_future *j, struct worker *w);

/* A waiter on worker w runs j itself if it is still queued (wait.c): the queue entry
 * stays where it is, and heist__job_run skips it later. Returns whether it won j (j
 * is done now: it ran, or its token had cancelled it); false if j was no longer
 * queued. */
bool heist__job_claim(struct heist_future *j, struct worker *w);

/* Free a job that was never queued, with what it holds. */
void heist__job_discard(struct heist_future *j);

/* Drop one counted reference (the queue's, say); the last reference returns the record
 * to its cache. */
void heist__job_release(struct heist_future *j);

/* The idle epoch the job was admitted in (submit.c), 0 or 1. relaxed: the flag is
 * set before the job is queued, and never changes. */
static inline unsigned
heist__job_epoch(const struct heist_future *j)
{
	return (atomic_load_explicit((_Atomic uint32_t *)&j->refs, memory_order_relaxed) &
		REF_EPOCH) != 0;
}

/* Set or clear flag bits of refs before anyone else can see the job (before it is
 * queued, before the caller gets its future): a load and a store, no read-modify-
 * write. relaxed: the queue's hand-off publishes them. */
static inline void
heist__job_set_flag(struct heist_future *j, uint32_t flag, bool on)
{
	uint32_t r = atomic_load_explicit(&j->refs, memory_order_relaxed);
	atomic_store_explicit(&j->refs, on ? r | flag : r & ~flag, memory_order_relaxed);
}

/* Before the job can be seen: give it priority p (a valid heist_priority). */
static inline void
heist__job_set_priority(struct heist_future *j, int p)
{
	heist__job_set_flag(j, REF_HIGH | REF_LOW, false);
	if (p != HEIST_PRIORITY_NORMAL)
		heist__job_set_flag(j, p > 0 ? REF_HIGH : REF_LOW, true);
}

/* Before the job is queued, while nobody else can see it: admit it in epoch e
 * (parity). */
static inline void
heist__job_set_epoch(struct heist_future *j, unsigned e)
{
	heist__job_set_flag(j, REF_EPOCH, e & 1);
}

/* Before a continuation is queued: admit it in epoch e and let it run (clear
 * REF_UNQUEUED), in one read-modify-write, since others may hold its future and take
 * or drop references meanwhile. release: a waiter that finds REF_UNQUEUED clear
 * claims and runs the job without the queue's hand-off (wait.c, look: an acquire
 * load of refs), so this must publish what the job may read: its inputs' writes,
 * which the thread making it runnable saw (the acquire of its count down, or its own
 * finish). The later reference counts' read-modify-writes continue the release
 * sequence. Failure: relaxed, the loop tries again. */
static inline void
heist__job_admit_shared(struct heist_future *j, unsigned e)
{
	uint32_t r = atomic_load_explicit(&j->refs, memory_order_relaxed), want;
	do
		want = (r & ~(REF_EPOCH | REF_UNQUEUED)) | ((e & 1) ? REF_EPOCH : 0);
	while (!atomic_compare_exchange_weak_explicit(&j->refs, &r, want, memory_order_release,
						      memory_order_relaxed));
}

/* Take one more counted reference to a job the caller already holds one to. */
static inline void
heist__job_ref(struct heist_future *j)
{
	/* relaxed: the caller's own reference keeps the record alive meanwhile. */
	atomic_fetch_add_explicit(&j->refs, 1, memory_order_relaxed);
}

/* A job that never runs (a when_all future, a promise): QUEUED -> DONE with result r,
 * waking its waiters and firing its list, unless it was final already (its own future
 * cancelled it first, or a promise set twice). Returns whether this call made it DONE. */
bool heist__job_complete(struct heist_future *j, int r);

/* A promise's job (promise.c): REF_UNQUEUED without REF_DEPS or REF_TIMED, which no
 * other job has (continuations, when_alls and dependent tasks wait for jobs: REF_DEPS;
 * a timer not yet due: REF_TIMED). No thread of its pool can make it final; the
 * program does. refs is a load of j->refs. */
static inline bool
heist__job_is_promise(uint32_t refs)
{
	return (refs & (REF_UNQUEUED | REF_DEPS | REF_TIMED)) == REF_UNQUEUED;
}

/* A queued job that no waiter may run and that waits for no job a waiter could help
 * with: a promise, a timer not yet due, a periodic job (timer.c). A waiter's chain
 * ends there (wait.c). refs is a load of j->refs. */
static inline bool
heist__job_ends_chain(uint32_t refs)
{
	return (refs & (REF_UNQUEUED | REF_DEPS)) == REF_UNQUEUED || (refs & REF_PERIODIC);
}

/* A job that was never queued and never will be (a continuation that could not be
 * queued, a dependent task whose input failed): QUEUED -> DONE with result r, unless
 * its own future cancelled it first, and what it holds (its token) dropped either way.
 * The caller holds the reference the queue would have had, and still must release it. */
void heist__job_forgo(struct heist_future *j, int r);

/* The job reached its final state (the caller stored it with seq_cst, and holds a
 * reference): run what waits for that (struct heist__then). future.c. */
void heist__job_finalized(struct heist_future *j);

/* heist__job_then found j final after linking node: take j's list and fire it but
 * node; whether node was not in it (fired by another already). future.c. */
bool heist__job_then_final(struct heist_future *j, struct heist__then *node);

/* Have node fired when j is final. Returns false if j is final already (node not
 * linked, or taken back): then the caller fires it itself, or does what firing
 * would do. In that case the call may fire other nodes of j's list too. Once it
 * returns true, node may be fired (and gone) at any moment. Inline: a dependent
 * task links one node per input. The list and the final state are a Dekker pair
 * (future.c, fire_list and finalized). */
static inline bool
heist__job_then(struct heist_future *j, struct heist__then *node)
{
	/* acquire on the load and on failure: a CLOSED list means the job is final,
	 * and its final state (stored before the close, release) must be visible to
	 * the caller, which then fires node itself. seq_cst on success: the push of
	 * the Dekker pair; it also releases node's fields to whoever fires it. */
	struct heist__then *head = atomic_load_explicit(&j->thens, memory_order_acquire);
	do {
		if (head == THENS_CLOSED)
			return false;
		node->next = head;
	} while (!atomic_compare_exchange_weak_explicit(&j->thens, &head, node,
							memory_order_seq_cst,
							memory_order_acquire));
	/* seq_cst: the pusher's load of the pair. Final: its finisher may have seen the
	 * list empty, so it is ours to fire; node, if still in it, the caller's. */
	uint32_t s = atomic_load_explicit(&j->state, memory_order_seq_cst);
	if ((s & FUT_MASK) < FUT_DONE)
		return true;
	return heist__job_then_final(j, node);
}

/* For a waiter of j that may not run yet (REF_DEPS): call each(ctx, d) for every job
 * d not yet final that j waits for (a continuation's antecedent, a when_all's inputs),
 * each kept alive across the call (the callback takes a reference with heist__job_ref
 * to keep it longer). Nothing for other jobs, nor once j's wait is over. then.c. */
void heist__job_each_dep(struct heist_future *j,
			 void (*each)(void *ctx, struct heist_future *d), void *ctx);

/* Whether t, a task in a queue, is a job that was taken already (a waiter claimed it
 * where it sat, or its future cancelled it): running its entry runs nothing. relaxed:
 * the kind never changes once queued, and a taken job never goes back to QUEUED; the
 * queue's hand-off or the caller's consumer flag keeps the record alive. */
static inline bool
heist__job_taken(const struct task *t)
{
	return atomic_load_explicit((_Atomic uint32_t *)&t->state, memory_order_relaxed) ==
		       TASK_JOB &&
	       (atomic_load_explicit(&((struct heist_future *)t)->state, memory_order_relaxed) &
		FUT_MASK) != FUT_QUEUED;
}

static inline bool
heist__job_done(const struct heist_future *j)
{
	/* acquire: pairs with the final release store in future.c (finish) and
	 * cancel.c, so the task's result and writes are visible once this is true. */
	uint32_t s = atomic_load_explicit((_Atomic uint32_t *)&j->state, memory_order_acquire);
	return (s & FUT_MASK) >= FUT_DONE;
}

#endif
