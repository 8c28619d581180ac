/* reduce.c - parallel reduction over fork-join (heist.h, heist_reduce). Both forms
 * halve the range down to the grain, spawning the upper half with an accumulator of
 * its own and running the lower half into the caller's, then combine the two in index
 * order (lower into, upper from), so an associative combine that is not commutative
 * is fine.
 *
 * heist_reduce lets the schedule shape the tree: a parent that finishes its lower half
 * before anyone has started the upper one claims the upper half back and goes on
 * accumulating into its own value, so a half that was never stolen costs neither an
 * identity copy nor a combine. Which halves were stolen then decides where the
 * combines are, which changes the rounding of a floating-point sum from run to run.
 * heist_reduce_deterministic never claims: the tree, every leaf's accumulator and
 * every combine depend on begin, end and grain alone (its automatic grain too), so
 * the result is the same bit for bit for any pool size and any schedule. */
#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <heist/heist.h>

#include "probe.h"	/* heist__reduce_half: the profiler calls it a range */

enum {
	AUTO_CHUNKS_PER_WORKER = 16,	/* heist_reduce's automatic grain: n / (16 workers) */
	/* heist_reduce_deterministic's: n / 32, whatever the pool. Each chunk costs an
	 * identity and a combine that heist_reduce's claims avoid: n / 64 cost
	 * 1.10-1.18x the plain form on W4's 10k array, n / 32 0.98-1.16x (median
	 * 1.01), five paired runs (docs/benchmarks.md). */
	DETERMINISTIC_CHUNKS = 32,
	INLINE_ACC = 64,		/* accumulators this small live in the frame */
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

static void
leaf(struct reduction *red, size_t begin, size_t end, void *acc)
{
	if (atomic_load_explicit(&red->error, memory_order_relaxed))
		return;
	int r = red->body(red->arg, acc, begin, end);
	int none = 0;
	if (r)
		atomic_compare_exchange_strong_explicit(&red->error, &none, r,
							memory_order_relaxed, memory_order_relaxed);
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

/* acc = acc (+) the reduction of [begin, end). */
static void
reduce_into(struct reduction *red, size_t begin, size_t end, void *acc)
{
	while (end - begin > red->grain) {
		size_t mid = begin + (end - begin) / 2;
		struct half h = { .red = red, .begin = mid, .end = end };
		atomic_init(&h.taken, HALF_OPEN);
		h.acc = red->size <= INLINE_ACC ? (void *)h.small : malloc(red->size);
		if (!h.acc && red->deterministic) {
			/* The tree must not change, so no split, no result: ENOMEM, unless a
			 * body failed first (relaxed: as in leaf). */
			int none = 0;
			atomic_compare_exchange_strong_explicit(&red->error, &none, ENOMEM,
								memory_order_relaxed,
								memory_order_relaxed);
			return;
		}
		if (!h.acc) {	/* no memory: the rest here, a grain at a time */
			for (; end - begin > red->grain; begin += red->grain)
				leaf(red, begin, begin + red->grain, acc);
			break;
		}
		heist_task t;
		heist_spawn(&t, heist__reduce_half, &h);
		reduce_into(red, begin, mid, acc);
		int open = HALF_OPEN;
		bool claimed = !red->deterministic &&
			       atomic_compare_exchange_strong_explicit(
				       &h.taken, &open, HALF_CLAIMED, memory_order_acq_rel,
				       memory_order_acquire);
		(void)heist_sync(&t);	/* a claimed half returns at once */
		if (claimed) {
			if (h.acc != h.small)
				free(h.acc);
			begin = mid;	/* the upper half into our own accumulator */
			continue;
		}
		if (!atomic_load_explicit(&red->error, memory_order_relaxed))
			red->combine(red->arg, acc, h.acc);
		if (h.acc != h.small)
			free(h.acc);
		return;
	}
	leaf(red, begin, end, acc);
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
	void *acc = size <= INLINE_ACC ? (void *)small : malloc(size);
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
