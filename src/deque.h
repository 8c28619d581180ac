/* SPDX-License-Identifier: MIT */
/* deque.h - the per-worker Chase-Lev deque, with a private region at the bottom.
 *
 * The owner pushes and pops at the bottom; thieves take from the top. Slots in
 * [top, public_bottom) are public: thieves may take them, and the owner pops them with
 * the protocol of Le, Pop, Cohen, Zappa Nardelli, "Correct and Efficient Work-Stealing
 * for Weak Memory Models" (PPoPP 2013). Slots in [public_bottom, bottom) are private:
 * only the owner touches them, so pushing and popping there needs no fence and no
 * atomic read-modify-write (the split deque of Lace, van Dijk and van de Pol 2014).
 * A thief that finds the public part empty raises split_request; the owner publishes
 * its private slots at its next push or pop (worker.c, which also wakes a sleeper:
 * the deque itself never publishes). Victim choice lives in steal.c.
 *
 * Growth doubles the array. A thief may still be reading the old one, so the owner
 * retires it instead of freeing it, and frees it once no thief of its pool holds it:
 * each thief announces the array it reads in its own hazard cell (Michael, "Hazard
 * Pointers", IEEE TPDS 2004) for the few instructions of a steal. Only the threads of
 * one pool steal from its deques, so reclamation never waits for anything else. */
#ifndef HEIST_DEQUE_H
#define HEIST_DEQUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "task.h"

struct deque_array {
	struct deque_array *retired_next;	/* the owner's list of replaced arrays */
	int64_t mask;		/* capacity - 1; capacity is a power of two */
	_Atomic(struct task *) slot[];
};

/* One thief's announcement: the array it is reading, or NULL. Its own line: only that
 * thief writes it (twice a steal); owners read every cell when they grow. */
struct hazard {
	CACHE_ALIGNED _Atomic(struct deque_array *) array;
};

struct deque {
	/* Owner's line: written by the owner only. bottom is atomic so that
	 * heist_pool_pending can read it from any thread; the owner's relaxed accesses
	 * compile to plain moves. */
	CACHE_ALIGNED _Atomic int64_t bottom;
	int64_t public_cache;		/* == public_bottom: the owner is its only writer */
	int64_t top_cache;		/* a top we saw; never above the real top */
	struct deque_array *array;	/* == shared_array */
	struct deque_array *retired;	/* replaced arrays a thief may still hold */
	uint8_t owner_flags;		/* DQ_PROFILE or 0: what publish leaves in flags */
	const struct hazard *hazards;	/* every thief's cell (the pool's slots) */
	unsigned nhazards;

	/* Written by the owner when it publishes or grows, read by thieves. */
	CACHE_ALIGNED _Atomic int64_t public_bottom;
	_Atomic(struct deque_array *) shared_array;

	/* Written by thieves (CAS) and by the owner when it takes the last public slot. */
	CACHE_ALIGNED _Atomic int64_t top;

	/* DQ_REQUEST, set by hungry thieves; DQ_PROFILE, set by the owner's pool when
	 * it profiles. One byte, so that the owner's fast paths test both with one
	 * load: any bit set sends push and pop to their slow paths. */
	CACHE_ALIGNED _Atomic uint8_t flags;
};

enum { DQ_REQUEST = 1, DQ_PROFILE = 2 };

enum steal_result { STEAL_OK, STEAL_EMPTY, STEAL_ABORT };

/* hazards[0..nhazards): the cells of every thread that may steal from this deque. */
int heist__deque_init(struct deque *dq, size_t capacity, const struct hazard *hazards,
		      unsigned nhazards);
/* Free the arrays, retired ones included: no thief may be left. */
void heist__deque_fini(struct deque *dq);
int heist__deque_grow(struct deque *dq);
struct task *heist__deque_pop_public(struct deque *dq);
void heist__deque_publish(struct deque *dq, int64_t keep);

/* Any thread of the pool but the owner, announcing in its cell `mine`. STEAL_ABORT
 * means another thief or the owner won the race for the same slot, or the array
 * grew: the deque may still hold work. */
enum steal_result heist__deque_steal(struct deque *dq, struct task **out,
				     struct hazard *mine);

/* The same, but only a task at index >= floor (pushed after the owner's bottom was
 * floor), and only if keep(ctx) still holds once the slot has been read, just before
 * the task is taken. STEAL_EMPTY when the top task is below floor. */
enum steal_result heist__deque_steal_above(struct deque *dq, int64_t floor,
					   bool (*keep)(const void *ctx), const void *ctx,
					   struct task **out, struct hazard *mine);

/* Owner only: the index the next push takes (a floor for heist__deque_steal_above). */
static inline int64_t
heist__deque_bottom(struct deque *dq)
{
	return atomic_load_explicit(&dq->bottom, memory_order_relaxed);
}

/* Tasks queued, public and private: any thread, a racy snapshot. */
static inline size_t
heist__deque_size(const struct deque *dq)
{
	int64_t b = atomic_load_explicit((_Atomic int64_t *)&dq->bottom, memory_order_relaxed);
	int64_t t = atomic_load_explicit((_Atomic int64_t *)&dq->top, memory_order_relaxed);
	return b > t ? (size_t)(b - t) : 0;
}

/* Whether a thief could take something now: for the sleep protocol's last look. The
 * caller has issued a seq_cst fence before; the acquire loads pair with the owner's
 * release store of public_bottom in heist__deque_publish. */
