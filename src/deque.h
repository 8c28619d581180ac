/* SPDX-License-Identifier: MIT */
/* deque.h - the per-worker Chase-Lev deque, with a private region at the bottom.
 *
 * The owner pushes and pops at the bottom; thieves take from the top. Slots in
 * [top, public_bottom) are public: thieves may take them, and the owner pops them with
 * the protocol of Le, Pop, Cohen, Zappa Nardelli, "Correct and Efficient Work-Stealing
 * for Weak Memory Models" (PPoPP 2013). Slots in [public_bottom, bottom) are private:
 * only the owner touches them, so pushing and popping there needs no fence and no
 * atomic read-modify-write (the split deque of Lace, van Dijk and van de Pol 2014).
 * A thief that finds the public part empty raises a request; the owner publishes
 * its private slots at its next push or pop (worker.c, which also wakes a sleeper:
 * the deque itself never publishes). Victim choice lives in steal.c.
 *
 * The owner's end is a pointer. Indices are logical (they only grow, as in Chase-Lev;
 * a thief finds index i in slot[i & mask]), but the owner keeps `head`, the address
 * where its next push goes, so that heist_spawn's and heist_sync's fast paths
 * (heist/inline.h) push with a store and a pointer increment and pop with a compare
 * and a decrement: no index, no mask, no array to load. Two bounds tell them when to
 * stop: `limit` (a push below it has room) and `split` (a pop above it takes a
 * private task). The owner computes both in its slow paths, and a thief's request
 * "rings" them (limit 0, split the highest address), so that the fast paths see the
 * request with the compares they make anyway, and test no flag of their own.
 *
 * The owner's window. The owner addresses index i at slot[i - origin] for i >= origin
 * (origin a multiple of the capacity), so that its pointer need not wrap at the end of
 * the array: the array has `overhang` slots past its capacity, where the owner keeps
 * private tasks whose own slot, slot[i & mask], is at the start of the array. A
 * publish copies such a task to its own slot before thieves may see it, and when the
 * owner's pointer reaches the end of the overhang, the window moves on by the
 * capacity (its private tasks copied down). The window moves back when the owner pops
 * below origin. A pointer that oscillates across the array's end therefore moves the
 * window only once per `overhang` pushes or pops, not on every crossing. Below origin,
 * the owner reads index i at its own slot.
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

typedef _Atomic(struct task *) dq_slot;

struct deque_array {
	struct deque_array *retired_next;	/* the owner's list of replaced arrays */
	int64_t mask;		/* capacity - 1; capacity is a power of two */
	int64_t overhang;	/* slots past the capacity, for the owner's window */
	dq_slot slot[];		/* capacity + overhang */
};

/* One thief's announcement: the array it is reading, or NULL. Its own line: only that
 * thief writes it (twice a steal); owners read every cell when they grow. */
struct hazard {
	CACHE_ALIGNED _Atomic(struct deque_array *) array;
};

/* The bounds' values that keep the fast paths out: a thief's ring, and the owner's
 * own when it profiles (every spawn and sync is then the library's). No slot has
 * these addresses, and each differs from the other, so that the owner can tell a ring
 * from its own closing. */
#define DQ_RING_LIMIT ((uintptr_t)0)
#define DQ_RING_SPLIT (~(uintptr_t)0)
#define DQ_SHUT_LIMIT ((uintptr_t)1)
#define DQ_SHUT_SPLIT (~(uintptr_t)1)

struct deque {
	/* Owner's line: written by the owner only. head and zero are atomic so that
	 * heist_pool_pending can take a snapshot from any thread; the owner's relaxed
	 * accesses compile to plain moves. */
	CACHE_ALIGNED _Atomic(dq_slot *) head;	/* where the next push goes */
	int64_t origin;			/* the index of array->slot[0] in the window */
	_Atomic uintptr_t zero;		/* where index 0 would be: array->slot - origin
					   (an address, so bottom is (head - zero) / 8) */
	dq_slot *room;			/* pushes below it have room: the bound limit
					   holds when nothing rang */
	dq_slot *floor;			/* pops above it are private: split's value,
					   always exact (split may lag above it) */
	bool low;			/* private tasks below origin: floor is the
					   array's start, and so is head after them */
	int64_t public_cache;		/* == public_bottom: the owner is its only writer */
	int64_t top_cache;		/* a top we saw; never above the real one */
	struct deque_array *array;	/* == shared_array */
	struct deque_array *retired;	/* replaced arrays a thief may still hold */
	const struct hazard *hazards;	/* every thief's cell (the pool's slots) */
	unsigned nhazards;
	bool shut;			/* profiling: the bounds stay DQ_SHUT_* */

	/* The bounds line: read by the owner's fast paths on every push and pop,
	 * written by the owner in its slow paths and by a thief that asks for work
	 * (DQ_REQUEST in flags, and the ring: at most once per publish). */
	CACHE_ALIGNED _Atomic uintptr_t limit;
	_Atomic uintptr_t split;
	_Atomic uint8_t flags;

