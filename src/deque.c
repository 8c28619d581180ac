/* SPDX-License-Identifier: MIT */
/* deque.c - the slow paths of the per-worker deque (deque.h has the fast ones): the
 * public pop of Chase-Lev, publishing the private region, stealing, and growing.
 * Orderings follow Le et al., "Correct and Efficient Work-Stealing for Weak Memory
 * Models" (PPoPP 2013), figure 1; the comments name each pair. */
#include "deque.h"

#include <errno.h>
#include <stdlib.h>

#include "pages.h"

enum {
	/* Arrays of this many bytes or more are pages from the system (pages.h), so
	 * that the array a burst grew goes back to it when the deque is trimmed. */
	PAGES_MIN_BYTES = 64 * 1024,
};

static size_t
array_bytes(size_t capacity)
{
	return sizeof(struct deque_array) + (capacity + capacity / 4) * sizeof(dq_slot);
}

/* A new array of `capacity` slots, with a quarter of that again past them for the
 * owner's window (deque.h). */
static struct deque_array *
array_new(size_t capacity)
{
	size_t overhang = capacity / 4, bytes = array_bytes(capacity);
	struct deque_array *a = bytes >= PAGES_MIN_BYTES ? heist__pages_alloc(bytes, 0)
							 : heist__malloc(bytes);
	if (!a)
		return NULL;
	a->retired_next = NULL;
	a->mask = (int64_t)capacity - 1;
	a->overhang = (int64_t)overhang;
	return a;
}

/* The capacity, and the end of the owner's window. */
static int64_t capacity(const struct deque_array *a) { return a->mask + 1; }
static int64_t window(const struct deque_array *a) { return a->mask + 1 + a->overhang; }

static void
array_free(struct deque_array *a)
{
	if (!a)
		return;
	size_t bytes = array_bytes((size_t)capacity(a));
	if (bytes >= PAGES_MIN_BYTES)
		heist__pages_free(a, bytes);
	else
		free(a);
}

/* Owner only: the window starts at index origin, in the current array. */
static void
set_origin(struct deque *dq, int64_t origin)
{
	dq->origin = origin;
	/* relaxed: the owner's, and heist__deque_size's snapshot. */
	atomic_store_explicit(&dq->zero,
			      (uintptr_t)dq->array->slot - (uintptr_t)origin * sizeof(dq_slot),
			      memory_order_relaxed);
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
	atomic_init(&dq->public_bottom, 0);
	atomic_init(&dq->top, 0);
	atomic_init(&dq->flags, 0);
	atomic_init(&dq->shared_array, a);
	atomic_init(&dq->head, a->slot);
	atomic_init(&dq->zero, (uintptr_t)a->slot);
	atomic_init(&dq->limit, DQ_RING_LIMIT);
	atomic_init(&dq->split, DQ_RING_SPLIT);
	dq->origin = 0;
	dq->array = a;
	dq->retired = NULL;
	dq->public_cache = 0;
	dq->top_cache = 0;
	dq->hazards = hazards;
	dq->nhazards = nhazards;
	dq->shut = false;
	heist__deque_set_bounds(dq);
	return 0;
}

void
heist__deque_fini(struct deque *dq)
{
	while (dq->retired) {
		struct deque_array *next = dq->retired->retired_next;
		array_free(dq->retired);
		dq->retired = next;
	}
	array_free(dq->array);
	dq->array = NULL;
}

/* The bounds. room: a push has room below top_cache + capacity (a slot is reused
 * only once its index is below top) and inside the window. floor: a pop takes a
 * private task at or above public_cache, inside the window.
 *
 * Why no ring is lost. A thief's request is a relaxed fetch_or of DQ_REQUEST and
 * then release stores of the ring into limit and split (heist__deque_request). The
 * owner writes the bounds only here, with exchanges, and looks at the flag after
 * them. An exchange reads the latest value of its word: so either a ring is still
 * in limit (split) after our exchange, and the fast paths see it, or our exchange
 * read it, and then (acquire, pairing with the ring's release) our load of the flag
 * below sees DQ_REQUEST, or a later value, which only a publish writes, after it
 * answered the request. When the flag is up we ring again ourselves: the request
 * stays pending until a publish answers it (worker.c), and the fast paths stay out
 * until then; shut bounds too, since under the profiler the inline code pushes and
 * pops the tasks it does not sample (heist/inline.h), but never over a ring. */
