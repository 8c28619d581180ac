/* SPDX-License-Identifier: MIT */
/* sleep.h - the idle protocol: who is searching for work, who sleeps, and whom to
 * wake. Work made available wakes at most one sleeper, and none while some worker is
 * already searching (unless queued jobs back up behind it: heist__sleep_notify_job);
 * the last searcher to find work wakes the next (so a burst fans
 * out one worker at a time, as Go's scheduler does with its spinning threads).
 *
 * The no-lost-wake-up argument. A worker going to sleep (1) moves itself from
 * searching to sleeping with a seq_cst read-modify-write of `state`, (2) issues a
 * seq_cst fence and looks at every place work can appear, and sleeps only if all are
 * empty. Whoever makes work available (3) writes the place with a seq_cst store or
 * RMW (injector depth, deque public_bottom), then (4) loads `state` with seq_cst and
 * wakes a sleeper if nobody searches. In the single total order of seq_cst operations
 * either (1) precedes (4), and the waker sees the sleeper, or (3) precedes (2)'s
 * look, and the sleeper sees the work. How long a worker searches before (1) is
 * worker.c's (search_over) and outside the argument.
 *
 * The sleep itself is on the sleeper's own word (struct sleeper), through platform.h's
 * heist__futex_wait, and on every backend a wake that follows the waker's store of
 * AWAKE reaches it: the Linux futex and Windows' WaitOnAddress compare the word with
 * SLEEPING against wakers in the kernel; the generic POSIX backend compares it under
 * the lock of the word's bucket and queues the sleeper there in the same hold; the
 * waker takes that lock after its store and unqueues the word's sleeper, then posts
 * its parker. The wakes here are of one word's one sleeper, so no backend needs
 * Linux's bitsets. */
#ifndef HEIST_SLEEP_H
#define HEIST_SLEEP_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

struct sleeper {
	/* SLEEPING while on the idle stack; a waker stores AWAKE (release) and then
	 * calls futex wake. Its own line: only it and its waker touch it. */
	CACHE_ALIGNED _Atomic uint32_t word;
	/* When its last waker took it off the stack (heist__now_ns): how long work
	 * took to come, for the search that follows (worker.c). Written before the
	 * release store of AWAKE, read by the sleeper after its acquire load. */
	uint64_t woken_ns;
};

struct sleep {
	/* Searchers in the high 32 bits, sleepers in the low 32. Read by every thread
	 * that makes work available; written when workers start or stop searching. */
	CACHE_ALIGNED _Atomic uint64_t state;

	CACHE_ALIGNED heist__mutex lock;	/* guards idle[], nidle, lent, owed's writes */
	unsigned *idle;				/* indices of sleeping workers */
	unsigned nidle;
	int lent;				/* the sleeper whose place the guest holds
						   (heist__sleep_lend), or -1 */
	/* The guest holds a place no sleeper has given yet: the next worker to go to
	 * sleep gives it (heist__sleep_prepare). Under the lock. */
	bool owed;
	bool given;	/* lent gave its place in prepare, and may take it back in cancel */
	/* lent >= 0, written under the lock, for heist__sleep_notify_job's look
	 * without it. */
	CACHE_ALIGNED _Atomic bool lent_out;
	unsigned n;
	struct sleeper *sleepers;		/* one per worker */
};

int heist__sleep_init(struct sleep *s, unsigned n);
void heist__sleep_fini(struct sleep *s);

/* A worker ran out of work and starts searching. (Capping searchers at busy / 2, as
 * Go does, was measured and made things worse here: with 2 workers, W6 round-trip
 * p99 went from 0.7 to 25 us and the W5 storm lost 10-25%: a sleeping worker costs a
 * futex wake, a spinning one only a share of a core.) */
void heist__sleep_start_search(struct sleep *s);
/* A searcher found work. Returns true if it was the last searcher and some worker
 * sleeps: then, if more work is visible, the caller wakes one (notify_slow), as Go's
 * scheduler does; with nothing more to take, a wake would only cost a system call on
 * the path to the task. */
bool heist__sleep_stop_search(struct sleep *s);

