/* SPDX-License-Identifier: MIT */
/* foreach.c - data parallelism over fork-join. A loop that is not nested is first cut
 * into one contiguous share per thread of the pool, as OpenMP's static schedule does,
 * handed out at once (run_shares): on N workers halving would take log2 N rounds, each
 * a steal, before the last worker had work. Once every share has started, each runs a
 * grain at a time by lazy binary splitting (split.h): a worker whose share runs out
 * early steals part of another's, so uneven loops still balance, and a loop with no
 * hungry workers costs one check per grain. */
#include <errno.h>

#include "future.h"
#include "inherit.h"
#include "pool.h"
#include "probe.h"
#include "split.h"
#include "submit.h"

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
	MAX_SHARES = 64,	/* the first split's shares, at most */
};

struct loop {
	heist_range_fn body;
	void *arg;
	size_t grain;
	unsigned shares;	/* the first split's: the pool's threads, or 1 if nested */
	/* The first split's shares no thread has started yet. While there are some,
	 * nobody splits a share (may_split): a hungry worker is to take one of them,
	 * not half of a started one. relaxed: a hint; a late look splits a grain
	 * late, or one early. */
	atomic_uint shares_left;
	/* The first nonzero body result. relaxed: a late look only lets one more
	 * grain start; the value is read after every sync, which orders it. */
	_Atomic int error;
};

struct range {
	struct loop *loop;
	size_t begin, end;
	bool share;		/* one of the first split's */
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

/* Whether to split now (split.h); not while a share of the first split is unstarted
 * (struct loop): then only a thief's request is answered, by publishing what the
 * deque holds (the unstarted shares, if this is their owner). A thief's old request
 * would otherwise make a share's runner publish its first half at once (heist_spawn
 * answers requests), and a hungry worker take that instead of a share. */
static bool
may_split(struct worker *w, struct loop *l)
{
	if (!atomic_load_explicit(&l->shares_left, memory_order_relaxed))
		return heist__split_wanted(w);
	if (heist__deque_split_requested(&w->dq) && heist__deque_private_count(&w->dq))
		heist__worker_publish(w, 0);
	return false;
}

static int
run_grain(struct worker *w, struct loop *l, size_t begin, size_t end)
{
	w->in_body++;	/* a loop started in the body is nested (auto_grain) */
	int r = l->body(l->arg, begin, end);
	heist__returned();	/* not in a child forked inside it (inherit.h) */
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

	if (r->share)	/* relaxed: see struct loop */
		atomic_fetch_sub_explicit(&l->shares_left, 1, memory_order_relaxed);

	while (b < e && !atomic_load_explicit(&l->error, memory_order_relaxed)) {
		size_t left = e - b;
		if (left > l->grain && n < MAX_SPLITS && may_split(w, l)) {
			size_t mid = b + left / 2;
			halves[n] = (struct range){l, mid, e, false};
			heist_spawn(&tasks[n], heist__foreach_range, &halves[n]);
			heist__split_offer(w);
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

/* The first split: shares 1 .. s-1 of [r->begin, r->end) spawned in order (thieves
 * take the oldest first, the owner pops the newest after its own), made public at
 * once, and share 0 run here. Share k of n begins k n / s in. */
static void
run_shares(struct worker *w, struct range *r, unsigned s)
{
	heist_task tasks[MAX_SHARES];
	struct range shares[MAX_SHARES];
	size_t bounds[MAX_SHARES + 1];
	size_t n = r->end - r->begin, q = n / s, rem = n % s;
	for (unsigned k = 0; k <= s; k++)	/* k n / s = q k + rem k / s */
		bounds[k] = r->begin + q * k + rem * k / s;
	for (unsigned k = 0; k < s; k++)
		shares[k] = (struct range){r->loop, bounds[k], bounds[k + 1], true};
	/* relaxed: see struct loop; the spawns below publish it to the thieves. */
	atomic_store_explicit(&r->loop->shares_left, s, memory_order_relaxed);
	for (unsigned k = 1; k < s; k++)
		heist_spawn(&tasks[k], heist__foreach_range, &shares[k]);
	/* Public whatever the idle hint says: a worker between two tasks counts neither
	 * as searching nor as sleeping, and shares left private would wait for this
	 * thread's next push or pop, which a long body (or one that waits for the other
	 * shares' bodies) puts off until it ends. Once per loop; the publish wakes a
	 * sleeper if nobody searches. */
	if (heist__deque_private_count(&w->dq))
		heist__worker_publish(w, 0);
	heist__foreach_range(&shares[0]);
	for (unsigned k = s; --k > 0;)
		heist_sync(&tasks[k]);
}

/* How many shares the first split makes: one per thread, as long as each holds more
 * than a grain (a share of one grain would not split anyway). */
static unsigned
share_count(const struct loop *l, size_t n)
{
	size_t s = l->shares < MAX_SHARES ? l->shares : MAX_SHARES;
	size_t most = n / l->grain;
	return (unsigned)(s < most ? s : most);
}

static int
run_loop(void *p)
{
	struct range *r = p;
	struct worker *w = heist__current();
	unsigned s = share_count(r->loop, r->end - r->begin);
	if (s > 1)
		run_shares(w, r, s);
	else
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
		      (w->in_body || heist__deque_count(&w->dq) != 0);
	size_t g = grain ? grain : auto_grain(end - begin, pool->n, nested);
	struct loop l = {body, arg, g, nested ? 1 : pool->n, 0, 0};
	struct range r = {&l, begin, end, false};
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
	struct worker *w = heist__current();
	struct loop l = {b->body, b->arg, b->grain, w->pool->n, 0, 0};
	struct range r = {&l, b->begin, b->end, false};
	return run_loop(&r);
}

HEIST_EXPORT int
heist_submit_bulk_priority(heist_pool *pool, int priority, size_t begin, size_t end,
			   size_t grain, heist_range_fn body, void *arg, heist_future **out)
{
	if (out)
		*out = NULL;
	if (!pool || !body || begin > end || !heist__priority_valid(priority))
		return EINVAL;
	struct bulk b = {body, arg, grain ? grain : auto_grain(end - begin, pool->n, false),
			 begin, end};
	struct heist_future *j = heist__job_new(run_bulk, NULL, out != NULL);
	if (!j)
		return ENOMEM;
	if (heist__job_copy_arg(j, &b, sizeof(b))) {	/* inline: 40 bytes */
		heist__job_discard(j);
		return ENOMEM;
	}
	heist__job_set_priority(j, priority);
	return heist__submit_job(pool, j, out);
}

HEIST_EXPORT int
heist_submit_bulk(heist_pool *pool, size_t begin, size_t end, size_t grain,
		  heist_range_fn body, void *arg, heist_future **out)
{
	return heist_submit_bulk_priority(pool, HEIST_PRIORITY_NORMAL, begin, end, grain, body,
					  arg, out);
}
