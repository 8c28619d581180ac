/* SPDX-License-Identifier: MIT */
/* spare.c - spare threads (spare.h says when they are called and when they go). A
 * parked waiter calls one through heist__spare_vote or heist__spare_call: an idle spare
 * if there is one, else a new thread, at most `max` at once. A waiter that wakes only
 * lowers the count of parked threads; a spare that finds itself surplus between
 * tasks, or finds no work at all, retires: it waits to be called again, and after a
 * keep-alive exits. So for a moment after a wake the pool may run one thread more than
 * it has workers and parked threads, never a spare more for long. Everything here is a
 * slow path (it runs beside a futex sleep), so a mutex guards it. */
#include "spare.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "platform/platform.h"
#include "pool.h"
#include "worker.h"

enum { SPARE_FREE, SPARE_RUNNING, SPARE_IDLE, SPARE_EXITED };
enum { SPARE_WAITING = 0, SPARE_CALLED = 1 };

uint64_t heist__spare_keepalive_ns = 2000000000u;	/* 2 s */

int
heist__spares_init(struct spares *s, unsigned max, const char *name)
{
	atomic_init(&s->parked, 0);
	atomic_init(&s->active, 0);
	atomic_init(&s->hw, 0);
	s->max = max;
	s->alive = 0;
	s->started = 0;
	s->stopping = false;
	s->idle = -1;
	s->progress = 0;
	s->round = 1;	/* a waiter's record starts at 0: its first vote counts */
	s->votes = 0;
	s->stuck = 0;
	s->quiet = 0;
	s->quiet_since_ns = heist__now_ns();
	s->exhausted = 0;
	s->warned = false;
	s->name = name;
	if (!(s->slot = heist__calloc(max ? max : 1, sizeof(*s->slot))))
		return ENOMEM;
	for (unsigned k = 0; k < max; k++)
		atomic_init(&s->slot[k].word, SPARE_WAITING);
	int err = heist__mutex_init(&s->lock);
	if (err)
		free(s->slot);
	return err;
}

void
heist__spares_fini(struct spares *s)
{
	heist__mutex_destroy(&s->lock);
	free(s->slot);
}

/* Under the lock: take spare k off the idle list. */
static void
unlist_idle(struct spares *s, unsigned k)
{
	for (int *p = &s->idle; *p >= 0; p = &s->slot[*p].next_idle) {
		if (*p == (int)k) {
			*p = s->slot[k].next_idle;
			return;
		}
	}
}

static struct worker *
spare_worker(struct heist_pool *pool, unsigned k)
{
	return &pool->workers[pool->slots + k];
}

/* Under the lock: become idle (the loop ended: surplus, or no work found). */
static void
retire(struct spares *s, unsigned k)
{
	/* relaxed: under the lock, like every change of these counters. */
	atomic_fetch_sub_explicit(&s->active, 1, memory_order_relaxed);
	s->slot[k].state = SPARE_IDLE;
	/* relaxed: the word is read under the lock once we wake. */
	atomic_store_explicit(&s->slot[k].word, SPARE_WAITING, memory_order_relaxed);
	s->slot[k].next_idle = s->idle;
	s->idle = (int)k;
}

/* Idle: wait to be called. Returns false when the thread should exit. */
static bool
wait_for_call(struct spares *s, unsigned k)
{
	uint64_t deadline = heist__now_ns() + heist__spare_keepalive_ns;
	for (;;) {
		/* acquire: pairs with the caller's release store of SPARE_CALLED. */
		if (atomic_load_explicit(&s->slot[k].word, memory_order_acquire) != SPARE_WAITING)
			break;
		uint64_t now = heist__now_ns();
		if (now >= deadline)
			break;
		heist__futex_wait(&s->slot[k].word, SPARE_WAITING, deadline - now);
	}
	heist__mutex_lock(&s->lock);
	bool called = s->slot[k].state == SPARE_RUNNING;
	if (!called) {
		/* Timed out (or stopping) before anyone called: leave the idle list. */
		unlist_idle(s, k);
		s->slot[k].state = SPARE_EXITED;
		s->alive--;
	}
	heist__mutex_unlock(&s->lock);
	return called;
}

static void
spare_main(void *arg)
{
	struct worker *w = arg;
	struct heist_pool *pool = w->pool;
	struct spares *s = &pool->spares;
	unsigned k = w->index - pool->slots;
	char name[16];
	char suffix[12];
	int slen = snprintf(suffix, sizeof(suffix), "-s%u", k);
	snprintf(name, sizeof(name), "%.*s%s", (int)(sizeof(name) - 1) - slen, pool->name,
		 suffix);
	heist__thread_name(name);
	heist__set_current(w);
	heist__worker_hook(w, true);
	for (;;) {
		w->stand_in_owed = true;	/* called: look for work at least once */
		heist__worker_loop(w);	/* until the pool stops, or has no need of us */
		heist__mutex_lock(&s->lock);
		/* acquire: pairs with the seq_cst store in pool.c's teardown, before the
		 * sleepers are woken, for the stop hook below (as loop_done in worker.c). */
		bool stop = atomic_load_explicit(&pool->stop, memory_order_acquire);
		if (stop) {
			atomic_fetch_sub_explicit(&s->active, 1, memory_order_relaxed);
			s->slot[k].state = SPARE_EXITED;
			s->alive--;
		} else {
			retire(s, k);
		}
		heist__mutex_unlock(&s->lock);
		if (stop || !wait_for_call(s, k))
			break;
	}
	heist__worker_hook(w, false);
	heist__set_current(NULL);
}

