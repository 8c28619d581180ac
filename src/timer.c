/* SPDX-License-Identifier: MIT */
/* timer.c - tasks due later and periodic ones (heist.h, heist_submit_timed): the heap
 * of a pool's timed jobs, their firing, and the keeper role (timer.h says who fires
 * and why no deadline is missed). A timed job is a job record like any other, made
 * with REF_UNQUEUED (no waiter may run it early) and REF_TIMED, whose queue reference
 * the heap holds until it is due; then it is queued as an outside submission. A
 * periodic one (REF_PERIODIC) comes back after each run that returned 0: future.c
 * puts it back to QUEUED and heist__timer_repeat here puts it back in the heap. Its
 * states are future.c's; what the heap does to them is a cancel's or a forgo's.
 * After Java's ScheduledThreadPoolExecutor (a delay queue the pool's own threads
 * serve) and the kernel's hrtimers (one deadline armed: the earliest). */
#include "timer.h"

#include <errno.h>
#include <stdlib.h>

#include "heist/heist.h"

#include "cancel.h"
#include "future.h"
#include "pool.h"
#include "sleep.h"
#include "submit.h"

/* What a timed job keeps in its inline_copy, which its argument never uses (timed
 * submits take no copy): its period and its current due time, written under the
 * heap's lock before it is queued, read by its runner after the queue's hand-off. */
struct timed {
	uint64_t period_ns;
	uint64_t due_ns;
};
static_assert(sizeof(struct timed) <= JOB_INLINE_COPY, "a timed job's fields");

static struct timed *
timed_of(struct heist_future *j)
{
	return (struct timed *)(void *)j->inline_copy;
}

enum {
	HEAP_MIN = 64,		/* the first allocation, in entries */
	SWEEP_MIN = 1024,	/* no sweep of cancelled entries below this many */
	FIRE_BATCH = 32,	/* jobs taken out of the heap per hold of its lock */
};

int
heist__timers_init(struct timers *t)
{
	atomic_init(&t->next_due, HEIST_NEVER);
	atomic_init(&t->keeper, -1);
	atomic_init(&t->keeper_due, HEIST_NEVER);
	t->heap = NULL;
	t->n = t->cap = t->swept_at = 0;
	t->seq = 0;
	t->closed = false;
	return heist__mutex_init(&t->lock);
}

void
heist__timers_fini(struct timers *t)
{
	free(t->heap);
	heist__mutex_destroy(&t->lock);
}

/* ---- the heap: a binary min-heap of (due_ns, seq); under the lock ---- */

static bool
before(const struct timer_entry *a, const struct timer_entry *b)
{
	return a->due_ns < b->due_ns || (a->due_ns == b->due_ns && a->seq < b->seq);
}

static void
sift_up(struct timer_entry *h, size_t i)
{
	struct timer_entry e = h[i];
	while (i > 0 && before(&e, &h[(i - 1) / 2])) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = e;
}

static void
sift_down(struct timer_entry *h, size_t n, size_t i)
{
	struct timer_entry e = h[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && before(&h[c + 1], &h[c]))
			c++;
		if (!before(&h[c], &e))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = e;
}

static struct timer_entry
heap_pop(struct timers *t)
{
	struct timer_entry top = t->heap[0];
	if (--t->n) {
		t->heap[0] = t->heap[t->n];
		sift_down(t->heap, t->n, 0);
	}
	return top;
}

/* Store the earliest due time. seq_cst: the adder's store of timer.h's pair. */
static void
publish(struct timers *t)
{
	atomic_store_explicit(&t->next_due, t->n ? t->heap[0].due_ns : HEIST_NEVER,
			      memory_order_seq_cst);
}

/* Room for one more entry: grow by doubling. */
static int
reserve(struct timers *t)
{
	if (t->n < t->cap)
		return 0;
	size_t cap = t->cap ? 2 * t->cap : HEAP_MIN;
	if (cap > SIZE_MAX / sizeof(*t->heap))
		return ENOMEM;
	struct timer_entry *h = heist__realloc(t->heap, cap * sizeof(*h));
	if (!h)
		return ENOMEM;
	t->heap = h;
	t->cap = cap;
	return 0;
}

/* Whether a job in the heap is still pending: not cancelled by its future. relaxed:
 * a pending job leaves QUEUED only for CANCELLED, which is final; the heap holds it. */
static bool
pending(const struct heist_future *j)
{
	return (atomic_load_explicit((_Atomic uint32_t *)&j->state, memory_order_relaxed) &
		FUT_MASK) == FUT_QUEUED;
}

