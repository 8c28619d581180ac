/* SPDX-License-Identifier: MIT */
/* group.c - task groups (a scope, as oneTBB's task_group or Rayon's scope): counts of
 * the group's jobs submitted and finished, the first nonzero result, and a cancellation
 * token the group's jobs share, so that the first error cancels the rest. Each job
 * carries a struct heist__then in its own inline_copy (no allocation per task), fired
 * when it is final (future.h): it records the result and counts the job out.
 *
 * The counts are kept in lanes, one per worker, as a per-CPU counter is: with one
 * shared count, every submit and every finish moved its line between the submitter
 * and the workers, and between the workers (W5-fine: the group 1.1-1.5x the time of a
 * future per task). The price is paid where a thread waits: it sums the lanes, and a
 * sleeper arms a shared countdown, which the finishers count down only while someone
 * sleeps (heist__group_sleep argues it). Waiting is wait.c's (heist__wait_group): a
 * waiting worker runs the group's jobs it finds at the bottom of its own deque, which
 * its frame requires, and nothing else. */
#include "group.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>

#include "cancel.h"
#include "platform/platform.h"
#include "future.h"
#include "pool.h"
#include "submit.h"
#include "wait.h"
#include "worker.h"

enum { LANES_MAX = 16 };

/* A group job's node, in its inline_copy. */
struct group_node {
	struct heist__then then;
	struct heist_group *g;
};

static_assert(sizeof(struct group_node) <= GROUP_NODE_BYTES, "a group node fits a job");

static void
group_fire(struct heist__then *n, struct heist_future *j)
{
	struct heist_group *g = ((struct group_node *)(void *)n)->g;
	/* acquire: pairs with the final release store; the job is final. */
	uint32_t s = atomic_load_explicit(&j->state, memory_order_acquire);
	int r = (s & FUT_MASK) == FUT_CANCELLED ? ECANCELED : j->task.result;
	if (r) {
		int none = 0;
		/* relaxed: the waiter reads it after the acquire that finds g done,
		 * which our count out below (a release) orders after this. First error
		 * wins. */
		atomic_compare_exchange_strong_explicit(&g->error, &none, r,
							memory_order_relaxed,
							memory_order_relaxed);
		heist_cancel_request(g->token);	/* the rest never run, or see cancelled */
	}
	heist__group_count_out(g);
}

/* The lane of the calling thread: its own, if it is a worker (or the guest) of g's
 * pool; the shared last one for spares, other pools' workers and outside threads. */
static struct group_lane *
my_lane(struct heist_group *g)
{
	struct worker *w = heist__current();
	return &g->lane[w && w->pool == g->pool && w->index < g->lanes ? w->index : g->lanes];
}

/* Counted in before the job is queued. relaxed: the queue's hand-off orders it before
 * the job's count out, and a counter that has seen the count out sees this (the load
 * order of heist__group_done). Nobody can find the group done in between, for the
 * submitter is the waiting thread itself, or a group job (counted in and not out), or
 * a thread the waiter synchronised with. */
static void
count_in(struct heist_group *g)
{
	atomic_fetch_add_explicit(&my_lane(g)->submitted, 1, memory_order_relaxed);
}

void
heist__group_count_out(struct heist_group *g)
{
	struct group_lane *l = my_lane(g);
	/* seq_cst: a release, so that the job's results and writes reach a counter
	 * that sees it (heist__group_done's acquire); and the first half of a Dekker
	 * pair with heist__group_sleep: either our load of sleepers below sees its
	 * increment, or its sum after its fence sees our count. (On x86 a locked add
	 * either way, and the load a plain one.) */
	atomic_fetch_add_explicit(&l->finished, 1, memory_order_seq_cst);
	/* acq_rel: release for disarm's erasing exchange, acquire of the armed
	 * sleeper's add, whose read of wake_seq then comes before our move. */
	if (atomic_load_explicit(&g->sleepers, memory_order_seq_cst) &&
	    atomic_fetch_sub_explicit(&g->countdown, 1, memory_order_acq_rel) == 1) {
		/* relaxed: a wake only, after which the sleepers look again; the
		 * futex's compare orders it (heist__group_sleep). */
		atomic_fetch_add_explicit(&g->wake_seq, 1, memory_order_relaxed);
		heist__futex_wake(&g->wake_seq, INT_MAX);
	}
	/* release: our last touch of g; destroy frees it only after it has seen every
	 * count out leave (acquire, in all_left). */
	atomic_fetch_add_explicit(&l->left, 1, memory_order_release);
}

/* The sum of one counter over g's lanes, each read with order o. */
static uint64_t
lanes_sum(struct heist_group *g, size_t offset, memory_order o)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i <= g->lanes; i++)
		sum += atomic_load_explicit(
			(_Atomic uint64_t *)(void *)((char *)&g->lane[i] + offset), o);
	return sum;
}