/* A spare to start, chosen under the lock and started after it: creating or joining a
 * thread (a 64 MiB stack mapping, an exit) should not hold every park and stats call. */
struct launch {
	int k;			/* the slot, or -1: nothing to start */
	bool join_old;		/* a thread exited there and is not joined yet */
	heist__thread old;
};

static void exhausted(struct spares *s, const char *why);

/* Under the lock: reserve slot k (FREE or EXITED) for a new spare thread. */
static struct launch
reserve(struct heist_pool *pool, unsigned k)
{
	struct spares *s = &pool->spares;
	struct spare *sp = &s->slot[k];
	struct launch l = {.k = -1, .join_old = sp->joinable, .old = sp->thread};
	if (k >= atomic_load_explicit(&s->hw, memory_order_relaxed)) {
		/* First use: the slot's deque and buffers, then let thieves see it.
		 * Slots are used in order, so this is slot hw. */
		if (heist__pool_slot_init(pool, pool->slots + k)) {
			exhausted(s, "no memory for one more");	/* no spare */
			return l;
		}
		/* seq_cst (so release): the slot is ready before a thief that sees hw
		 * visits it; see heist__spares_slots. */
		atomic_store_explicit(&s->hw, k + 1, memory_order_seq_cst);
	}
	l.k = (int)k;
	sp->joinable = false;
	sp->launching = true;
	sp->state = SPARE_RUNNING;
	atomic_fetch_add_explicit(&s->active, 1, memory_order_relaxed);
	s->alive++;
	s->started++;
	return l;
}

/* Outside the lock: start the reserved spare; undo the reservation if we cannot. */
static void
launch(struct heist_pool *pool, struct launch l)
{
	struct spares *s = &pool->spares;
	struct spare *sp = &s->slot[l.k];
	if (l.join_old)
		heist__thread_join(l.old);	/* it set EXITED just before it returned */
	/* keeps the waiter's errno (platform.h) */
	int err = heist__thread_start(&sp->thread, pool->stack_size, spare_main,
				      spare_worker(pool, (unsigned)l.k));
	heist__mutex_lock(&s->lock);
	if (err) {
		atomic_fetch_sub_explicit(&s->active, 1, memory_order_relaxed);
		s->alive--;
		s->started--;
		sp->state = SPARE_EXITED;	/* free to try again, nothing to join */
		exhausted(s, "one more could not be started");
	} else {
		sp->joinable = true;	/* read under the lock by the next reserve */
	}
	sp->launching = false;	/* the slot may be reused once its thread exits */
	heist__mutex_unlock(&s->lock);
}

/* Under the lock: a stand-in was needed and every spare is in use (why: NULL), or one
 * more could not be had (why says so: no memory for its slot, no thread). Counted, and
 * said once per pool: a wait may now depend on a thread the pool will not start. The
 * library prints nothing else; this is the one line a user needs to see before a
 * hang (heist.h, max_spares). With HEIST_SPARES_NONE the pool was asked never to
 * start one: such moments are counted, in silence. */
static void
exhausted(struct spares *s, const char *why)
{
	s->exhausted++;
	if (s->warned || !s->max)
		return;
	s->warned = true;
	if (why)
		fprintf(stderr, "heist: pool \"%s\": a spare thread is needed and %s; queued "
			"work still waits for a thread\n", s->name, why);
	else
		fprintf(stderr, "heist: pool \"%s\": all %u spare threads are in use and "
			"queued work still waits for a thread; raise heist_config.max_spares\n",
			s->name, s->max);
}

/* Under the lock: one more spare, if the bound allows. An idle one is called at once;
 * a new one is reserved, for the caller to launch once it has dropped the lock. */
static struct launch
call_one(struct heist_pool *pool)
{
	struct spares *s = &pool->spares;
	if (s->idle >= 0) {
		unsigned k = (unsigned)s->idle;
		s->idle = s->slot[k].next_idle;
		s->slot[k].state = SPARE_RUNNING;
		atomic_fetch_add_explicit(&s->active, 1, memory_order_relaxed);
		/* release: pairs with the acquire load in wait_for_call. */
		atomic_store_explicit(&s->slot[k].word, SPARE_CALLED, memory_order_release);
		heist__futex_wake(&s->slot[k].word, 1);
		return (struct launch){.k = -1};
	}
	for (unsigned k = 0; k < s->max; k++) {
		int st = s->slot[k].state;
		if (!s->slot[k].launching && (st == SPARE_FREE || st == SPARE_EXITED))
			return reserve(pool, k);	/* one try: failing means no spare now */
	}
	exhausted(s, NULL);
	return (struct launch){.k = -1};
}