	/* Written by the owner when it publishes or grows, read by thieves. */
	CACHE_ALIGNED _Atomic int64_t public_bottom;
	_Atomic(struct deque_array *) shared_array;

	/* Written by thieves (CAS) and by the owner when it takes the last public slot. */
	CACHE_ALIGNED _Atomic int64_t top;
};

enum { DQ_REQUEST = 1 };

enum steal_result { STEAL_OK, STEAL_EMPTY, STEAL_ABORT };

/* hazards[0..nhazards): the cells of every thread that may steal from this deque. */
int heist__deque_init(struct deque *dq, size_t capacity, const struct hazard *hazards,
		      unsigned nhazards);
/* Free the arrays, retired ones included: no thief may be left. */
void heist__deque_fini(struct deque *dq);

/* Owner only, at a quiet moment (its worker going to sleep, no frame of its own on the
 * stack): if the deque is empty and its array holds more than cap slots, go back to
 * an array of cap; and free the retired arrays no thief holds. What a burst grew goes
 * back to the system (pages.h). */
void heist__deque_trim(struct deque *dq, size_t cap);
/* Owner only: push t when the fast test found no room (or a ring). 0 or ENOMEM. */
int heist__deque_push_slow(struct deque *dq, struct task *t);
struct task *heist__deque_pop_public(struct deque *dq);
/* Owner only: the bottom task is at or below origin: move the window back, drop it. */
void heist__deque_drop_below(struct deque *dq);
void heist__deque_publish(struct deque *dq, int64_t keep);
/* Owner only: the bounds the fast paths read, from the owner's state (closed while a
 * request is pending or the deque is shut). */
void heist__deque_set_bounds(struct deque *dq);

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

/* Owner only: where the owner's head is, as an index into array->slot. */
static inline int64_t
deque_pos(struct deque *dq)
{
	return atomic_load_explicit(&dq->head, memory_order_relaxed) - dq->array->slot;
}

/* The index of the slot at address h, in the window (zero's reader's snapshot). */
static inline int64_t
deque_index(uintptr_t h, uintptr_t zero)
{
	return (int64_t)((h - zero) / sizeof(dq_slot));
}

/* Owner only: the index the next push takes (a floor for heist__deque_steal_above). */
static inline int64_t
heist__deque_bottom(struct deque *dq)
{
	/* relaxed: the owner's own words. */
	return deque_index((uintptr_t)atomic_load_explicit(&dq->head, memory_order_relaxed),
			   atomic_load_explicit(&dq->zero, memory_order_relaxed));
}

/* Owner only: the slot where the owner keeps index i, a queued index (top <= i <
 * bottom): in the window at or above origin, its own slot below. */
static inline dq_slot *
deque_owner_slot(struct deque *dq, int64_t i)
{
	return i >= dq->origin ? &dq->array->slot[i - dq->origin]
			       : &dq->array->slot[i & dq->array->mask];
}

/* Tasks queued, public and private: any thread, a racy snapshot. Read while the owner
 * grows or moves its window, head and zero may come from different moments: the count
 * is then clamped (0 or the most a deque can hold), never a wild number. */
static inline size_t
heist__deque_size(const struct deque *dq)
{
	struct deque *d = (struct deque *)dq;
	/* relaxed: a snapshot, ordered with nothing. */
	uintptr_t head = (uintptr_t)atomic_load_explicit(&d->head, memory_order_relaxed);
	int64_t b = deque_index(head, atomic_load_explicit(&d->zero, memory_order_relaxed));
	int64_t t = atomic_load_explicit(&d->top, memory_order_relaxed);
	if (b <= t)
		return 0;
	return b - t > (int64_t)1 << 40 ? 0 : (size_t)(b - t);
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
 * cached top may be stale: then heist__deque_push_slow refreshes it, or grows, or
 * moves the window). Returns whether t was pushed. heist_spawn's own test. */
static inline bool
heist__deque_try_push(struct deque *dq, struct task *t)
{
	dq_slot *h = atomic_load_explicit(&dq->head, memory_order_relaxed);
	if (unlikely(h >= dq->room))
		return false;
	/* relaxed: the slot is private until publish's release store of public_bottom. */
	atomic_store_explicit(h, t, memory_order_relaxed);
	atomic_store_explicit(&dq->head, h + 1, memory_order_relaxed);
	return true;
}

/* Owner only. Push a task privately. Returns 0, or ENOMEM if the array was full and
 * could not grow (the task is then not queued). */
static inline int
heist__deque_push(struct deque *dq, struct task *t)
{
	return likely(heist__deque_try_push(dq, t)) ? 0 : heist__deque_push_slow(dq, t);
}

