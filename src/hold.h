/* SPDX-License-Identifier: MIT */
/* hold.h - hazard cells for pools (hold.c): a thread that is not one of a pool's own
 * names the pool in a cell of its own while it is inside it (from its enter until its
 * last touch: an outside submit's wake, a continuation queued into another pool), and
 * a pool's destroy, once its drain is done, waits until no cell names it. A store to
 * enter and one to leave, no locked instruction: an outside submit pays two plain
 * stores. The argument that no access follows the free is in submit.c, (5). */
#ifndef HEIST_HOLD_H
#define HEIST_HOLD_H

#include <stdatomic.h>
#include <stdbool.h>

#include "internal.h"

struct heist_pool;

struct heist__hold_cell {
	struct heist_pool *_Atomic pool;	/* the pool this thread is inside, or NULL */
	struct heist__hold_cell *next, *prev;	/* the list, under hold.c's lock */
	bool linked;				/* this thread's own flag */
	bool gone;				/* unlinked at its thread's exit */
};

#if !HEIST__TLS_FREED_BEFORE_KEYS
/* This thread's cell. initial-exec: one %fs-relative access, as heist__self_v2. */
extern HEIST__TLS struct heist__hold_cell heist__hold_me;
#else
/* Where TLS may be gone before the key's destructor runs (platform.h), the cell is on
 * the heap, made at the first enter, and a TLS slot keeps a pointer; NULL: none yet. */
extern const struct heist__hold_cell heist__hold_unlinked;
#endif

/* This thread's cell (where it is on the heap and not made yet, an unlinked one that
 * is only read). */
static inline struct heist__hold_cell *
heist__hold_cell(void)
{
#if !HEIST__TLS_FREED_BEFORE_KEYS
	return &heist__hold_me;
#else
	struct heist__hold_cell *c = heist__thread_slot_get(HEIST__SLOT_HOLD);
	return c ? c : (struct heist__hold_cell *)&heist__hold_unlinked;
#endif
}

/* This thread's first enter: link its cell; false if it cannot be (no thread key). */
bool heist__hold_link(void);

/* Name pool in this thread's cell, with release (pairs with destroy's acquire look;
 * the caller's seq_cst add to live that follows is what destroy synchronizes with).
 * False when this thread has no cell, and then the caller holds the pool some other
 * way. One pool at a time per thread. */
static inline bool
heist__hold_enter(struct heist_pool *pool)
{
	struct heist__hold_cell *c = heist__hold_cell();
	if (unlikely(!c->linked)) {
		if (!heist__hold_link())
			return false;
		c = heist__hold_cell();
	}
	/* release: a destroy that reads this value saw every access of ours to the
	 * pool we were in before (the store of NULL that ended that hold came first). */
	atomic_store_explicit(&c->pool, pool, memory_order_release);
	return true;
}

/* Clear the cell, with release (pairs with heist__hold_wait's acquire load): the
 * caller's last touch of the pool is before it. False when this thread has no cell. */
static inline bool
heist__hold_leave(void)
{
	struct heist__hold_cell *c = heist__hold_cell();
	if (unlikely(!c->linked))
		return false;
	atomic_store_explicit(&c->pool, NULL, memory_order_release);
	return true;
}

/* fork(): the list's lock, taken before and given back after (inherit.c), so that a
 * child gets the list whole. */
void heist__hold_lock_all(void);
void heist__hold_unlock_all(void);

/* Destroy, after its drain: wait until no thread's cell names pool. */
void heist__hold_wait(const struct heist_pool *pool);

#endif
