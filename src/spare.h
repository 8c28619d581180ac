/* SPDX-License-Identifier: MIT */
/* spare.h - compensation (spare.c): spare threads that keep a pool going while some of
 * its threads are parked in waits that could help with nothing (wait.c), as Java's
 * ForkJoinPool compensates a blocked join. A spare is a worker slot after the guest
 * slot, with a deque of its own, that runs the ordinary worker loop.
 *
 * When one is called. A parked waiter that cannot help asks for one only where work
 * would otherwise wait with no thread to run it: work visible in the pool (queued in
 * the injector, or public in a deque, once entries of jobs claimed already are
 * dropped; not while another thread is at the injector, where they may be all there
 * is) and no worker idle (searching or asleep: the sleep protocol wakes those).
 * Then:
 *  - an untimed wait votes, once per nap, saying whether its chain of waits is stuck
 *    (it ends at another pool's queued job, or at a wait a walk does not follow) or
 *    ends at a thread that runs. Votes go in rounds: a round is complete once every
 *    thread of the pool blocked in an untimed wait has voted in it, each from a look
 *    that saw no progress during it (heist__pool_progress, which only grows); any
 *    progress of the pool starts a new round, and so does the end of one. A stand-in
 *    is called at the end of a round in which every voter was stuck: then none of
 *    them may run the work we see, and no thread they wait for is about to (one that
 *    runs may be between its submit and its wait). So a waiter about to claim the
 *    work (the next link of a chain of waits across pools) is never raced by a new
 *    thread.
 *    Compensation, for threads parked behind a long task (of another pool, say): a
 *    stand-in is called at the end of a round, stuck or not, once COMPENSATE_ROUNDS
 *    rounds have completed before it with no progress of the pool, counted since it
 *    last made progress or called a stand-in. Counted in the pool's own looks, not
 *    in time: a look that cannot tell (another thread at the injector, progress
 *    during it) casts no vote, which delays the round and starts nothing over; and
 *    threads that run slowly (a sanitizer, an overloaded host) take longer over
 *    their rounds, as they do between a submit and its wait, and still get their
 *    stand-in. Each voter naps PARK_NS (wait.c, 200 us) between looks unless woken,
 *    so at full speed the count lasts 250 ms or more; where naps last longer (a
 *    system timer's tick) it ends after 250 ms and a few rounds (COMPENSATE_NS). It
 *    adds at most one stand-in per count of a pool-wide stall.
 *  - a timed wait calls one at once, if fewer spares run than threads are parked: it
 *    runs nothing itself, even what it waits for. Its thread counts as parked until
 *    it moves on (wait.c, timed_park), and the spare looks for work at least once
 *    however short the wait was (stand_in_owed), so a loop of short timed waits makes
 *    progress.
 * A spare runs while the pool has fewer spares running than threads parked; it
 * retires between tasks, its deque empty, when it has more, or when it found no work
 * in a whole search (it never sleeps in the pool's idle sleep, where nobody would
 * tell it that it is surplus); after a keep-alive spent retired its thread exits.
 * At most max spares exist at once. A call that finds them all in use is counted
 * (exhausted) and reported on stderr, once per pool. */
#ifndef HEIST_SPARE_H
#define HEIST_SPARE_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

struct heist_pool;
struct worker;

struct spare {
	/* The idle spare's futex word: SPARE_WAITING while it waits to be called,
	 * another value once called. Only it and its caller touch it. */
	_Atomic uint32_t word;
	int state;			/* SPARE_FREE ... SPARE_EXITED, under the lock */
	bool joinable;			/* a thread was started here and not yet joined */
	bool launching;			/* reserved; its thread is being created */
	int next_idle;			/* the idle list's link, under the lock; -1: end */
	heist__thread thread;
};

struct spares {
	/* parked changes without the lock (heist__spare_park), active under it; both
	 * are read without it (relaxed) by spares deciding whether they are surplus,
	 * where a stale value costs one more look. */
	CACHE_ALIGNED _Atomic unsigned parked;	/* threads parked in waits */
	_Atomic unsigned active;		/* spares running the worker loop */
	/* Slots whose deque exists: thieves visit n+1 .. n+hw. Raised after the slot
	 * is ready; seq_cst both ways (heist__spares_slots). */
	_Atomic unsigned hw;

	heist__mutex lock;
	/* The stall vote (spare.c): the pool's progress when the round began, the
	 * round, and how many parked threads have voted in it. Under the lock. */
	uint64_t progress;
	uint32_t round;
	unsigned votes;			/* parked threads that looked in this round */
	unsigned stuck;			/* of them, those whose chains are stuck */
	unsigned quiet;			/* rounds complete since the last progress or
					 * stand-in (compensation; at most
					 * COMPENSATE_ROUNDS) */
	uint64_t quiet_since_ns;	/* when quiet was last 0 */
	uint64_t exhausted;		/* calls that found every spare in use */
	bool warned;			/* the stderr line about it was printed */
	const char *name;		/* the pool's, for that line */
	unsigned max;
	unsigned alive;			/* threads started and not exited */
	uint64_t started;		/* threads ever started */
	bool stopping;			/* teardown: idle spares exit */
	struct spare *slot;		/* max of them */
	int idle;			/* the idle spares, latest first; -1: none */
};

