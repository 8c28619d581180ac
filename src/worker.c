/* SPDX-License-Identifier: MIT */
/* worker.c - the worker loop. In order of preference a worker takes: the bottom of its
 * own deque, a batch from the injector, one task stolen from a victim (steal.c); after
 * `spin` empty rounds (fewer under a light load: search_over) it sleeps (sleep.h).
 * Also running a task taken from a queue, and the guest slot through which an outside
 * heist_for_each caller takes part. Waits inside a task (a stolen sync, a future) are
 * wait.c's; spares run this same loop (spare.c). */
#include "worker.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cancel.h"
#include "clock.h"
#include <stddef.h>

#include "platform/platform.h"
#include "future.h"
#include "pool.h"
#include "probe.h"
#include "steal.h"
#include "submit.h"
#include "wait.h"

/* The stand-in for a thread that is no worker: its bounds fail both fast paths'
 * compares (no address is below 0 or above the highest), so they call the library,
 * which finds no worker and runs the task inline. */
const struct heist__worker_view heist__nobody = {
	.limit = DQ_RING_LIMIT,
	.split = DQ_RING_SPLIT,
};

#if HEIST__TLS_EXPORTED
HEIST_EXPORT HEIST__TLS void *heist__self_v2 = (void *)&heist__nobody;
#else
HEIST_EXPORT void *
heist__self_get(void)
{
	return heist__self_view();
}
#endif

/* The layout heist/inline.h's fast paths rely on (HEIST__LAYOUT 2). Changing any of
 * these offsets changes the layout: see the rule in that header. */