/* How far the count outs named by offset (finished, or left) are behind the count
 * ins. They are read first, with acquire: a count out is made after its count in, so
 * each one we see has its count in visible to the loads of submitted after them
 * (relaxed: the acquire's happens-before, and read coherence). What we sum is then a
 * subset of the jobs whose count ins we sum; equal counts mean equal sets: every job
 * counted in has counted out. A job counted in later than our read comes from a job
 * counted in and not out (there is none then) or from a thread the caller must
 * synchronise with. */
static uint64_t
behind(struct heist_group *g, size_t offset)
{
	uint64_t out = lanes_sum(g, offset, memory_order_acquire);
	return lanes_sum(g, offsetof(struct group_lane, submitted), memory_order_relaxed) - out;
}

static bool
caught_up(struct heist_group *g, size_t offset)
{
	return behind(g, offset) == 0;
}

bool
heist__group_done(struct heist_group *g)
{
	return caught_up(g, offsetof(struct group_lane, finished));
}

/* Whether every count out has made its last touch of g. */
static bool
all_left(struct heist_group *g)
{
	return caught_up(g, offsetof(struct group_lane, left));
}

/* The armed sleeper leaves: reset countdown, and wake the other sleepers, one of
 * which arms in our stead. */
static void
disarm(struct heist_group *g)
{
	/* acquire: every count down this erases was a release (count_out), so its
	 * finisher's count out reaches the sums of the next sleeper to arm, which
	 * comes after our store to armed below. */
	atomic_exchange_explicit(&g->countdown, 0, memory_order_acquire);
	/* seq_cst (and the load of sleepers): a sleeper that failed to arm did so
	 * with a CAS that read armed before this store, after its increment of
	 * sleepers; so our load sees that increment, and we wake it. */
	atomic_store_explicit(&g->armed, 0, memory_order_seq_cst);
	if (atomic_load_explicit(&g->sleepers, memory_order_seq_cst) > 1) {
		atomic_fetch_add_explicit(&g->wake_seq, 1, memory_order_relaxed);
		heist__futex_wake(&g->wake_seq, INT_MAX);
	}
}

/* Sleeping on a distributed count: one sleeper at a time arms countdown with the jobs
 * it found not final, and every finisher that sees sleepers above 0 counts it down.
 * A finisher the armed sum missed saw the sleeper's increment (the Dekker pair), so it
 * counts down: no job is left out, and one counted both ways only makes countdown
 * low. A count down erased by a disarm (the reset) is one the sum sees (see disarm).
 * So countdown never exceeds the count downs still to come: the last of them leaves
 * it at or below 0, and the one that took it from 1 to 0 woke us (a finisher counts
 * down after its count out, so that wake may come a moment after the group is done;
 * the sleepers' sums look again). The other sleepers
 * sleep until that wake, or until the armed one leaves (disarm). */
void
heist__group_sleep(struct heist_group *g, uint64_t timeout_ns)
{
	/* relaxed: read before our increment of sleepers and our arming, which a waker
	 * reads before it moves wake_seq on (disarm's load of sleepers; the crossing's
	 * count down, an acquire of our release add): the kernel then finds the word
	 * changed, or the wake comes after we sleep. */
	uint32_t seq = atomic_load_explicit(&g->wake_seq, memory_order_relaxed);
	/* seq_cst, and the fence: the second half of the Dekker pair with
	 * heist__group_count_out (its count out, then its load of sleepers). */
	atomic_fetch_add_explicit(&g->sleepers, 1, memory_order_seq_cst);
	atomic_thread_fence(memory_order_seq_cst);
	uint32_t idle = 0;
	if (heist__group_done(g)) {
		/* nothing to wait for */
	} else if (atomic_compare_exchange_strong_explicit(&g->armed, &idle, 1,
							   memory_order_seq_cst,
							   memory_order_seq_cst)) {
		/* Summed after arming, which came after the last disarm. */
		int64_t left = (int64_t)behind(g, offsetof(struct group_lane, finished));
		/* release: see seq above. Finishers since our fence may have counted
		 * down already: then it starts lower. */
		if (atomic_fetch_add_explicit(&g->countdown, left, memory_order_release) +
		    left > 0)
			heist__futex_wait(&g->wake_seq, seq, timeout_ns);
		disarm(g);
	} else {
		heist__futex_wait(&g->wake_seq, seq, timeout_ns);
	}
	/* relaxed: a finisher that still sees us only counts down. */
	atomic_fetch_sub_explicit(&g->sleepers, 1, memory_order_relaxed);
}

bool
heist__group_owns(const struct heist_group *g, struct heist_future *j)
{
	/* A group job carries its node at the start of its inline_copy, and only group
	 * jobs lend their token (REF_LENT). Its list may hold other nodes above its
	 * own (a dependent task of the group has a future, and what waits for it).
	 * relaxed: both were written before the job was queued, which we took it
	 * from. */
	const struct group_node *n = (const struct group_node *)(const void *)j->inline_copy;
	return (atomic_load_explicit(&j->refs, memory_order_relaxed) & REF_LENT) &&
	       n->then.fire == group_fire && n->g == g;
}