/* Step (1): worker i leaves the searchers for the sleepers. The caller then looks
 * for work and calls heist__sleep_cancel if it finds some, else heist__sleep_wait;
 * after cancel it is a searcher again. A worker that gave the guest its place in
 * prepare (sleep.h, lend) takes it back in cancel: it saw work, which may be nobody
 * else's to run. So does one whose place the guest took from the idle stack meanwhile
 * (heist__sleep_lend), as a recall would (heist__sleep_notify_job's (b)): the work it
 * saw may have been announced to nobody (a notifier that saw it searching woke no
 * one), and the guest does not take from the queues. Either way the guest is owed its
 * place again, and the pool runs one thread more until a worker sleeps. */
void heist__sleep_prepare(struct sleep *s, unsigned i);
void heist__sleep_cancel(struct sleep *s, unsigned i);
/* Sleeps until woken; returns a searcher, and when its waker saw the work it was woken
 * for (heist__now_ns): not when it woke, which would count the wake's own latency. */
uint64_t heist__sleep_wait(struct sleep *s, unsigned i);

/* As heist__sleep_wait, but only until `deadline` (heist__now_ns; HEIST_NEVER: none):
 * returns true if woken (a searcher now, *woken as heist__sleep_wait returns), false
 * at the deadline, still asleep in the protocol's eyes (on the idle stack, or lent):
 * the caller then calls heist__sleep_cancel to search again, or waits again with
 * either call (a false return changed nothing; a wake meanwhile left the word AWAKE,
 * which the next wait sees at once). A timer keeper's sleep (timer.h), and a worker's
 * that trims its record caches at a deadline (worker.c, nap). */
bool heist__sleep_wait_until(struct sleep *s, unsigned i, uint64_t deadline, uint64_t *woken);

/* Wake worker i as a searcher if it sleeps, on the idle stack or lent to the guest
 * (recalled, as heist__sleep_notify_job does); nothing if it is awake. For a timer
 * keeper whose deadline an earlier timer passed (timer.h). */
void heist__sleep_wake_worker(struct sleep *s, unsigned i);

/* Step (4): after a seq_cst write that made work available. */
void heist__sleep_notify_slow(struct sleep *s);

/* Returns whether it went to wake a sleeper (nobody searched): one is then on its way,
 * unless another notifier took the last sleeper first. */
static inline bool
heist__sleep_notify(struct sleep *s)
{
	/* seq_cst: step (4) of the protocol above. */
	uint64_t st = atomic_load_explicit(&s->state, memory_order_seq_cst);
	if ((uint32_t)st == 0 || (st >> 32) != 0)
		return false;
	heist__sleep_notify_slow(s);
	return true;
}

/* Whether some worker is searching or asleep: work published now would be taken.
 * relaxed: a hint for whether to publish, not a synchronisation. */
static inline bool
heist__sleep_has_idle(struct sleep *s)
{
	return atomic_load_explicit(&s->state, memory_order_relaxed) != 0;
}

/* Whether every one of the pool's `workers` searches or sleeps: no worker runs a task,
 * so no task can spawn or submit, and new work can only come from outside the workers
 * (a submit from another thread, an outside loop's guest), each arrival of which
 * notifies (step (4)). A worker lent to the guest is neither searcher nor sleeper:
 * the guest counts as busy in its place. Spares search too, so a spare's search may
 * hide a busy worker: the answer is then "idle" a little early. relaxed: a hint for
 * how long to search (worker.c), never part of the no-lost-wake-up argument: a stale
 * look makes a search longer or shorter, and the way to sleep is the same either way. */
static inline bool
heist__sleep_all_idle(struct sleep *s, unsigned workers)
{
	uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
	return (st >> 32) + (uint32_t)st >= workers;
}

/* Thread accounting (heist.h, heist_for_each): an outside caller that works in the
 * guest slot takes the place of a sleeping worker, which stays asleep, off the idle
 * stack and out of the sleeper count, so no notifier wakes it, until the guest gives
 * the place back. So the pool runs no more threads than it has workers, and a series
 * of outside loops costs no wake-up: the lent worker simply sleeps through them.
 * With no worker asleep, the place is owed (lend returns false) and the guest works
 * at once all the same: the next worker to go to sleep, one that found no work in a
 * whole search, gives the place (it sleeps as the lent one); until then the pool
 * runs one thread more than it has workers. After heist__sleep_return the lent
 * worker is a sleeper again; the caller then looks for work, as a sleeper would have
 * (step (2)), and wakes one if it finds some. */