static inline bool
heist__deque_has_public(struct deque *dq)
{
	int64_t t = atomic_load_explicit(&dq->top, memory_order_acquire);
	int64_t b = atomic_load_explicit(&dq->public_bottom, memory_order_acquire);
	return t < b;
}

/* Owner only. Push a task privately if the array has room as far as we know (our
 * cached top may be stale: then the caller refreshes it, or grows, in
 * heist__deque_push). Returns whether t was pushed. heist_spawn's fast path. */
static inline bool
heist__deque_try_push(struct deque *dq, struct task *t)
{
	int64_t b = atomic_load_explicit(&dq->bottom, memory_order_relaxed);
	struct deque_array *a = dq->array;
	if (unlikely(b - dq->top_cache > a->mask))
		return false;
	/* relaxed: the slot is private until publish's release store of public_bottom. */
	atomic_store_explicit(&a->slot[b & a->mask], t, memory_order_relaxed);
	atomic_store_explicit(&dq->bottom, b + 1, memory_order_relaxed);
	return true;
}

/* Owner only: the array looked full to try_push. Refresh our view of top; grow when
 * it really is full. Returns 0 or ENOMEM (then t is not queued). */
static inline int
heist__deque_push_full(struct deque *dq, struct task *t)
{
	/* acquire: pairs with a thief's CAS of top, so its read of the slot we are
	 * about to reuse happens before our write to it. */
	dq->top_cache = atomic_load_explicit(&dq->top, memory_order_acquire);
	if (atomic_load_explicit(&dq->bottom, memory_order_relaxed) - dq->top_cache >
	    dq->array->mask) {
		int err = heist__deque_grow(dq);
		if (err)
			return err;
	}
	heist__deque_try_push(dq, t);	/* cannot fail now */
	return 0;
}

/* Owner only. Push a task privately. Returns 0, or ENOMEM if the array was full and
 * could not grow (the task is then not queued). */
static inline int
heist__deque_push(struct deque *dq, struct task *t)
{
	return likely(heist__deque_try_push(dq, t)) ? 0 : heist__deque_push_full(dq, t);
}

/* Owner only: DQ_REQUEST | DQ_PROFILE bits. relaxed: a late answer to a request only
 * delays a steal, and publish orders what it hands over. */
static inline uint8_t
heist__deque_flags(struct deque *dq)
{
	return atomic_load_explicit(&dq->flags, memory_order_relaxed);
}

/* Owner only: a thief asked for work. */
static inline bool
heist__deque_split_requested(struct deque *dq)
{
	return heist__deque_flags(dq) & DQ_REQUEST;
}

/* Any thread: ask the owner to publish. Load first, so that many idle thieves do not
 * keep pulling the line from the owner; relaxed: the bit carries no data. */
static inline void
heist__deque_request(struct deque *dq)
{
	if (!(atomic_load_explicit(&dq->flags, memory_order_relaxed) & DQ_REQUEST))
		atomic_fetch_or_explicit(&dq->flags, DQ_REQUEST, memory_order_relaxed);
}

/* Before the owner starts: its pool profiles. */
static inline void
heist__deque_set_profile(struct deque *dq)
{
	dq->owner_flags = DQ_PROFILE;
	atomic_store_explicit(&dq->flags, DQ_PROFILE, memory_order_relaxed);
}

/* Owner only. The bottom task, if it is private, else NULL (without taking it). */
static inline struct task *
heist__deque_peek_private(struct deque *dq)
{
	int64_t b = atomic_load_explicit(&dq->bottom, memory_order_relaxed);
	if (b <= dq->public_cache)
		return NULL;
	return atomic_load_explicit(&dq->array->slot[(b - 1) & dq->array->mask],
				    memory_order_relaxed);
}

/* Owner only. Drop the bottom task, which heist__deque_peek_private returned. */
static inline void
heist__deque_drop_private(struct deque *dq)
{
	int64_t b = atomic_load_explicit(&dq->bottom, memory_order_relaxed);
	atomic_store_explicit(&dq->bottom, b - 1, memory_order_relaxed);
}

/* Owner only, for the profiler: write stamp into the floor of every private task but
 * the newest keep, the ones a publish is about to hand out. The thief that takes one
 * reads it as the moment the task became stealable (task.h: floor is unused until a
 * thief starts the task). */
static inline void
heist__deque_stamp_private(struct deque *dq, int64_t keep, uint64_t stamp)
{
	int64_t b = atomic_load_explicit(&dq->bottom, memory_order_relaxed) - keep;
	for (int64_t i = dq->public_cache; i < b; i++)
		atomic_load_explicit(&dq->array->slot[i & dq->array->mask],
				     memory_order_relaxed)->floor = (int64_t)stamp;
}

/* Owner only. Tasks in the private region. */
static inline int64_t
heist__deque_private_count(struct deque *dq)
{
	return atomic_load_explicit(&dq->bottom, memory_order_relaxed) - dq->public_cache;
}

/* Owner only. Take the bottom task (LIFO), private first, or NULL when empty. */
static inline struct task *
heist__deque_pop(struct deque *dq)
{
	struct task *t = heist__deque_peek_private(dq);
	if (t) {
		heist__deque_drop_private(dq);
		return t;
	}
	return heist__deque_pop_public(dq);
}

#endif