/* Owner only: whether a thief asked for work. relaxed: a late answer to a request
 * only delays a steal, and publish orders what it hands over. */
static inline bool
heist__deque_split_requested(struct deque *dq)
{
	return atomic_load_explicit(&dq->flags, memory_order_relaxed) & DQ_REQUEST;
}

/* Any thread: ask the owner to publish. Load first, so that many idle thieves do not
 * keep pulling the line from the owner. The flag is the request; the ring is how the
 * owner's fast paths notice it (deque.c, heist__deque_set_bounds, has the proof that
 * the owner never loses a ring it has not answered). relaxed fetch_or: the rings'
 * release stores, after it, carry it to the owner's acquire exchange. */
static inline void
heist__deque_request(struct deque *dq)
{
	if (atomic_load_explicit(&dq->flags, memory_order_relaxed) & DQ_REQUEST)
		return;
	atomic_fetch_or_explicit(&dq->flags, DQ_REQUEST, memory_order_relaxed);
	/* release: pairs with the owner's acquire exchange in set_bounds, which then
	 * sees the request it rings for. */
	atomic_store_explicit(&dq->limit, DQ_RING_LIMIT, memory_order_release);
	atomic_store_explicit(&dq->split, DQ_RING_SPLIT, memory_order_release);
}

/* Owner only, from the library's spawn and sync, which the fast paths called: open
 * the bounds again if they are closed with nothing asking. A ring can outlive its
 * request (the thief's fetch_or, our publish clearing the flag, then the thief's
 * ring), and a public pop leaves split above floor (deque.c); either would keep
 * every spawn or sync out of line until the next slow path of the deque. floor is
 * always exact, so comparing the bounds with what they should be finds both. */
static inline void
heist__deque_reopen(struct deque *dq)
{
	if (heist__deque_split_requested(dq))
		return;
	uintptr_t limit = dq->shut ? DQ_SHUT_LIMIT : (uintptr_t)dq->room;
	uintptr_t split = dq->shut ? DQ_SHUT_SPLIT : (uintptr_t)dq->floor;
	/* relaxed: our own words; a ring that comes after this is a new request. */
	if (atomic_load_explicit(&dq->limit, memory_order_relaxed) != limit ||
	    atomic_load_explicit(&dq->split, memory_order_relaxed) != split)
		heist__deque_set_bounds(dq);
}

/* Before the owner starts: its pool profiles, so every spawn and sync goes to the
 * library, which stamps the tasks (but those it does not sample: heist/inline.h). */
static inline void
heist__deque_set_profile(struct deque *dq)
{
	dq->shut = true;
	heist__deque_set_bounds(dq);
}

/* Owner only. The bottom task, if it is private, else NULL (without taking it). */
static inline struct task *
heist__deque_peek_private(struct deque *dq)
{
	dq_slot *h = atomic_load_explicit(&dq->head, memory_order_relaxed);
	if (likely(h > dq->floor))
		return atomic_load_explicit(h - 1, memory_order_relaxed);
	if (likely(!dq->low))
		return NULL;	/* head == floor == public_cache's slot */
	/* head == floor == the array's start, and private tasks below origin. */
	return atomic_load_explicit(deque_owner_slot(dq, heist__deque_bottom(dq) - 1),
				    memory_order_relaxed);
}

/* Owner only. Drop the bottom task, which heist__deque_peek_private returned. */
static inline void
heist__deque_drop_private(struct deque *dq)
{
	dq_slot *h = atomic_load_explicit(&dq->head, memory_order_relaxed);
	if (likely(h > dq->array->slot))
		atomic_store_explicit(&dq->head, h - 1, memory_order_relaxed);
	else
		heist__deque_drop_below(dq);
}

/* Owner only, for the profiler: write stamp into the floor of every private task but
 * the newest keep, the ones a publish is about to hand out. The thief that takes one
 * reads it as the moment the task became stealable (task.h: floor is unused until a
 * thief starts the task). */
static inline void
heist__deque_stamp_private(struct deque *dq, int64_t keep, uint64_t stamp)
{
	int64_t b = heist__deque_bottom(dq) - keep;
	for (int64_t i = dq->public_cache; i < b; i++)
		atomic_load_explicit(deque_owner_slot(dq, i), memory_order_relaxed)->floor =
			(int64_t)stamp;
}

/* Owner only. Tasks in the private region. */
static inline int64_t
heist__deque_private_count(struct deque *dq)
{
	return heist__deque_bottom(dq) - dq->public_cache;
}

/* Owner only. Tasks queued, public and private, as the owner last saw top. */
static inline int64_t
heist__deque_count(struct deque *dq)
{
	/* relaxed: thieves only raise top; a stale value counts a task too many. */
	int64_t t = atomic_load_explicit(&dq->top, memory_order_relaxed);
	int64_t b = heist__deque_bottom(dq);
	return b > t ? b - t : 0;
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
