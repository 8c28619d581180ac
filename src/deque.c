/* SPDX-License-Identifier: MIT */
/* deque.c - the slow paths of the per-worker deque (deque.h has the fast ones): the
 * public pop of Chase-Lev, publishing the private region, stealing, and growing.
 * Orderings follow Le et al., "Correct and Efficient Work-Stealing for Weak Memory
 * Models" (PPoPP 2013), figure 1; the comments name each pair. */
#include "deque.h"

#include <errno.h>
#include <stdlib.h>

static struct deque_array *
array_new(size_t capacity)
{
	struct deque_array *a = heist__malloc(sizeof(*a) + capacity * sizeof(a->slot[0]));
	if (!a)
		return NULL;
	a->retired_next = NULL;
	a->mask = (int64_t)capacity - 1;
	return a;
}

int
heist__deque_init(struct deque *dq, size_t capacity, const struct hazard *hazards,
		  unsigned nhazards)
{
	size_t cap = 2;
	while (cap < capacity)
		cap *= 2;
	struct deque_array *a = array_new(cap);
	if (!a)
		return ENOMEM;
	atomic_init(&dq->bottom, 0);
	atomic_init(&dq->public_bottom, 0);
	atomic_init(&dq->top, 0);
	atomic_init(&dq->flags, 0);
	dq->owner_flags = 0;
	atomic_init(&dq->shared_array, a);
	dq->array = a;
	dq->retired = NULL;
	dq->public_cache = 0;
	dq->top_cache = 0;
	dq->hazards = hazards;
	dq->nhazards = nhazards;
	return 0;
}

void
heist__deque_fini(struct deque *dq)
{
	while (dq->retired) {
		struct deque_array *next = dq->retired->retired_next;
		free(dq->retired);
		dq->retired = next;
	}
	free(dq->array);
	dq->array = NULL;
}

static bool
held_by_a_thief(const struct deque *dq, const struct deque_array *a)
{
	for (unsigned i = 0; i < dq->nhazards; i++)
		/* acquire: pairs with the thief's release store of NULL after its last
		 * read of the array, so that read happens before our free. */
		if (atomic_load_explicit((_Atomic(struct deque_array *) *)&dq->hazards[i].array,
					 memory_order_acquire) == a)
			return true;
	return false;
}

/* Free the retired arrays no thief holds. The caller has made the current array the
 * shared one and issued a seq_cst fence, so a thief that announces a retired array
 * after our look below also sees the new array when it checks, and drops the old. */
static void
reclaim(struct deque *dq)
{
	struct deque_array **p = &dq->retired;
	while (*p) {
		struct deque_array *a = *p;
		if (held_by_a_thief(dq, a)) {
			p = &a->retired_next;	/* the next growth, or fini, frees it */
			continue;
		}
		*p = a->retired_next;
		free(a);
	}
}

/* Owner only: double the array. Thieves may still be reading the old one (they loaded
 * shared_array before our store), so it goes on the retired list, and is freed here,
 * now or at a later growth, once no thief's hazard cell names it (deque.h). At most
 * every array is retired once, so the retired ones never hold more than the current
 * array's size in all. */
noinline int
heist__deque_grow(struct deque *dq)
{
	struct deque_array *old = dq->array;
	struct deque_array *a = array_new((size_t)(old->mask + 1) * 2);
	if (!a)
		return ENOMEM;
	/* acquire: pairs with thieves' CAS of top; slots below it are theirs. */
	int64_t t = atomic_load_explicit(&dq->top, memory_order_acquire);
	int64_t b = atomic_load_explicit(&dq->bottom, memory_order_relaxed);
	for (int64_t i = t; i < b; i++)
		atomic_store_explicit(&a->slot[i & a->mask],
				      atomic_load_explicit(&old->slot[i & old->mask],
							   memory_order_relaxed),
				      memory_order_relaxed);
	/* release: the copied slots are visible to a thief that loads the new array;
	 * pairs with the acquire load of shared_array in steal(). */
	atomic_store_explicit(&dq->shared_array, a, memory_order_release);
	dq->array = a;
	old->retired_next = dq->retired;
	dq->retired = old;
	/* seq_cst fence: our store of shared_array comes before our reads of the hazard
	 * cells. Pairs with the fence in steal() between a thief's store of its cell
	 * and its second load of shared_array: either the thief sees the new array
	 * (and lets go of the old) or we see its cell (and keep the old). */
	atomic_thread_fence(memory_order_seq_cst);
	reclaim(dq);
	return 0;
}

/* Owner only: make every queued task public but the newest `keep`. */
noinline void
heist__deque_publish(struct deque *dq, int64_t keep)
{
	int64_t b = atomic_load_explicit(&dq->bottom, memory_order_relaxed) - keep;
	if (b < dq->public_cache)
		b = dq->public_cache;
	/* relaxed: a thief that raises the flag again after this simply waits for
	 * our next publish; the flag carries no data. A request raised between our
	 * load and this store is lost the same way: the thief asks again. */
	atomic_store_explicit(&dq->flags, dq->owner_flags, memory_order_relaxed);
	/* seq_cst, so release: the slots stored before it are visible to a thief whose
	 * acquire load of public_bottom (heist__deque_steal) sees this value. seq_cst
	 * because the sleep protocol needs it: a worker about to sleep makes a seq_cst
	 * update of the sleep state and then looks at public_bottom (sleep.c); the
	 * publisher then loads that state. One of the two sees the other. An exchange,
	 * as the store of every such pair is (internal.h, dekker_store). */
	dekker_store(&dq->public_bottom, b);
	dq->public_cache = b;
}