/* Compensation's count (spare.h, above): rounds of the vote, complete with no progress
 * of the pool, after which a stand-in is called even though some voters' chains end at
 * threads that run. Long beside a chain's steps (a thread between its submit and its
 * wait takes microseconds, and every voter looks once a nap of 200 us), so that such a
 * thread is not raced even when it is preempted for a while; short beside a task that
 * blocks for real. Where a nap lasts a timer tick (Windows rounds a wait up to a
 * millisecond, and ends it at the next tick of the system's timer, 15.6 ms by
 * default), 1,250 rounds would take 1.25 to 20 s: the count also ends once
 * COMPENSATE_NS have passed over at least COMPENSATE_MIN_ROUNDS rounds, which at
 * full speed elsewhere comes at about the same time as the rounds. */
enum { COMPENSATE_ROUNDS = 1250, COMPENSATE_MIN_ROUNDS = 16 };
#define COMPENSATE_NS ((uint64_t)250 * 1000 * 1000)

/* Tests only: how long an idle spare thread waits to be called before it exits. */
extern uint64_t heist__spare_keepalive_ns;

int heist__spares_init(struct spares *s, unsigned max, const char *name);
void heist__spares_fini(struct spares *s);

/* Teardown, after the pool stopped: let idle spares exit and join every spare thread. */
void heist__spares_join(struct heist_pool *pool);

/* A thread parks in a wait / has woken from it: a worker or a spare in any wait, the
 * guest slot in a timed one only (wait.c, timed_park). */
void heist__spare_park(struct heist_pool *pool);
void heist__spare_unpark(struct heist_pool *pool);

/* A voter's record of its last vote: the round, and whether it said stuck. Zeroed
 * before its first vote. */
struct heist__vote {
	uint32_t round;
	bool stuck;
};

/* A parked untimed waiter that found nothing to run, with work visible and no worker
 * idle, votes: stuck, or not (its chain ends at a thread that runs); progress is
 * heist__pool_progress(pool) as it was before its look (and after it), blocked how many
 * of the pool's threads are blocked in untimed waits now (the quorum). A voter counts
 * once a round, and may turn its vote to stuck within it. */
void heist__spare_vote(struct heist_pool *pool, uint64_t progress, struct heist__vote *v,
		       bool stuck, unsigned blocked);

/* A timed waiter that cannot help, with work visible and no worker idle: a stand-in
 * at once, if fewer spares run than threads are parked. */
void heist__spare_call(struct heist_pool *pool);

/* Spare slots that may hold tasks: for thieves and for every scan of the deques. */
static inline unsigned
heist__spares_slots(struct spares *s)
{
	/* seq_cst, so acquire: pairs with the store that raises hw after the slot's
	 * deque is initialized. seq_cst so that the sleep protocol's last look
	 * (sleep.h), which reads hw after its seq_cst fence, is in the same total
	 * order as a new spare's first publish: it cannot miss a slot whose publish
	 * came before its look. (x86 loads are the same either way.) */
	return atomic_load_explicit(&s->hw, memory_order_seq_cst);
}

/* A spare with an empty deque asks whether the pool still needs it. relaxed: a stale
 * answer costs one task run by a spare, or one more look; and coherence alone makes a
 * look that follows an acquire (a take from the injector, say) see every unpark that
 * happened before the hand-off it acquired. A spare also retires when a whole search
 * found nothing, surplus or not (worker.c, search). Either way a waiter that parks
 * after the spare's last look votes again at its next nap, and the vote calls an idle
 * spare back first (spare.c, call_one): a stand-in after the vote's count, never a
 * hang. */
static inline bool
heist__spare_surplus(struct spares *s)
{
	return atomic_load_explicit(&s->active, memory_order_relaxed) >
	       atomic_load_explicit(&s->parked, memory_order_relaxed);
}

/* Whether fewer spares run than threads are parked. relaxed: as heist__spare_surplus. */
static inline bool
heist__spare_short(struct spares *s)
{
	return atomic_load_explicit(&s->active, memory_order_relaxed) <
	       atomic_load_explicit(&s->parked, memory_order_relaxed);
}

/* Counters for heist_pool_stats. */
void heist__spares_count(struct heist_pool *pool, unsigned *alive, uint64_t *started,
			 uint64_t *exhausted);

#endif
