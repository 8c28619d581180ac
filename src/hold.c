/* SPDX-License-Identifier: MIT */
/* hold.c - one cell per thread that ever entered a pool from outside, on a list that
 * destroy walks. A cell lives in the thread's TLS (on the heap, named by a TLS slot,
 * where TLS may go before the key's destructor runs: platform.h,
 * HEIST__TLS_FREED_BEFORE_KEYS) and is linked on
 * the thread's first enter; a thread key's destructor unlinks it. The list
 * is changed and walked under one lock, which a fork keeps whole (inherit.c takes it
 * around fork(), after the registry's, the order in which enter_if_alive takes them). */
#include "hold.h"

#include <stdatomic.h>
#include <stddef.h>

#include "internal.h"

#if !HEIST__TLS_FREED_BEFORE_KEYS
HEIST__TLS struct heist__hold_cell heist__hold_me;
#else
const struct heist__hold_cell heist__hold_unlinked;
static const struct heist__hold_cell hold_gone = {.gone = true};	/* after unlink_cell */
#endif
static heist__mutex cells_lock = HEIST__MUTEX_INIT;
static struct heist__hold_cell *cells;
static heist__key cell_key;
static bool cell_key_made;
static heist__once_flag cell_once = HEIST__ONCE_INIT;

static void
unlink_cell(void *p)
{
	struct heist__hold_cell *c = p;
	heist__mutex_lock(&cells_lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		cells = c->next;
	if (c->next)
		c->next->prev = c->prev;
	heist__mutex_unlock(&cells_lock);
	c->linked = false;
	c->gone = true;	/* a later enter (another key's destructor) uses the count */
#if HEIST__TLS_FREED_BEFORE_KEYS
	/* On the heap (platform.h): freed here. A later enter on this thread (a
	 * destructor of the program's own, after this one) finds hold_gone in the
	 * slot, which lasts, and uses the count. */
	heist__thread_slot_set(HEIST__SLOT_HOLD, (void *)&hold_gone);
	free(c);
#endif
}

void heist__hold_lock_all(void) { heist__mutex_lock(&cells_lock); }
void heist__hold_unlock_all(void) { heist__mutex_unlock(&cells_lock); }

static void
make_key(void)
{
	/* Where the cell's pointer is in a slot (hold.h), the slots first. */
	cell_key_made = (HEIST__TLS_FREED_BEFORE_KEYS ? heist__thread_slot_init() == 0 : true) &&
			heist__key_create(&cell_key, unlink_cell) == 0;
}

bool
heist__hold_link(void)
{
#if !HEIST__TLS_FREED_BEFORE_KEYS
	struct heist__hold_cell *c = &heist__hold_me;
	if (c->gone)
		return false;
	heist__once(&cell_once, make_key);
	if (!cell_key_made || heist__key_set(cell_key, c))
		return false;
#else
	if (heist__hold_cell()->gone)
		return false;
	heist__once(&cell_once, make_key);
	if (!cell_key_made)
		return false;
	struct heist__hold_cell *c = heist__calloc(1, sizeof(*c));
	if (!c)
		return false;	/* the caller holds the pool by the count instead */
	if (!heist__thread_slot_set(HEIST__SLOT_HOLD, c)) {
		free(c);
		return false;
	}
	if (heist__key_set(cell_key, c)) {
		heist__thread_slot_set(HEIST__SLOT_HOLD, NULL);
		free(c);
		return false;
	}
#endif
	heist__mutex_lock(&cells_lock);
	c->prev = NULL;
	c->next = cells;
	if (cells)
		cells->prev = c;
	cells = c;
	heist__mutex_unlock(&cells_lock);
	c->linked = true;
	return true;
}

/* Whether some cell names pool; under cells_lock. */
static bool
named(const struct heist_pool *pool)
{
	for (struct heist__hold_cell *c = cells; c; c = c->next)
		/* acquire: pairs with the release stores of enter and leave. */
		if (atomic_load_explicit(&c->pool, memory_order_acquire) == pool)
			return true;
	return false;
}

void
heist__hold_wait(const struct heist_pool *pool)
{
	heist__mutex_lock(&cells_lock);
	while (named(pool)) {
		/* A hold lasts a push and a wake: a few instructions, unless its thread
		 * was preempted. It needs no lock to end. */
		heist__mutex_unlock(&cells_lock);
		heist__thread_yield();
		heist__mutex_lock(&cells_lock);
	}
	heist__mutex_unlock(&cells_lock);
}