/* The count of parked threads moves without the lock: the decisions made under it
 * (heist__spare_vote, heist__spare_call, retirement) read it once, and a value a
 * moment old costs one more look at the next nap. relaxed: nothing is published
 * through it. */
void
heist__spare_park(struct heist_pool *pool)
{
	atomic_fetch_add_explicit(&pool->spares.parked, 1, memory_order_relaxed);
}

void
heist__spare_unpark(struct heist_pool *pool)
{
	atomic_fetch_sub_explicit(&pool->spares.parked, 1, memory_order_relaxed);
}

/* After the caller dropped the lock: start what call_one reserved. */
static void
launch_if(struct heist_pool *pool, struct launch l)
{
	if (l.k >= 0)
		launch(pool, l);
}

/* Under the lock: the next round of the vote. */
static void
next_round(struct spares *s)
{
	s->round++;
	s->votes = 0;
	s->stuck = 0;
}

void
heist__spare_vote(struct heist_pool *pool, uint64_t progress, struct heist__vote *v,
		  bool stuck, unsigned blocked)
{
	struct spares *s = &pool->spares;
	struct launch l = {.k = -1};
	heist__mutex_lock(&s->lock);
	uint64_t now = heist__now_ns();
	if (progress != s->progress) {	/* progress: everyone looks again, and */
		s->progress = progress;	/* compensation's count starts over */
		s->quiet = 0;
		s->quiet_since_ns = now;
		next_round(s);
	}
	if (v->round != s->round) {
		v->round = s->round;
		v->stuck = stuck;
		s->votes++;
		s->stuck += stuck;
	} else if (stuck && !v->stuck) {
		v->stuck = true;	/* its chain came to be stuck within the round */
		s->stuck++;
	}
	/* A round is complete when every blocked thread (one still spinning in its
	 * wait may be about to claim the very work we see) has looked in it. A
	 * stand-in is due if every one of them is stuck (one whose chain ends at a
	 * running thread may be about to run that work too: the thread may be between
	 * its submit and its wait), or if COMPENSATE_ROUNDS rounds before this one
	 * completed with no progress (compensation: so long a stall is no thread
	 * between its submit and its wait, however slowly threads run); and then only
	 * if fewer spares run than threads are parked. Each round complete starts the
	 * next: every count is of looks made since. relaxed (heist__spare_short):
	 * under the lock. */
	if (s->votes >= blocked) {
		bool due = s->stuck >= s->votes || s->quiet >= COMPENSATE_ROUNDS ||
			   (s->quiet >= COMPENSATE_MIN_ROUNDS &&
			    now - s->quiet_since_ns >= COMPENSATE_NS);
		if (!s->stopping && due && heist__spare_short(s)) {
			uint64_t before = s->exhausted;
			if (s->max)
				l = call_one(pool);
			else
				exhausted(s, NULL);
			if (s->exhausted == before) {
				s->quiet = 0;	/* the next stand-in takes a full count */
				s->quiet_since_ns = now;
			}
		} else if (s->quiet < COMPENSATE_ROUNDS) {
			s->quiet++;
		}
		next_round(s);
	}
	heist__mutex_unlock(&s->lock);
	launch_if(pool, l);
}

void
heist__spare_call(struct heist_pool *pool)
{
	struct spares *s = &pool->spares;
	if (!s->max)
		return;	/* HEIST_SPARES_NONE: a timed wait is only a sleep (heist.h) */
	/* relaxed: a first look without the lock (heist__spare_surplus's reason), then
	 * again under it. */
	if (!heist__spare_short(s))
		return;
	struct launch l = {.k = -1};
	heist__mutex_lock(&s->lock);
	if (!s->stopping && heist__spare_short(s))
		l = call_one(pool);
	heist__mutex_unlock(&s->lock);
	launch_if(pool, l);
}

void
heist__spares_join(struct heist_pool *pool)
{
	struct spares *s = &pool->spares;
	heist__mutex_lock(&s->lock);
	s->stopping = true;
	for (int k = s->idle; k >= 0; k = s->slot[k].next_idle) {
		/* release: as in call_one; the spare finds itself not called and exits. */
		atomic_store_explicit(&s->slot[k].word, SPARE_CALLED, memory_order_release);
		heist__futex_wake(&s->slot[k].word, 1);
	}
	heist__mutex_unlock(&s->lock);
	/* No thread starts a spare any more: the pool has stopped, nothing waits. */
	for (unsigned k = 0; k < s->max; k++) {
		if (s->slot[k].joinable) {
			heist__thread_join(s->slot[k].thread);
			s->slot[k].joinable = false;
		}
	}
}

void
heist__spares_count(struct heist_pool *pool, unsigned *alive, uint64_t *started,
		    uint64_t *exhausted)
{
	struct spares *s = &pool->spares;
	heist__mutex_lock(&s->lock);
	*alive = s->alive;
	*started = s->started;
	*exhausted = s->exhausted;
	heist__mutex_unlock(&s->lock);
}