/* Drop the entries of jobs cancelled by their futures, once the heap has doubled since
 * the last sweep: so cancelled timers hold at most as much memory as pending ones
 * (plus SWEEP_MIN), at a cost amortised over the inserts. Such a job is final and
 * its list fired; dropping it only lets go of what it holds. Returns whether it
 * dropped any: the earliest entry may have gone, and next_due with it. */
static bool
sweep(struct timers *t)
{
	if (t->n < SWEEP_MIN || t->n < 2 * t->swept_at)
		return false;
	size_t n = t->n;
	size_t kept = 0;
	for (size_t i = 0; i < t->n; i++) {
		struct heist_future *j = t->heap[i].job;
		if (pending(j)) {
			t->heap[kept++] = t->heap[i];
		} else {
			heist__job_forgo(j, ECANCELED);	/* only drops its belongings */
			heist__job_release(j);
		}
	}
	t->n = kept;
	for (size_t i = kept / 2; i-- > 0;)
		sift_down(t->heap, t->n, i);
	t->swept_at = kept;
	return kept != n;
}

/* The earliest due time changed to due_ns: make sure a sleeping worker wakes for it
 * (timer.h). After the lock: the store of next_due is done. */
static void
wake_keeper(struct heist_pool *pool, uint64_t due_ns)
{
	struct timers *t = &pool->timers;
	/* seq_cst: the adder's loads of timer.h's pair. */
	int k = atomic_load_explicit(&t->keeper, memory_order_seq_cst);
	if (k < 0)
		heist__sleep_notify(&pool->sleep);
	else if (due_ns < atomic_load_explicit(&t->keeper_due, memory_order_seq_cst))
		heist__sleep_wake_worker(&pool->sleep, (unsigned)k);
}

/* Put job j, due at due_ns, in pool's heap; the heap takes the caller's reference. */
static int
insert(struct heist_pool *pool, struct heist_future *j, uint64_t due_ns)
{
	struct timers *t = &pool->timers;
	heist__mutex_lock(&t->lock);
	int err = t->closed ? ESHUTDOWN : 0;
	if (!err) {
		/* A sweep that dropped the earliest entry left next_due too early, which
		 * would keep heist__timers_due true, and the idle workers firing nothing
		 * in a loop, until the next entry is due. Only later, so a keeper at
		 * most wakes early (heist__timers_keeper_due) and no wake is owed. */
		if (sweep(t))
			publish(t);
		err = reserve(t);
	}
	if (err) {
		heist__mutex_unlock(&t->lock);
		return err;
	}
	timed_of(j)->due_ns = due_ns;
	t->heap[t->n] = (struct timer_entry){due_ns, t->seq++, j};
	sift_up(t->heap, t->n++);
	bool earliest = t->heap[0].job == j;
	if (earliest)
		publish(t);
	heist__mutex_unlock(&t->lock);
	if (earliest)
		wake_keeper(pool, due_ns);
	return 0;
}

/* ---- firing ---- */

/* j is due: queue it, or end it if it was cancelled or the pool is closing. The heap's
 * reference becomes the queue's, or is let go here. */
static void
fire_one(struct heist_future *j)
{
	int err = pending(j) ? heist__submit_fired(j) : ECANCELED;
	if (err) {
		heist__job_forgo(j, err);	/* a cancelled one: its belongings only */
		heist__job_release(j);
	}
}

void
heist__timers_fire(struct heist_pool *pool)
{
	struct timers *t = &pool->timers;
	struct heist_future *due[FIRE_BATCH];
	size_t k;
	do {
		k = 0;
		heist__mutex_lock(&t->lock);
		uint64_t now = heist__now_ns();
		while (k < FIRE_BATCH && t->n && t->heap[0].due_ns <= now)
			due[k++] = heap_pop(t).job;
		if (k)
			publish(t);
		heist__mutex_unlock(&t->lock);
		for (size_t i = 0; i < k; i++)
			fire_one(due[i]);
	} while (k == FIRE_BATCH);
}

void
heist__timers_close(struct heist_pool *pool)
{
	struct timers *t = &pool->timers;
	heist__mutex_lock(&t->lock);
	t->closed = true;
	struct timer_entry *h = t->heap;
	size_t n = t->n;
	t->heap = NULL;
	t->n = t->cap = 0;
	publish(t);
	heist__mutex_unlock(&t->lock);
	for (size_t i = 0; i < n; i++) {
		heist__job_forgo(h[i].job, ESHUTDOWN);	/* unless cancelled already */
		heist__job_release(h[i].job);
	}
	free(h);
}

/* ---- the keeper (timer.h) ---- */

