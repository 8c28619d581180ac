/* SPDX-License-Identifier: MIT */
/* reduce.c - parallel reduction over fork-join (heist.h, heist_reduce). An upper half
 * that another worker may run gets an accumulator of its own; the lower half runs into
 * the caller's; the two are combined in index order (lower into, upper from), so an
 * associative combine that is not commutative is fine.
 *
 * heist_reduce lets the schedule shape the tree: it splits lazily, as heist_for_each
 * does (split.h), a grain at a time, spawning the upper half of what is left only
 * when its deque is empty, and a frame that gets back to a half nobody has started
 * claims it and goes on accumulating into its own value, so a half that was never
 * stolen costs neither an identity copy nor a combine. Which halves were stolen then
 * decides where the combines are, which changes the rounding of a floating-point sum
 * from run to run. heist_reduce_deterministic halves down to the grain and never
 * claims: the tree, every leaf's accumulator and every combine depend on begin, end
 * and grain alone (its automatic grain too), so the result is the same bit for bit
 * for any pool size and any schedule. */
#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <heist/heist.h>

#include "probe.h"	/* heist__reduce_half: the profiler calls it a range */
#include "split.h"

enum {
	AUTO_CHUNKS_PER_WORKER = 16,	/* heist_reduce's automatic grain: n / (16 workers) */
	/* heist_reduce_deterministic's: n / 32, whatever the pool. Each chunk costs an
	 * identity and a combine that heist_reduce's claims avoid: n / 64 cost
	 * 1.10-1.18x the plain form on W4's 10k array, n / 32 0.98-1.16x (median
	 * 1.01), five paired runs (docs/benchmarks.md). */
	DETERMINISTIC_CHUNKS = 32,
	INLINE_ACC = 64,		/* accumulators this small live in the frame */
	/* Halves one frame keeps at most (about 5 KB with their tasks, on the caller's
	 * stack): each halves what the frame has left, so 32 cover 2^32 grains;
	 * past that the frame runs the rest itself and only its stolen halves split. */
	MAX_SPLITS = 32,
};

struct reduction {
	heist_reduce_fn body;
	heist_combine_fn combine;
	void *arg;
	const void *identity;	/* NULL: zero bytes */
	size_t size, grain;
	bool deterministic;
	/* The first nonzero body result. relaxed: a late look only lets one more leaf
	 * start; it is read after every sync, which orders it. */
	_Atomic int error;
};

/* An upper half: its range, its accumulator, and who runs it. */
enum { HALF_OPEN, HALF_THIEF, HALF_CLAIMED };

struct half {
	struct reduction *red;
	size_t begin, end;
	void *acc;
	/* OPEN until someone takes it: the thief that runs the spawned task (THIEF)
	 * or, in heist_reduce, the parent that got there first (CLAIMED). acq_rel
	 * CAS on both sides: the winner's writes to acc are seen by the parent through
	 * heist_sync (thief) or are its own (claimed). */
	_Atomic int taken;
	alignas(max_align_t) unsigned char small[INLINE_ACC];
};

static void reduce_into(struct reduction *red, size_t begin, size_t end, void *acc);

static void
set_identity(const struct reduction *red, void *acc)
{
	if (red->identity)
		memcpy(acc, red->identity, red->size);
	else
		memset(acc, 0, red->size);
}

/* Keep err unless a failure came first. relaxed: see struct reduction. */
static void
fail(struct reduction *red, int err)
{
	int none = 0;
	atomic_compare_exchange_strong_explicit(&red->error, &none, err, memory_order_relaxed,
						memory_order_relaxed);
}

static void
leaf(struct reduction *red, size_t begin, size_t end, void *acc)
{
	if (atomic_load_explicit(&red->error, memory_order_relaxed))
		return;
	int r = red->body(red->arg, acc, begin, end);
	if (r)
		fail(red, r);
}

/* The spawned upper half: run it unless its parent claimed it first. */
int
heist__reduce_half(void *p)
{
	struct half *h = p;
	int open = HALF_OPEN;
	if (!atomic_compare_exchange_strong_explicit(&h->taken, &open, HALF_THIEF,
						     memory_order_acq_rel, memory_order_acquire))
		return 0;
	set_identity(h->red, h->acc);
	reduce_into(h->red, h->begin, h->end, h->acc);
	return 0;
}

/* An upper half's accumulator: in the record up to INLINE_ACC bytes, else allocated
 * (NULL: no memory). */
static void *
half_acc(struct half *h)
{
	return h->red->size <= INLINE_ACC ? (void *)h->small : heist__malloc(h->red->size);
}

static void
half_free(struct half *h)
{
	if (h->acc != h->small)
		free(h->acc);
}

/* heist_reduce_deterministic: acc = acc (+) the reduction of [begin, end), halved down
 * to the grain whatever the schedule. After a failure no result is used, so the tree
 * stops growing: halving on to the grain would cost the whole range's splits (a body
 * that failed at once on [0, SIZE_MAX) kept both cores busy for good). */
