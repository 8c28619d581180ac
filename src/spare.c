/* spare.c - spare threads (spare.h). The rule: while a pool's workers are parked in
 * waits, it runs up to that many spares, never more than `max` at once. A worker that
 * parks calls one (an idle spare, else a new thread); a worker that wakes only lowers
 * the count, and a spare that finds itself surplus between tasks, with its deque
 * empty, retires: it waits to be called again, and after a keep-alive exits. So for a
 * moment after a wake the pool may run one thread more than its size, never a spare
 * more than it has parked workers for long. Everything here is a slow path (it runs
 * beside a futex sleep), so a mutex guards it. */
#include "spare.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "futex.h"
#include "pool.h"
#include "worker.h"

enum { SPARE_FREE, SPARE_RUNNING, SPARE_IDLE, SPARE_EXITED };
enum { SPARE_WAITING = 0, SPARE_CALLED = 1 };

uint64_t heist__spare_keepalive_ns = 2000000000u;	/* 2 s */

int
heist__spares_init(struct spares *s, unsigned max)
{
	atomic_init(&s->parked, 0);
	atomic_init(&s->active, 0);
	atomic_init(&s->hw, 0);
	s->max = max;
	s->alive = 0;
	s->started = 0;
	s->stopping = false;
	s->idle = -1;
	if (!(s->slot = calloc(max ? max : 1, sizeof(*s->slot))))
		return ENOMEM;
	for (unsigned k = 0; k < max; k++)
		atomic_init(&s->slot[k].word, SPARE_WAITING);
	int err = pthread_mutex_init(&s->lock, NULL);
	if (err)
		free(s->slot);
	return err;
}

void
heist__spares_fini(struct spares *s)
{
	pthread_mutex_destroy(&s->lock);
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

/* Under the lock: become idle, unless the pool needs us after all. */
static bool
retire(struct spares *s, unsigned k)
{
	if (s->stopping || atomic_load_explicit(&s->active, memory_order_relaxed) <=
				   atomic_load_explicit(&s->parked, memory_order_relaxed))
		return false;
	/* relaxed: under the lock, like every change of these counters. */
	atomic_fetch_sub_explicit(&s->active, 1, memory_order_relaxed);
	s->slot[k].state = SPARE_IDLE;
	/* relaxed: the word is read under the lock once we wake. */
	atomic_store_explicit(&s->slot[k].word, SPARE_WAITING, memory_order_relaxed);
	s->slot[k].next_idle = s->idle;
	s->idle = (int)k;
	return true;
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
	pthread_mutex_lock(&s->lock);
	bool called = s->slot[k].state == SPARE_RUNNING;
	if (!called) {
		/* Timed out (or stopping) before anyone called: leave the idle list. */
		unlist_idle(s, k);
		s->slot[k].state = SPARE_EXITED;
		s->alive--;
	}
	pthread_mutex_unlock(&s->lock);
	return called;
}

static void *
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
	pthread_setname_np(pthread_self(), name);
	heist__set_current(w);
	heist__worker_hook(w, true);
	for (;;) {
		heist__worker_loop(w);	/* until the pool stops or has no need of us */
		pthread_mutex_lock(&s->lock);
		/* relaxed: stop is set before the sleepers are woken (pool.c). */
		bool stop = atomic_load_explicit(&pool->stop, memory_order_relaxed);
		bool retired = !stop && retire(s, k);
		if (stop) {
			atomic_fetch_sub_explicit(&s->active, 1, memory_order_relaxed);
			s->slot[k].state = SPARE_EXITED;
			s->alive--;
		}
		pthread_mutex_unlock(&s->lock);
		if (stop || (retired && !wait_for_call(s, k)))
			break;
	}
	heist__worker_hook(w, false);
	heist__set_current(NULL);
	return NULL;
}

/* A spare to start, chosen under the lock and started after it: creating or joining a
 * thread (a 64 MiB stack mapping, an exit) should not hold every park and stats call. */
struct launch {
	int k;			/* the slot, or -1: nothing to start */
	bool join_old;		/* a thread exited there and is not joined yet */
	pthread_t old;
};

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
		if (heist__pool_slot_init(pool, pool->slots + k))
			return l;	/* no memory: no spare */
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
		pthread_join(l.old, NULL);	/* it set EXITED just before it returned */
	pthread_attr_t attr;
	int err = pthread_attr_init(&attr);
	if (!err) {
		err = pthread_attr_setstacksize(&attr, pool->stack_size);
		if (!err)
			err = pthread_create(&sp->thread, &attr, spare_main,
					     spare_worker(pool, (unsigned)l.k));
		pthread_attr_destroy(&attr);
	}
	pthread_mutex_lock(&s->lock);
	if (err) {
		atomic_fetch_sub_explicit(&s->active, 1, memory_order_relaxed);
		s->alive--;
		s->started--;
		sp->state = SPARE_EXITED;	/* free to try again, nothing to join */
	} else {
		sp->joinable = true;	/* read under the lock by the next reserve */
	}
	sp->launching = false;	/* the slot may be reused once its thread exits */
	pthread_mutex_unlock(&s->lock);
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
	return (struct launch){.k = -1};
}

/* A worker parks (delta 1) or wakes (-1). A park calls a spare if the pool runs
 * fewer than it has workers parked; a wake leaves it to a surplus spare to retire. */
static void
count_parked(struct heist_pool *pool, int delta)
{
	struct spares *s = &pool->spares;
	if (!s->max)
		return;
	struct launch l = {.k = -1};
	pthread_mutex_lock(&s->lock);
	/* relaxed: under the lock, like every change of these counters. */
	unsigned parked = atomic_fetch_add_explicit(&s->parked, (unsigned)delta,
						    memory_order_relaxed) + (unsigned)delta;
	if (delta > 0 && !s->stopping &&
	    atomic_load_explicit(&s->active, memory_order_relaxed) < parked)
		l = call_one(pool);
	pthread_mutex_unlock(&s->lock);
	if (l.k >= 0)
		launch(pool, l);
}

void
heist__spare_park(struct heist_pool *pool)
{
	count_parked(pool, 1);
}

void
heist__spare_unpark(struct heist_pool *pool)
{
	count_parked(pool, -1);
}

void
heist__spares_join(struct heist_pool *pool)
{
	struct spares *s = &pool->spares;
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	for (int k = s->idle; k >= 0; k = s->slot[k].next_idle) {
		/* release: as in call_one; the spare finds itself not called and exits. */
		atomic_store_explicit(&s->slot[k].word, SPARE_CALLED, memory_order_release);
		heist__futex_wake(&s->slot[k].word, 1);
	}
	pthread_mutex_unlock(&s->lock);
	/* No thread starts a spare any more: the pool has stopped, nothing waits. */
	for (unsigned k = 0; k < s->max; k++) {
		if (s->slot[k].joinable) {
			pthread_join(s->slot[k].thread, NULL);
			s->slot[k].joinable = false;
		}
	}
}

void
heist__spares_count(struct heist_pool *pool, unsigned *alive, uint64_t *started)
{
	struct spares *s = &pool->spares;
	pthread_mutex_lock(&s->lock);
	*alive = s->alive;
	*started = s->started;
	pthread_mutex_unlock(&s->lock);
}