bool heist__sleep_lend(struct sleep *s);
void heist__sleep_return(struct sleep *s);

/* The guest parks in a wait that can help with nothing while work waits that no thread
 * runs (wait.c, park): it gives its place back, the lent worker (if any) waking as a
 * searcher, as (b) of heist__sleep_notify_job does. The guest is not among those who
 * vote for a stand-in (spare.h): without this, a half of its own loop that it
 * published, or a job it waits for behind a queue only workers take, would wait for
 * the worker it took the place of, which sleeps until the guest leaves. */
void heist__sleep_recall(struct sleep *s);

/* A job was queued (heist_submit and its kin) in a queue of jobs that held `backlog`
 * others (heist__injector_reserve's count; 0 for a deque): as heist__sleep_notify, and
 * two wakes more.
 * (a) A backlog: a job still queued when the next comes means that no searcher that
 * runs is taking them, so wake a sleeper even while some worker counts as searching.
 * Searchers can count without running: a woken one that waits for a CPU, or one the
 * kernel preempted. Measured on a 2-vCPU VM (W9, perf sched): Linux queued the woken
 * worker behind a busy producer on one vCPU for 0.5-8 ms (once 100 ms) while the other
 * vCPU idled and the other worker slept, and its searcher count kept every later submit
 * from waking anyone. A condvar pool's signal per submit never stalls so; this wakes as
 * it would only while jobs wait, and once a running searcher takes them the fan-out of
 * the others is Go's rule again.
 * (b) When nobody searches or sleeps but a worker sleeps lent to the guest, recall it.
 * A job may be what the guest's loop waits for (a body waiting on a task another body
 * submitted), and the guest's loop does not run it; the place is owed again, so the
 * next worker to go to sleep gives it back. relaxed look at lent_out: the recall is
 * for progress, not part of the no-lost-wake-up argument (the guest's return looks
 * for work anyway); nor is (a), a wake more than the protocol needs. */
void heist__sleep_notify_job_slow(struct sleep *s, size_t backlog);

static inline void
heist__sleep_notify_job(struct sleep *s, size_t backlog)
{
	/* seq_cst: step (4), as in heist__sleep_notify. */
	uint64_t st = atomic_load_explicit(&s->state, memory_order_seq_cst);
	uint32_t sleepers = (uint32_t)st;
	if ((st >> 32) == 0
		    ? sleepers != 0 || atomic_load_explicit(&s->lent_out, memory_order_relaxed)
		    : sleepers != 0 && backlog != 0)
		heist__sleep_notify_job_slow(s, backlog);
}


/* Wake every sleeper (shutdown): pop the idle stack, under the lock, until it is
 * empty. Why no worker misses the stop that pool.c's teardown stores (seq_cst) before
 * it calls this, whether it is searching or on its way to sleep. The argument rests
 * on the lock, not on the Dekker pair of steps (1)-(4); let E be our last critical
 * section, the one that finds the stack empty.
 * - A worker's prepare (its push and SLEEPING, under the lock) after E: E's unlock
 *   happens before it, so stop's store happens before every load of stop that
 *   follows: its step (2) look (worker.c, work_visible) finds it, cancel returns true
 *   (no guest holds its place: destroy drains the guest first), and loop_done ends
 *   the search.
 * - A prepare before E: the stack is empty at E, so under the lock someone took the
 *   worker off it with its word set AWAKE: we did (our AWAKE store, a release after
 *   stop's store, reaches its acquire load in heist__sleep_wait: its next loop_done
 *   sees stop, and it leaves: so we pop each worker once at most), or a notifier or
 *   its own cancel did, and it searches again; its next prepare falls on one side of
 *   E or the other.
 * - A search round cannot block (the injector take and the steals wait for nobody)
 *   and each begins with loop_done: an acquire load of stop, which sees the store
 *   within a round or two; the pool is drained, so a search ends only there or in a
 *   prepare (above).
 * - The futex: only the worker itself stores SLEEPING to its word, and only before
 *   it pushes itself, so no wake finds SLEEPING restored; we store AWAKE before the
 *   wake, so its futex wait either finds the word changed or is queued before it.
 * (tests/test-pool.c, idle_pools_with_more_workers_than_cpus_destroy.) */
void heist__sleep_wake_all(struct sleep *s);

#endif