static void
reduce_tree(struct reduction *red, size_t begin, size_t end, void *acc)
{
	if (atomic_load_explicit(&red->error, memory_order_relaxed))
		return;	/* relaxed: see struct reduction; a late look only splits on */
	if (end - begin <= red->grain) {
		leaf(red, begin, end, acc);
		return;
	}
	size_t mid = begin + (end - begin) / 2;
	struct half h = { .red = red, .begin = mid, .end = end };
	atomic_init(&h.taken, HALF_OPEN);
	if (!(h.acc = half_acc(&h))) {
		fail(red, ENOMEM);	/* the tree must not change: no split, no result */
		return;
	}
	heist_task t;
	heist_spawn(&t, heist__reduce_half, &h);
	reduce_tree(red, begin, mid, acc);
	(void)heist_sync(&t);
	if (!atomic_load_explicit(&red->error, memory_order_relaxed))
		red->combine(red->arg, acc, h.acc);
	half_free(&h);
}

/* heist_reduce: acc = acc (+) the reduction of [b, e), a grain at a time, splitting
 * lazily. The halves spawned are a stack, each just above what the frame has left, so
 * taking them back newest first keeps the index order: a claimed one is run on into
 * acc, a stolen one is waited for and combined. Without memory for a large
 * accumulator it does not split. */
static void
reduce_lazy(struct reduction *red, size_t b, size_t e, void *acc)
{
	struct worker *w = heist__current();
	heist_task tasks[MAX_SPLITS];
	struct half halves[MAX_SPLITS];
	unsigned n = 0;

	for (;;) {
		while (b < e && !atomic_load_explicit(&red->error, memory_order_relaxed)) {
			size_t left = e - b;
			if (left > red->grain && n < MAX_SPLITS && heist__split_wanted(w)) {
				struct half *h = &halves[n];
				size_t mid = b + left / 2;
				*h = (struct half){ .red = red, .begin = mid, .end = e };
				atomic_init(&h->taken, HALF_OPEN);
				if ((h->acc = half_acc(h))) {
					heist_spawn(&tasks[n++], heist__reduce_half, h);
					heist__split_offer(w);
					e = mid;
					continue;
				}
			}
			size_t stop = left > red->grain ? b + red->grain : e;
			leaf(red, b, stop, acc);
			b = stop;
		}
		if (!n)
			return;
		struct half *h = &halves[--n];
		int open = HALF_OPEN;
		bool claimed = atomic_compare_exchange_strong_explicit(
			&h->taken, &open, HALF_CLAIMED, memory_order_acq_rel, memory_order_acquire);
		(void)heist_sync(&tasks[n]);	/* a claimed half returns at once */
		if (claimed) {
			b = h->begin;	/* on into our own accumulator */
			e = h->end;
		} else if (!atomic_load_explicit(&red->error, memory_order_relaxed)) {
			red->combine(red->arg, acc, h->acc);
		}
		half_free(h);
	}
}

static void
reduce_into(struct reduction *red, size_t begin, size_t end, void *acc)
{
	if (red->deterministic)
		reduce_tree(red, begin, end, acc);
	else
		reduce_lazy(red, begin, end, acc);
}

struct root {
	struct reduction *red;
	size_t begin, end;
	void *acc;
};

/* The whole reduction, as the body of a one-index heist_for_each: on a worker it
 * runs in place, and an outside caller runs it in the pool's guest slot, splitting
 * for the workers to steal, as it would take part in a loop of its own. */
static int
run_root(void *p, size_t begin, size_t end)
{
	struct root *r = p;
	(void)begin;
	(void)end;
	reduce_into(r->red, r->begin, r->end, r->acc);
	return atomic_load_explicit(&r->red->error, memory_order_relaxed);
}

static size_t
auto_grain(size_t n, size_t chunks)
{
	size_t g = n / chunks;
	return g ? g : 1;
}

static int
reduce(heist_pool *pool, size_t begin, size_t end, size_t grain, void *result, size_t size,
       const void *identity, heist_reduce_fn body, heist_combine_fn combine, void *arg,
       bool deterministic)
{
	if (!pool || !result || !size || !body || !combine || begin > end)
		return EINVAL;
	struct reduction red = {
		.body = body, .combine = combine, .arg = arg, .identity = identity,
		.size = size, .deterministic = deterministic,
	};
	atomic_init(&red.error, 0);
	if (begin == end) {
		set_identity(&red, result);
		return 0;
	}
	size_t n = end - begin;
	red.grain = grain ? grain
			  : auto_grain(n, deterministic ? DETERMINISTIC_CHUNKS
						       : (size_t)heist_pool_size(pool) *
								 AUTO_CHUNKS_PER_WORKER);
	/* The result is written only when everything went well. */
	alignas(max_align_t) unsigned char small[INLINE_ACC];
	void *acc = size <= INLINE_ACC ? (void *)small : heist__malloc(size);
	if (!acc)
		return ENOMEM;
	set_identity(&red, acc);
	struct root root = { &red, begin, end, acc };
	int err = heist_for_each(pool, 0, 1, 1, run_root, &root);
	if (!err)
		memcpy(result, acc, size);
	if (acc != small)
		free(acc);
	return err;
}

HEIST_EXPORT int
heist_reduce(heist_pool *pool, size_t begin, size_t end, size_t grain, void *result,
	     size_t size, const void *identity, heist_reduce_fn body, heist_combine_fn combine,
	     void *arg)
{
	return reduce(pool, begin, end, grain, result, size, identity, body, combine, arg,
		      false);
}

HEIST_EXPORT int
heist_reduce_deterministic(heist_pool *pool, size_t begin, size_t end, size_t grain,
			   void *result, size_t size, const void *identity,
			   heist_reduce_fn body, heist_combine_fn combine, void *arg)
{
	return reduce(pool, begin, end, grain, result, size, identity, body, combine, arg,
		      true);
}
