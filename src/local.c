/* SPDX-License-Identifier: MIT */
/* local.c - per-thread scratch of a pool's tasks (heist_local), as oneTBB's
 * enumerable_thread_specific: a slot per heist_thread_index() that is used, made on
 * its first use by that index, on a cache line of its own. The table of pointers has
 * a place for every index the pool can hand out (heist_pool_threads), a pointer each;
 * the slots themselves exist only for the threads that really ran a task that asked,
 * so two workers cost two slots, not one for each of 256 spares.
 *
 * An index belongs to one thread at a time, handed from one to the next under the
 * spares' lock (spare.c) or with the guest slot's claim, and a slot to its index: a slot
 * is read and written only by the thread that holds its index, until the program
 * reads them all (heist_local_each) after a wait that ordered the tasks before it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pool.h"
#include "worker.h"

struct heist_local {
	heist_pool *pool;
	size_t size;		/* rounded up to whole cache lines */
	void (*init)(void *slot, void *ctx);
	void *ctx;
	unsigned n;		/* heist_pool_threads(pool) */
	void *_Atomic slot[];
};

HEIST_EXPORT int
heist_local_create(heist_pool *pool, size_t size, void (*init)(void *slot, void *ctx),
		   void *ctx, heist_local **out)
{
	if (out)
		*out = NULL;
	if (!pool || !size || !out || size > SIZE_MAX - CACHE_LINE)
		return EINVAL;
	unsigned n = pool->slots_max;	/* heist_pool_threads */
	struct heist_local *l = heist__calloc(1, sizeof(*l) + n * sizeof(l->slot[0]));
	if (!l)
		return ENOMEM;
	l->pool = pool;
	l->size = (size + CACHE_LINE - 1) / CACHE_LINE * CACHE_LINE;
	l->init = init;
	l->ctx = ctx;
	l->n = n;
	for (unsigned i = 0; i < n; i++)
		atomic_init(&l->slot[i], NULL);
	*out = l;
	return 0;
}

HEIST_EXPORT void *
heist_local_get(heist_local *l)
{
	if (!l)
		return NULL;
	struct worker *w = heist__current();
	if (!w || w->pool != l->pool || w->index >= l->n)
		return NULL;
	/* relaxed: only this index's holder stores it, and it is us (a former holder's
	 * store reached us with the index's hand-over). */
	void *s = atomic_load_explicit(&l->slot[w->index], memory_order_relaxed);
	if (s)
		return s;
	s = heist__aligned_alloc(CACHE_LINE, l->size);
	if (!s)
		return NULL;
	memset(s, 0, l->size);
	if (l->init)
		l->init(s, l->ctx);
	/* release: the slot's first contents before its pointer, for heist_local_each
	 * and heist_local_destroy (acquire), which a wait orders after us anyway. */
	atomic_store_explicit(&l->slot[w->index], s, memory_order_release);
	return s;
}

HEIST_EXPORT void
heist_local_each(heist_local *l, void (*fn)(void *slot, void *ctx), void *ctx)
{
	if (!l || !fn)
		return;
	for (unsigned i = 0; i < l->n; i++) {
		/* acquire: pairs with the store in heist_local_get. */
		void *s = atomic_load_explicit(&l->slot[i], memory_order_acquire);
		if (s)
			fn(s, ctx);
	}
}

HEIST_EXPORT void
heist_local_destroy(heist_local *l)
{
	if (!l)
		return;
	for (unsigned i = 0; i < l->n; i++)
		/* acquire: as in heist_local_each. */
		heist__aligned_free(atomic_load_explicit(&l->slot[i], memory_order_acquire));
	free(l);
}