noinline void
heist__deque_set_bounds(struct deque *dq)
{
	struct deque_array *a = dq->array;
	int64_t origin = dq->origin;
	int64_t room = dq->top_cache + capacity(a) - origin;
	if (room > window(a))
		room = window(a);
	int64_t floor = dq->public_cache - origin;
	dq->low = floor < 0;
	if (floor < 0)
		floor = 0;
	dq->room = &a->slot[room];
	dq->floor = &a->slot[floor];
	uintptr_t limit = dq->shut ? DQ_SHUT_LIMIT : (uintptr_t)dq->room;
	uintptr_t split = dq->shut ? DQ_SHUT_SPLIT : (uintptr_t)dq->floor;
	/* acquire, the loads and the exchanges: pairs with the release of a thief's
	 * ring (above). A word that holds what we would write already needs no write,
	 * and then erases no ring. */
	if (atomic_load_explicit(&dq->limit, memory_order_acquire) != limit)
		atomic_exchange_explicit(&dq->limit, limit, memory_order_acquire);
	if (atomic_load_explicit(&dq->split, memory_order_acquire) != split)
		atomic_exchange_explicit(&dq->split, split, memory_order_acquire);
	if (heist__deque_split_requested(dq)) {
		/* relaxed: only our own fast paths read these, on this thread. */
		atomic_store_explicit(&dq->limit, DQ_RING_LIMIT, memory_order_relaxed);
		atomic_store_explicit(&dq->split, DQ_RING_SPLIT, memory_order_relaxed);
	}
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
		array_free(a);
	}
}

/* Owner only: a new array of cap slots (room for every queued task). Thieves may
 * still be reading the old one (they loaded shared_array before our store), so it goes
 * on the retired list, and is freed here, now or at a later growth or trim, once no
 * thief's hazard cell names it (deque.h). Arrays only double between trims, so the
 * retired ones never hold more than the current array's size in all. Every queued
 * task goes to its own slot of the new array, and the window starts at the last
 * multiple of the new capacity at or below bottom. */