bool
heist__timers_claim(struct timers *t, unsigned i)
{
	int none = -1;
	/* seq_cst: the keeper's side of timer.h's pair begins with the claim, so an
	 * adder that reads no keeper had its store of next_due seen by our loads. */
	return heist__timers_pending(t) &&
	       atomic_compare_exchange_strong_explicit(&t->keeper, &none, (int)i,
						       memory_order_seq_cst,
						       memory_order_relaxed);
}

uint64_t
heist__timers_keeper_due(struct timers *t)
{
	/* seq_cst, all: the keeper's store and load of timer.h's pair. */
	uint64_t d = atomic_load_explicit(&t->next_due, memory_order_seq_cst);
	for (;;) {
		atomic_store_explicit(&t->keeper_due, d, memory_order_seq_cst);
		uint64_t again = atomic_load_explicit(&t->next_due, memory_order_seq_cst);
		if (again >= d)
			return d;	/* later: a fire took the earliest; we wake early */
		d = again;
	}
}

void
heist__timers_unclaim(struct timers *t)
{
	/* relaxed: read by adders only while keeper names us; seq_cst on keeper: an
	 * adder that reads -1 from now on wakes a sleeper itself. */
	atomic_store_explicit(&t->keeper_due, HEIST_NEVER, memory_order_relaxed);
	atomic_store_explicit(&t->keeper, -1, memory_order_seq_cst);
}

/* ---- periodic jobs ---- */

/* The first time on the grid due + k * period (k >= 1) that is after now: runs that
 * came too late are skipped, never run in a burst. */
static uint64_t
next_due(uint64_t due, uint64_t period, uint64_t now)
{
	if (due > HEIST_NEVER - period)
		return HEIST_NEVER;
	uint64_t next = due + period;
	if (next > now)
		return next;
	uint64_t behind = now - due;
	uint64_t skip = behind / period + 1;	/* next = due + skip * period > now */
	return skip > (HEIST_NEVER - due) / period ? HEIST_NEVER : due + skip * period;
}

int
heist__timer_repeat(struct heist_future *j)
{
	struct timed *tm = timed_of(j);
	heist__job_ref(j);	/* the heap's, the queue's until now going with the run */
	int err = insert(j->task.pool, j,
			 next_due(tm->due_ns, tm->period_ns, heist__now_ns()));
	if (err)
		heist__job_release(j);	/* never the last: the run holds one */
	return err;
}

/* ---- the public calls ---- */

HEIST_EXPORT uint64_t
heist_now_ns(void)
{
	return heist__now_ns();
}

/* A timed job for fn(arg), due at due_ns, not yet in the heap. */
static struct heist_future *
timed_new(heist_pool *pool, const struct heist_timing *when, heist_fn fn, void *arg,
	  bool with_future)
{
	struct heist_future *j = heist__job_new(fn, arg, with_future);
	if (!j)
		return NULL;
	j->task.pool = pool;
	if (when->cancel) {
		heist__cancel_acquire(when->cancel);
		j->token = when->cancel;
	}
	timed_of(j)->period_ns = when->period_ns;
	heist__job_set_flag(j, REF_UNQUEUED | REF_TIMED | (when->period_ns ? REF_PERIODIC : 0),
			    true);
	heist__job_set_priority(j, when->priority);
	return j;
}

HEIST_EXPORT int
heist_submit_timed(heist_pool *pool, const struct heist_timing *when, heist_fn fn, void *arg,
		   heist_future **out)
{
	if (out)
		*out = NULL;
	if (!pool || !when || !fn || (when->at_ns && when->delay_ns) ||
	    !heist__priority_valid(when->priority))
		return EINVAL;
	uint64_t now = heist__now_ns();
	uint64_t due = when->at_ns ? when->at_ns : heist__deadline_after(when->delay_ns);
	if (due <= now && !when->period_ns)
		return heist__submit_new(pool, fn, arg, when->cancel, when->priority, out);
	struct heist_future *j = timed_new(pool, when, fn, arg, out != NULL);
	if (!j)
		return ENOMEM;
	/* The hold of an entrant keeps the pool alive through the insert and its wake,
	 * and refuses the timer once destroy has begun (submit.c); a timer is not
	 * counted in live while it waits, only once it is due and queued. */
	unsigned e;
	int err = heist__pool_enter(pool, &e);
	if (!err) {
		err = insert(pool, j, due);
		heist__pool_leave(pool, e, 1);
		heist__pool_unhold(pool);
	}
	if (err) {
		heist__job_discard(j);
		return err;
	}
	if (out)
		*out = j;
	return 0;
}

HEIST_EXPORT int
heist_submit_delayed(heist_pool *pool, uint64_t delay_ns, heist_fn fn, void *arg,
		     heist_future **out)
{
	struct heist_timing when = {.delay_ns = delay_ns};
	return heist_submit_timed(pool, &when, fn, arg, out);
}