void
heist__group_adopt(struct heist_group *g, struct heist_future *j)
{
	/* The group's token, lent: the group outlives its jobs (destroy waits for
	 * them), so they need not count references to it, on a shared line. */
	j->token = g->token;
	heist__job_set_flag(j, REF_LENT, true);
	heist__job_set_priority(j, atomic_load_explicit(&g->priority, memory_order_relaxed));
	struct group_node *n = (struct group_node *)(void *)j->inline_copy;
	*n = (struct group_node){{NULL, group_fire}, g};
	heist__job_then(j, &n->then);	/* a new job: it cannot be final yet */
	count_in(g);
}

HEIST_EXPORT int
heist_group_create(heist_pool *pool, heist_group **out)
{
	if (out)
		*out = NULL;
	if (!pool || !out)
		return EINVAL;
	/* A lane per slot of the pool's workers and guest, up to LANES_MAX, and one
	 * for every other thread (and the workers beyond). aligned: each lane has a
	 * cache line of its own. */
	unsigned lanes = pool->slots < LANES_MAX ? pool->slots : LANES_MAX;
	size_t size = sizeof(struct heist_group) + (lanes + 1) * sizeof(struct group_lane);
	struct heist_group *g = heist__aligned_alloc(CACHE_LINE, size);
	if (!g)
		return ENOMEM;
	int err = heist_cancel_create(&g->token);
	if (err) {
		heist__aligned_free(g);
		return err;
	}
	g->pool = pool;
	g->gen = pool->gen;
	g->lanes = lanes;
	atomic_init(&g->error, 0);
	atomic_init(&g->priority, HEIST_PRIORITY_NORMAL);
	atomic_init(&g->sleepers, 0);
	atomic_init(&g->wake_seq, 0);
	atomic_init(&g->armed, 0);
	atomic_init(&g->countdown, 0);
	for (unsigned i = 0; i <= lanes; i++) {
		atomic_init(&g->lane[i].submitted, 0);
		atomic_init(&g->lane[i].finished, 0);
		atomic_init(&g->lane[i].left, 0);
	}
	*out = g;
	return 0;
}

HEIST_EXPORT int
heist_group_submit(heist_group *g, heist_fn fn, void *arg)
{
	if (!g || !fn)
		return EINVAL;
	struct heist_future *j = heist__job_new(fn, arg, false);
	if (!j)
		return ENOMEM;
	heist__group_adopt(g, j);
	int err = heist__submit_job(g->pool, j, NULL);
	if (err)
		heist__group_count_out(g);	/* the job was discarded, never fired */
	return err;
}

HEIST_EXPORT int
heist_group_set_priority(heist_group *g, int priority)
{
	if (!g || !heist__priority_valid(priority))
		return EINVAL;
	atomic_store_explicit(&g->priority, priority, memory_order_relaxed);
	return 0;
}

/* Whether one of g's jobs is running on this thread's stack: the caller itself, or a
 * job that the caller runs nested in (a helping wait of that job ran the caller on top
 * of it, or the caller is a fork-join task it spawned and synced inline). g is not done
 * before that job returns, which it cannot before a wait above it does: a cycle. A job
 * of g that waits, on another thread, for the caller is one too; that is not seen
 * here. The frames are this thread's own, running: no ordering is needed to read
 * them, and heist__group_owns reads what was written before the job was queued. */
static bool
waits_for_itself(const struct heist_group *g)
{
	for (const struct heist__job_frame *f = heist__job_frames_get(); f; f = f->outer)
		if (heist__group_owns(g, f->job))
			return true;
	return false;
}

/* In a child process: g has jobs in an inherited pool, which no thread here will run
 * (inherit.h). By the generation g keeps: its pool may be destroyed already (a group
 * outlives it: heist_submit_after), and is not read. */
static bool
orphaned(struct heist_group *g)
{
	return g->gen != heist__generation() && !heist__group_done(g);
}

HEIST_EXPORT int
heist_group_wait(heist_group *g)
{
	if (!g)
		return EINVAL;
	if (waits_for_itself(g))
		return EDEADLK;	/* as heist_pool_wait_idle from a task of its pool */
	if (orphaned(g))
		return ESHUTDOWN;
	heist__wait_group(g);
	/* relaxed: ordered by the acquire that found g done (see group_fire). */
	return atomic_load_explicit(&g->error, memory_order_relaxed);
}

HEIST_EXPORT void
heist_group_cancel(heist_group *g)
{
	if (g)
		heist_cancel_request(g->token);
}

HEIST_EXPORT void
heist_group_destroy(heist_group *g)
{
	if (!g)
		return;
	if (orphaned(g)) {
		/* Its jobs stay queued in the parent's threads' places, untouched. */
		heist_cancel_release(g->token);
		heist__aligned_free(g);
		return;
	}
	heist__wait_group(g);
	/* The last count outs may still be on their way out of g (a wake): a few
	 * instructions, unless their thread was preempted; yielding lets it run. In a
	 * child process the threads of g's count outs are not here (inherit.h): one
	 * caught by the fork half done never ends it, and none touches g again. */
	while (!all_left(g) && g->gen == heist__generation())
		heist__thread_yield();
	heist_cancel_release(g->token);
	heist__aligned_free(g);
}