static int
resize(struct deque *dq, size_t cap)
{
	struct deque_array *old = dq->array;
	struct deque_array *a = array_new(cap);
	if (!a)
		return ENOMEM;
	/* acquire: pairs with thieves' CAS of top; slots below it are theirs. */
	int64_t t = atomic_load_explicit(&dq->top, memory_order_acquire);
	int64_t b = heist__deque_bottom(dq);
	for (int64_t i = t; i < b; i++)
		atomic_store_explicit(&a->slot[i & a->mask],
				      atomic_load_explicit(deque_owner_slot(dq, i),
							   memory_order_relaxed),
				      memory_order_relaxed);
	/* release: the copied slots are visible to a thief that loads the new array;
	 * pairs with the acquire load of shared_array in steal(). */
	atomic_store_explicit(&dq->shared_array, a, memory_order_release);
	dq->array = a;
	set_origin(dq, b & ~a->mask);
	/* relaxed: the owner's own word (and heist__deque_size's snapshot). */
	atomic_store_explicit(&dq->head, &a->slot[b - dq->origin], memory_order_relaxed);
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

static int
grow(struct deque *dq)
{
	return resize(dq, (size_t)capacity(dq->array) * 2);
}

void
heist__deque_trim(struct deque *dq, size_t cap)
{
	/* acquire: pairs with thieves' CAS of top, as in grow. */
	int64_t t = atomic_load_explicit(&dq->top, memory_order_acquire);
	if (t == heist__deque_bottom(dq) && (size_t)capacity(dq->array) > cap &&
	    !resize(dq, cap)) {
		heist__deque_set_bounds(dq);
		return;
	}
	if (dq->retired) {
		/* seq_cst fence: as in resize, for the arrays retired before; a thief
		 * whose cell we miss here loaded shared_array after it changed. */
		atomic_thread_fence(memory_order_seq_cst);
		reclaim(dq);
	}
}

/* Owner only: the head is at the end of the window. Move the window on by the
 * capacity: the private tasks in the overhang go to their own slots, at the start of
 * the array. Those slots are free: a push into the overhang had room, so the index a
 * capacity below was under top already. */
static void
window_on(struct deque *dq)
{
	struct deque_array *a = dq->array;
	int64_t cap = capacity(a);
	for (int64_t p = cap; p < window(a); p++)
		if (dq->origin + p >= dq->public_cache)	/* public ones were copied */
			atomic_store_explicit(&a->slot[p - cap],
					      atomic_load_explicit(&a->slot[p],
								   memory_order_relaxed),
					      memory_order_relaxed);
	set_origin(dq, dq->origin + cap);
	/* relaxed: the owner's own word (and heist__deque_size's snapshot). */
	atomic_store_explicit(&dq->head, &a->slot[window(a) - cap], memory_order_relaxed);
}

noinline int
heist__deque_push_slow(struct deque *dq, struct task *t)
{
	int64_t b = heist__deque_bottom(dq);
	if (b - dq->top_cache >= capacity(dq->array)) {
		/* acquire: pairs with a thief's CAS of top, so its read of the slot we
		 * are about to reuse happens before our write to it. */
		dq->top_cache = atomic_load_explicit(&dq->top, memory_order_acquire);
		if (b - dq->top_cache >= capacity(dq->array)) {
			int err = grow(dq);
			if (err)
				return err;
		}
	}
	if (deque_pos(dq) == window(dq->array))
		window_on(dq);
	dq_slot *h = atomic_load_explicit(&dq->head, memory_order_relaxed);
	/* relaxed: private until publish, as in heist__deque_try_push. */
	atomic_store_explicit(h, t, memory_order_relaxed);
	atomic_store_explicit(&dq->head, h + 1, memory_order_relaxed);
	heist__deque_set_bounds(dq);
	return 0;
}

/* The head is at origin, the bottom task below it: move the window back by the
 * capacity (nothing sits at or above the old origin, so nothing moves) and drop the
 * task, now the window's last. */
noinline void
heist__deque_drop_below(struct deque *dq)
{
	struct deque_array *a = dq->array;
	set_origin(dq, dq->origin - capacity(a));
	/* relaxed: the owner's own word (and heist__deque_size's snapshot). */
	atomic_store_explicit(&dq->head, &a->slot[capacity(a) - 1], memory_order_relaxed);
	heist__deque_set_bounds(dq);
}

/* Owner only: make every queued task public but the newest `keep`. A task the owner
 * keeps in the overhang goes to its own slot first. */
noinline void
heist__deque_publish(struct deque *dq, int64_t keep)
{
	int64_t b = heist__deque_bottom(dq) - keep;
	if (b < dq->public_cache)
		b = dq->public_cache;
	struct deque_array *a = dq->array;
	int64_t in_overhang = dq->origin + capacity(a);
	for (int64_t i = dq->public_cache > in_overhang ? dq->public_cache : in_overhang;
	     i < b; i++)
		atomic_store_explicit(&a->slot[i & a->mask],
				      atomic_load_explicit(deque_owner_slot(dq, i),
							   memory_order_relaxed),
				      memory_order_relaxed);
	/* relaxed: a thief that raises the flag again after this simply waits for
	 * our next publish; the flag carries no data. A request raised between our
	 * load and this store is lost the same way: the thief asks again. */
	atomic_store_explicit(&dq->flags, 0, memory_order_relaxed);
	/* seq_cst, so release: the slots stored before it are visible to a thief whose
	 * acquire load of public_bottom (heist__deque_steal) sees this value. seq_cst
	 * because the sleep protocol needs it: a worker about to sleep makes a seq_cst
	 * update of the sleep state and then looks at public_bottom (sleep.c); the
	 * publisher then loads that state. One of the two sees the other. An exchange,
	 * as the store of every such pair is (internal.h, dekker_store). */
	dekker_store(&dq->public_bottom, b);
	dq->public_cache = b;
	heist__deque_set_bounds(dq);
}

/* Owner only: pop the bottom task when the private region is empty (so bottom is
 * public_cache). */
noinline struct task *
heist__deque_pop_public(struct deque *dq)
{
	int64_t bottom = dq->public_cache;
	int64_t b = bottom - 1;
	/* Store, then the seq_cst fence: our claim on slot b must be visible before we
	 * read top. Pairs with the fence in heist__deque_steal between its loads of top
	 * and public_bottom; without the pair, the owner and a thief can both take the
	 * last task. release: a thief whose acquire load reads this value goes on to
	 * read slots below it, which the last publish stored; C11 carries that publish's
	 * release through our later relaxed stores (a release sequence), C++20's model
	 * no longer does, and a release store costs the slow path nothing on x86 and
	 * little on AArch64. */
	atomic_store_explicit(&dq->public_bottom, b, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	int64_t t = atomic_load_explicit(&dq->top, memory_order_relaxed);
	struct task *x = NULL;
	if (t <= b) {
		/* A public slot: the task is in its own slot (publish put it there). */
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
	/* Restoring public_bottom after a failed or last pop publishes no slot, but a
	 * thief that reads it with t < b reads the slots below it: release, as above. */
	atomic_store_explicit(&dq->public_bottom, b, memory_order_release);
	dq->public_cache = b;
	if (b < bottom)
		heist__deque_drop_private(dq);
	/* The private region is empty: floor is head. split stays where it was:
	 * public_cache only went down, so split lags above floor now, which keeps
	 * more pops than needed from the fast path, never one too many. An exchange
	 * per pop would cost a locked instruction; the library's spawn and sync set it
	 * when a push or pop comes their way (heist__deque_reopen). */
	dq->floor = atomic_load_explicit(&dq->head, memory_order_relaxed);
	dq->low = false;
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