/* Owner only: pop the bottom task when the private region is empty. */
noinline struct task *
heist__deque_pop_public(struct deque *dq)
{
	int64_t b = atomic_load_explicit(&dq->bottom, memory_order_relaxed) - 1;
	/* relaxed store, then the seq_cst fence: our claim on slot b must be visible
	 * before we read top. Pairs with the fence in heist__deque_steal between its
	 * loads of top and public_bottom; without the pair, the owner and a thief can
	 * both take the last task. */
	atomic_store_explicit(&dq->public_bottom, b, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	int64_t t = atomic_load_explicit(&dq->top, memory_order_relaxed);
	struct task *x = NULL;
	if (t <= b) {
		x = atomic_load_explicit(&dq->array->slot[b & dq->array->mask],
					 memory_order_relaxed);
		if (t == b) {
			/* The last task: race the thieves for it with a CAS on top, as
			 * they do. seq_cst, as in the paper; failure is relaxed because
			 * losing publishes nothing to us. */
			if (!atomic_compare_exchange_strong_explicit(
				    &dq->top, &t, t + 1, memory_order_seq_cst,
				    memory_order_relaxed))
				x = NULL;
			b = b + 1;	/* empty either way: bottom = top */
		}
	} else {
		b = b + 1;	/* it was empty; undo our claim */
	}
	/* relaxed: restoring public_bottom after a failed or last pop publishes no
	 * slot; a thief that reads the lower value sees an empty deque and retries. */
	atomic_store_explicit(&dq->public_bottom, b, memory_order_relaxed);
	atomic_store_explicit(&dq->bottom, b, memory_order_relaxed);
	dq->public_cache = b;
	return x;
}

/* The steal of Le et al., figure 1, against public_bottom, with a hazard cell for the
 * array and the two conditions of heist__deque_steal_above. */
static enum steal_result
steal(struct deque *dq, int64_t floor, bool (*keep)(const void *), const void *ctx,
      struct task **out, struct hazard *mine)
{
	/* relaxed load and store: the fence below orders the store before our second
	 * load of shared_array, which is the one that counts (see grow). */
	struct deque_array *a = atomic_load_explicit(&dq->shared_array, memory_order_relaxed);
	atomic_store_explicit(&mine->array, a, memory_order_relaxed);
	/* acquire: pairs with the CAS of top by other thieves and by the owner's pop of
	 * the last slot, so we never read a slot older than the top we saw. */
	int64_t t = atomic_load_explicit(&dq->top, memory_order_acquire);
	/* seq_cst fence: pairs with the fence in heist__deque_pop_public (the owner and
	 * a thief cannot both take the last task), and with the one in grow (hazard). */
	atomic_thread_fence(memory_order_seq_cst);
	/* acquire: pairs with the release (seq_cst) store in heist__deque_publish, so
	 * the slots below this bottom hold the tasks the owner stored. */
	int64_t b = atomic_load_explicit(&dq->public_bottom, memory_order_acquire);
	enum steal_result r = STEAL_EMPTY;
	if (t >= b) {
		heist__deque_request(dq);	/* ask the owner to publish */
		goto out;
	}
	if (t < floor)
		goto out;
	/* acquire (the paper's consume): pairs with the release store in grow, so a new
	 * array's copied slots are visible. A different array than the one we announced
	 * may be freed at any time: start again with the new one. */
	r = STEAL_ABORT;
	if (atomic_load_explicit(&dq->shared_array, memory_order_acquire) != a)
		goto out;
	struct task *x = atomic_load_explicit(&a->slot[t & a->mask], memory_order_relaxed);
	if (keep && !keep(ctx)) {
		r = STEAL_EMPTY;
		goto out;
	}
	/* seq_cst as in the paper; on failure relaxed: we take nothing. */
	if (atomic_compare_exchange_strong_explicit(&dq->top, &t, t + 1, memory_order_seq_cst,
						    memory_order_relaxed)) {
		*out = x;
		r = STEAL_OK;
	}
out:
	/* release: our reads of the array happen before an owner's free that sees the
	 * cell empty (its acquire load in held_by_a_thief). */
	atomic_store_explicit(&mine->array, NULL, memory_order_release);
	return r;
}

enum steal_result
heist__deque_steal(struct deque *dq, struct task **out, struct hazard *mine)
{
	return steal(dq, INT64_MIN, NULL, NULL, out, mine);
}

enum steal_result
heist__deque_steal_above(struct deque *dq, int64_t floor, bool (*keep)(const void *ctx),
			 const void *ctx, struct task **out, struct hazard *mine)
{
	return steal(dq, floor, keep, ctx, out, mine);
}
