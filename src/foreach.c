/* foreach.c - data parallelism by lazy binary splitting (Tzannes, Caragea, Barua,
 * Vishkin, "Lazy Binary Splitting", PPoPP 2010) over fork-join. A worker runs its range
 * a grain at a time; before each grain it splits off the upper half of what is left,
 * as a spawned task, only when its deque is empty, and when a thief asks while the
 * deque still holds a half, it publishes that half instead. So a loop with no hungry
 * workers costs one check per grain, and a loop with many splits as often as idle
 * workers need work. A split made while some worker is idle is published at once,
 * so that the idle worker need not ask first: loops of a few microseconds would
 * otherwise be half over before the request was seen. */
#include <errno.h>

#include "pool.h"
#include "probe.h"
#include "sleep.h"
#include "worker.h"

/* The automatic grain: n / (workers x AUTO_CHUNKS_PER_WORKER), at most AUTO_GRAIN_MAX;
 * or n / NESTED_CHUNKS for a nested loop, one started inside another loop's body or on
 * a worker whose deque holds work already (an outer loop's halves, say). The outer
 * loop feeds the thieves, so the inner loop need not be cut fine for them, and fine
 * grains would only multiply the body calls: W4 with 10 blocks of an inner 1000-element
 * loop made 320 calls a repetition instead of the flat loop's 32 (t/flat 1.15-1.28;
 * 1.09-1.12 with the deque test alone, which misses a block whose worker's deque a
 * thief just emptied; median 0.98 with the body test too, docs/benchmarks.md). */
enum {
	MAX_SPLITS = 64,	/* halvings of a size_t range: never more */
	AUTO_CHUNKS_PER_WORKER = 16,
	NESTED_CHUNKS = 4,
	AUTO_GRAIN_MAX = 2048,
};

struct loop {
	heist_range_fn body;
	void *arg;
	size_t grain;
	/* The first nonzero body result. relaxed: a late look only lets one more
	 * grain start; the value is read after every sync, which orders it. */
	_Atomic int error;
};

struct range {
	struct loop *loop;
	size_t begin, end;
};

static size_t
auto_grain(size_t n, unsigned workers, bool nested)
{
	size_t chunks = nested ? NESTED_CHUNKS : (size_t)workers * AUTO_CHUNKS_PER_WORKER;
	size_t g = n / chunks;
	if (g > AUTO_GRAIN_MAX)
		g = AUTO_GRAIN_MAX;
	return g ? g : 1;
}

/* Whether to split now: the deque is empty (nothing for a thief to take). If it is not
 * but a thief asks, hand out what is there. */
static bool
want_split(struct worker *w)
{
	if (heist__deque_size(&w->dq) == 0)
		return true;
	if (heist__deque_split_requested(&w->dq))
		heist__worker_publish(w, 0);
	return false;
}

static int
run_grain(struct worker *w, struct loop *l, size_t begin, size_t end)
{
	w->in_body++;	/* a loop started in the body is nested (auto_grain) */
	int r = l->body(l->arg, begin, end);
	w->in_body--;
	if (r) {
		int none = 0;
		/* relaxed: see struct loop. The first error wins. */
		atomic_compare_exchange_strong_explicit(&l->error, &none, r,
							memory_order_relaxed,
							memory_order_relaxed);
	}
	return r;
}

int
heist__foreach_range(void *p)
{
	struct range *r = p;
	struct loop *l = r->loop;
	struct worker *w = heist__current();
	size_t b = r->begin, e = r->end;
	heist_task tasks[MAX_SPLITS];
	struct range halves[MAX_SPLITS];
	unsigned n = 0;

	while (b < e && !atomic_load_explicit(&l->error, memory_order_relaxed)) {
		size_t left = e - b;
		if (left > l->grain && n < MAX_SPLITS && want_split(w)) {
			size_t mid = b + left / 2;
			halves[n] = (struct range){l, mid, e};
			heist_spawn(&tasks[n], heist__foreach_range, &halves[n]);
			if (heist__deque_private_count(&w->dq) &&
			    heist__sleep_has_idle(&w->pool->sleep))
				heist__worker_publish(w, 0);
			n++;
			e = mid;
			continue;
		}
		size_t stop = left > l->grain ? b + l->grain : e;
		if (run_grain(w, l, b, stop))
			break;
		b = stop;
	}
	while (n)
		heist_sync(&tasks[--n]);
	return 0;
}

static int
run_loop(void *p)
{
	struct range *r = p;
	heist__foreach_range(r);
	return atomic_load_explicit(&r->loop->error, memory_order_relaxed);
}

HEIST_EXPORT int
heist_for_each(heist_pool *pool, size_t begin, size_t end, size_t grain,
	       heist_range_fn body, void *arg)
{
	if (!pool || !body || begin > end)
		return EINVAL;
	if (begin == end)
		return 0;
	struct worker *w = heist__current();
	bool nested = w && w->pool == pool &&
		      (w->in_body || heist__deque_size(&w->dq) != 0);
	size_t g = grain ? grain : auto_grain(end - begin, pool->n, nested);
	struct loop l = {body, arg, g, 0};
	struct range r = {&l, begin, end};
	if (w && w->pool == pool)
		return run_loop(&r);	/* fork in place */
	if (!w) {
		/* An outside caller takes part: it runs the loop in the guest slot,
		 * and the workers steal its splits. */
		int err;
		if (heist__worker_guest_enter(pool, &err)) {
			int r_err = run_loop(&r);
			heist__worker_guest_leave(pool);
			return r_err;
		}
		if (err)
			return err;
	}
	return heist_run(pool, run_loop, &r);
}

/* heist_submit_bulk's job argument, copied into the job record (48 bytes inline). */
struct bulk {
	heist_range_fn body;
	void *arg;
	size_t grain, begin, end;
};

static int
run_bulk(void *p)
{
	struct bulk *b = p;
	struct loop l = {b->body, b->arg, b->grain, 0};
	struct range r = {&l, b->begin, b->end};
	return run_loop(&r);
}

HEIST_EXPORT int
heist_submit_bulk(heist_pool *pool, size_t begin, size_t end, size_t grain,
		  heist_range_fn body, void *arg, heist_future **out)
{
	if (out)
		*out = NULL;
	if (!pool || !body || begin > end)
		return EINVAL;
	struct bulk b = {body, arg, grain ? grain : auto_grain(end - begin, pool->n, false),
			 begin, end};
	return heist_submit_copy(pool, run_bulk, &b, sizeof(b), out);
}
