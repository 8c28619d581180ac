/* SPDX-License-Identifier: MIT */
/* steal.c - victim choice. A worker's victims (topology.h) are every deque a thief may
 * visit, the guest slot's included, grouped in ranks: nearest first when the pool is
 * pinned (SMT sibling, shared cache, package, machine), one flat rank otherwise; the
 * spares' deques (spare.h) come last. Each round tries every rank in order, from a
 * random victim within it, so that thieves spread over equals instead of all hitting
 * the same one. */
#include "steal.h"

#include "pool.h"
#include "topology.h"
#include "worker.h"

enum {
	STEAL_RETRIES = 4,	/* tries on one victim that keeps losing CAS races */
};

static uint32_t
rng_next(struct worker *w)
{
	/* xorshift64*: a victim choice needs speed, not quality. */
	uint64_t x = w->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	w->rng = x;
	return (uint32_t)((x * 0x2545F4914F6CDD1DULL) >> 32);
}

struct task *
heist__steal_from(struct worker *w, struct worker *victim)
{
	for (int i = 0; i < STEAL_RETRIES; i++) {
		struct task *t;
		counter_add(&w->stats.steal_attempts, 1);
		switch (heist__deque_steal(&victim->dq, &t, w->hazard)) {
		case STEAL_OK:
			counter_add(&w->stats.stolen, 1);
			w->stolen_from = victim->index;	/* for heist__worker_took */
			return t;
		case STEAL_EMPTY:
			return NULL;
		case STEAL_ABORT:
			cpu_relax();
			break;
		}
	}
	return NULL;
}

/* Try the victims of rank r (topology.h's ring), from a random one on. */
static struct task *
steal_rank(struct worker *w, const struct victims *v, unsigned r)
{
	unsigned size = heist__ring_size(v, r);
	if (!size)
		return NULL;
	unsigned k = rng_next(w) % size;
	for (unsigned i = 0; i < size; i++) {
		unsigned victim = heist__ring_slot(v, r, (k + i) % size);
		if (victim == w->index)
			continue;	/* a flat list holds its own thief too */
		struct task *t = heist__steal_from(w, &w->pool->workers[victim]);
		if (t)
			return t;
	}
	return NULL;
}

struct task *
heist__steal_round(struct worker *w)
{
	const struct victims *v = w->victims;
	struct heist_pool *pool = w->pool;
	for (unsigned r = 0; r < v->nranks; r++) {
		struct task *t = steal_rank(w, v, r);
		if (t)
			return t;
	}
	/* The spares' slots, after the guest's, as one more rank of their own. */
	unsigned spares = heist__spares_slots(&pool->spares);
	if (!spares)
		return NULL;
	const struct slot_range all = {pool->slots, pool->slots + spares};
	const struct victims sv = {.order = NULL, .rank = &all, .self = {all.lo, all.lo},
				   .nranks = 1};
	return steal_rank(w, &sv, 0);
}