#define SAME_OFFSET(view, field) \
	static_assert(offsetof(struct heist__worker_view, view) == offsetof(struct worker, field), \
		      "heist/inline.h: " #view)
SAME_OFFSET(head, dq.head);
SAME_OFFSET(room, dq.room);
SAME_OFFSET(floor, dq.floor);
SAME_OFFSET(limit, dq.limit);
SAME_OFFSET(split, dq.split);
SAME_OFFSET(epoch, cur_epoch);
SAME_OFFSET(sample_mask, sample_mask);
SAME_OFFSET(sample_tick, sample_tick);
SAME_OFFSET(pairs, stats.pairs);
static_assert(HEIST__SHUT_LIMIT == DQ_SHUT_LIMIT && HEIST__SHUT_SPLIT == DQ_SHUT_SPLIT,
	      "heist/inline.h: the profiler's bounds");
static_assert(sizeof(void **) == sizeof(dq_slot *) && sizeof(uintptr_t) == sizeof(_Atomic uintptr_t),
	      "heist/inline.h: the owner's words");
static_assert(HEIST__LINE == CACHE_LINE, "heist/inline.h: the line stride");

enum {
	BATCH_MAX = 32,		/* injector tasks taken at once */
	LOW_EVERY = 64,		/* a look at the low queue at least every LOW_EVERY
				   tasks (heist.h, enum heist_priority: its bound) */
	UNTAKEN_MAX = 2,	/* struct worker's untaken: publishing unasked stops */
};

void
heist__worker_flush_done(struct worker *w)
{
	for (unsigned e = 0; e < 2; e++) {
		if (w->done_unflushed[e]) {
			heist__pool_leave(w->pool, e, w->done_unflushed[e]);
			w->done_unflushed[e] = 0;
		}
	}
}

void
heist__worker_publish(struct worker *w, int64_t keep)
{
	if (HEIST_PROFILER && unlikely(w->profile))
		heist__deque_stamp_private(&w->dq, keep, heist__tsc());
	heist__deque_publish(&w->dq, keep);
	/* While some worker searches or sleeps, the next push is published too: we ring
	 * our own bounds, as a request would (deque.h). A thief asks only once it finds
	 * nothing, and is answered only at our next spawn or sync, so `spawn a; spawn b;
	 * spawn c; long stretch` published a and left b and c private for the whole
	 * stretch while other workers idled. But not once our own syncs take back what we
	 * published (UNTAKEN_MAX in a row, until a sync finds its task stolen): a serial
	 * run of tiny spawn+sync pairs beside an idle worker then published every spawn
	 * and lost most syncs to a thief of its tiny tasks (5-7x slower). A publish that
	 * wakes a sleeper rings once whatever: the sleeper asked before it slept, and
	 * cannot ask again until it is awake and looks. */
	bool woke = heist__sleep_notify(&w->pool->sleep);
	if (woke || (w->untaken < UNTAKEN_MAX && heist__sleep_has_idle(&w->pool->sleep)))
		heist__deque_request(&w->dq);
}

noinline int
heist__worker_run_profiled(struct worker *w, struct task *t,
			   const struct heist__run_from *from)
{
	uint64_t created = t->created_tsc;
	if (!created)
		return t->fn(t->arg);	/* not sampled */
	unsigned kind = t->fn == heist__foreach_range || t->fn == heist__reduce_half
				? HEIST_TASK_RANGE : HEIST_TASK_SPAWNED;
	uint64_t started = heist__tsc();
	int r = t->fn(t->arg);
	heist__profile_record(w->prof, w->index, kind, created, started, heist__tsc_end(),
			      from);
	return r;
}

/* Finished jobs are subtracted from live when we run out of work; a
 * heist_pool_wait_idle cannot wait that long (a busy pool may never run out), so
 * while one waits we count out at once, after a job and before any task, which may
 * run long. relaxed: a late look delays the count out by a task. */
static inline void
flush_if_awaited(struct worker *w)
{
	if (unlikely(atomic_load_explicit(&w->pool->idle_waiters, memory_order_relaxed)))
		heist__worker_flush_done(w);
}

/* The task the thread ran has returned: if it polled with timed waits, the thread is
 * no longer parked (wait.c). */
static inline void
timed_wait_over(struct worker *w)
{
	if (unlikely(w->timed_parked))
		heist__wait_timed_over(w);
}

void
heist__worker_run(struct worker *w, struct task *t)
{
	flush_if_awaited(w);
	w->running++;
	/* relaxed: the kind never changes after the task was queued, and the queue's
	 * hand-off (deque publish or injector link, both release) ordered it. */
	if (atomic_load_explicit(&t->state, memory_order_relaxed) == TASK_JOB) {
		struct heist_future *j = (struct heist_future *)t;
		unsigned e = heist__job_epoch(j);	/* before: it may be freed after */
		heist__job_run(j, w);	/* counts executed */
		timed_wait_over(w);
		w->running--;
		w->done_unflushed[e]++;
		flush_if_awaited(w);
		return;
	}
	counter_add(&w->stats.executed, 1);
	struct heist__run_from from = w->run_from;	/* before t->floor is ours */
	if (heist__worker_is_guest(w) && from.path != HEIST_PATH_INLINE)
		from.path = HEIST_PATH_GUEST;
	/* Everything pushed on our deque from here on, until t returns, is t's own
	 * (task.h): its owner's sync may help with it (wait.c). release: the floor is
	 * written before a helper that sees us as the thief reads it. */
	t->floor = heist__deque_bottom(&w->dq);
	/* relaxed: the spawner's epoch mark (fork.c) reached us with the task. */
	unsigned epoch = (unsigned)(uintptr_t)atomic_load_explicit(&t->thief,
								   memory_order_relaxed);
	atomic_store_explicit(&t->thief, w, memory_order_release);
	/* The task belongs to another job than any this thread may be waiting in; what
	 * it submits counts in its spawner's epoch. */
	struct heist_future *outer = heist__current_job_swap(NULL);
	unsigned outer_epoch = w->cur_epoch;
	w->cur_epoch = epoch;
	if (HEIST_PROFILER && unlikely(w->profile))
		t->result = heist__worker_run_profiled(w, t, &from);	/* before DONE */
	else
		t->result = t->fn(t->arg);
	heist__returned();	/* not in a child forked inside it (inherit.h) */
	w->cur_epoch = outer_epoch;
	heist__current_job_swap(outer);
	timed_wait_over(w);
	w->running--;
	/* release: publishes result (and the task's writes) to the owner's acquire
	 * load in heist_sync. An exchange, to learn whether the owner sleeps on the
	 * word (wait.c); the kernel's compare orders its sleep against this. After
	 * this the task record may be gone: the wake names its address only. */
	if (atomic_exchange_explicit(&t->state, TASK_DONE, memory_order_release) ==
	    TASK_SLEEPER)
		heist__futex_wake(&t->state, 1);
}

/* Take a batch from queue q (the normal injector; batch_max 1 for the queues of the
 * other priorities, whose tasks must not wait on a deque where the priority is not
 * seen): run the first, queue the rest (publicly, so the other workers can share it). */
static struct task *
take_queue(struct worker *w, struct injector *q, size_t batch_max)
{
	struct heist_pool *pool = w->pool;
	struct task *batch[BATCH_MAX];
	/* relaxed: a hint; heist__injector_take decides. A guest takes no batch: it
	 * would leave the rest in a deque that no thread owns after the guest leaves. */
	size_t depth = atomic_load_explicit(&q->depth, memory_order_relaxed);
	if (!depth || heist__worker_is_guest(w))
		return NULL;
	/* A spare takes one at a time: it stands in, it does not share out batches,
	 * and what it would push on its deque a waiter may claim there meanwhile,
	 * leaving an entry that passes for work (wait.c, drop_taken). */
	size_t want = heist__worker_is_spare(w) ? 1 : depth / pool->n + 1;
	if (want > batch_max)
		want = batch_max;
	size_t k = heist__injector_take(q, batch, want);
	if (!k)
		return NULL;
	if (heist__worker_is_spare(w) && !w->stand_in_owed &&
	    heist__spare_surplus(&pool->spares)) {
		/* Asked again after the take, whose acquire orders this look after
		 * whatever the submitter saw: a worker that has stopped waiting since
		 * no longer needs us, and gets these. */
		for (size_t i = 0; i < k; i++)
			heist__injector_requeue(q, batch[i]);
		heist__sleep_notify(&pool->sleep);
		return NULL;
	}
	counter_add(&w->stats.injector_pops, k);
	/* Pushed newest first, so that our own LIFO pops keep the injector's order. A
	 * job a waiter claimed already is skipped now (running it runs nothing), not
	 * pushed where it would pass for work. */
	for (size_t i = k - 1; i >= 1; i--) {
		if (heist__job_taken(batch[i])) {
			heist__worker_run(w, batch[i]);
			continue;
		}
		if (heist__deque_push(&w->dq, batch[i])) {
			heist__worker_took(w, HEIST_PATH_INJECTOR, batch[i], false);
			heist__worker_run(w, batch[i]);	/* no memory to queue it */
		}
	}
	if (k > 1)
		heist__worker_publish(w, 0);
	heist__worker_took(w, HEIST_PATH_INJECTOR, batch[0], false);
	return batch[0];
}

static struct task *
take_injector(struct worker *w)
{
	return take_queue(w, &w->pool->injector, BATCH_MAX);
}

/* The oldest low task, and the count of tasks since the last look starts again. */
static struct task *
take_low(struct worker *w)
{
	w->since_low = 0;
	return take_queue(w, &w->pool->low, 1);
}

/* A task taken from another queue before the own deque: answer a thief's request
 * as the pop we put off would have (heist__worker_pop), so that what we keep private
 * does not wait for a stream of high tasks to end. */
static struct task *
ahead_of_deque(struct worker *w, struct task *t)
{
	if (t && heist__deque_split_requested(&w->dq) && heist__deque_private_count(&w->dq))
		heist__worker_publish(w, 0);
	return t;
}

/* Before the worker's own deque: the oldest high task, or, once in LOW_EVERY tasks,
 * the oldest low one (the starvation bound). relaxed: a hint, as take_queue's. */
static inline struct task *
take_first(struct worker *w)
{
	struct task *t;
	if (unlikely(++w->since_low >= LOW_EVERY) && (t = take_low(w)))
		return ahead_of_deque(w, t);	/* first: high tasks must not starve it */
	if (unlikely(atomic_load_explicit(&w->pool->high.depth, memory_order_relaxed)))
		return ahead_of_deque(w, take_queue(w, &w->pool->high, 1));
	return NULL;
}

bool
heist__pool_work_visible(struct heist_pool *pool)
{
	/* seq_cst fence: orders our looks after the state RMW of stop_search, against
	 * a notifier's seq_cst publish that saw us searching (sleep.h). */
	atomic_thread_fence(memory_order_seq_cst);
	if (heist__pool_queued(pool))
		return true;
	for (unsigned i = 0, n = heist__pool_slots_used(pool); i < n; i++)
		if (heist__deque_has_public(&pool->workers[i].dq))
			return true;
	return false;
}

uint64_t
heist__pool_progress(struct heist_pool *pool)
{
	/* The injector's depth plus every take from it counts its submissions, which
	 * only grow (every take is counted in injector_pops). relaxed: counters
	 * (internal.h); a stale sum costs one more round of votes. */
	uint64_t sum = atomic_load_explicit(&pool->injector.depth, memory_order_relaxed) +
		       atomic_load_explicit(&pool->high.depth, memory_order_relaxed) +
		       atomic_load_explicit(&pool->low.depth, memory_order_relaxed);
	for (unsigned i = 0, n = heist__pool_slots_used(pool); i < n; i++) {
		const struct worker *w = &pool->workers[i];
		sum += counter_read(&w->stats.executed) + counter_read(&w->stats.pairs) +
		       counter_read(&w->stats.stolen) + counter_read(&w->stats.injector_pops);
	}
	return sum;
}

/* A searcher found work: if it was the last and more is visible, or timers wait
 * for a keeper (timer.h), it wakes a sleeper. */
static void
stop_searching(struct heist_pool *pool)
{
	if (heist__sleep_stop_search(&pool->sleep) &&
	    (heist__pool_work_visible(pool) || heist__timers_unkept(&pool->timers)))
		heist__sleep_notify_slow(&pool->sleep);
}

/* The last look before sleeping (step (2) of sleep.h): anything public anywhere?
 * Also asks every owner to publish its private tasks, which it does at its next push
 * or pop, waking a sleeper then. */
static bool
work_visible(struct heist_pool *pool)
{
	bool found = heist__pool_queued(pool) != 0 ||
		     atomic_load_explicit(&pool->stop, memory_order_seq_cst);
	for (unsigned i = 0, n = heist__pool_slots_used(pool); i < n && !found; i++) {
		struct deque *dq = &pool->workers[i].dq;
		if (heist__deque_has_public(dq))
			found = true;
		else
			heist__deque_request(dq);
	}
	return found;
}

/* Sleeps until woken; until then, trims the thread's record caches at trim_at
 * (heist__record_trim_idle's time: HEIST_NEVER, never) and whenever they are due
 * after. Returns as heist__sleep_wait does. */
static uint64_t
nap(struct worker *w, uint64_t trim_at)
{
	struct heist_pool *pool = w->pool;
	uint64_t woken;
	while (trim_at != HEIST_NEVER) {
		if (heist__sleep_wait_until(&pool->sleep, w->index, trim_at, &woken))
			return woken;
		trim_at = heist__record_trim_idle(heist__now_ns());
	}
	return heist__sleep_wait(&pool->sleep, w->index);
}

/* The timer keeper's sleep (timer.h): until woken, or until the earliest timer is due,
 * then fire it and search (a searcher again, even if the guest had its place: sleep.h,
 * heist__sleep_cancel), handing the role back either way; its caches trimmed at
 * trim_at as nap's. Returns as heist__sleep_wait does. */
static uint64_t
keep_timers(struct worker *w, uint64_t trim_at)
{
	struct heist_pool *pool = w->pool;
	struct timers *t = &pool->timers;
	uint64_t woken;
	for (;;) {
		uint64_t due = heist__timers_keeper_due(t);
		if (due == HEIST_NEVER) {
			heist__timers_unclaim(t);	/* then looks again: timer.h */
			if (heist__timers_claim(t, w->index))
				continue;
			return nap(w, trim_at);
		}
		if (heist__sleep_wait_until(&pool->sleep, w->index,
					    due < trim_at ? due : trim_at, &woken))
			break;
		if (!heist__timers_due(t)) {
			/* Woken to trim, or the timer was fired by a busy worker meanwhile.
			 * With a timer due, it fires first: the next sleep trims. */
			uint64_t now = heist__now_ns();
			if (now >= trim_at)
				trim_at = heist__record_trim_idle(now);
			continue;
		}
		heist__sleep_cancel(&pool->sleep, w->index);
		woken = heist__now_ns();
		break;
	}
	heist__timers_unclaim(t);
	if (heist__timers_due(t))
		heist__timers_fire(pool);	/* the search that follows takes them */
	return woken;
}

/* Sleeps until woken; returns when its waker saw work (sleep.h). */
static uint64_t
sleep_until_woken(struct worker *w)
{
	struct heist_pool *pool = w->pool;
	counter_add(&w->stats.sleeps, 1);
	/* Idle: what a burst of jobs submitted from tasks left in this worker's record
	 * caches goes back once they have needed no new slab for a while (record.h), now
	 * or while it sleeps; its deque, grown by such a burst, now. A wake meanwhile
	 * finds the word AWAKE at once. */
	uint64_t trim_at = heist__record_trim_idle(heist__now_ns());
	heist__deque_trim(&w->dq, DEQUE_CAPACITY);
	uint64_t woken = heist__timers_claim(&pool->timers, w->index)
				 ? keep_timers(w, trim_at)
				 : nap(w, trim_at);
	counter_add(&w->stats.wakes, 1);
	return woken;
}

/* Whether the loop should end: the pool stopped, or w is a spare the pool no longer
 * needs (once it has looked for work since it was called). acquire: pairs with the
 * seq_cst store of stop in pool.c's teardown, so that the stop hook that follows sees
 * what the destroying thread wrote before (the wake alone orders nothing); stop is set
 * only once everything has run, so a late look costs a round (the sleep path looks
 * with seq_cst). surplus is a hint (spare.h). */
static bool
loop_done(struct worker *w)
{
	struct heist_pool *pool = w->pool;
	return atomic_load_explicit(&pool->stop, memory_order_acquire) ||
	       (heist__worker_is_spare(w) && !w->stand_in_owed &&
		heist__spare_surplus(&pool->spares));
}

/* How long an idle search lasts. While some worker runs a task, work can appear at any
 * moment from inside the pool (its spawns, its loop's next phase, its submits): a
 * search spins its pool->spin rounds for it, since a sleeping worker would cost each
 * such phase a futex wake (10-30 us on a VM, against a few of spinning); so does an
 * outside thread working in the guest slot. Once every worker is idle and the guest
 * slot is empty, work can only come from outside, each arrival of which wakes a
 * sleeper, and whether spinning pays depends on how often it comes: a round trip's
 * next submit comes within a microsecond, an open loop's at 20,000 tasks/s 50 us
 * later, and spinning through that kept a whole core busy at 6% load. So the pool
 * keeps a running average (weight 1/8) of the time between arrivals of work at an
 * idle pool (each stamped when a searcher found it, or when its waker saw it: not
 * when the woken worker got there, which would count the wake's own latency), each
 * capped at IDLE_GAP_CAP_NS. From an average of LIGHT_ENTER_NS, an idle search ends
 * at its first empty round that sees every worker idle, and the worker sleeps (a
 * further 2 us of spinning there, as before, caught no arrival 50 us apart and made
 * W9's 20,000/s cost 1.15-2.05x the condvar pool's CPU; without it 0.70-1.15x); under
 * LIGHT_LEAVE_NS they are full again (the gap between the two keeps a load that
 * wanders near one threshold from flipping, which costs sleeps and wakes). The gaps
 * are clocked, not counted in search rounds: a pause lasts 10 ns on one x86 and 40 on
 * another. The rule
 * looks at the pool, not at this worker's luck: a worker that loses every race to a
 * busy neighbour keeps spinning. */
static const int64_t LIGHT_ENTER_NS = 30000, LIGHT_LEAVE_NS = 15000;
static const int64_t IDLE_GAP_CAP_NS = 2 * LIGHT_ENTER_NS;

/* Work came to an idle pool at `at` (heist__now_ns). relaxed: see pool.h. */
static void
idle_arrival(struct heist_pool *pool, uint64_t at)
{
	uint64_t prev = atomic_load_explicit(&pool->idle_arrival_ns, memory_order_relaxed);
	do {
		if (at <= prev)
			return;	/* a waker's stamp older than another worker's find */
	} while (!atomic_compare_exchange_weak_explicit(&pool->idle_arrival_ns, &prev, at,
							memory_order_relaxed,
							memory_order_relaxed));
	if (!prev)
		return;	/* the first arrival */
	int64_t g = at - prev > (uint64_t)IDLE_GAP_CAP_NS ? IDLE_GAP_CAP_NS
							   : (int64_t)(at - prev);
	int64_t avg = atomic_load_explicit(&pool->idle_gap_ns, memory_order_relaxed);
	avg += (g - avg) / 8;
	atomic_store_explicit(&pool->idle_gap_ns, avg, memory_order_relaxed);
	if (avg >= LIGHT_ENTER_NS)
		atomic_store_explicit(&pool->light_load, true, memory_order_relaxed);
	else if (avg < LIGHT_LEAVE_NS)
		atomic_store_explicit(&pool->light_load, false, memory_order_relaxed);
}

/* Whether the search should end after `rounds` empty rounds, and the worker go to
 * sleep. Asked after a round's look, not before it: its load of the sleep state then
 * delays no find. *saw_idle: this search has seen every worker idle (and no worker
 * busy since), so work it finds came to an idle pool. */
static bool
search_over(struct worker *w, unsigned rounds, bool *saw_idle)
{
	struct heist_pool *pool = w->pool;
	if (rounds >= pool->spin)
		return true;
	/* relaxed: a hint, as all_idle (sleep.h). */
	if (!heist__sleep_all_idle(&pool->sleep, pool->n) ||
	    atomic_load_explicit(&pool->guest_busy, memory_order_relaxed)) {
		*saw_idle = false;
		return false;
	}
	*saw_idle = true;
	/* relaxed: see pool.h. */
	return atomic_load_explicit(&pool->light_load, memory_order_relaxed);
}

static struct task *search(struct worker *w);

/* The main loop's source of tasks. NULL when the loop should end (loop_done). A spare
 * asks before it takes anything new, so that a surplus one retires rather than take
 * work a worker would have (its heist_worker_index() is -1). */
static struct task *
next_task(struct worker *w)
{
	struct task *t = take_first(w);
	if (t)
		return t;
	t = heist__worker_pop(w);
	if (t) {
		heist__worker_took(w, HEIST_PATH_OWN, t, false);
		return t;
	}
	heist__worker_flush_done(w);
	if (loop_done(w))
		return NULL;
	if (heist__timers_due(&w->pool->timers)) {
		heist__timers_fire(w->pool);	/* into the queues, taken next */
		if ((t = take_queue(w, &w->pool->high, 1)))
			return t;
	}
	if ((t = take_injector(w)))
		return t;
	return search(w);
}

/* next_task's search: steal rounds until a task, a sleep between searches. Out of line,
 * so that the path of every task (a pop from the own deque) stays short: inlined, it
 * cost reduce 10k x 10k 15% (more registers saved on every call of next_task). */
static noinline struct task *
search(struct worker *w)
{
	struct heist_pool *pool = w->pool;
	struct task *t;
	heist__sleep_start_search(&pool->sleep);
	bool saw_idle = false;
	for (;;) {
		for (unsigned round = 0;; round++) {
			if (loop_done(w)) {
				stop_searching(pool);
				return NULL;
			}
			if (heist__timers_due(&pool->timers))
				heist__timers_fire(pool);
			t = take_queue(w, &pool->high, 1);
			if (!t)
				t = take_injector(w);
			if (!t && (t = heist__steal_round(w)))
				heist__worker_took(w, HEIST_PATH_STOLEN, t, true);
			if (!t)
				t = take_low(w);
			if (t) {
				if (saw_idle)
					idle_arrival(pool, heist__now_ns());
				stop_searching(pool);
				return t;
			}
			if (search_over(w, round + 1, &saw_idle))
				break;
			heist__backoff_long(round, pool->spin / 2);
		}
		if (heist__worker_is_spare(w)) {
			/* A whole search found nothing: a spare retires rather than sleep
			 * where nobody would tell it that it is surplus (spare.h). */
			stop_searching(pool);
			return NULL;
		}
		heist__sleep_prepare(&pool->sleep, w->index);
		if (work_visible(pool)) {
			heist__sleep_cancel(&pool->sleep, w->index);
			if (loop_done(w)) {
				stop_searching(pool);
				return NULL;
			}
			saw_idle = false;	/* work came: search for it afresh */
			continue;
		}
		uint64_t woken = sleep_until_woken(w);
		if (saw_idle)
			idle_arrival(pool, woken);
		saw_idle = false;
	}
}

void
heist__worker_loop(struct worker *w)
{
	struct task *t;
	while ((t = next_task(w))) {
		w->stand_in_owed = false;	/* a spare's first look found work */
		heist__worker_run(w, t);
	}
	heist__worker_flush_done(w);
}

void
heist__worker_hook(struct worker *w, bool start)
{
	struct heist_pool *pool = w->pool;
	void (*hook)(void *, unsigned) = start ? pool->on_start : pool->on_stop;
	/* No job of the pool is counted around a hook: what it submits goes in from
	 * outside (submit.c), through the drain's handshake, not onto our deque, which
	 * nobody pops after the stop hook. */
	if (hook) {
		w->in_hook = true;
		hook(pool->hook_ctx, w->index);
		w->in_hook = false;
	}
}

void
heist__worker_main(void *arg)
{
	struct worker *w = arg;
	struct heist_pool *pool = w->pool;
	char name[16];
	char suffix[12];
	int slen = snprintf(suffix, sizeof(suffix), "-%u", w->index);
	snprintf(name, sizeof(name), "%.*s%s", (int)(sizeof(name) - 1) - slen, pool->name,
		 suffix);
	heist__thread_name(name);
	heist__thread_precise_timeouts();	/* a keeper wakes on time (timer.h) */
	w->bind_error = heist__topology_bind(pool->topo, w->index);
	/* release: publishes bind_error to heist_pool_create's acquire load. */
	if (atomic_fetch_add_explicit(&pool->started, 1, memory_order_release) + 1 == pool->n)
		heist__futex_wake(&pool->started, INT_MAX);
	heist__set_current(w);
	heist__worker_hook(w, true);
	heist__worker_loop(w);
	heist__worker_hook(w, false);
	heist__set_current(NULL);
}

bool
heist__worker_guest_enter(struct heist_pool *pool, int *err)
{
	*err = 0;
	/* relaxed peek: a busy slot sends the caller to heist_run at once. */
	if (atomic_load_explicit(&pool->guest_busy, memory_order_relaxed))
		return false;
	/* Counted as a live job, so destroy waits for the guest (submit.c). */
	unsigned epoch;
	if ((*err = heist__pool_enter(pool, &epoch)))
		return false;
	/* Counted in live now, the guest needs no hold: destroy waits for its leave. */
	heist__pool_unhold(pool);
	bool free_slot = false;
	/* acquire on success: see pool.h. */
	if (!atomic_compare_exchange_strong_explicit(&pool->guest_busy, &free_slot, true,
						     memory_order_acquire,
						     memory_order_relaxed)) {
		heist__pool_leave(pool, epoch, 1);
		return false;
	}
	/* The guest takes a sleeping worker's place, so that at most pool->n threads
	 * of the pool run; with every worker awake, the next one to go to sleep gives
	 * its place (sleep.h). */
	heist__sleep_lend(&pool->sleep);
	pool->workers[pool->n].cur_epoch = epoch;
	heist__set_current(&pool->workers[pool->n]);
	return true;
}

void
heist__worker_guest_leave(struct heist_pool *pool)
{
	struct worker *g = &pool->workers[pool->n];
	timed_wait_over(g);	/* a body polled: the guest is parked no more */
	heist__worker_flush_done(g);
	heist__set_current(NULL);
	/* The place back to its sleeper; if work came meanwhile that nobody took, or a
	 * timer that nobody keeps, wake one (the look is the sleeper's step (2),
	 * sleep.h). A lent worker is neither a sleeper nor a searcher, so a timer added
	 * while it was lent woke nobody (timer.h): heist__timers_unkept's seq_cst loads
	 * of next_due and keeper, after the return's seq_cst update of the sleep state,
	 * against the adder's store of next_due and its loads of keeper and of that
	 * state. Before the slot is free and the job leaves: the pool stays alive
	 * until then. */
	heist__sleep_return(&pool->sleep);
	if (heist__pool_work_visible(pool) || heist__timers_unkept(&pool->timers))
		heist__sleep_notify(&pool->sleep);
	/* release: pairs with the next guest's acquire CAS. Before the last leave:
	 * once live may reach 0, destroy may free the pool. */
	unsigned epoch = g->cur_epoch;	/* ours until we free the slot */
	atomic_store_explicit(&pool->guest_busy, false, memory_order_release);
	heist__pool_leave(pool, epoch, 1);
}
